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
#include "core/timer.h"
#include "eval/output_dir.h"
#include "eval/plots.h"
#include "eval/progress.h"
#include "eval/report.h"
#include "eval/trace.h"
#include "eval/trace_compare.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

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

}  // namespace

void add_trace_command(CLI::App& app) {
  struct Flags {
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
  auto flags = std::make_shared<Flags>();
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
  cmd->callback([flags] {
    const Flags& f = *flags;
    Timer wall;
    if (f.cache.prefill != "exact") {
      throw CLI::RuntimeError(
          fail("tova trace feeds one token per step; --kv-prefill must be "
               "exact"));
    }
    auto cache = f.cache.options();
    if (!cache.ok()) throw CLI::RuntimeError(fail(cache.message()));
    if (f.text_file.empty() && f.tokens_file.empty()) {
      throw CLI::RuntimeError(fail("nothing to feed: give a text (-f) or token ids (--tokens)"));
    }
    std::vector<KvFormat> compare_types;
    for (const std::string& t :
         f.compare_kv_types.empty() ? std::vector<std::string>{} : split_list(f.compare_kv_types)) {
      compare_types.push_back(or_fail(parse_kv_format(t)));
    }
    if (!compare_types.empty() && !cache->policy.bounded()) {
      throw CLI::RuntimeError(fail(fmt::format(
          "--compare-kv-type compares evictions; --kv-policy {} never evicts",
          cache->policy.label())));
    }
    const auto engine = or_fail(f.model.load());
    const model::Model& m = engine->model();
    const tok::Tokenizer& tk = engine->tokenizer();
    const int ctx = f.ctx > 0 ? f.ctx : (m.config().n_ctx_train > 0 ? m.config().n_ctx_train : 512);
    if (cache->policy.bounded() && cache->policy.budget > ctx) {
      throw CLI::RuntimeError(fail(
          fmt::format("budget {} is above the context of {} tokens", cache->policy.budget, ctx)));
    }
    auto out = eval::OutputDir::create(f.out, f.force);
    if (!out.ok()) throw CLI::RuntimeError(fail(out.message()));

    const std::string input = f.tokens_file.empty() ? f.text_file : f.tokens_file;
    auto in = read_input_ids(f.tokens_file, f.text_file, *engine);
    if (!in.ok()) throw CLI::RuntimeError(fail(in.message()));
    std::vector<int32_t> ids;
    if (in->from_text && tk.bos() >= 0) ids.push_back(tk.bos());
    ids.insert(ids.end(), in->ids.begin(), in->ids.end());
    if (ids.empty()) throw CLI::RuntimeError(fail("'" + input + "' gives no tokens"));
    if (static_cast<int>(ids.size()) > ctx) ids.resize(ctx);

    ThreadPool& pool = engine->pool();
    const int64_t far_age = f.far_age > 0 ? f.far_age : m.config().n_ctx_train;
    eval::TraceOptions to{.policy = cache->policy,
                          .kv_type = cache->kv_type,
                          .positions = cache->positions,
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
    auto res = eval::run_trace(m, pool, ids, to);
    if (tty) fmt::print(stderr, "\r\033[K");
    if (!res.ok()) throw CLI::RuntimeError(fail(res.message()));
    const eval::TraceResult& r = *res;
    std::vector<eval::EvictionComparison> comparisons;
    for (const KvFormat& kt : compare_types) {
      eval::TraceOptions other = to;
      other.kv_type = kt;
      auto o = eval::run_trace(m, pool, ids, other);
      if (tty) fmt::print(stderr, "\r\033[K");
      if (!o.ok()) throw CLI::RuntimeError(fail(o.message()));
      comparisons.push_back(or_fail(eval::compare_evictions(r, *o)));
    }
    auto text_of = [&tk](int32_t id) { return tk.token_text(id); };

    const std::string title =
        fmt::format("{} on {}: {}, k = {}, {} tokens",
                    std::filesystem::path(f.model.model_path()).filename().string(),
                    std::filesystem::path(input).filename().string(), r.policy,
                    r.budget >= 0 ? std::to_string(r.budget) : "unbounded", r.n_tokens);
    fmt::print("## Trace: {}\n\n", title);
    fmt::print("Survival = later tokens whose attention included the token (see --help).\n\n");
    auto num = [](double v, const char* f) {
      return std::isfinite(v) ? fmt::format(fmt::runtime(f), v) : std::string("-");
    };
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
    if (!comparisons.empty()) {
      fmt::print(
          "\nEvictions against --kv-type {} (each type traced on its own): the share of the "
          "(KV head, step) pairs with an eviction where the evicted state differs, and the share "
          "of the states held under {} that are also held under the other type (mean over the "
          "steps that evict):\n\n| layer |",
          to.kv_type.label(), to.kv_type.label());
      std::string rule = "|---:|";
      for (const KvFormat& kt : compare_types) {
        fmt::print(" {0} different eviction | {0} held overlap | {0} first difference |",
                   kt.label());
        rule += "---:|---:|---:|";
      }
      fmt::print("\n{}\n", rule);
      auto pct = [&num](double v) { return num(v * 100, "{:.1f}%"); };
      for (int il = 0; il <= r.n_layer; ++il) {
        fmt::print("{}", il < r.n_layer ? fmt::format("| {} |", il) : std::string("| mean |"));
        for (const eval::EvictionComparison& c : comparisons) {
          if (il < r.n_layer) {
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
    if (f.top > 0) {
      fmt::print(
          "\nToken strings kept longest (mean survival over layers, KV heads and "
          "occurrences):\n\n| rank | token | mean survival | count |\n|---:|---|---:|---:|\n");
      int rank = 0;
      for (const eval::TokenSurvival& ts : eval::longest_kept(r, text_of, f.top)) {
        fmt::print("| {} | {} | {:.1f} | {} |\n", ++rank, cell_text(ts.text), ts.mean_survival,
                   ts.count);
      }
    }

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
        {"wall_seconds", wall.seconds()},
    };
    eval::OutputDir& od = **out;
    nlohmann::ordered_json json = eval::trace_json(r, header, text_of, f.top);
    if (!comparisons.empty()) {
      auto& list = json["kv_type_comparison"] = nlohmann::ordered_json::array();
      for (size_t i = 0; i < comparisons.size(); ++i) {
        const eval::EvictionComparison& c = comparisons[i];
        auto finite = [](const std::vector<double>& v) {
          nlohmann::ordered_json a = nlohmann::ordered_json::array();
          for (double x : v) a.push_back(std::isfinite(x) ? nlohmann::ordered_json(x) : nullptr);
          return a;
        };
        list.push_back({{"kv_type", compare_types[i].label()},
                        {"differ", finite(c.differ)},
                        {"overlap", finite(c.overlap)},
                        {"first_difference", c.first_difference},
                        {"differ_mean", finite({c.differ_mean})[0]},
                        {"overlap_mean", finite({c.overlap_mean})[0]}});
      }
    }
    auto st = eval::write_file(od.file("trace.json"), json.dump() + "\n");
    if (st.ok() && !f.no_plot) {
      st = eval::plot_trace(r, title, od.tmp_path());
      if (!st.ok()) st = make_error("{} (--no-plot skips the plot)", st.message());
    }
    if (st.ok()) st = od.commit();
    if (!st.ok()) throw CLI::RuntimeError(fail(st.message()));
    fmt::print(stderr, "traced {} tokens in {:.2f} s; wrote trace.json{} to {}\n", r.n_tokens,
               r.seconds, f.no_plot ? "" : ", trace.png", od.path());
  });
}

}  // namespace tova::cli
