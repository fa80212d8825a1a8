#include "common.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <thread>

#include "tova/eval/token_list.h"
#include "tova/engine.h"
#include "tova/field_names.h"
#include "tova/policy_spec.h"
#include "tova/timer.h"

namespace tova::cli {

void ModelFlags::add(CLI::App& app) {
  app.add_option("-m,--model", model, "GGUF model file (default: bundled stories260K)");
  app.add_option("-t,--threads", threads, "threads to use (default: all cores)")
      ->check(CLI::Range(1, 1024));
  app.add_flag("--f32-activations", f32_activations,
               "keep activations in float32 for quantized weights (exact dequantized rows, no "
               "Q8 rounding of activations as llama.cpp does; slower)");
  app.add_flag("--mmap", mmap,
               "map the model file instead of reading it into memory (opens at once and shares "
               "the page cache, but streams weights ~25 % slower)");
  add_repack_flags(app, repack);
  gpu.add(app);
}

void add_repack_flags(CLI::App& app, std::optional<bool>& repack) {
  app.add_flag_callback(
      "--repack", [&repack] { repack = true; },
      "repack Q4_0 attention and feed-forward weights at load into 8-row interleaved groups "
      "(q4_0_r8: for decode and verify steps; in place, the same memory; the default)");
  app.add_flag_callback(
      "--no-repack", [&repack] { repack = false; },
      "keep the weights in the file's layout (see --repack)");
}

void GpuFlags::add(CLI::App& app) {
  // -ngl and -fa reach these through main.cpp (CLI11 declares one-letter short flags only).
  app.add_option("--gpu-layers,--n-gpu-layers", gpu_layers,
                 "llama.cpp's GPU offload (also -ngl): accepted, no effect (tova runs on the CPU)")
      ->check([](const std::string& v) {
        return parse_int_list("--gpu-layers", v, -1, 1 << 20).ok() || v == "auto" || v == "all"
                   ? std::string()
                   : "--gpu-layers: '" + v + "' is not a number of layers";
      });
  app.add_option("--flash-attn", flash_attn,
                 "llama.cpp's flash attention switch (also -fa): on | off | auto; accepted, no "
                 "effect (tova's attention is its own)")
      ->expected(0, 1)
      ->default_str("on")
      ->check([](const std::string& v) {
        for (const std::string& x : split_list(v)) {
          if (x != "on" && x != "off" && x != "auto" && x != "0" && x != "1" && x != "true" &&
              x != "false" && x != "enabled" && x != "disabled") {
            return "--flash-attn: '" + v + "' is not on, off or auto";
          }
        }
        return std::string();
      });
}

void GpuFlags::note() const {
  if (gpu_layers.empty() && flash_attn.empty()) return;
  cli::note("tova runs on the CPU: -ngl/--gpu-layers and -fa/--flash-attn have no effect");
}

EngineOptions ModelFlags::engine_options(bool need_tokenizer) const {
  return {.model_path = model_path(),
          .n_threads = n_threads(),
          .f32_activations = f32_activations,
          .mmap = mmap,
          .repack = repack,
          .need_tokenizer = need_tokenizer};
}

Result<std::unique_ptr<Engine>> ModelFlags::load(bool need_tokenizer) const {
  gpu.note();
  return Engine::load(engine_options(need_tokenizer));
}

std::string ModelFlags::model_path() const { return model.empty() ? bundled_model_path() : model; }

int ModelFlags::n_threads() const {
  if (threads > 0) return threads;
  return std::max(1u, std::thread::hardware_concurrency());
}

void MmprojFlags::add(CLI::App& app) {
  app.add_option("--mmproj", path,
                 "vision encoder + projector GGUF (llama.cpp's mmproj; " + projector_type_choices() +
                     ") beside the model: images join the text");
  keep_opts_.push_back(app.add_flag("--kv-keep-images", keep_images,
               "never evict image states, under every policy: they are held beside --kv-budget "
               "(text keeps its k states; K/V grows by each image kept; needs --mmproj)"));
  keep_opts_.push_back(app.add_option("--kv-keep-images-max", max_kept_images,
                                      "with --kv-keep-images: most images a conversation keeps "
                                      "(their room is reserved; one more is refused)")
                           ->capture_default_str());
}

std::string MmprojFlags::keep_given() const {
  std::string s;
  for (const CLI::Option* o : keep_opts_) {
    if (o->count() > 0) s += (s.empty() ? "" : ", ") + o->get_name();
  }
  return s;
}

void SpecFlags::add(CLI::App& app) {
  app.add_option("--spec-type", o.type,
                 "speculative decoding: " + speculative_type_choices() +
                     " (llama.cpp's names; the output is the same as without it)");
  app.add_option("--spec-draft-model", draft_model,
                 "draft model for speculative decoding (also -md; implies --spec-type "
                 "draft-simple): a smaller GGUF with the same vocabulary");
  app.add_option("--spec-draft-n-max", o.n_max, "most tokens drafted per step")
      ->capture_default_str();
  app.add_option("--spec-draft-n-min", o.n_min, "fewer drafted tokens are not verified")
      ->capture_default_str();
  app.add_option("--spec-draft-p-min", o.p_min,
                 "a draft model stops drafting below this probability")
      ->capture_default_str();
  app.add_option("--spec-ngram-simple-size-n,--spec-ngram-size-n", o.ngram_size_n,
                 "ngram-simple: the n-gram looked up")
      ->capture_default_str();
  app.add_option("--spec-ngram-simple-size-m,--spec-ngram-size-m", o.ngram_size_m,
                 "ngram-simple: most tokens drafted after it")
      ->capture_default_str();
  app.add_option("--spec-ngram-mod-n-match", o.ngram_mod_n_match,
                 "ngram-mod: the n-gram hashed and looked up")
      ->capture_default_str();
}

Result<SpeculativeOptions> SpecFlags::options() const {
  SpeculativeOptions r = o;
  if (!draft_model.empty() && r.type.empty()) r.type = "draft-simple";
  if (r.type == "draft-simple" && draft_model.empty()) {
    return make_error("--spec-type draft-simple needs a draft model (-md / --spec-draft-model "
                      "FILE)");
  }
  if (!draft_model.empty() && r.type != "draft-simple") {
    return make_error("-md / --spec-draft-model {} is for --spec-type draft-simple, not {}",
                      draft_model, r.type);
  }
  TOVA_RETURN_IF_ERROR(validate_speculative(r));
  return r;
}

void CacheFlags::add(CLI::App& app) {
  opts_.push_back(app.add_option("--kv-policy", policy,
                                 "KV compression policy NAME[:ARG] (" + kv::policy_choices() + ")")
                      ->capture_default_str());
  opts_.push_back(
      app.add_option("--kv-budget", budget, "states kept per layer, k (bounded policies)"));
  opts_.push_back(
      app.add_option("--kv-prefill", prefill, "prompt processing: exact | chunk:C | chunk:inf")
          ->capture_default_str());
  // Not among opts_: the K/V type flags change a resumed state too (KvTypeFlags).
  kv_type.add(app, "f32");
  add_positions_option(app, positions);
  opts_.push_back(app.get_option("--kv-positions"));
}

std::string CacheFlags::given() const {
  std::string s;
  for (const CLI::Option* o : opts_) {
    if (o->count() > 0) s += (s.empty() ? "" : ", ") + o->get_name();
  }
  return s;
}

void KvTypeFlags::add(CLI::App& app, const std::string& default_type, bool list) {
  both = default_type;
  const std::string types = "f32 | f16 | bf16 | q8_0 | q4_0";
  opts_.push_back(app.add_option("--kv-type", both,
                                 "K/V storage type" + std::string(list ? "s" : "") + ": " + types +
                                     (list ? ", comma-separated" : "") +
                                     " (q8_0/q4_0: llama.cpp's blocks along the head dimension)")
                      ->capture_default_str());
  opts_.push_back(app.add_option("--cache-type-k", k, "key storage type, if not --kv-type (-ctk)"));
  opts_.push_back(app.add_option("--cache-type-v", v, "value storage type, if not --kv-type (-ctv)"));
  opts_.push_back(app.add_flag("--kv-rotate", rotate,
                               "store quantized keys and values rotated by a fixed Hadamard "
                               "transform (queries and outputs rotated to match)"));
}

KvOverride KvTypeFlags::override_of_saved() const {
  KvOverride o;
  auto type_of = [](const std::string& t) {
    auto r = parse_kv_type(t);
    if (!r.ok()) throw CLI::RuntimeError(fail(r.message()));
    return *r;
  };
  if (opts_[0]->count() > 0) o.k = o.v = type_of(both);
  if (opts_[1]->count() > 0) o.k = type_of(k);
  if (opts_[2]->count() > 0) o.v = type_of(v);
  if (opts_[3]->count() > 0) o.rotate = rotate;
  return o;
}

std::vector<std::string> KvTypeFlags::texts() const {
  std::vector<std::string> out;
  for (const std::string& t : split_list(both)) {
    out.push_back(kv_format_text(t, k, v, rotate));
  }
  return out;
}

void add_positions_option(CLI::App& app, std::string& positions) {
  app.add_option("--kv-positions", positions,
                 "positions RoPE sees for held states: absolute | gap (gaps over 10 compressed "
                 "log-log, the paper's 7.2) | rank (index among held states, StreamingLLM)")
      ->capture_default_str();
}

Result<CacheOptions> CacheFlags::options() const {
  TOVA_ASSIGN_OR_RETURN(CacheOptions o,
                        parse_cache_options(policy, budget, prefill, kv_type.text(), positions));
  if (!o.policy.bounded() && opts_.size() > 1 && opts_[1]->count() > 0) {
    warn(fmt::format("--kv-budget {} has no effect under --kv-policy {} (it keeps every state)",
                     budget, o.policy.label()));
  }
  return o;
}

void SamplingFlags::add(CLI::App& app) {
  app.add_option("--temp", p.temp, "temperature (0: greedy)")->capture_default_str();
  app.add_option("--top-k", p.top_k, "top-k sampling (0: off)")->capture_default_str();
  app.add_option("--top-p", p.top_p, "top-p sampling (1: off)")->capture_default_str();
  app.add_option("--min-p", p.min_p, "min-p sampling (0: off)")->capture_default_str();
  app.add_option("--repeat-penalty", p.repeat_penalty, "repetition penalty (1: off)")
      ->capture_default_str();
  app.add_option("--repeat-last-n", p.repeat_last_n, "tokens the penalty looks back on")
      ->capture_default_str();
  app.add_option("-s,--seed", seed, "random seed (-1: random)")->capture_default_str();
}

SamplerParams SamplingFlags::params() const {
  SamplerParams q = p;
  q.seed = seed >= 0 ? static_cast<uint64_t>(seed) : std::random_device{}();
  return q;
}

namespace {

// The library's option names as the CLI spells them (core/field_names.h).
constexpr FieldSpelling kFlags[] = {
    {field::kTemperature, "--temp"},         {field::kTopP, "--top-p"},
    {field::kMinP, "--min-p"},               {field::kRepeatPenalty, "--repeat-penalty"},
    {field::kRepeatLastN, "--repeat-last-n"}, {field::kKvBudget, "--kv-budget"},
    {field::kKvRotate, "--kv-rotate"},       {field::kPolicies, "--kv-policy"},
    {field::kPositions, "--kv-positions"},   {field::kKvTypes, "--kv-type"},
    {field::kWindow, "--window"},            {field::kContext, "-c"},
    {field::kSpillDir, "--session-dir"},     {field::kChatTemplate, "--chat-template"},
    {field::kSamples, "--samples"},          {field::kTurns, "--turns"},
    {field::kNeedleTemplate, "--template"},  {field::kVocab, "--vocab"},
    {field::kReplace, "--force"},
};

}  // namespace

int fail(const std::string& message) {
  std::string m = spell_field(message, kFlags);
  for (char& ch : m) {
    if (ch == '\n') ch = ' ';
  }
  fmt::print(stderr, "tova: error: {}\n", m);
  return 1;
}

void warn(const std::string& message) {
  fmt::print(stderr, "tova: warning: {}\n", spell_field(message, kFlags));
}
void note(const std::string& message) { fmt::print(stderr, "tova: note: {}\n", message); }

Result<std::string> read_text_file(const std::string& path) {
  if (path == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    if (std::cin.bad()) return make_error("cannot read the standard input");
    return ss.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("cannot open '{}'", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return make_error("cannot read '{}'", path);
  return ss.str();
}

Result<std::vector<int32_t>> read_token_file(const std::string& path) {
  TOVA_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
  return eval::parse_token_list(text, path);
}

Result<InputIds> read_input_ids(const std::string& tokens_file, const std::string& text_file,
                                const Engine& engine) {
  InputIds in;
  if (!tokens_file.empty()) {
    TOVA_ASSIGN_OR_RETURN(in.ids, read_token_file(tokens_file));
    return in;
  }
  if (!engine.has_tokenizer()) return make_error("no tokenizer to read '{}' with", text_file);
  TOVA_ASSIGN_OR_RETURN(const std::string text, read_text_file(text_file));
  if (text.empty()) return make_error("'{}' is empty", text_file);
  in.ids = engine.tokenize(text, false);
  in.from_text = true;
  return in;
}

std::string format_bytes(uint64_t b) {
  if (b >= (1ull << 30)) return fmt::format("{:.2f} GiB", b / double(1ull << 30));
  if (b >= (1ull << 20)) return fmt::format("{:.2f} MiB", b / double(1ull << 20));
  if (b >= (1ull << 10)) return fmt::format("{:.1f} KiB", b / double(1ull << 10));
  return fmt::format("{} B", b);
}

}  // namespace tova::cli

namespace tova::cli {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (true) {
    const size_t comma = s.find(',', at);
    out.push_back(s.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

Result<std::vector<int>> parse_int_list(const std::string& flag, const std::string& s, int lo,
                                        int hi) {
  std::vector<int> v;
  for (const std::string& item : split_list(s)) {
    int x = 0;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), x);
    if (item.empty() || ec != std::errc() || p != item.data() + item.size() || x < lo || x > hi) {
      return make_error("{}: '{}' is not a list of integers in [{}, {}] (e.g. 512,1024)", flag, s,
                        lo, hi);
    }
    v.push_back(x);
  }
  return v;
}

Result<std::vector<kv::PolicySpec>> parse_policy_grid(const std::string& policies,
                                                      const std::string& budgets) {
  TOVA_ASSIGN_OR_RETURN(const std::vector<int> ks,
                        parse_int_list("--kv-budget", budgets, 0, 1 << 24));
  std::vector<kv::PolicySpec> out;
  for (const std::string& policy : split_list(policies)) {
    bool unbounded_done = false;
    for (int k : ks) {
      TOVA_ASSIGN_OR_RETURN(const kv::PolicySpec spec, kv::parse_policy(policy, k));
      if (!spec.bounded()) {
        if (unbounded_done) continue;  // the budget means nothing to `full`
        unbounded_done = true;
      }
      out.push_back(spec);
    }
  }
  return out;
}

Result<uint64_t> parse_bytes(const std::string& flag, const std::string& s) {
  double value = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  const std::string_view unit(p, s.data() + s.size() - p);
  double scale = 1;
  if (unit == "K" || unit == "k" || unit == "KiB") {
    scale = 1024.0;
  } else if (unit == "M" || unit == "MiB") {
    scale = 1024.0 * 1024;
  } else if (unit == "G" || unit == "GiB") {
    scale = 1024.0 * 1024 * 1024;
  } else if (!unit.empty()) {
    scale = -1;
  }
  const double bytes = value * scale;
  if (s.empty() || ec != std::errc() || scale < 0 || !(bytes >= 1) || bytes > 1e15) {
    return make_error("{}: '{}' is not a size in bytes (e.g. 805306368, 768M, 1.5G)", flag, s);
  }
  return static_cast<uint64_t>(bytes);
}

void print_markdown_table(const std::vector<std::string>& head,
                          const std::vector<std::vector<std::string>>& rows,
                          const std::function<bool(size_t)>& right) {
  auto cols = [](const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
  };
  std::vector<size_t> width(head.size());
  for (size_t i = 0; i < head.size(); ++i) {
    width[i] = std::max<size_t>(cols(head[i]), 1);
    for (const auto& row : rows) width[i] = std::max(width[i], cols(row[i]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s = "|";
    for (size_t i = 0; i < cells.size(); ++i) {
      const std::string pad(width[i] - cols(cells[i]), ' ');
      s += " " + (right(i) ? pad + cells[i] : cells[i] + pad) + " |";
    }
    fmt::print("{}\n", s);
  };
  line(head);
  std::string rule = "|";
  for (size_t i = 0; i < head.size(); ++i) {
    rule += " " + std::string(width[i] - 1, '-') + (right(i) ? ":" : "-") + " |";
  }
  fmt::print("{}\n", rule);
  for (const auto& row : rows) line(row);
}

}  // namespace tova::cli
