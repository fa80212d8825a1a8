// `tova trace` as one library call (tova/eval.h): the ids to feed, the trace (and its repeats in
// other K/V types), the token strings kept longest and trace.json, so every front-end gets the
// same records; the tables and the heat map are the front-end's.
#include <fmt/format.h>

#include <filesystem>

#include "eval/report.h"
#include "eval/trace.h"
#include "eval/trace_compare.h"
#include "model/model.h"
#include "runtime/engine_access.h"
#include "tokenizer/tokenizer.h"
#include "tova/eval/trace.h"
#include "tova/timer.h"

namespace tova::eval {
namespace {

// The ids to feed: BOS + the text's tokens (or the token list as given), at most ctx.
Result<std::vector<int32_t>> trace_ids(const Engine& engine, const TraceRunOptions& o, int ctx) {
  std::vector<int32_t> ids;
  if (!o.tokens.empty()) {
    TOVA_RETURN_IF_ERROR(engine.check_token_ids(o.tokens));
    ids = o.tokens;
  } else {
    if (!engine.has_tokenizer()) return make_error("no tokenizer to read the text with");
    if (o.text.empty()) return make_error("'{}' is empty", o.text_label);
    if (EngineAccess::tokenizer(engine).bos() >= 0) ids.push_back(EngineAccess::tokenizer(engine).bos());
    const std::vector<int32_t> text = engine.tokenize(o.text, false);
    ids.insert(ids.end(), text.begin(), text.end());
  }
  if (ids.empty()) {
    return make_error("'{}' gives no tokens", o.tokens.empty() ? o.text_label : o.tokens_label);
  }
  if (static_cast<int>(ids.size()) > ctx) ids.resize(ctx);
  return ids;
}

nlohmann::ordered_json trace_header(const Engine& engine, const TraceRunOptions& o,
                                    const TraceReport& rep, double wall_seconds) {
  const bool from_text = o.tokens.empty();
  return {
      {"model", o.model_label.empty() ? engine.path() : o.model_label},
      {"text", from_text ? nlohmann::ordered_json(o.text_label) : nlohmann::ordered_json()},
      {"tokens_file", from_text ? nlohmann::ordered_json() : nlohmann::ordered_json(o.tokens_label)},
      {"ctx", rep.ctx},
      {"far_age", rep.far_age},
      {"kv_type", o.cache.kv_type.label()},
      {"kv_positions", kv::position_mode_name(o.cache.positions)},
      {"f32_activations", o.f32_activations},
      {"trace_seconds", rep.run.trace.seconds},
      {"wall_seconds", wall_seconds},
  };
}

}  // namespace

Result<TraceReport> run_trace(const Engine& engine, const TraceRunOptions& o) {
  Timer wall;
  if (!o.cache.prefill.exact()) {
    return make_error("a trace feeds one token per step: the prefill must be exact");
  }
  const model::Model& m = EngineAccess::model(engine);
  TraceReport rep;
  rep.ctx = o.ctx > 0 ? o.ctx : (m.config().n_ctx_train > 0 ? m.config().n_ctx_train : 512);
  if (o.cache.policy.bounded() && o.cache.policy.budget > rep.ctx) {
    return make_error("budget {} is above the context of {} tokens", o.cache.policy.budget,
                      rep.ctx);
  }
  TOVA_ASSIGN_OR_RETURN(const std::vector<int32_t> ids, trace_ids(engine, o, rep.ctx));
  rep.far_age = o.far_age > 0 ? o.far_age : m.config().n_ctx_train;
  const TraceOptions to{.policy = o.cache.policy,
                        .kv_type = o.cache.kv_type,
                        .positions = o.cache.positions,
                        .far_age = rep.far_age,
                        .on_progress = o.on_progress};
  {
    const auto lock = EngineAccess::exclusive(engine);
    TOVA_ASSIGN_OR_RETURN(rep.run, run_trace_compared(m, EngineAccess::pool(engine), ids, to, o.compare));
  }
  const TraceResult& r = rep.run.trace;
  const std::string model = o.model_label.empty() ? engine.path() : o.model_label;
  const std::string input = o.tokens.empty() ? o.text_label : o.tokens_label;
  rep.title = fmt::format("{} on {}: {}, k = {}, {} tokens",
                          std::filesystem::path(model).filename().string(),
                          std::filesystem::path(input).filename().string(), r.policy,
                          r.budget >= 0 ? std::to_string(r.budget) : "unbounded", r.n_tokens);
  auto text_of = [&engine](int32_t id) {
    return engine.has_tokenizer() ? EngineAccess::tokenizer(engine).token_text(id) : std::to_string(id);
  };
  rep.longest = longest_kept(r, text_of, o.top);
  nlohmann::ordered_json json =
      trace_json(r, trace_header(engine, o, rep, wall.seconds()), text_of, o.top);
  if (!rep.run.comparisons.empty()) json["kv_type_comparison"] = comparison_json(rep.run);
  rep.json = json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return rep;
}

}  // namespace tova::eval
