// tova bench: prompt-processing and decode speed, in the spirit of llama-bench (same tests,
// same table), so both engines can be run on the same files and compared.
#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "tova/eval/bench.h"
#include "tova/policy_spec.h"
#include "tova/simd_target.h"

namespace tova::cli {

namespace {

std::string format_size(uint64_t b) {
  return b < (1ull << 30) ? fmt::format("{:.2f} MiB", b / 1024.0 / 1024.0)
                          : fmt::format("{:.2f} GiB", b / 1024.0 / 1024.0 / 1024.0);
}

std::string format_params(uint64_t n) {
  return n < 1'000'000'000 ? fmt::format("{:.2f} M", n / 1e6) : fmt::format("{:.2f} B", n / 1e9);
}

void print_markdown(const std::vector<eval::BenchResult>& results) {
  const std::vector<std::string> head = {"model", "size",     "params", "type",
                                         "threads", "kv cache", "test",   "t/s"};
  std::vector<std::vector<std::string>> rows;
  for (const eval::BenchResult& r : results) {
    rows.push_back({fmt::format("{} {}", r.model.arch, r.model.size_label),
                    format_size(r.model.n_bytes), format_params(r.model.n_params),
                    r.model.weight_type, std::to_string(r.test.n_threads),
                    r.test.cache_label() + " " + r.test.cache.kv_type.label(),
                    r.test.name(), fmt::format("{:.2f} ± {:.2f}", r.avg_ts, r.stddev_ts)});
  }
  // Text columns align left, numbers right, as llama-bench does.
  print_markdown_table(head, rows, [](size_t i) { return i == 1 || i == 2 || i == 4 || i == 7; });
  fmt::print("\nsimd: {}\n", kernels::simd_target_name());
}

void print_json(const std::vector<eval::BenchResult>& results) {
  nlohmann::json list = nlohmann::json::array();
  for (const eval::BenchResult& r : results) {
    list.push_back({
        {"model_filename", r.model.filename},
        {"model_type", r.model.model_type},
        {"model_size", r.model.n_bytes},
        {"model_n_params", r.model.n_params},
        {"simd_target", kernels::simd_target_name()},
        {"n_batch", r.n_batch},
        {"n_threads", r.test.n_threads},
        {"kv_policy", r.test.cache.policy.label()},
        {"kv_budget", r.test.cache.policy.bounded() ? r.test.cache.policy.budget : -1},
        {"kv_prefill", r.test.cache.prefill.label()},
        {"kv_type", r.test.cache.kv_type.label()},
        {"test", r.test.name()},
        {"n_prompt", r.test.n_prompt},
        {"n_gen", r.test.n_gen},
        {"n_depth", r.test.n_depth},
        {"avg_ns", r.avg_ns},
        {"stddev_ns", r.stddev_ns},
        {"avg_ts", r.avg_ts},
        {"stddev_ts", r.stddev_ts},
        {"samples_ns", r.samples_ns},
        {"samples_ts", r.samples_ts},
        {"kv_bytes", r.kv_bytes},
        {"read_bytes_per_token", r.read_bytes_per_token},
        {"read_gbps", r.read_gbps},
    });
  }
  fmt::print("{}\n", list.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
}

// bench's flags, as given.
struct BenchFlags {
  std::string model;
  std::string n_prompt = "512";
  std::string n_gen = "128";
  std::string n_depth = "0";
  std::string threads;  // empty: every core
  int n_batch = 512;
  int repetitions = 5;
  std::string output = "md";
  std::string policy = "full";
  std::string budget = "0";
  std::string prefill = "exact";
  KvTypeFlags kv_type;
  uint64_t seed = 1234;
  bool no_warmup = false;
  bool progress = false;
  bool mmap = false;
  std::optional<bool> repack;
  GpuFlags gpu;
};

void declare_bench_flags(CLI::App* cmd, BenchFlags& f) {
  cmd->add_option("-m,--model", f.model, "GGUF model file (default: bundled stories260K)");
  cmd->add_option("-p,--n-prompt", f.n_prompt, "prompt lengths, comma-separated (0: none)")
      ->capture_default_str();
  cmd->add_option("-n,--n-gen", f.n_gen, "decode lengths, comma-separated (0: none)")
      ->capture_default_str();
  cmd->add_option("-d,--n-depth", f.n_depth,
                  "tokens in the cache before each test (untimed), comma-separated")
      ->capture_default_str();
  cmd->add_option("-t,--threads", f.threads,
                  "thread counts, comma-separated (default: all cores)");
  cmd->add_option("-b,--batch-size", f.n_batch, "prompt tokens per forward pass")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("-r,--repetitions", f.repetitions, "runs of each test")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("-o,--output", f.output, "output format: md | json")
      ->capture_default_str()
      ->check(CLI::IsMember({"md", "json"}));
  cmd->add_option("--kv-policy", f.policy,
                  "KV policies NAME[:ARG], comma-separated (" + kv::policy_choices() + ")")
      ->capture_default_str();
  cmd->add_option("--kv-budget", f.budget,
                  "states kept per layer k (bounded policies), comma-separated");
  cmd->add_option("--kv-prefill", f.prefill,
                  "how the depth and pp tokens join the cache: exact | chunk:C | chunk:inf")
      ->capture_default_str();
  f.kv_type.add(*cmd, "f32", /*list=*/true);
  cmd->add_option("-s,--seed", f.seed, "seed of the random token ids")->capture_default_str();
  cmd->add_flag("--no-warmup", f.no_warmup, "skip the warmup run of each test");
  cmd->add_flag("--mmap", f.mmap,
                "map the model file instead of reading it into memory (llama-bench's default)");
  cmd->add_flag("--progress", f.progress, "report progress on stderr");
  add_repack_flags(*cmd, f.repack);
  f.gpu.add(*cmd);
}

// What the flags ask for: the lists of prompt, decode, depth and thread counts, and a cache
// configuration for each K/V type x policy x budget (one for an unbounded policy).
eval::BenchOptions bench_options(const BenchFlags& f) {
  eval::BenchOptions o;
  o.n_prompt = or_fail(parse_int_list("-p", f.n_prompt, 0, 1 << 20));
  o.n_gen = or_fail(parse_int_list("-n", f.n_gen, 0, 1 << 20));
  o.n_depth = or_fail(parse_int_list("-d", f.n_depth, 0, 1 << 22));
  o.n_threads = f.threads.empty() ? std::vector<int>{ModelFlags{}.n_threads()}
                                  : or_fail(parse_int_list("-t", f.threads, 1, 1024));
  const std::vector<int> budgets = or_fail(parse_int_list("--kv-budget", f.budget, 0, 1 << 24));
  const PrefillMode prefill = or_fail(parse_prefill(f.prefill));
  o.caches.clear();
  for (const std::string& type_text : f.kv_type.texts()) {
    const KvFormat kv_type = or_fail(parse_kv_format(type_text));
    for (const std::string& policy : split_list(f.policy)) {
      bool unbounded_done = false;
      for (int budget : budgets) {
        const kv::PolicySpec spec = or_fail(kv::parse_policy(policy, budget));
        if (!spec.bounded()) {
          if (unbounded_done) continue;  // the budget means nothing to `full`
          unbounded_done = true;
        }
        o.caches.push_back({.policy = spec, .kv_type = kv_type, .prefill = prefill});
      }
    }
  }
  o.n_batch = f.n_batch;
  o.repetitions = f.repetitions;
  o.warmup = !f.no_warmup;
  o.seed = f.seed;
  if (f.progress) {
    o.on_progress = [](const eval::BenchProgress& p) {
      fmt::print(stderr, "tova bench: test {}/{} {}: {}{}\n", p.index + 1, p.n_cases, p.name,
                 p.phase, p.phase == "warmup" ? "" : fmt::format(" {}", p.repetition + 1));
    };
  }
  return o;
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "prompt-processing (pp) and decode (tg) speed, like llama-bench");
  declare_bench_flags(cmd, *flags);
  cmd->callback([flags] {
    const BenchFlags& f = *flags;
    const eval::BenchOptions o = bench_options(f);
    const std::string path = f.model.empty() ? bundled_model_path() : f.model;
    f.gpu.note();
    // The tests run on pools of their own thread counts (-t lists several).
    const auto engine = or_fail(
        Engine::load({.model_path = path,
                      .n_threads = 1,
                      .mmap = f.mmap,
                      .repack = f.repack,
                      .need_tokenizer = false}));
    auto results = eval::run_bench(*engine, path, o);
    if (!results.ok()) throw CLI::RuntimeError(fail(results.message()));
    if (f.output == "json") {
      print_json(*results);
    } else {
      print_markdown(*results);
    }
  });
}

}  // namespace tova::cli
