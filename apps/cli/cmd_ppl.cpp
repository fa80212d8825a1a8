// tova ppl: perplexity of many (policy, budget) configurations on chunks of a text, all of them
// in shared forward passes. Markdown tables on stdout; JSON, CSV and plots in --out.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>

#include "commands.h"
#include "common.h"
#include "output_dir.h"
#include "plots.h"
#include "progress.h"
#include "tova/eval/ppl.h"

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
  std::vector<const eval::ConfigResult*> fulls;  // one per K/V format
  auto suffix = [&](const eval::ConfigResult& c) {
    return r.several_kv_types ? " " + c.kv_type.label() : std::string();
  };
  for (const eval::ConfigResult& c : r.configs) {
    if (!c.policy.bounded()) {
      fulls.push_back(&c);
      continue;
    }
    const std::string name = c.policy.label() + suffix(c);
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
  if (!fulls.empty()) {
    s += " full |";
    rule += "---:|";
  }
  s += fmt::format("\n{}\n", rule);
  for (const eval::ConfigResult* full : fulls) {
    s += fmt::format("| full{} |", suffix(*full));
    for (size_t i = 0; i < budgets.size(); ++i) s += " |";
    s += fmt::format(" {} |\n", fmt_ppl(full->ppl));
  }
  for (const std::string& name : rows) {
    s += fmt::format("| {} |", name);
    for (int b : budgets) {
      auto it = cell.find({name, b});
      s += fmt::format(" {} |", it == cell.end() ? std::string("-") : fmt_ppl(it->second));
    }
    if (!fulls.empty()) s += " |";
    s += "\n";
  }
  return s;
}

// Table 2: one row per configuration with the uncertainty and the comparison with full.
std::string detail_table(const eval::SweepResult& r) {
  std::string s = r.several_kv_types
                      ? "| policy | k | K/V | ppl ± stderr | mean NLL | KL mean | KL p99 | top-1 "
                        "agree |\n|---|---:|---|---:|---:|---:|---:|---:|\n"
                      : "| policy | k | ppl ± stderr | mean NLL | KL mean | KL p99 | top-1 agree |\n"
                        "|---|---:|---:|---:|---:|---:|---:|\n";
  auto opt = [](const std::optional<double>& v, const char* f) {
    return v && std::isfinite(*v) ? fmt::format(fmt::runtime(f), *v) : std::string("-");
  };
  for (const eval::ConfigResult& c : r.configs) {
    const std::string se = std::isfinite(c.ppl_se) ? fmt::format("{:.3f}", c.ppl_se) : "-";
    s += fmt::format("| {} | {} |{} {} ± {} | {:.4f} | {} | {} | {} |\n", c.policy.label(),
                     c.policy.bounded() ? std::to_string(c.policy.budget) : "-",
                     r.several_kv_types ? " " + c.kv_type.label() + " |" : "", fmt_ppl(c.ppl), se,
                     c.mean_nll, opt(c.kl_mean, "{:.5f}"), opt(c.kl_p99, "{:.4f}"),
                     c.top1_agree ? fmt::format("{:.1f}%", *c.top1_agree * 100) : "-");
  }
  return s;
}

// A progress line on stderr, redrawn about ten times a second (terminals only).
std::function<void(const eval::SweepProgress&)> progress_printer() {
  return [last = -1.0](const eval::SweepProgress& p) mutable {
    if (p.seconds - last < 0.1 && p.steps_done < p.steps_total) return;
    last = p.seconds;
    fmt::print(stderr, "\r{}", plot::progress_line(p.steps_done, p.steps_total, p.seconds));
    std::fflush(stderr);
  };
}

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
  KvTypeFlags kv_type;
  std::string positions = "absolute";
  int n_batch = 32;
  bool no_batch = false;
  bool no_share = false;
  bool no_plot = false;
  bool stream = false;
  int window = 1024;
  int max_full_ctx = 0;
  int trained_ctx = 0;  // 0: the GGUF's context_length
};

