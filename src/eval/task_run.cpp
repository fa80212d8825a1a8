#include "eval/task_run.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <functional>

#include "runtime/chat_templates.h"
#include "core/field_names.h"
#include "core/timer.h"
#include "eval/ppl_sweep.h"
#include "eval/task_report.h"
#include "eval/task_samples.h"
#include "runtime/engine_access.h"
#include "tova/options.h"

namespace tova::eval {

namespace {

// The sample options of a run: tasks, lengths (the model's trained context by default), the
// needle template, haystack and chat template.
Result<SampleOptions> sample_options(const Engine& engine, const TaskRunOptions& o) {
  SampleOptions so{.tasks = o.tasks,
                   .depths = o.depths,
                   .samples = o.samples,
                   .seed = o.seed,
                   .max_new = o.max_new,
                   .turns = o.turns};
  if (!o.template_text.empty()) {
    TOVA_ASSIGN_OR_RETURN(so.custom, parse_needle_template(o.template_text, o.template_label));
  }
  if (!o.haystack_text.empty()) {
    TOVA_ASSIGN_OR_RETURN(so.haystack, file_haystack(o.haystack_text, o.haystack_label));
  }
  const int64_t trained = EngineAccess::model(engine).config().n_ctx_train;
  so.lengths = o.lengths;
  if (so.lengths.empty()) {
    so.lengths = {trained > 16 ? static_cast<int>(std::min<int64_t>(trained, 1 << 24)) : 4096};
  }
  if (o.chat || !o.chat_template.empty()) {
    TOVA_ASSIGN_OR_RETURN(so.chat, runtime::chat_template_of(engine, o.chat_template));
  }
  return so;
}

// Lengths past the trained context, and budgets that never evict.
void warn_about_lengths(const SampleOptions& so, const std::vector<kv::PolicySpec>& configs,
                        int64_t trained, const std::string& positions,
                        const std::function<void(std::string)>& warn) {
  for (int len : so.lengths) {
    if (trained > 0 && len > trained) {
      warn(fmt::format(
          "{} {}: length {} is past the model's trained context of {} tokens: positions beyond "
          "it were never trained (gap or rank keep a bounded policy's positions within the "
          "trained range, absolute does not)",
          field::kPositions, positions, len, trained));
    }
  }
  const int max_len = *std::max_element(so.lengths.begin(), so.lengths.end());
  for (const kv::PolicySpec& c : configs) {
    if (c.bounded() && c.budget >= max_len) {
      warn(fmt::format(
          "budget {} is at least every sample's length (prompt and answer, {} at most): {} k={} "
          "never evicts and equals full",
          c.budget, max_len, c.label(), c.budget));
    }
  }
}

// The run's description at the head of its JSON records.
nlohmann::ordered_json run_header(const Engine& engine, const TaskRunOptions& o,
                                  const SampleOptions& so, const PrefillMode& prefill,
                                  const kv::KvFormat& kv_type, const std::string& model,
                                  const TaskReport& rep, double wall_seconds) {
  const EvalResult& r = rep.result;
  return {
      {"model", model},
      {"tasks", o.tasks},
      {"lengths", so.lengths},
      {"depths", o.depths},
      {"samples", o.samples},
      {"seed", o.seed},
      {"turns", o.turns},
      {"template", o.template_text.empty() ? nlohmann::ordered_json("ruler")
                                           : nlohmann::ordered_json(o.template_label)},
      {"haystack", so.haystack.source},
      {"chat_template", so.chat ? nlohmann::ordered_json(std::string(so.chat->name()))
                                : nlohmann::ordered_json()},
      {"prefill", prefill.label()},
      {"kv_positions", o.positions},
      {"kv_type", kv_type.label()},
      {"scoring", "RULER string_match_all: the share of expected strings found in the answer "
                  "(case-insensitive); correct = all found"},
      {"answer_nll", "teacher-forced mean NLL (nats per token) of the expected answer's tokens "
                     "after each turn's prompt, on a copy of the configuration's state"},
      {"batched", o.batched},
      {"share_prefix", o.batched && o.share_prefix},
      {"n_batch", o.n_batch},
      {"threads", engine.n_threads()},
      {"forward_calls", r.n_forward_calls},
      {"token_steps", r.token_steps},
      {"shared_steps", r.shared_steps},
      {"nll_steps", r.nll_steps},
      {"pass_steps", r.pass_steps},
      {"eval_seconds", r.seconds},
      {"wall_seconds", wall_seconds},
      {"warnings", rep.warnings},
  };
}

}  // namespace

Result<TaskReport> run_tasks(const Engine& engine, const TaskRunOptions& o) {
  Timer wall;
  if (o.tasks.empty()) return make_error("no tasks given (valid: {})", task_choices());
  for (const std::string& t : o.tasks) {
    if (find_task(t) == nullptr) return make_error("unknown task '{}' (valid: {})", t, task_choices());
  }
  TOVA_ASSIGN_OR_RETURN(const PrefillMode prefill, parse_prefill(o.prefill));
  TOVA_ASSIGN_OR_RETURN(const kv::PositionMode positions, kv::parse_position_mode(o.positions));
  TOVA_ASSIGN_OR_RETURN(const kv::KvFormat kv_type, parse_kv_format(o.kv_type));
  // Budgets are not capped by the length: a budget at least the prompt and its answer equals
  // full (a warning below).
  TOVA_ASSIGN_OR_RETURN(const std::vector<kv::PolicySpec> configs,
                        sweep_configs(o.policies, o.budgets, 1 << 30));
  TOVA_ASSIGN_OR_RETURN(const SampleOptions so, sample_options(engine, o));
  const model::Model& m = EngineAccess::model(engine);
  const tok::Tokenizer& tk = EngineAccess::tokenizer(engine);

  TaskReport rep;
  const std::function<void(std::string)> warn = [&](std::string w) {
    if (o.on_warning) o.on_warning(w);
    rep.warnings.push_back(std::move(w));
  };
  warn_about_lengths(so, configs, m.config().n_ctx_train, o.positions, warn);
  TOVA_ASSIGN_OR_RETURN(const SampleSet samples, make_samples(tk, so));
  for (const std::string& w : samples.warnings) warn(w);

  const EvalOptions eo{.configs = configs,
                       .prefill = prefill,
                       .kv_type = kv_type,
                       .positions = positions,
                       .n_batch = o.n_batch,
                       .batched = o.batched,
                       .share_prefix = o.share_prefix,
                       .on_progress = o.on_progress,
                       .chat = so.chat};
  {
    const auto running = EngineAccess::exclusive(engine);
    TOVA_ASSIGN_OR_RETURN(rep.result, run_eval(m, tk, EngineAccess::pool(engine), samples.samples, eo));
  }
  const std::string model = o.model_label.empty() ? engine.path() : o.model_label;
  rep.title = fmt::format("{}: {} samples per cell, seed {}",
                          std::filesystem::path(model).filename().string(), o.samples, o.seed);
  rep.n_samples = samples.samples.size();
  rep.n_configs = configs.size();
  rep.json = eval_json(rep.result,
                       run_header(engine, o, so, prefill, kv_type, model, rep, wall.seconds()))
                 .dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
  rep.csv = eval_csv(rep.result);
  return rep;
}

}  // namespace tova::eval
