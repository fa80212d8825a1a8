#include "common.h"

#include <fmt/format.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "core/timer.h"
#include "eval/token_list.h"
#include "kv/policy_registry.h"
#include "tova/engine.h"

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
}

std::string ModelFlags::model_path() const { return model.empty() ? bundled_model_path() : model; }

int ModelFlags::n_threads() const {
  if (threads > 0) return threads;
  return std::max(1u, std::thread::hardware_concurrency());
}

void CacheFlags::add(CLI::App& app) {
  app.add_option("--kv-policy", policy,
                 "KV compression policy NAME[:ARG] (" + kv::policy_choices() + ")")
      ->capture_default_str();
  app.add_option("--kv-budget", budget, "states kept per layer, k (bounded policies)");
  app.add_option("--kv-prefill", prefill, "prompt processing: exact | chunk:C | chunk:inf")
      ->capture_default_str();
  app.add_option("--kv-type", kv_type, "K/V storage type: f32 | f16")->capture_default_str();
  add_positions_option(app, positions);
}

void add_positions_option(CLI::App& app, std::string& positions) {
  app.add_option("--kv-positions", positions,
                 "positions RoPE sees for held states: absolute | gap (gaps over 10 compressed "
                 "log-log, the paper's 7.2) | rank (index among held states, StreamingLLM)")
      ->capture_default_str();
}

Result<runtime::CacheOptions> CacheFlags::options() const {
  return runtime::parse_cache_options(policy, budget, prefill, kv_type, positions);
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

runtime::SamplerParams SamplingFlags::params() const {
  runtime::SamplerParams q = p;
  q.seed = seed >= 0 ? static_cast<uint64_t>(seed) : std::random_device{}();
  return q;
}

Result<LoadedModel> load_model(const std::string& path, bool need_tokenizer,
                               const model::ModelOptions& options) {
  // The engine loads model and tokenizer; commands that keep their own pools take them out.
  TOVA_ASSIGN_OR_RETURN(auto engine, Engine::load({.model_path = path,
                                                   .n_threads = 1,
                                                   .model = options,
                                                   .need_tokenizer = need_tokenizer}));
  return LoadedModel{.model = engine->release_model(),
                     .tokenizer = engine->release_tokenizer(),
                     .load_seconds = engine->load_seconds()};
}

int fail(const std::string& message) {
  std::string m = message;
  for (char& ch : m) {
    if (ch == '\n') ch = ' ';
  }
  fmt::print(stderr, "tova: error: {}\n", m);
  return 1;
}

Result<std::string> read_text_file(const std::string& path) {
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
                                const tok::Tokenizer* tokenizer) {
  InputIds in;
  if (!tokens_file.empty()) {
    TOVA_ASSIGN_OR_RETURN(in.ids, read_token_file(tokens_file));
    return in;
  }
  if (tokenizer == nullptr) return make_error("no tokenizer to read '{}' with", text_file);
  TOVA_ASSIGN_OR_RETURN(const std::string text, read_text_file(text_file));
  if (text.empty()) return make_error("'{}' is empty", text_file);
  in.ids = tokenizer->encode(text, false);
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
