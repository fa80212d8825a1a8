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
#include "eval/output_dir.h"
#include "eval/plots.h"
#include "eval/progress.h"
#include "eval/report.h"
#include "eval/trace.h"
#include "eval/trace_compare.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
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
void print_longest(const eval::TraceResult& r, const tok::Tokenizer& tk, int top) {
  if (top <= 0) return;
  fmt::print(
      "\nToken strings kept longest (mean survival over layers, KV heads and "
      "occurrences):\n\n| rank | token | mean survival | count |\n|---:|---|---:|---:|\n");
  int rank = 0;
  auto text_of = [&tk](int32_t id) { return tk.token_text(id); };
  for (const eval::TokenSurvival& ts : eval::longest_kept(r, text_of, top)) {
    fmt::print("| {} | {} | {:.1f} | {} |\n", ++rank, cell_text(ts.text), ts.mean_survival,
               ts.count);
  }
}

// The ids to feed: BOS + the text's tokens (or the token file as given), at most ctx.
std::vector<int32_t> trace_ids(const TraceFlags& f, const Engine& engine, int ctx) {
  const std::string input = f.tokens_file.empty() ? f.text_file : f.tokens_file;
  const InputIds in = or_fail(read_input_ids(f.tokens_file, f.text_file, engine));
  std::vector<int32_t> ids;
  if (in.from_text && engine.tokenizer().bos() >= 0) ids.push_back(engine.tokenizer().bos());
  ids.insert(ids.end(), in.ids.begin(), in.ids.end());
  if (ids.empty()) throw CLI::RuntimeError(fail("'" + input + "' gives no tokens"));
  if (static_cast<int>(ids.size()) > ctx) ids.resize(ctx);
  return ids;
}

// trace.json (and trace.png) into the --out folder.
void write_outputs(const TraceFlags& f, const eval::TraceRun& run, const tok::Tokenizer& tk,
                   const std::string& title, int ctx, int64_t far_age, double wall_seconds,
                   eval::OutputDir& od) {
  const eval::TraceResult& r = run.trace;
  const nlohmann::ordered_json header = {
      {"model", f.model.model_path()},
      {"text",
       f.tokens_file.empty() ? nlohmann::ordered_json(f.text_file) : nlohmann::ordered_json()},
      {"tokens_file",
       f.tokens_file.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(f.tokens_file)},
      {"ctx", ctx},
      {"far_age", far_age},
      {"kv_type", f.cache.kv_type.text()},
      {"kv_positions", f.cache.positions},
      {"f32_activations", f.model.f32_activations},
      {"trace_seconds", r.seconds},
      {"wall_seconds", wall_seconds},
  };
  auto text_of = [&tk](int32_t id) { return tk.token_text(id); };
  nlohmann::ordered_json json = eval::trace_json(r, header, text_of, f.top);
  if (!run.comparisons.empty()) json["kv_type_comparison"] = eval::comparison_json(run);
  auto st = eval::write_file(od.file("trace.json"), json.dump() + "\n");
  if (st.ok() && !f.no_plot) {
    st = eval::plot_trace(r, title, od.tmp_path());
    if (!st.ok()) st = make_error("{} (--no-plot skips the plot)", st.message());
  }
  if (st.ok()) st = od.commit();
  if (!st.ok()) throw CLI::RuntimeError(fail(st.message()));
  fmt::print(stderr, "traced {} tokens in {:.2f} s; wrote trace.json{} to {}\n", r.n_tokens,
             r.seconds, f.no_plot ? "" : ", trace.png", od.path());
}

// The whole command once its flags are read.
void run_trace_command(const TraceFlags& f) {
  Timer wall;
  if (f.cache.prefill != "exact") {
    throw CLI::RuntimeError(
        fail("tova trace feeds one token per step; --kv-prefill must be exact"));
  }
  const CacheOptions cache = or_fail(f.cache.options());
  if (f.text_file.empty() && f.tokens_file.empty()) {
    throw CLI::RuntimeError(fail("nothing to feed: give a text (-f) or token ids (--tokens)"));
  }
  std::vector<KvFormat> compare;
  for (const std::string& t :
       f.compare_kv_types.empty() ? std::vector<std::string>{} : split_list(f.compare_kv_types)) {
    compare.push_back(or_fail(parse_kv_format(t)));
  }
  const auto engine = or_fail(f.model.load());
  const model::Model& m = engine->model();
  const int ctx = f.ctx > 0 ? f.ctx : (m.config().n_ctx_train > 0 ? m.config().n_ctx_train : 512);
  if (cache.policy.bounded() && cache.policy.budget > ctx) {
    throw CLI::RuntimeError(fail(
        fmt::format("budget {} is above the context of {} tokens", cache.policy.budget, ctx)));
  }
  auto out = or_fail(eval::OutputDir::create(f.out, f.force));
  const std::vector<int32_t> ids = trace_ids(f, *engine, ctx);
  const int64_t far_age = f.far_age > 0 ? f.far_age : m.config().n_ctx_train;
  eval::TraceOptions to{.policy = cache.policy,
                        .kv_type = cache.kv_type,
                        .positions = cache.positions,
                        .far_age = far_age};
  const bool tty = ::isatty(2) != 0;
  Timer t;
  if (tty) {
    to.on_progress = [&t, last = -1.0](int64_t done, int64_t total) mutable {
      if (t.seconds() - last < 0.1 && done < total) return;  // ~10 redraws/s
      last = t.seconds();
      fmt::print(stderr, "\r{}", eval::progress_line(done, total, t.seconds()));
      std::fflush(stderr);
    };
  }
  auto res = eval::run_trace_compared(m, engine->pool(), ids, to, compare);
  if (tty) fmt::print(stderr, "\r\033[K");
  const eval::TraceRun run = or_fail(std::move(res));
  const eval::TraceResult& r = run.trace;
  const std::string input = f.tokens_file.empty() ? f.text_file : f.tokens_file;
  const std::string title =
      fmt::format("{} on {}: {}, k = {}, {} tokens",
                  std::filesystem::path(f.model.model_path()).filename().string(),
                  std::filesystem::path(input).filename().string(), r.policy,
                  r.budget >= 0 ? std::to_string(r.budget) : "unbounded", r.n_tokens);
  fmt::print("## Trace: {}\n\n", title);
  print_layers(r, far_age);
  print_comparisons(run, to.kv_type);
  print_longest(r, engine->tokenizer(), f.top);
  write_outputs(f, run, engine->tokenizer(), title, ctx, far_age, wall.seconds(), *out);
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
