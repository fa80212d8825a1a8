// tova ppl: perplexity of many (policy, budget) configurations on chunks of a text, all of them
// in shared forward passes. Markdown tables on stdout; JSON, CSV and plots in --out.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "commands.h"
#include "common.h"
#include "core/timer.h"
#include "eval/output_dir.h"
#include "eval/plots.h"
#include "eval/ppl_sweep.h"
#include "eval/progress.h"
#include "eval/report.h"

namespace tova::cli {

namespace {

std::string fmt_ppl(double v) {
  if (!std::isfinite(v)) return "-";
  return v >= 1000 ? fmt::format("{:.1f}", v) : fmt::format("{:.3f}", v);
}

// Table 1: rows = policies, columns = budgets, cells = perplexity (the paper's Table 3);
// `full` has its own row and column.
std::string ppl_table(const eval::SweepResult& r) {
  std::vector<int> budgets;
  std::vector<std::string> rows;
  std::map<std::pair<std::string, int>, double> cell;
  const eval::ConfigResult* full = nullptr;
  for (const eval::ConfigResult& c : r.configs) {
    if (!c.policy.bounded()) {
      full = &c;
      continue;
    }
    const std::string name = c.policy.label();
    if (std::find(rows.begin(), rows.end(), name) == rows.end()) rows.push_back(name);
    if (std::find(budgets.begin(), budgets.end(), c.policy.budget) == budgets.end()) {
      budgets.push_back(c.policy.budget);
    }
    cell[{name, c.policy.budget}] = c.ppl;
  }
  std::sort(budgets.begin(), budgets.end());
  std::string s = "| policy \\ k |";
  std::string rule = "|---|";
  for (int b : budgets) {
    s += fmt::format(" {} |", b);
    rule += "---:|";
  }
  if (full != nullptr) {
    s += " full |";
    rule += "---:|";
  }
  s += fmt::format("\n{}\n", rule);
  if (full != nullptr) {
    s += "| full |";
    for (size_t i = 0; i < budgets.size(); ++i) s += " |";
    s += fmt::format(" {} |\n", fmt_ppl(full->ppl));
  }
  for (const std::string& name : rows) {
    s += fmt::format("| {} |", name);
    for (int b : budgets) {
      auto it = cell.find({name, b});
      s += fmt::format(" {} |", it == cell.end() ? std::string("-") : fmt_ppl(it->second));
    }
    if (full != nullptr) s += " |";
    s += "\n";
  }
  return s;
}

// Table 2: one row per configuration with the uncertainty and the comparison with full.
std::string detail_table(const eval::SweepResult& r) {
  std::string s =
      "| policy | k | ppl ± stderr | mean NLL | KL mean | KL p99 | top-1 agree |\n"
      "|---|---:|---:|---:|---:|---:|---:|\n";
  auto opt = [](const std::optional<double>& v, const char* f) {
    return v && std::isfinite(*v) ? fmt::format(fmt::runtime(f), *v) : std::string("-");
  };
  for (const eval::ConfigResult& c : r.configs) {
    const std::string se = std::isfinite(c.ppl_se) ? fmt::format("{:.3f}", c.ppl_se) : "-";
    s += fmt::format("| {} | {} | {} ± {} | {:.4f} | {} | {} | {} |\n", c.policy.label(),
                     c.policy.bounded() ? std::to_string(c.policy.budget) : "-", fmt_ppl(c.ppl), se,
                     c.mean_nll, opt(c.kl_mean, "{:.5f}"), opt(c.kl_p99, "{:.4f}"),
                     c.top1_agree ? fmt::format("{:.1f}%", *c.top1_agree * 100) : "-");
  }
  return s;
}

}  // namespace

void add_ppl_command(CLI::App& app) {
  struct Flags {
    ModelFlags model;
    std::string text_file;
    std::string tokens_file;
    std::vector<std::string> policies;
    std::vector<int> budgets;
    int ctx = 0;
    int chunks = 0;
    std::string out;
    bool force = false;
    std::string kv_type = "f32";
    std::string positions = "absolute";
    int n_batch = 32;
    bool no_batch = false;
    bool no_share = false;
    bool no_plot = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "ppl", "perplexity sweep: every policy x every budget on chunks of a text, batched");
  flags->model.add(*cmd);
  auto* file_opt =
      cmd->add_option("-f,--file", flags->text_file, "text to score (tokenized without BOS)");
  cmd->add_option("--tokens", flags->tokens_file,
                  "JSON list of token ids to score instead of -f (used as given, no BOS added)")
      ->excludes(file_opt);
  cmd->add_option("--policies", flags->policies,
                  "comma-separated policies NAME[:ARG] (" + kv::policy_choices() +
                      "); full runs once, the others once per budget")
      ->delimiter(',');
  cmd->add_option("--budgets", flags->budgets, "comma-separated budgets k (states per layer)")
      ->delimiter(',');
  cmd->add_option("--ctx", flags->ctx,
                  "tokens per chunk, BOS included (default: the model's training context)")
      ->check(CLI::Range(2, 1 << 20));
  cmd->add_option("--chunks", flags->chunks, "score only the first M chunks (default: all)")
      ->check(CLI::Range(1, 1 << 30));
  cmd->add_option("--out", flags->out,
                  "write results.json, results.csv, ppl.png and ppl.svg into this folder");
  cmd->add_flag("--force", flags->force, "replace a non-empty --out folder");
  cmd->add_option("--kv-type", flags->kv_type, "K/V storage type: f32 | f16")
      ->capture_default_str();
  add_positions_option(*cmd, flags->positions);
  cmd->add_option("-b,--batch", flags->n_batch,
                  "positions per sequence in one forward pass (all configurations share it)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_flag("--no-batch", flags->no_batch,
                "run each configuration in forward passes of its own (slow; for comparison)");
  cmd->add_flag("--no-share", flags->no_share,
                "compute every configuration from position 0, instead of letting it ride along "
                "with full until its first eviction (same results; for comparison)");
  cmd->add_flag("--no-plot", flags->no_plot, "do not draw ppl.png / ppl.svg (no gnuplot needed)");
  cmd->footer(
      "Each chunk is BOS followed by the next ctx-1 tokens of the text, positions from 0, and "
      "EVERY prediction in it is scored (ctx-1 per chunk), unlike llama-perplexity, which scores "
      "only the second half of each chunk. Prompts are processed with exact per-token "
      "semantics. The ppl standard error is the standard error of the per-chunk mean NLLs "
      "times ppl (delta method). KL is KL(p_full || p_config) per prediction.");
  cmd->callback([flags] {
    const Flags& f = *flags;
    Timer wall;
    auto kv_type = runtime::parse_kv_type(f.kv_type);
    if (!kv_type.ok()) throw CLI::RuntimeError(fail(kv_type.message()));
    auto positions = kv::parse_position_mode(f.positions);
    if (!positions.ok()) throw CLI::RuntimeError(fail(positions.message()));
    if (f.policies.empty()) {
      throw CLI::RuntimeError(fail("no policies given (--policies full,window,tova,...)"));
    }
    if (f.text_file.empty() && f.tokens_file.empty()) {
      throw CLI::RuntimeError(fail("nothing to score: give a text (-f) or token ids (--tokens)"));
    }
    auto lm = load_model(f.model.model_path(), f.tokens_file.empty(), f.model.options());
    if (!lm.ok()) throw CLI::RuntimeError(fail(lm.message()));
    const model::Model& m = *lm->model;
    const int ctx = f.ctx > 0 ? f.ctx : (m.config().n_ctx_train > 1 ? m.config().n_ctx_train : 512);
    auto configs = eval::sweep_configs(f.policies, f.budgets, ctx);
    if (!configs.ok()) throw CLI::RuntimeError(fail(configs.message()));

    std::unique_ptr<eval::OutputDir> out;
    if (!f.out.empty()) {
      auto o = eval::OutputDir::create(f.out, f.force);
      if (!o.ok()) throw CLI::RuntimeError(fail(o.message()));
      out = std::move(o).value();
    }

    const std::string input = f.tokens_file.empty() ? f.text_file : f.tokens_file;
    auto in = read_input_ids(f.tokens_file, f.text_file, lm->tokenizer.get());
    if (!in.ok()) throw CLI::RuntimeError(fail(in.message()));
    const std::vector<int32_t>& ids = in->ids;
    const int32_t bos = in->from_text ? lm->tokenizer->bos() : -1;
    if (ids.empty()) throw CLI::RuntimeError(fail("'" + input + "' gives no tokens"));
    auto chunks = eval::make_chunks(ids, {.ctx = ctx, .bos = bos, .max_chunks = f.chunks});
    if (!chunks.ok()) throw CLI::RuntimeError(fail(input + ": " + chunks.message()));

    ThreadPool pool(f.model.n_threads());
    const bool tty = ::isatty(2) != 0;
    eval::SweepOptions so{.configs = *configs,
                          .kv_type = *kv_type,
                          .positions = *positions,
                          .n_batch = f.n_batch,
                          .batched = !f.no_batch,
                          .share_prefix = !f.no_share};
    if (tty) {
      so.on_progress = [last = -1.0](const eval::SweepProgress& p) mutable {
        if (p.seconds - last < 0.1 && p.steps_done < p.steps_total) return;  // ~10 redraws/s
        last = p.seconds;
        fmt::print(stderr, "\r{}", eval::progress_line(p.steps_done, p.steps_total, p.seconds));
        std::fflush(stderr);
      };
    }
    auto res = eval::run_sweep(m, pool, *chunks, so);
    if (tty) fmt::print(stderr, "\r\033[K");
    if (!res.ok()) throw CLI::RuntimeError(fail(res.message()));
    const eval::SweepResult& r = *res;

    const std::string title =
        fmt::format("{} on {}: ctx {}, {} chunk{}",
                    std::filesystem::path(f.model.model_path()).filename().string(),
                    std::filesystem::path(input).filename().string(), r.ctx, r.n_chunks,
                    r.n_chunks == 1 ? "" : "s");
    fmt::print("## Perplexity: {}\n\n{}\n{}", title, ppl_table(r), "\n");
    fmt::print("{}\n", detail_table(r));
    const int64_t steps = static_cast<int64_t>(r.n_chunks) * r.ctx * r.configs.size();
    fmt::print(stderr,
               "scored {} configurations x {} chunks x {} predictions in {:.2f} s "
               "({:.0f} token steps/s, {} forward calls, {})\n",
               r.configs.size(), r.n_chunks, r.ctx - 1, r.seconds, steps / r.seconds,
               r.n_forward_calls,
               f.no_batch ? "one configuration per call"
                          : (f.no_share ? "batched, no prefix sharing" : "batched"));

    if (out) {
      const nlohmann::ordered_json header = {
          {"model", f.model.model_path()},
          {"text",
           f.tokens_file.empty() ? nlohmann::ordered_json(f.text_file) : nlohmann::ordered_json()},
          {"tokens_file", f.tokens_file.empty() ? nlohmann::ordered_json()
                                                : nlohmann::ordered_json(f.tokens_file)},
          {"ctx", r.ctx},
          {"n_chunks", r.n_chunks},
          {"n_tokens", ids.size()},
          {"n_predictions_per_config", r.n_predictions},
          {"scoring", "every prediction of each chunk (ctx - 1); chunk = BOS + ctx - 1 tokens"},
          {"kv_type", f.kv_type},
          {"kv_positions", f.positions},
          {"f32_activations", f.model.f32_activations},
          {"batched", !f.no_batch},
          {"share_prefix", !f.no_batch && !f.no_share},
          {"n_batch", f.n_batch},
          {"threads", pool.size()},
          {"forward_calls", r.n_forward_calls},
          {"sweep_seconds", r.seconds},
          {"wall_seconds", wall.seconds()},
      };
      auto st =
          eval::write_file(out->file("results.json"), eval::sweep_json(r, header).dump(1) + "\n");
      if (st.ok()) st = eval::write_file(out->file("results.csv"), eval::sweep_csv(r));
      if (st.ok() && !f.no_plot) {
        st = eval::plot_sweep(r, title, out->tmp_path());
        if (!st.ok()) st = make_error("{} (--no-plot skips the plots)", st.message());
      }
      if (st.ok()) st = out->commit();
      if (!st.ok()) throw CLI::RuntimeError(fail(st.message()));
      fmt::print(stderr, "wrote results.json, results.csv{} to {}\n",
                 f.no_plot ? "" : ", ppl.png, ppl.svg", out->path());
    }
  });
}

}  // namespace tova::cli
