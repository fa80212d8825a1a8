#include "eval/throughput.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <memory>
#include <string>

#include "core/field_names.h"
#include "core/timer.h"
#include "eval/bench.h"
#include "eval/token_source.h"
#include "runtime/engine_access.h"
#include "tova/simd_target.h"
#include "runtime/forward_batch.h"

namespace tova::eval {
namespace {

// Resident memory of this process, from /proc/self/statm; -1 if it cannot be read.
int64_t resident_bytes() {
  std::ifstream in("/proc/self/statm");
  int64_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return -1;
  return resident * 4096;
}

std::string label_of(const kv::PolicySpec& p, const KvFormat& t) {
  return (p.bounded() ? fmt::format("{} k={}", p.label(), p.budget) : p.label()) + " " +
         t.label();
}

// Unbounded states reserve ctx + extra slots up front (no growth inside the measurement);
// bounded ones allocate k + 1 whatever ctx is.
kv::MultiStateOptions options_for(const model::Model& m, const kv::PolicySpec& policy,
                                  const KvFormat& kv_type, int ctx, int extra_steps) {
  kv::MultiStateOptions so = m.state_options(policy, kv_type, 1);
  so.initial_slots = ctx + extra_steps;
  return so;
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

double stddev_of(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

}  // namespace

Result<uint64_t> bytes_per_sequence(const model::Model& m, const kv::PolicySpec& policy,
                                    const KvFormat& kv_type, int ctx, int extra_steps) {
  TOVA_ASSIGN_OR_RETURN(auto state,
                        kv::MultiState::create(options_for(m, policy, kv_type, ctx, extra_steps)));
  return state->bytes();
}

namespace {

using Config = std::pair<kv::PolicySpec, KvFormat>;

// The options checked, the report's budget set, and every policy in every storage type, each
// checked to fit before minutes are spent on the first.
Result<std::vector<Config>> plan_configs(const model::Model& m, const ThroughputOptions& o,
                                         int extra_steps, ThroughputReport& report) {
  if (o.ctx < 1) return make_error("{} must be at least 1, got {}", field::kContext, o.ctx);
  if (o.n_steps < 1 || o.repetitions < 1 || o.warmup_steps < 0) {
    return make_error("steps ({}) and repetitions ({}) must be at least 1", o.n_steps,
                      o.repetitions);
  }
  if (o.n_batch < 1) return make_error("batch size must be at least 1, got {}", o.n_batch);
  if (o.policies.empty()) return make_error("no KV policy to measure");
  if (o.kv_types.empty()) return make_error("no K/V storage type to measure");
  if (o.kv_memory == 0 && o.full_batch < 1) {
    return make_error("give the K/V memory budget in bytes, or how many `full` sequences it holds");
  }
  report.ctx = o.ctx;
  report.kv_memory = o.kv_memory;
  if (report.kv_memory == 0) {
    TOVA_ASSIGN_OR_RETURN(const kv::PolicySpec full, kv::parse_policy("full", 0));
    TOVA_ASSIGN_OR_RETURN(const uint64_t b,
                          bytes_per_sequence(m, full, o.kv_types[0], o.ctx, extra_steps));
    report.kv_memory = b * static_cast<uint64_t>(o.full_batch);
  }
  std::vector<Config> configs;
  for (const kv::PolicySpec& p : o.policies) {
    for (const KvFormat& t : o.kv_types) {
      configs.emplace_back(p, t);
      TOVA_ASSIGN_OR_RETURN(const uint64_t b, bytes_per_sequence(m, p, t, o.ctx, extra_steps));
      if (b > report.kv_memory) {
        return make_error(
            "{} at ctx {} needs {} bytes of K/V for one sequence, more than the budget of {} "
            "bytes",
            label_of(p, t), o.ctx, b, report.kv_memory);
      }
    }
  }
  return configs;
}

// One real prefill of ctx tokens, then copies of it up to the batch the budget holds (with the
// resident memory they really take).
Result<std::vector<std::unique_ptr<kv::MultiState>>> fill_and_copy(
    const model::Model& m, ThreadPool& pool, model::ForwardScratch& scratch, TokenSource& tokens,
    const ThroughputOptions& o, const Config& c, int extra_steps, uint64_t kv_memory,
    const std::function<void(const char*)>& progress, ThroughputResult& r) {
  progress("fill");
  TOVA_ASSIGN_OR_RETURN(
      auto first, kv::MultiState::create(options_for(m, c.first, c.second, o.ctx, extra_steps)));
  r.bytes_per_seq = first->bytes();
  r.max_batch = static_cast<int>(kv_memory / r.bytes_per_seq);
  r.batch = o.batch_cap > 0 ? std::min(o.batch_cap, r.max_batch) : r.max_batch;
  {
    std::vector<float> last(m.config().n_vocab);
    const std::vector<int32_t> fill = tokens.draw(o.ctx, true);
    TOVA_RETURN_IF_ERROR(runtime::feed(m, pool, scratch, *first, fill, o.n_batch, last.data()));
  }
  progress("copy");
  std::vector<std::unique_ptr<kv::MultiState>> states;
  states.reserve(r.batch);
  const int64_t rss_before = resident_bytes();
  for (int b = 1; b < r.batch; ++b) states.push_back(first->clone());
  const int64_t rss_after = resident_bytes();
  if (rss_before >= 0 && rss_after >= 0) r.rss_copies_bytes = rss_after - rss_before;
  states.push_back(std::move(first));
  for (const auto& s : states) r.kv_bytes_total += s->bytes();
  if (r.kv_bytes_total > kv_memory) {
    return make_error("{}: the batch allocated {} bytes, more than the budget of {}",
                      label_of(c.first, c.second), r.kv_bytes_total, kv_memory);
  }
  return states;
}

// Decode: every step feeds one token to every sequence in ONE forward pass; warm-up steps,
// then the timed repetitions.
Status time_decode(const model::Model& m, ThreadPool& pool, model::ForwardScratch& scratch,
                   TokenSource& tokens, const ThroughputOptions& o,
                   std::vector<std::unique_ptr<kv::MultiState>>& states,
                   const std::function<void(const char*)>& progress, uint64_t weight_bytes,
                   ThroughputResult& r) {
  const int n_vocab = m.config().n_vocab;
  runtime::ForwardBatch batch;
  std::vector<float> logits(static_cast<size_t>(r.batch) * n_vocab);
  auto step = [&]() -> Status {
    const std::vector<int32_t> ids = tokens.draw(r.batch, false);
    batch.clear();
    for (int b = 0; b < r.batch; ++b) {
      batch.add(*states[b], {&ids[b], 1}, runtime::LogitsAt::kLast);
    }
    return batch.run(m, pool, scratch, logits.data());
  };
  progress("warmup");
  for (int i = 0; i < o.warmup_steps; ++i) TOVA_RETURN_IF_ERROR(step());
  progress("run");
  double total_seconds = 0;
  for (int rep = 0; rep < o.repetitions; ++rep) {
    Timer t;
    for (int i = 0; i < o.n_steps; ++i) TOVA_RETURN_IF_ERROR(step());
    const double s = t.seconds();
    total_seconds += s;
    r.samples_ts.push_back(s > 0 ? static_cast<double>(r.batch) * o.n_steps / s : 0);
  }
  r.avg_ts = mean_of(r.samples_ts);
  r.stddev_ts = stddev_of(r.samples_ts);
  r.step_ms = total_seconds * 1e3 / (static_cast<double>(o.n_steps) * o.repetitions);
  // Every held state of every layer of every sequence (all copies hold the same number).
  r.read_bytes_per_step = weight_bytes + kv_read_bytes(*states[0]) * r.batch;
  r.read_gbps = r.step_ms > 0 ? r.read_bytes_per_step / (r.step_ms * 1e6) : 0;
  return ok_status();
}

}  // namespace

Result<ThroughputReport> run_throughput(const model::Model& m, ThreadPool& pool,
                                        const ThroughputOptions& o) {
  const int extra_steps = o.warmup_steps + o.n_steps * o.repetitions;
  ThroughputReport report;
  TOVA_ASSIGN_OR_RETURN(const std::vector<Config> configs,
                        plan_configs(m, o, extra_steps, report));
  model::ForwardScratch scratch;
  TokenSource tokens(m, o.seed);
  const uint64_t weight_bytes = describe_model(m, "").decode_weight_bytes;

  for (size_t ci = 0; ci < configs.size(); ++ci) {
    const Config& c = configs[ci];
    ThroughputResult r;
    r.policy = c.first.label();
    r.budget = c.first.bounded() ? c.first.budget : -1;
    r.kv_type = c.second.label();
    r.ctx = o.ctx;
    const std::function<void(const char*)> progress = [&](const char* phase) {
      if (o.on_progress) {
        o.on_progress({.index = static_cast<int>(ci),
                       .n_configs = static_cast<int>(configs.size()),
                       .label = label_of(c.first, c.second),
                       .phase = phase,
                       .batch = r.batch});
      }
    };
    TOVA_ASSIGN_OR_RETURN(auto states, fill_and_copy(m, pool, scratch, tokens, o, c, extra_steps,
                                                     report.kv_memory, progress, r));
    TOVA_RETURN_IF_ERROR(
        time_decode(m, pool, scratch, tokens, o, states, progress, weight_bytes, r));
    report.results.push_back(std::move(r));
  }

  // Relative to `full` in the first storage type if it was measured, else to the first
  // configuration.
  const ThroughputResult* base = &report.results.front();
  for (const ThroughputResult& r : report.results) {
    if (r.budget < 0 && r.kv_type == o.kv_types[0].label()) {
      base = &r;
      break;
    }
  }
  const double base_ts = base->avg_ts;
  for (ThroughputResult& r : report.results) r.relative = base_ts > 0 ? r.avg_ts / base_ts : 0;
  return report;
}

}  // namespace tova::eval

namespace tova::eval {

Result<ThroughputReport> run_throughput(const Engine& engine, const ThroughputOptions& o) {
  const auto lock = EngineAccess::exclusive(engine);
  TOVA_ASSIGN_OR_RETURN(ThroughputReport rep,
                        run_throughput(EngineAccess::model(engine), EngineAccess::pool(engine), o));
  nlohmann::ordered_json header;
  header["model_filename"] = engine.path();
  header["model_type"] = describe_model(engine, engine.path()).model_type;
  header["n_threads"] = engine.n_threads();
  std::vector<std::string> kv_types;
  for (const KvFormat& f : o.kv_types) kv_types.push_back(f.label());
  header["kv_types"] = kv_types;
  header["simd_target"] = kernels::simd_target_name();
  rep.json = throughput_json(rep, header).dump(2, ' ', false,
                                               nlohmann::json::error_handler_t::replace);
  return rep;
}

}  // namespace tova::eval
