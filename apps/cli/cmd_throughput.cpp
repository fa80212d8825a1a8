// tova throughput: the paper's Table 1 on this machine. At a fixed K/V memory budget, how many
// sequences each multi-state size lets decode together, and the aggregate decode speed that
// buys (see eval/throughput.h for the protocol).
#include <fmt/format.h>


#include "commands.h"
#include "common.h"
#include "output_dir.h"
#include "plots.h"
#include "tova/eval/throughput.h"
#include "tova/simd_target.h"

namespace tova::cli {

namespace {

// throughput's flags, as given.
struct ThroughputFlags {
  ModelFlags model;
  std::string kv_memory;
  int full_batch = 0;
  int ctx = 4096;
  std::string policy = "full,tova";
  std::string budget = "256,512,1024,2048";
  KvTypeFlags kv_type;
  int steps = 16;
  int repetitions = 3;
  int warmup = 2;
  int n_batch = 512;
  int batch_cap = 0;
  uint64_t seed = 1234;
  std::string output = "md";
  std::string out_dir;
  bool force = false;
  bool progress = false;
};

void declare_throughput_flags(CLI::App* cmd, ThroughputFlags& f) {
  f.model.add(*cmd);
  cmd->add_option("--kv-memory", f.kv_memory,
                  "K/V bytes for all sequences together (e.g. 805306368, 768M, 1.5G)");
  cmd->add_option("--full-batch", f.full_batch,
                  "instead of --kv-memory: the budget that holds this many `full` sequences of "
                  "-c tokens in the first --kv-type (the paper: 8)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("-c,--ctx-size", f.ctx, "tokens each sequence has seen when decoding starts")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 22));
  cmd->add_option("--kv-policy", f.policy,
                  "KV policies NAME[:ARG], comma-separated (" + kv::policy_choices() + ")")
      ->capture_default_str();
  cmd->add_option("--kv-budget", f.budget, "multi-state sizes k, comma-separated")
      ->capture_default_str();
  f.kv_type.add(*cmd, "f16", /*list=*/true);
  cmd->add_option("--steps", f.steps, "decode steps per measured window")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("-r,--repetitions", f.repetitions, "measured windows per configuration")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--warmup", f.warmup, "untimed decode steps first")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  cmd->add_option("-b,--batch-size", f.n_batch, "prefill tokens per forward pass")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--batch-cap", f.batch_cap,
                  "decode at most this many sequences (the max batch is still reported)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("-s,--seed", f.seed, "seed of the random token ids")->capture_default_str();
  cmd->add_option("-o,--output", f.output, "output format: md | json")
      ->capture_default_str()
      ->check(CLI::IsMember({"md", "json"}));
  cmd->add_option("--out", f.out_dir,
                  "also write results.json, throughput.gp/.png/.svg into this new folder");
  cmd->add_flag("--force", f.force, "replace --out if it exists");
  cmd->add_flag("--progress", f.progress, "report progress on stderr");
}

eval::ThroughputOptions throughput_options(const ThroughputFlags& f) {
  if (f.kv_memory.empty() == (f.full_batch == 0)) {
    throw CLI::RuntimeError(fail("give exactly one of --kv-memory BYTES and --full-batch N"));
  }
  eval::ThroughputOptions o;
  if (!f.kv_memory.empty()) o.kv_memory = or_fail(parse_bytes("--kv-memory", f.kv_memory));
  o.full_batch = f.full_batch;
  o.ctx = f.ctx;
  o.policies = or_fail(parse_policy_grid(f.policy, f.budget));
  o.kv_types.clear();
  for (const std::string& t : f.kv_type.texts()) o.kv_types.push_back(or_fail(parse_kv_format(t)));
  o.n_steps = f.steps;
  o.repetitions = f.repetitions;
  o.warmup_steps = f.warmup;
  o.n_batch = f.n_batch;
  o.batch_cap = f.batch_cap;
  o.seed = f.seed;
  if (f.progress) {
    o.on_progress = [](const eval::ThroughputProgress& p) {
      fmt::print(stderr, "tova throughput: {}/{} {}: {}{}\n", p.index + 1, p.n_configs, p.label,
                 p.phase, p.batch > 0 ? fmt::format(" (batch {})", p.batch) : "");
    };
  }
  return o;
}

// The report as a Markdown table, a configuration a row.
void print_throughput_table(const eval::BenchModelInfo& info, int n_threads,
                            const eval::ThroughputReport& rep) {
  fmt::print("{}, {} threads, ctx {}, K/V memory {} ({} bytes), SIMD {}\n\n", info.model_type,
             n_threads, rep.ctx, format_bytes(rep.kv_memory), rep.kv_memory,
             kernels::simd_target_name());
  std::vector<std::vector<std::string>> rows;
  for (const eval::ThroughputResult& r : rep.results) {
    // A bounded state larger than full's saves nothing: flagged (and left out of the plot).
    const std::string flag = eval::larger_than_full(rep, r) ? " (larger than full)" : "";
    rows.push_back({r.budget < 0 ? r.policy : fmt::format("{} k={}{}", r.policy, r.budget, flag),
                    r.kv_type, format_bytes(r.bytes_per_seq), std::to_string(r.max_batch),
                    std::to_string(r.batch), fmt::format("{:.2f}", r.step_ms),
                    fmt::format("{:.2f} ± {:.2f}", r.avg_ts, r.stddev_ts),
                    fmt::format("{:.2f}", r.relative), fmt::format("{:.1f}", r.read_gbps)});
  }
  print_markdown_table({"multi-state", "K/V type", "K/V per sequence", "max batch", "batch",
                        "step ms", "aggregate t/s", "relative", "GB/s read"},
                       rows, [](size_t i) { return i >= 2; });
}

}  // namespace

void add_throughput_command(CLI::App& app) {
  auto flags = std::make_shared<ThroughputFlags>();
  CLI::App* cmd = app.add_subcommand(
      "throughput",
      "decode throughput at a fixed K/V memory: max batch and aggregate tok/s per multi-state "
      "size (the paper's Table 1)");
  declare_throughput_flags(cmd, *flags);
  cmd->callback([flags] {
    const ThroughputFlags& f = *flags;
    const eval::ThroughputOptions o = throughput_options(f);
    std::unique_ptr<plot::OutputDir> dir;
    if (!f.out_dir.empty()) dir = or_fail(plot::OutputDir::create(f.out_dir, f.force));
    const std::string path = f.model.model_path();
    const auto engine = or_fail(f.model.load(/*need_tokenizer=*/false));
    const eval::ThroughputReport rep =
        or_fail(eval::run_throughput(*engine, o));
    const eval::BenchModelInfo info = eval::describe_model(*engine, path);
    if (f.output == "json") {
      fmt::print("{}\n", rep.json);
    } else {
      print_throughput_table(info, engine->n_threads(), rep);
    }
    if (dir) {
      or_fail(plot::write_file(
          dir->file("results.json"),
          rep.json + "\n"));
      const std::string title = fmt::format("{}: decode throughput at {} of K/V, ctx {}",
                                            info.model_type, format_bytes(rep.kv_memory), rep.ctx);
      or_fail(plot::plot_throughput(rep, title, dir->tmp_path()));
      or_fail(dir->commit());
    }
  });
}

}  // namespace tova::cli