void print_stream(const eval::PplReport& r) {
  fmt::print("## Streaming perplexity: {}\n\n", r.title);
  fmt::print("| configuration | predictions | ppl | first window | last window |\n"
             "|---|---:|---:|---:|---:|\n");
  for (const eval::StreamCurve& c : r.curves) {
    fmt::print("| {} | {} | {} | {} | {} |\n", c.label, c.n_predictions, fmt_ppl(c.ppl),
               c.window_ppl.empty() ? "-" : fmt_ppl(c.window_ppl.front()),
               c.window_ppl.empty() ? "-" : fmt_ppl(c.window_ppl.back()));
  }
  fmt::print("\n");
  fmt::print(stderr, "streamed {} tokens through {} configurations in {:.2f} s ({} forward calls)\n",
             r.n_tokens, r.curves.size(), r.sweep_seconds, r.n_forward_calls);
}

void print_sweep(const eval::PplReport& rep, const Flags& f) {
  const eval::SweepResult& r = rep.sweep;
  fmt::print("## Perplexity: {}\n\n{}\n{}", rep.title, ppl_table(r), "\n");
  fmt::print("{}\n", detail_table(r));
  const int64_t steps = static_cast<int64_t>(r.n_chunks) * r.ctx * r.configs.size();
  fmt::print(stderr,
             "scored {} configurations x {} chunks x {} predictions in {:.2f} s "
             "({:.0f} token steps/s, {} forward calls, {})\n",
             r.configs.size(), r.n_chunks, r.ctx - 1, r.seconds, steps / r.seconds,
             r.n_forward_calls,
             f.no_batch ? "one configuration per call"
                        : (f.no_share ? "batched, no prefix sharing" : "batched"));
}

void declare_ppl_flags(CLI::App* cmd, Flags& f) {
  f.model.add(*cmd);
  auto* file_opt =
      cmd->add_option("-f,--file", f.text_file, "text to score (tokenized without BOS)");
  cmd->add_option("--tokens", f.tokens_file,
                  "JSON list of token ids to score instead of -f (used as given, no BOS added)")
      ->excludes(file_opt);
  cmd->add_option("--kv-policy", f.policies,
                  "comma-separated policies NAME[:ARG] (" + kv::policy_choices() +
                      "); full runs once, the others once per budget")
      ->delimiter(',');
  cmd->add_option("--kv-budget", f.budgets, "comma-separated budgets k (states per layer)")
      ->delimiter(',');
  cmd->add_option("-c,--ctx-size", f.ctx,
                  "tokens per chunk, BOS included (default: the model's training context)")
      ->check(CLI::Range(2, 1 << 20));
  cmd->add_option("--chunks", f.chunks, "score only the first M chunks (default: all)")
      ->check(CLI::Range(1, 1 << 30));
  cmd->add_option("--out", f.out,
                  "write results.json, results.csv, ppl.png and ppl.svg into this folder");
  cmd->add_flag("--force", f.force, "replace a non-empty --out folder");
  f.kv_type.add(*cmd, "f32", /*list=*/true);
  add_positions_option(*cmd, f.positions);
  cmd->add_option("-b,--batch-size", f.n_batch,
                  "positions per sequence in one forward pass (all configurations share it)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_flag("--no-batch", f.no_batch,
                "run each configuration in forward passes of its own (slow; for comparison)");
  cmd->add_flag("--no-share", f.no_share,
                "compute every configuration from position 0, instead of letting it ride along "
                "with full until its first eviction (same results; for comparison)");
  cmd->add_flag("--no-plot", f.no_plot, "do not draw ppl.png / ppl.svg (no gnuplot needed)");
  cmd->add_flag("--stream", f.stream,
                "read the whole text (or its first -c tokens) as ONE sequence per "
                "configuration and report perplexity per --window positions and cumulatively; "
                "--kv-positions may then list several modes (absolute,gap,rank)");
  cmd->add_option("--window", f.window, "--stream: positions per reported window")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 30));
  cmd->add_option("--max-full-ctx", f.max_full_ctx,
                  "--stream: run `full` only over the first N tokens (its cache grows with every "
                  "token; default: 4x the model's training context)")
      ->check(CLI::Range(2, 1 << 30));
  cmd->add_option("--trained-ctx", f.trained_ctx,
                  "--stream: the context the model was really trained on, for the plot's line and "
                  "--max-full-ctx's default (default: the GGUF's context_length; stories260K's "
                  "says 2048, it was trained on 512)")
      ->check(CLI::Range(1, 1 << 30));
}

