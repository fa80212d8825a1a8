// tova throughput: the paper's Table 1 on this machine. At a fixed K/V memory budget, how many
// sequences each multi-state size lets decode together, and the aggregate decode speed that
// buys (see eval/throughput.h for the protocol).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "output_dir.h"
#include "plots.h"
#include "tova/eval.h"
#include "tova/simd_target.h"

namespace tova::cli {

void add_throughput_command(CLI::App& app) {
  struct Flags {
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
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "throughput",
      "decode throughput at a fixed K/V memory: max batch and aggregate tok/s per multi-state "
      "size (the paper's Table 1)");
  flags->model.add(*cmd);
  cmd->add_option("--kv-memory", flags->kv_memory,
                  "K/V bytes for all sequences together (e.g. 805306368, 768M, 1.5G)");
  cmd->add_option("--full-batch", flags->full_batch,
                  "instead of --kv-memory: the budget that holds this many `full` sequences of "
                  "-c tokens in the first --kv-type (the paper: 8)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("-c,--ctx-size", flags->ctx, "tokens each sequence has seen when decoding starts")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 22));
  cmd->add_option("--kv-policy", flags->policy,
                  "KV policies NAME[:ARG], comma-separated (" + kv::policy_choices() + ")")
      ->capture_default_str();
  cmd->add_option("--kv-budget", flags->budget, "multi-state sizes k, comma-separated")
      ->capture_default_str();
  flags->kv_type.add(*cmd, "f16", /*list=*/true);
  cmd->add_option("--steps", flags->steps, "decode steps per measured window")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("-r,--repetitions", flags->repetitions, "measured windows per configuration")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--warmup", flags->warmup, "untimed decode steps first")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  cmd->add_option("-b,--batch-size", flags->n_batch, "prefill tokens per forward pass")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--batch-cap", flags->batch_cap,
                  "decode at most this many sequences (the max batch is still reported)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("-s,--seed", flags->seed, "seed of the random token ids")->capture_default_str();
  cmd->add_option("-o,--output", flags->output, "output format: md | json")
      ->capture_default_str()
      ->check(CLI::IsMember({"md", "json"}));
  cmd->add_option("--out", flags->out_dir,
                  "also write results.json, throughput.gp/.png/.svg into this new folder");
  cmd->add_flag("--force", flags->force, "replace --out if it exists");
  cmd->add_flag("--progress", flags->progress, "report progress on stderr");
  cmd->callback([flags] {
    const Flags& f = *flags;
    auto check = [](auto r) {
      if (!r.ok()) throw CLI::RuntimeError(fail(r.message()));
      return std::move(*r);
    };
    if (f.kv_memory.empty() == (f.full_batch == 0)) {
      throw CLI::RuntimeError(fail("give exactly one of --kv-memory BYTES and --full-batch N"));
    }
    eval::ThroughputOptions o;
    if (!f.kv_memory.empty()) o.kv_memory = check(parse_bytes("--kv-memory", f.kv_memory));
    o.full_batch = f.full_batch;
    o.ctx = f.ctx;
    o.policies = check(parse_policy_grid(f.policy, f.budget));
    o.kv_types.clear();
    for (const std::string& t : f.kv_type.texts()) o.kv_types.push_back(check(parse_kv_format(t)));
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
    std::unique_ptr<plot::OutputDir> dir;
    if (!f.out_dir.empty()) dir = check(plot::OutputDir::create(f.out_dir, f.force));
    const std::string path = f.model.model_path();
    const auto engine = check(f.model.load(/*need_tokenizer=*/false));
    const eval::ThroughputReport rep =
        check(eval::run_throughput(*engine, o));
    const eval::BenchModelInfo info = eval::describe_model(*engine, path);
    nlohmann::ordered_json header;
    header["model_filename"] = path;
    header["model_type"] = info.model_type;
    header["n_threads"] = engine->n_threads();
    header["kv_types"] = f.kv_type.texts();
    header["simd_target"] = kernels::simd_target_name();
    const nlohmann::ordered_json json = eval::throughput_json(rep, header);

    if (f.output == "json") {
      fmt::print("{}\n", json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
    } else {
      fmt::print("{}, {} threads, ctx {}, K/V memory {} ({} bytes), SIMD {}\n\n", info.model_type,
                 engine->n_threads(), rep.ctx, format_bytes(rep.kv_memory), rep.kv_memory,
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
    if (dir) {
      check(plot::write_file(
          dir->file("results.json"),
          json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"));
      const std::string title = fmt::format("{}: decode throughput at {} of K/V, ctx {}",
                                            info.model_type, format_bytes(rep.kv_memory), rep.ctx);
      check(plot::plot_throughput(rep, title, dir->tmp_path()));
      check(dir->commit());
    }
  });
}

}  // namespace tova::cli
