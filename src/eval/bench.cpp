#include "eval/bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <memory>
#include <random>

#include "core/timer.h"
#include "eval/token_source.h"
#include "kv/policy_registry.h"
#include "runtime/engine_access.h"

namespace tova::eval {
namespace {

double mean_of(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double stddev_of(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

std::string upper(std::string_view s) {
  std::string u(s);
  for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return u;
}

uint64_t matrix_bytes(const kernels::WeightMatrix& w) {
  return w.row_bytes * static_cast<uint64_t>(w.n_out);
}

// A state for one test: n_prompt sizes chunk:inf's chunk; an unbounded state reserves n_total
// slots (depth + test) up front, as llama-bench sizes its context to depth + test: a `full`
// cache that doubled and copied itself inside the measured steps would time the copy, not the
// decode.
Result<std::unique_ptr<kv::MultiState>> bench_state(const model::Model& m,
                                                    const CacheOptions& c,
                                                    int64_t n_prompt, int64_t n_total) {
  CacheOptions sized = c;
  sized.reserve = n_total;
  return runtime::make_state(m, sized, n_prompt);
}

class Runner {
 public:
  Runner(const model::Model& m, const BenchOptions& o)
      : m_(m), o_(o), tokens_(m, o.seed), logits_(m.config().n_vocab) {}

  // A fresh state holding n_depth tokens.
  Result<std::unique_ptr<kv::MultiState>> prepared_state(const BenchCase& c, ThreadPool& pool) {
    const int64_t n_size = c.n_depth > 0 ? c.n_depth : std::max(c.n_prompt, 1);
    TOVA_ASSIGN_OR_RETURN(
        auto state,
        bench_state(m_, c.cache, n_size, static_cast<int64_t>(c.n_depth) + c.n_prompt + c.n_gen));
    if (c.n_depth > 0) {
      const std::vector<int32_t> t = tokens_.draw(c.n_depth, true);
      TOVA_RETURN_IF_ERROR(
          runtime::feed(m_, pool, scratch_, *state, t, o_.n_batch, logits_.data()));
    }
    return state;
  }

  Status prompt(kv::MultiState& state, int n, ThreadPool& pool) {
    const std::vector<int32_t> t = tokens_.draw(n, state.n_seen() == 0);
    return runtime::feed(m_, pool, scratch_, state, t, o_.n_batch, logits_.data());
  }

  Status generate(kv::MultiState& state, int n, ThreadPool& pool) {
    const std::vector<int32_t> t = tokens_.draw(n, state.n_seen() == 0);
    for (int i = 0; i < n; ++i) {
      TOVA_RETURN_IF_ERROR(runtime::feed(m_, pool, scratch_, state, {&t[i], 1}, 1, logits_.data()));
    }
    return ok_status();
  }

 private:
  const model::Model& m_;
  const BenchOptions& o_;
  TokenSource tokens_;
  model::ForwardScratch scratch_;
  std::vector<float> logits_;
};

}  // namespace

std::string BenchCase::name() const {
  std::string s = n_prompt > 0 ? fmt::format("pp{}", n_prompt) : fmt::format("tg{}", n_gen);
  if (n_depth > 0) s += fmt::format(" @ d{}", n_depth);
  return s;
}

std::string BenchCase::cache_label() const {
  std::string s = cache.policy.name.empty() ? "full" : cache.policy.label();
  if (cache.policy.bounded()) s += fmt::format(" k={}", cache.policy.budget);
  if (cache.prefill.inf || cache.prefill.chunk > 0) s += fmt::format(" {}", cache.prefill.label());
  return s;
}

std::vector<BenchCase> bench_cases(const BenchOptions& o) {
  std::vector<BenchCase> cases;
  for (const CacheOptions& cache : o.caches) {
    for (int nt : o.n_threads) {
      for (int nd : o.n_depth) {
        for (int np : o.n_prompt) {
          if (np > 0) {
            cases.push_back(
                {.n_prompt = np, .n_gen = 0, .n_depth = nd, .n_threads = nt, .cache = cache});
          }
        }
        for (int ng : o.n_gen) {
          if (ng > 0) {
            cases.push_back(
                {.n_prompt = 0, .n_gen = ng, .n_depth = nd, .n_threads = nt, .cache = cache});
          }
        }
      }
    }
  }
  return cases;
}

BenchModelInfo describe_model(const model::Model& m, const std::string& filename) {
  BenchModelInfo info;
  info.filename = filename;
  info.arch = m.config().arch_name;
  for (const io::GgufTensorInfo& t : m.file().tensors()) {
    info.n_bytes += t.n_bytes;
    info.n_params += static_cast<uint64_t>(t.n_elements);
  }
  const double np = static_cast<double>(info.n_params);
  info.size_label = np >= 1e9   ? fmt::format("{:.1f}B", np / 1e9)
                    : np >= 1e6 ? fmt::format("{:.0f}M", np / 1e6)
                                : fmt::format("{:.0f}K", np / 1e3);
  // The main weight type: the one holding most bytes of the layer matrices.
  std::map<GgmlType, uint64_t> by_type;
  const model::ModelWeights& w = m.weights();
  for (const model::LayerWeights& l : w.layers) {
    for (const kernels::WeightMatrix* x :
         {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      by_type[x->type] += matrix_bytes(*x);
      info.decode_weight_bytes += matrix_bytes(*x);
    }
  }
  info.decode_weight_bytes += matrix_bytes(w.output) + w.token_embd.row_bytes;
  GgmlType main = w.output.type;
  uint64_t best = 0;
  for (const auto& [t, b] : by_type) {
    if (b > best) {
      best = b;
      main = t;
    }
  }
  info.weight_type = upper(type_name(main));
  info.model_type = fmt::format("{} {} {}", info.arch, info.size_label, info.weight_type);
  return info;
}

Result<std::vector<BenchResult>> run_bench(const model::Model& m, const std::string& filename,
                                           const BenchOptions& o) {
  if (o.repetitions < 1) return make_error("repetitions must be at least 1, got {}", o.repetitions);
  if (o.n_batch < 1) return make_error("batch size must be at least 1, got {}", o.n_batch);
  BenchOptions opts = o;
  for (CacheOptions& c : opts.caches) {
    if (c.policy.name.empty()) {
      TOVA_ASSIGN_OR_RETURN(c.policy, kv::parse_policy("full", 0));
    }
  }
  const std::vector<BenchCase> cases = bench_cases(opts);
  for (const BenchCase& c : cases) {
    if (c.n_prompt < 0 || c.n_gen < 0 || c.n_depth < 0) {
      return make_error("negative token count in test {}", c.name());
    }
    if (c.n_threads < 1) return make_error("thread count must be at least 1, got {}", c.n_threads);
  }
  const BenchModelInfo info = describe_model(m, filename);
  Runner run(m, opts);
  std::map<int, std::unique_ptr<ThreadPool>> pools;
  std::vector<BenchResult> results;
  auto progress = [&](int index, const BenchCase& c, const char* phase, int rep) {
    if (o.on_progress) {
      o.on_progress({.index = index,
                     .n_cases = static_cast<int>(cases.size()),
                     .name = c.name(),
                     .phase = phase,
                     .repetition = rep});
    }
  };
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const BenchCase& c = cases[ci];
    const int index = static_cast<int>(ci);
    auto& pool_slot = pools[c.n_threads];
    if (!pool_slot) pool_slot = std::make_unique<ThreadPool>(c.n_threads);
    ThreadPool& pool = *pool_slot;
    const int n_tokens = c.n_prompt > 0 ? c.n_prompt : c.n_gen;
    auto test = [&](kv::MultiState& state, int n) {
      return c.n_prompt > 0 ? run.prompt(state, n, pool) : run.generate(state, n, pool);
    };

    if (opts.warmup) {
      progress(index, c, "warmup", 0);
      TOVA_ASSIGN_OR_RETURN(auto state,
                            bench_state(m, c.cache, std::max(n_tokens, 1), std::max(n_tokens, 1)));
      TOVA_RETURN_IF_ERROR(test(*state, c.n_prompt > 0 ? c.n_prompt : 1));
    }
    BenchResult r{.test = c, .model = info, .n_batch = opts.n_batch};
    for (int rep = 0; rep < opts.repetitions; ++rep) {
      if (c.n_depth > 0) progress(index, c, "depth", rep);
      TOVA_ASSIGN_OR_RETURN(auto state, run.prepared_state(c, pool));
      progress(index, c, "run", rep);
      Timer t;
      TOVA_RETURN_IF_ERROR(test(*state, n_tokens));
      const double s = t.seconds();
      r.samples_ns.push_back(s * 1e9);
      r.samples_ts.push_back(s > 0 ? n_tokens / s : 0);
      r.kv_bytes = state->bytes();
      if (c.n_gen > 0) r.read_bytes_per_token = info.decode_weight_bytes + kv_read_bytes(*state);
    }
    r.avg_ns = mean_of(r.samples_ns);
    r.stddev_ns = stddev_of(r.samples_ns);
    r.avg_ts = mean_of(r.samples_ts);
    r.stddev_ts = stddev_of(r.samples_ts);
    r.read_gbps = r.read_bytes_per_token * r.avg_ts / 1e9;
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace tova::eval

namespace tova::eval {

uint64_t kv_read_bytes(const kv::MultiState& s) {
  uint64_t b = 0;
  for (int il = 0; il < s.n_layer(); ++il) {
    const kv::LayerState& l = s.layer(il);
    b += uint64_t(l.n_held()) * l.n_head_kv() * l.kv_type().slot_bytes(l.head_dim());
  }
  // A hybrid model's recurrent states are read (and written) whole at every step.
  return b + s.recurrent_bytes();
}

BenchModelInfo describe_model(const Engine& engine, const std::string& filename) {
  return describe_model(EngineAccess::model(engine), filename);
}

Result<std::vector<BenchResult>> run_bench(const Engine& engine, const std::string& filename,
                                           const BenchOptions& o) {
  // Each case runs on a pool of its own thread count; the engine's stays idle meanwhile.
  const auto lock = EngineAccess::exclusive(engine);
  return run_bench(EngineAccess::model(engine), filename, o);
}

}  // namespace tova::eval