// What the flags ask for (the K/V types and position modes each once).
eval::PplOptions ppl_options(const Flags& f) {
  eval::PplOptions o{.policies = f.policies,
                     .budgets = f.budgets,
                     .ctx = f.ctx,
                     .chunks = f.chunks,
                     .positions = {},
                     .n_batch = f.n_batch,
                     .batched = !f.no_batch,
                     .share_prefix = !f.no_share,
                     .stream = f.stream,
                     .window = f.window,
                     .max_full_ctx = f.max_full_ctx,
                     .trained_ctx = f.trained_ctx,
                     .f32_activations = f.model.f32_activations};
  for (const std::string& t : f.kv_type.texts()) {
    const KvFormat kv = or_fail(parse_kv_format(t));
    if (std::find(o.kv_types.begin(), o.kv_types.end(), kv) != o.kv_types.end()) {
      throw CLI::RuntimeError(fail("--kv-type lists " + kv.label() + " twice"));
    }
    o.kv_types.push_back(kv);
  }
  for (const std::string& name : split_list(f.positions)) {
    const kv::PositionMode mode = or_fail(kv::parse_position_mode(name));
    if (std::find(o.positions.begin(), o.positions.end(), mode) == o.positions.end()) {
      o.positions.push_back(mode);
    }
  }
  return o;
}

// results.json, results.csv and the plot into the --out folder, committed whole or not at all.
void write_ppl_out(plot::OutputDir& out, const eval::PplReport& r, const Flags& f) {
  Status st = plot::write_file(
      out.file("results.json"),
      r.json + "\n");
  if (st.ok()) st = plot::write_file(out.file("results.csv"), r.csv);
  if (st.ok() && !f.no_plot) {
    st = r.stream ? plot::plot_stream(r.curves, r.title, r.trained_ctx, out.tmp_path())
                  : plot::plot_sweep(r.sweep, r.title, out.tmp_path());
    if (!st.ok()) st = make_error("{} (--no-plot skips the plots)", st.message());
  }
  if (st.ok()) st = out.commit();
  or_fail(st);
  fmt::print(stderr, "wrote results.json, results.csv{} to {}\n",
             f.no_plot ? "" : (r.stream ? ", stream.png, stream.svg" : ", ppl.png, ppl.svg"),
             out.path());
}

}  // namespace

void add_ppl_command(CLI::App& app) {
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "ppl", "perplexity sweep: every policy x every budget on chunks of a text, batched");
  declare_ppl_flags(cmd, *flags);
  cmd->footer(
      "Each chunk is BOS followed by the next ctx-1 tokens of the text, positions from 0, and "
      "EVERY prediction in it is scored (ctx-1 per chunk), unlike llama-perplexity, which scores "
      "only the second half of each chunk. Prompts are processed with exact per-token "
      "semantics. The ppl standard error is the standard error of the per-chunk mean NLLs "
      "times ppl (delta method). KL is KL(p_full || p_config) per prediction.");
  cmd->callback([flags] {
    const Flags& f = *flags;
    eval::PplOptions o = ppl_options(f);
    if (f.text_file.empty() && f.tokens_file.empty()) {
      throw CLI::RuntimeError(fail("nothing to score: give a text (-f) or token ids (--tokens)"));
    }
    // A bad --out fails now, not after the sweep.
    std::unique_ptr<plot::OutputDir> out;
    if (!f.out.empty()) out = or_fail(plot::OutputDir::create(f.out, f.force));
    read_input(o, f.text_file, f.tokens_file);
    const auto engine = or_fail(f.model.load(f.tokens_file.empty()));
    o.model_label = f.model.model_path();
    const bool tty = ::isatty(2) != 0;
    if (tty) o.on_progress = progress_printer();
    auto rep = eval::run_ppl(*engine, o);
    if (tty) fmt::print(stderr, "\r\033[K");
    if (!rep.ok()) throw CLI::RuntimeError(fail(rep.message()));
    if (rep->stream) {
      print_stream(*rep);
    } else {
      print_sweep(*rep, f);
    }
    if (out) write_ppl_out(*out, *rep, f);
  });
}

}  // namespace tova::cli
