#include "eval/perplexity.h"

#include <algorithm>
#include <climits>
#include <filesystem>

#include "core/field_names.h"
#include "core/timer.h"
#include "eval/report.h"
#include "model/model.h"
#include "runtime/engine_access.h"
#include "tokenizer/tokenizer.h"
#include "model/token_ids.h"

namespace tova::eval {

namespace {

std::string file_name(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

nlohmann::ordered_json or_null(const std::string& s) {
  return s.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(s);
}

std::string positions_label(const std::vector<kv::PositionMode>& modes) {
  std::string s;
  for (kv::PositionMode m : modes) {
    s += (s.empty() ? "" : ",") + std::string(kv::position_mode_name(m));
  }
  return s;
}

kv::KvFormat first_kv_type(const PplOptions& o) {
  return o.kv_types.empty() ? kv::KvFormat() : o.kv_types.front();
}

std::vector<std::string> kv_type_labels(const PplOptions& o) {
  std::vector<std::string> out;
  for (const kv::KvFormat& t : o.kv_types) out.push_back(t.label());
  if (out.empty()) out.push_back(kv::KvFormat().label());
  return out;
}

// The ids to score and whether they came from text (then chunks begin with BOS).
struct Input {
  std::vector<int32_t> ids;
  bool from_text = false;
  std::string label;
};

Result<Input> input_of(const Engine& e, const PplOptions& o) {
  Input in;
  if (!o.tokens.empty() || !o.tokens_label.empty()) {
    in.ids = o.tokens;
    in.label = o.tokens_label.empty() ? "tokens" : o.tokens_label;
    TOVA_RETURN_IF_ERROR(model::check_token_ids(in.ids, e.n_vocab(), in.label));
    return in;
  }
  in.label = o.text_label.empty() ? "text" : o.text_label;
  if (o.text.empty()) return make_error("'{}' is empty", in.label);
  if (!e.has_tokenizer()) return make_error("no tokenizer to read '{}' with", in.label);
  in.ids = e.tokenize(o.text, false);
  in.from_text = true;
  return in;
}

Result<PplReport> run_chunks(const Engine& e, const PplOptions& o, const Input& in,
                             const Timer& wall) {
  const model::Model& m = EngineAccess::model(e);
  const int ctx = o.ctx > 0 ? o.ctx : (m.config().n_ctx_train > 1 ? m.config().n_ctx_train : 512);
  TOVA_ASSIGN_OR_RETURN(const std::vector<kv::PolicySpec> configs,
                        sweep_configs(o.policies, o.budgets, ctx));
  if (in.ids.empty()) return make_error("'{}' gives no tokens", in.label);
  const int32_t bos = in.from_text ? EngineAccess::tokenizer(e).bos() : -1;
  auto chunks = make_chunks(in.ids, {.ctx = ctx, .bos = bos, .max_chunks = o.chunks});
  if (!chunks.ok()) return make_error("{}: {}", in.label, chunks.message());
  SweepOptions so{.configs = configs,
                  .kv_type = first_kv_type(o),
                  .kv_types = o.kv_types.size() > 1 ? o.kv_types : std::vector<kv::KvFormat>{},
                  .positions = o.positions.front(),
                  .n_batch = o.n_batch,
                  .batched = o.batched,
                  .share_prefix = o.share_prefix,
                  .on_progress = o.on_progress};
  PplReport rep;
  {
    const auto lock = EngineAccess::exclusive(e);
    TOVA_ASSIGN_OR_RETURN(rep.sweep, run_sweep(m, EngineAccess::pool(e), *chunks, so));
  }
  const SweepResult& r = rep.sweep;
  const std::string model = o.model_label.empty() ? e.path() : o.model_label;
  rep.title = fmt::format("{} on {}: ctx {}, {} chunk{}", file_name(model), file_name(in.label),
                          r.ctx, r.n_chunks, r.n_chunks == 1 ? "" : "s");
  rep.n_tokens = static_cast<int64_t>(in.ids.size());
  rep.n_forward_calls = r.n_forward_calls;
  rep.sweep_seconds = r.seconds;
  const nlohmann::ordered_json header = {
      {"model", model},
      {"text", or_null(in.from_text ? in.label : "")},
      {"tokens_file", or_null(in.from_text ? "" : in.label)},
      {"ctx", r.ctx},
      {"n_chunks", r.n_chunks},
      {"n_tokens", in.ids.size()},
      {"n_predictions_per_config", r.n_predictions},
      {"scoring", "every prediction of each chunk (ctx - 1); chunk = BOS + ctx - 1 tokens"},
      {"kv_types", kv_type_labels(o)},
      {"kv_positions", positions_label(o.positions)},
      {"f32_activations", o.f32_activations},
      {"batched", o.batched},
      {"share_prefix", o.batched && o.share_prefix},
      {"n_batch", o.n_batch},
      {"threads", e.n_threads()},
      {"forward_calls", r.n_forward_calls},
      {"sweep_seconds", r.seconds},
      {"wall_seconds", wall.seconds()},
  };
  rep.json = sweep_json(r, header).dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
  rep.csv = sweep_csv(r);
  return rep;
}

// Each configuration reads the whole text as one sequence. Bounded configurations run once per
// position mode, batched together; `full` runs once (nothing is evicted, so the mode changes
// nothing) over the first max_full_ctx tokens.
Result<PplReport> run_stream(const Engine& e, const PplOptions& o, const Input& in,
                             const Timer& wall) {
  const model::Model& m = EngineAccess::model(e);
  const int32_t bos = in.from_text ? EngineAccess::tokenizer(e).bos() : -1;
  std::vector<int32_t> seq;
  if (bos >= 0) seq.push_back(bos);
  seq.insert(seq.end(), in.ids.begin(), in.ids.end());
  if (o.ctx > 0 && static_cast<int64_t>(seq.size()) > o.ctx) seq.resize(o.ctx);
  if (seq.size() < 2) return make_error("'{}' gives fewer than 2 tokens", in.label);
  const int n = static_cast<int>(std::min<size_t>(seq.size(), INT32_MAX));
  const int64_t trained = o.trained_ctx > 0 ? o.trained_ctx : m.config().n_ctx_train;
  const int max_full =
      o.max_full_ctx > 0
          ? o.max_full_ctx
          : static_cast<int>(std::min<int64_t>(4 * std::max<int64_t>(trained, 512), INT32_MAX));
  TOVA_ASSIGN_OR_RETURN(const std::vector<kv::PolicySpec> configs,
                        sweep_configs(o.policies, o.budgets, n));
  std::vector<kv::PolicySpec> bounded, full;
  for (const kv::PolicySpec& p : configs) (p.bounded() ? bounded : full).push_back(p);

  PplReport rep;
  rep.stream = true;
  auto sweep = [&](const std::vector<int32_t>& chunk, const std::vector<kv::PolicySpec>& cs,
                   kv::PositionMode mode) -> Status {
    SweepOptions so{.configs = cs,
                    .kv_type = first_kv_type(o),
                    .positions = mode,
                    .n_batch = o.n_batch,
                    .batched = o.batched,
                    .share_prefix = o.share_prefix,
                    .on_progress = o.on_progress};
    const std::vector<std::vector<int32_t>> chunks = {chunk};
    const auto lock = EngineAccess::exclusive(e);
    TOVA_ASSIGN_OR_RETURN(const SweepResult res, run_sweep(m, EngineAccess::pool(e), chunks, so));
    rep.n_forward_calls += res.n_forward_calls;
    rep.sweep_seconds += res.seconds;
    for (const ConfigResult& c : res.configs) rep.curves.push_back(stream_curve(c, mode, o.window));
    return ok_status();
  };
  if (!full.empty()) {
    const std::vector<int32_t> head(seq.begin(), seq.begin() + std::min(n, max_full));
    TOVA_RETURN_IF_ERROR(sweep(head, full, kv::PositionMode::kAbsolute));
  }
  if (!bounded.empty()) {
    for (kv::PositionMode mode : o.positions) TOVA_RETURN_IF_ERROR(sweep(seq, bounded, mode));
  }
  const std::string model = o.model_label.empty() ? e.path() : o.model_label;
  rep.title = fmt::format("{} streaming {}: {} tokens as one sequence, windows of {}",
                          file_name(model), file_name(in.label), n, o.window);
  rep.n_tokens = n;
  rep.trained_ctx = trained;
  const nlohmann::ordered_json header = {
      {"model", model},
      {"text", or_null(in.from_text ? in.label : "")},
      {"tokens_file", or_null(in.from_text ? "" : in.label)},
      {"mode", "stream"},
      {"n_tokens", n},
      {"bos_added", bos >= 0},
      {"window", o.window},
      {"max_full_ctx", max_full},
      {"trained_ctx", trained},
      {"scoring", "every prediction of the sequence; window w covers predictions "
                  "[w*window, (w+1)*window)"},
      {"kv_type", first_kv_type(o).label()},
      {"f32_activations", o.f32_activations},
      {"batched", o.batched},
      {"n_batch", o.n_batch},
      {"threads", e.n_threads()},
      {"forward_calls", rep.n_forward_calls},
      {"sweep_seconds", rep.sweep_seconds},
      {"wall_seconds", wall.seconds()},
  };
  rep.json = stream_json(rep.curves, header).dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
  rep.csv = stream_csv(rep.curves);
  return rep;
}

}  // namespace

Result<PplReport> run_ppl(const Engine& engine, const PplOptions& o) {
  Timer wall;
  if (o.policies.empty()) return make_error("{}: none given (full,window,tova,...)", field::kPolicies);
  if (o.positions.empty()) return make_error("{}: no position mode given", field::kPositions);
  if (o.positions.size() > 1 && !o.stream) {
    return make_error("{}: several modes need a streamed sweep (or one sweep per mode)",
                      field::kPositions);
  }
  if (o.kv_types.size() > 1 && o.stream) {
    return make_error("{}: a streamed sweep takes one format, not several", field::kKvTypes);
  }
  if (o.window < 1) return make_error("{} must be at least 1, got {}", field::kWindow, o.window);
  TOVA_ASSIGN_OR_RETURN(const Input in, input_of(engine, o));
  return o.stream ? run_stream(engine, o, in, wall) : run_chunks(engine, o, in, wall);
}

}  // namespace tova::eval
