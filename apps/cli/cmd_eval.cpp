// tova eval: RULER's synthetic tasks (and llama.cpp's passkey) under many (policy, budget)
// configurations, all configurations of a prompt in shared forward passes. Markdown tables on
// stdout; every sample's record as JSON and CSV, and plots, in --out.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include "commands.h"
#include "common.h"
#include "output_dir.h"
#include "plots.h"
#include "progress.h"
#include "tova/chat.h"
#include "tova/eval/tasks.h"

namespace tova::cli {
namespace {

struct Flags {
  ModelFlags model;
  // The run's options: the flags below write into it; run() adds what the app reads or names
  // (template and haystack files, K/V type, batching switches, the model's label).
  eval::TaskRunOptions run;
  std::string template_file;
  std::string haystack_file;
  KvTypeFlags kv_type;
  std::string out;
  bool force = false;
  bool no_plot = false;
  bool no_batch = false;
  bool no_share = false;
};

void check(const Status& st) {
  if (!st.ok()) throw CLI::RuntimeError(fail(st.message()));
}
template <typename T>
T take(Result<T> r) {
  if (!r.ok()) throw CLI::RuntimeError(fail(r.message()));
  return std::move(r).value();
}

void run(const Flags& f) {
  eval::TaskRunOptions o = f.run;
  o.kv_type = f.kv_type.text();
  o.batched = !f.no_batch;
  o.share_prefix = !f.no_share;
  o.model_label = f.model.model_path();
  if (!f.template_file.empty()) {
    o.template_text = take(read_text_file(f.template_file));
    o.template_label = f.template_file;
  }
  if (!f.haystack_file.empty()) {
    o.haystack_text = take(read_text_file(f.haystack_file));
    o.haystack_label = f.haystack_file;
  }
  // A bad --out fails now, not after the grid.
  std::unique_ptr<plot::OutputDir> out;
  if (!f.out.empty()) out = take(plot::OutputDir::create(f.out, f.force));

  const std::unique_ptr<Engine> engine = take(f.model.load());
  o.on_warning = [](const std::string& w) { warn(w); };
  const bool tty = ::isatty(2) != 0;
  if (tty) {
    o.on_progress = [last = -1.0](const eval::EvalProgress& p) mutable {
      if (p.seconds - last < 0.1 && p.steps_done < p.steps_total) return;
      last = p.seconds;
      fmt::print(stderr, "\r{}", plot::progress_line(p.steps_done, p.steps_total, p.seconds));
      std::fflush(stderr);
    };
  }
  auto res = eval::run_tasks(*engine, o);
  if (tty) fmt::print(stderr, "\r\033[K");
  const eval::TaskReport rep = take(std::move(res));
  const eval::EvalResult& r = rep.result;
  fmt::print("## Tasks: {}\n\n{}", rep.title, eval::accuracy_markdown(r.records));
  fmt::print(stderr,
             "ran {} samples x {} configurations in {:.2f} s ({} forward calls, {} token steps "
             "computed, {} ridden along, {} teacher-forced answer tokens, {} in scoring passes)\n",
             rep.n_samples, rep.n_configs, r.seconds, r.n_forward_calls, r.token_steps,
             r.shared_steps, r.nll_steps, r.pass_steps);
  if (!out) return;
  // An answer may hold bytes that are not UTF-8 (the model writes byte tokens; niah_multikey on
  // niah-13m did): they become U+FFFD in the JSON instead of an exception after the whole grid.
  const std::string& json = rep.json;
  check(plot::write_file(out->file("results.json"), json + "\n"));
  check(plot::write_file(out->file("results.csv"), rep.csv));
  std::string plots;
  if (!f.no_plot) {
    auto stems = plot::plot_eval(r.records, rep.title, out->tmp_path());
    if (!stems.ok()) check(make_error("{} (--no-plot skips the plots)", stems.message()));
    for (const std::string& s : *stems) plots += ", " + s + ".png/.svg";
  }
  check(out->commit());
  fmt::print(stderr, "wrote results.json, results.csv{} to {}\n", plots, out->path());
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "long-context tasks (RULER's synthetic tasks, passkey) x policies x budgets");
  flags->model.add(*cmd);
  cmd->add_option("tasks", flags->run.tasks, "comma-separated tasks: " + eval::task_choices())
      ->delimiter(',')
      ->required();
  cmd->add_option("--template", flags->template_file,
                  "JSON with needle, question, answer_prefix ({key}/{value}; optional prefix, "
                  "separator, key, value kinds) replacing RULER's phrasing of the niah tasks");
  cmd->add_option("--haystack", flags->haystack_file,
                  "text file whose sentences surround the needles (default: RULER's repeated "
                  "noise sentences); a file too short is repeated, with a warning");
  cmd->add_option("--lengths", flags->run.lengths,
                  "comma-separated sample lengths in tokens of the model's tokenizer (prompt + "
                  "generated, as RULER counts; default: the model's trained context)")
      ->delimiter(',')
      ->check(CLI::Range(16, 1 << 24));
  cmd->add_option("--depths", flags->run.depths,
                  "comma-separated needle depths in percent of the haystack (niah tasks, passkey)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--samples", flags->run.samples,
                  "samples per (task, length); their needles at --depths in turn")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--seed", flags->run.seed, "seed of the samples")->capture_default_str();
  cmd->add_option("--kv-policy", flags->run.policies,
                  "comma-separated policies NAME[:ARG] (" + kv::policy_choices() +
                      "); full runs once, the others once per budget")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--kv-budget", flags->run.budgets, "comma-separated budgets k (states per layer)")
      ->delimiter(',');
  cmd->add_option("--kv-prefill", flags->run.prefill, "exact | chunk:C | chunk:inf")
      ->capture_default_str();
  add_positions_option(*cmd, flags->run.positions);
  flags->kv_type.add(*cmd, "f32");
  cmd->add_flag("--chat", flags->run.chat,
                "wrap each prompt in the model's chat template (the task as the user turn, the "
                "answer prefix after the assistant's header); default: the raw prompt after BOS");
  cmd->add_option("--chat-template", flags->run.chat_template,
                  "--chat with this template: a .jinja file or " + chat_template_names() + " (default: the model's own)");
  cmd->add_option("--max-new", flags->run.max_new,
                  "tokens to generate per answer (default: the task's, as RULER: niah 128, vt "
                  "30, cwe 120, fwe 50, passkey 16); generation stops early at EOS or once every "
                  "expected string is in the answer (its score cannot change after that)")
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--turns", flags->run.turns,
                  "questions asked of each context in successive turns of one conversation on "
                  "one state, each answer kept in the history before the next question "
                  "(niah_multikey: up to 4 of its keys, vt: up to 4 chains; the order from the "
                  "seed); accuracy is reported per turn")
      ->capture_default_str();
  cmd->add_option("--out", flags->out,
                  "write results.json, results.csv and the plots (acc-TASK, heat-TASK) here");
  cmd->add_flag("--force", flags->force, "replace a non-empty --out folder");
  cmd->add_flag("--no-plot", flags->no_plot, "do not draw plots (no gnuplot needed)");
  cmd->add_option("-b,--batch-size", flags->run.n_batch, "prompt positions per sequence and forward pass")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_flag("--no-batch", flags->no_batch,
                "run each (sample, configuration) in forward passes of its own (for comparison)");
  cmd->add_flag("--no-share", flags->no_share,
                "compute every configuration from the first token instead of letting it ride "
                "along with the prompt's largest until its first eviction (same records)");
  cmd->footer(
      "Samples are generated from the seed: RULER's needle tasks (niah_single, niah_multikey, "
      "niah_multivalue, niah_multiquery), variable tracking (vt), common and frequent words "
      "(cwe, fwe) and llama.cpp's passkey. Each is scored with RULER's string match (the share "
      "of expected strings in the greedy answer); accuracy is its mean. Beside it, the "
      "teacher-forced NLL of the expected answer under each configuration, and its paired "
      "difference against full.");
  cmd->callback([flags] { run(*flags); });
}

}  // namespace tova::cli
