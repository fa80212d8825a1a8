// tova trace: which tokens a policy keeps, layer by layer, on one sequence fed token by token.
// A summary on stdout; trace.json (raw numbers) and a heat map in --out.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "common.h"
#include "output_dir.h"
#include "plots.h"
#include "progress.h"
#include "tova/eval/trace.h"
#include "tova/timer.h"

namespace tova::cli {

namespace {

// A token's stored text, made safe for one table cell.
std::string cell_text(const std::string& t) {
  std::string s;
  for (char c : t) {
    if (c == '\n') {
      s += "\\n";
    } else if (c == '|') {
      s += "\\|";
    } else if (c == '`') {
      s += "'";
    } else {
      s += c;
    }
  }
  return "`" + s + "`";
}

std::string num(double v, const char* f) {
  return std::isfinite(v) ? fmt::format(fmt::runtime(f), v) : std::string("-");
}

struct TraceFlags {
  ModelFlags model;
  CacheFlags cache;
  std::string text_file;
  std::string tokens_file;
  int ctx = 0;
  std::string out;
  bool force = false;
  int top = 20;
  int64_t far_age = 0;
  bool no_plot = false;
  std::string compare_kv_types;
};

// The per-layer summary of a trace on stdout.
void print_layers(const eval::TraceResult& r, int64_t far_age) {
  fmt::print("Survival = later tokens whose attention included the token (see --help).\n\n");
  fmt::print(
      "| layer | first token survival | median survival (evicted) | p90 (evicted) "
      "| evicted on arrival | survived >= 2k | recent k/2 share | mean age held "
      "| held >= {} back |\n"
      "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
      far_age);
  for (int il = 0; il < r.n_layer; ++il) {
    fmt::print("| {} | {:.1f} | {} | {} | {} | {} | {} | {} | {} |\n", il,
               r.first_token_survival[il], num(r.survival_median[il], "{:.1f}"),
               num(r.survival_p90[il], "{:.1f}"), num(r.evicted_on_arrival[il] * 100, "{:.1f}%"),
               num(r.kept_over_2k[il] * 100, "{:.1f}%"), num(r.recent_share[il], "{:.3f}"),
               num(r.mean_age[il], "{:.1f}"), num(r.far_share[il] * 100, "{:.1f}%"));
  }
  fmt::print(
      "\nRecent share, mean age and the share held from {} or more positions back "
      "(--far) are averaged over the steps that evict (t >= k) and KV heads.\n",
      far_age);
  if (std::isfinite(r.recent_share_mean)) {
    fmt::print(
        "\nShare of held states among the k/2 most recent positions, mean over layers "
        "and the steps that evict: {:.3f} (0.5 by construction for window, sink and h2o "
        "with an even k)\n",
        r.recent_share_mean);
  }
}

// --compare-kv-type: per layer and compared format, how the evictions differ.
void print_comparisons(const eval::TraceRun& run, const KvFormat& base) {
  if (run.comparisons.empty()) return;
  fmt::print(
      "\nEvictions against --kv-type {} (each type traced on its own): the share of the "
      "(KV head, step) pairs with an eviction where the evicted state differs, and the share "
      "of the states held under {} that are also held under the other type (mean over the "
      "steps that evict):\n\n| layer |",
      base.label(), base.label());
  std::string rule = "|---:|";
  for (const KvFormat& kt : run.compared) {
    fmt::print(" {0} different eviction | {0} held overlap | {0} first difference |",
               kt.label());
    rule += "---:|---:|---:|";
  }
  fmt::print("\n{}\n", rule);
  auto pct = [](double v) { return num(v * 100, "{:.1f}%"); };
  const int n_layer = run.trace.n_layer;
  for (int il = 0; il <= n_layer; ++il) {
    fmt::print("{}", il < n_layer ? fmt::format("| {} |", il) : std::string("| mean |"));
    for (const eval::EvictionComparison& c : run.comparisons) {
      if (il < n_layer) {
        fmt::print(" {} | {} | {} |", pct(c.differ[il]), pct(c.overlap[il]),
                   c.first_difference[il] < 0 ? std::string("-")
                                              : std::to_string(c.first_difference[il]));
      } else {
        fmt::print(" {} | {} | |", pct(c.differ_mean), pct(c.overlap_mean));
      }
    }
    fmt::print("\n");
  }
}

// The token strings kept longest.
void print_longest(const eval::TraceReport& rep) {
  if (rep.longest.empty()) return;
  fmt::print(
      "\nToken strings kept longest (mean survival over layers, KV heads and "
      "occurrences):\n\n| rank | token | mean survival | count |\n|---:|---|---:|---:|\n");
  int rank = 0;
  for (const eval::TokenSurvival& ts : rep.longest) {
    fmt::print("| {} | {} | {:.1f} | {} |\n", ++rank, cell_text(ts.text), ts.mean_survival,
               ts.count);
  }
}

// trace.json (and trace.png) into the --out folder.
void write_outputs(const TraceFlags& f, const eval::TraceReport& rep, plot::OutputDir& od) {
  const eval::TraceResult& r = rep.run.trace;
  auto st = plot::write_file(
      od.file("trace.json"),
      rep.json + "\n");
  if (st.ok() && !f.no_plot) {
    st = plot::plot_trace(r, rep.title, od.tmp_path());
    if (!st.ok()) st = make_error("{} (--no-plot skips the plot)", st.message());
  }
  if (st.ok()) st = od.commit();
  if (!st.ok()) throw CLI::RuntimeError(fail(st.message()));
  fmt::print(stderr, "traced {} tokens in {:.2f} s; wrote trace.json{} to {}\n", r.n_tokens,
             r.seconds, f.no_plot ? "" : ", trace.png", od.path());
}

// The whole command once its flags are read.
void run_trace_command(const TraceFlags& f) {
  if (f.cache.prefill != "exact") {
    throw CLI::RuntimeError(
        fail("tova trace feeds one token per step; --kv-prefill must be exact"));
  }
  eval::TraceRunOptions o{.cache = or_fail(f.cache.options()),
                          .ctx = f.ctx,
                          .far_age = f.far_age,
                          .top = f.top,
                          .f32_activations = f.model.f32_activations};
  if (f.text_file.empty() && f.tokens_file.empty()) {
    throw CLI::RuntimeError(fail("nothing to feed: give a text (-f) or token ids (--tokens)"));
  }
  for (const std::string& t :
       f.compare_kv_types.empty() ? std::vector<std::string>{} : split_list(f.compare_kv_types)) {
    o.compare.push_back(or_fail(parse_kv_format(t)));
  }
  auto out = or_fail(plot::OutputDir::create(f.out, f.force));
  read_input(o, f.text_file, f.tokens_file);
  const auto engine = or_fail(f.model.load());
  o.model_label = f.model.model_path();
  const bool tty = ::isatty(2) != 0;
  Timer t;
  if (tty) {
    o.on_progress = [&t, last = -1.0](int64_t done, int64_t total) mutable {
      if (t.seconds() - last < 0.1 && done < total) return;  // ~10 redraws/s
      last = t.seconds();
      fmt::print(stderr, "\r{}", plot::progress_line(done, total, t.seconds()));
      std::fflush(stderr);
    };
  }
  auto res = eval::run_trace(*engine, o);
  if (tty) fmt::print(stderr, "\r\033[K");
  const eval::TraceReport rep = or_fail(std::move(res));
  fmt::print("## Trace: {}\n\n", rep.title);
  print_layers(rep.run.trace, rep.far_age);
  print_comparisons(rep.run, o.cache.kv_type);
  print_longest(rep);
  write_outputs(f, rep, *out);
}

}  // namespace

void add_trace_command(CLI::App& app) {
  auto flags = std::make_shared<TraceFlags>();
  CLI::App* cmd =
      app.add_subcommand("trace", "record which tokens a policy keeps, per layer, on one sequence");
  flags->model.add(*cmd);
  auto* file_opt = cmd->add_option("-f,--file", flags->text_file,
                                   "text to feed (BOS + its tokens, up to -c)");
  cmd->add_option("--tokens", flags->tokens_file,
                  "JSON list of token ids to feed instead of -f (used as given)")
      ->excludes(file_opt);
  cmd->add_option("-c,--ctx-size", flags->ctx,
                  "tokens to feed at most (default: the model's training context)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--out", flags->out, "write trace.json and trace.png into this folder")
      ->required();
  cmd->add_flag("--force", flags->force, "replace a non-empty --out folder");
  cmd->add_option("--top", flags->top, "token strings to list, kept longest first")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  cmd->add_option("--far", flags->far_age,
                  "report the share of held states at least this many positions back "
                  "(default: the model's training context from its metadata)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd->add_flag("--no-plot", flags->no_plot, "do not draw trace.png (no gnuplot needed)");
  cmd->add_option("--compare-kv-type", flags->compare_kv_types,
                  "trace again in each of these K/V types (f16, q8_0, q4_0, q4_0+rot, ...; "
                  "comma-separated) and report, per layer, how often the policy evicted a "
                  "different state than under --kv-type");
  flags->cache.add(*cmd);
  cmd->footer(
      "Survival of the token at position p: the number of later tokens whose attention "
      "included it, i.e. e - p if the policy evicted it at step e (after that step's "
      "attention), or T - 1 - p if it is still held after the last of T tokens (alive at "
      "end). Prefill is always exact (one token per step).");
  cmd->callback([flags] { run_trace_command(*flags); });
}

}  // namespace tova::cli
