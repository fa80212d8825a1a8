#include "eval/ppl_sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/field_names.h"
#include "core/timer.h"
#include "eval/nll.h"
#include "kernels/matmul.h"
#include "runtime/forward_batch.h"
#include "runtime/sequence.h"
#include "model/token_ids.h"

namespace tova::eval {

Result<std::vector<std::vector<int32_t>>> make_chunks(std::span<const int32_t> ids,
                                                      const ChunkOptions& o) {
  if (o.ctx < 2) return make_error("a chunk needs at least 2 tokens (ctx {})", o.ctx);
  if (o.max_chunks < 0) return make_error("invalid number of chunks {}", o.max_chunks);
  const bool bos = o.bos >= 0;
  const size_t per_chunk = static_cast<size_t>(o.ctx) - (bos ? 1 : 0);  // ids taken per chunk
  size_t n = ids.size() / per_chunk;
  if (n == 0) {
    return make_error("the input has {} tokens, fewer than one chunk of {} needs ({}{})",
                      ids.size(), o.ctx, per_chunk, bos ? " after BOS" : "");
  }
  if (o.max_chunks > 0) n = std::min(n, static_cast<size_t>(o.max_chunks));
  std::vector<std::vector<int32_t>> chunks(n);
  for (size_t c = 0; c < n; ++c) {
    auto& ch = chunks[c];
    ch.reserve(o.ctx);
    if (bos) ch.push_back(o.bos);
    ch.insert(ch.end(), ids.begin() + c * per_chunk, ids.begin() + (c + 1) * per_chunk);
  }
  return chunks;
}

Result<std::vector<kv::PolicySpec>> sweep_configs(std::span<const std::string> policies,
                                                  std::span<const int> budgets, int ctx) {
  if (policies.empty()) return make_error("{}: none given", field::kPolicies);
  for (size_t i = 0; i < budgets.size(); ++i) {
    const int b = budgets[i];
    if (b < 1) return make_error("budget {} is below 1 state", b);
    if (b > ctx) return make_error("budget {} is above the context of {} tokens", b, ctx);
    if (std::find(budgets.begin(), budgets.begin() + i, b) != budgets.begin() + i) {
      return make_error("budget {} is listed twice", b);
    }
  }
  std::vector<kv::PolicySpec> full, bounded;
  std::vector<std::string> seen;
  for (const std::string& p : policies) {
    const kv::PolicyInfo* info = kv::policy_of(p);
    if (info == nullptr) {
      TOVA_ASSIGN_OR_RETURN(auto spec, kv::parse_policy(p, 1));  // the registry's message
      return make_error("unknown KV policy '{}'", spec.label());
    }
    if (!info->bounded) {
      TOVA_ASSIGN_OR_RETURN(auto spec, kv::parse_policy(p, 0));
      if (!full.empty()) return make_error("policy '{}' is listed twice", spec.label());
      full.push_back(std::move(spec));
      continue;
    }
    if (budgets.empty()) {
      return make_error("policy '{}' needs budgets (none given)", p);
    }
    for (int b : budgets) {
      TOVA_ASSIGN_OR_RETURN(auto spec, kv::parse_policy(p, b));
      if (b == budgets.front()) {
        if (std::find(seen.begin(), seen.end(), spec.label()) != seen.end()) {
          return make_error("policy '{}' is listed twice", spec.label());
        }
        seen.push_back(spec.label());
      }
      bounded.push_back(std::move(spec));
    }
  }
  full.insert(full.end(), std::make_move_iterator(bounded.begin()),
              std::make_move_iterator(bounded.end()));
  return full;
}

namespace {

constexpr int kAutoSeqs = 32;
// Bound on the logits one forward call writes (floats): 256 MiB.
constexpr int64_t kMaxLogitFloats = int64_t{1} << 26;

// Sums for one configuration, filled in a fixed order — positions in increasing order within a
// (chunk, configuration), chunks in increasing order within a (position, configuration) — so a
// batched and an unbatched sweep add the same numbers in the same order.
struct Accumulator {
  std::vector<double> chunk_nll;     // [n_chunk] sums over positions
  std::vector<double> chunk_kl;      // [n_chunk]
  std::vector<int64_t> chunk_agree;  // [n_chunk]
  std::vector<double> pos_nll;       // [ctx - 1] sums over chunks
  std::vector<float> kl_values;      // every prediction's KL, for the percentile
  std::vector<double> token_nll;     // [n_chunk][ctx - 1] if kept
};

// One prediction to score: a configuration's logits row and full's row for the same
// (chunk, position).
struct ScoreItem {
  int cfg = 0;
  int chunk = 0;
  int pos = 0;
  int32_t target = 0;
  const float* row = nullptr;
  const float* full_row = nullptr;  // nullptr: no full in the sweep
};

struct Score {
  double nll = 0;
  double kl = 0;
  bool agree = false;
};

// A sequence: one configuration on one chunk.
struct Seq {
  int chunk = 0;
  int cfg = 0;
  std::unique_ptr<kv::MultiState> state;
};

class Sweep {
 public:
  Sweep(const model::Model& m, ThreadPool& pool, std::span<const std::vector<int32_t>> chunks,
        const SweepOptions& o)
      : m_(m),
        pool_(pool),
        chunks_(chunks),
        o_(o),
        n_vocab_(m.config().n_vocab),
        ctx_(static_cast<int>(chunks.front().size())) {
    const std::vector<KvFormat> types =
        o.kv_types.empty() ? std::vector<KvFormat>{o.kv_type} : o.kv_types;
    for (const kv::PolicySpec& p : o.configs) {
      for (const KvFormat& t : types) {
        cfgs_.push_back({p, t});
        if (!p.bounded() && full_ < 0) full_ = static_cast<int>(cfgs_.size()) - 1;
      }
    }
    n_cfg_ = static_cast<int>(cfgs_.size());
    acc_.resize(n_cfg_);
    const size_t n_chunk = chunks.size();
    for (Accumulator& a : acc_) {
      a.chunk_nll.assign(n_chunk, 0.0);
      a.chunk_kl.assign(n_chunk, 0.0);
      a.chunk_agree.assign(n_chunk, 0);
      a.pos_nll.assign(ctx_ - 1, 0.0);
      if (full_ >= 0) a.kl_values.reserve(n_chunk * (ctx_ - 1));
      if (o.keep_token_nll) a.token_nll.assign(n_chunk * (ctx_ - 1), 0.0);
    }
    progress_.steps_total = static_cast<int64_t>(n_chunk) * ctx_ * n_cfg_;
  }

  Status run() {
    const int n_chunk = static_cast<int>(chunks_.size());
    if (o_.batched) {
      const int target = o_.max_seqs > 0 ? o_.max_seqs : kAutoSeqs;
      const int group = std::clamp((target + n_cfg_ - 1) / n_cfg_, 1, n_chunk);
      for (int g0 = 0; g0 < n_chunk; g0 += group) {
        std::vector<Seq> seqs;
        for (int g = g0; g < std::min(n_chunk, g0 + group); ++g) {
          for (int c = 0; c < n_cfg_; ++c) {
            TOVA_ASSIGN_OR_RETURN(auto st, new_state(c));
            seqs.push_back({g, c, std::move(st)});
          }
        }
        TOVA_RETURN_IF_ERROR(run_seqs(seqs, nullptr));
      }
      return ok_status();
    }
    // One configuration per forward call; full goes first on each chunk so the others can be
    // compared with its stored logits.
    std::vector<int> order;
    if (full_ >= 0) order.push_back(full_);
    for (int c = 0; c < n_cfg_; ++c) {
      if (c != full_) order.push_back(c);
    }
    std::vector<float> full_store;
    if (full_ >= 0) full_store.resize(static_cast<size_t>(ctx_ - 1) * n_vocab_);
    for (int g = 0; g < n_chunk; ++g) {
      for (int c : order) {
        std::vector<Seq> seqs;
        TOVA_ASSIGN_OR_RETURN(auto st, new_state(c));
        seqs.push_back({g, c, std::move(st)});
        TOVA_RETURN_IF_ERROR(run_seqs(seqs, full_ >= 0 ? &full_store : nullptr));
      }
    }
    return ok_status();
  }

  SweepResult result() {
    SweepResult r;
    r.ctx = ctx_;
    r.n_chunks = static_cast<int>(chunks_.size());
    r.n_predictions = static_cast<int64_t>(r.n_chunks) * (ctx_ - 1);
    r.n_forward_calls = n_forward_;
    r.n_shared_steps = n_shared_;
    const double n_pred = static_cast<double>(r.n_predictions);
    r.several_kv_types = o_.kv_types.size() > 1;
    for (int c = 0; c < n_cfg_; ++c) {
      Accumulator& a = acc_[c];
      ConfigResult cr;
      cr.policy = cfgs_[c].policy;
      cr.kv_type = cfgs_[c].kv_type;
      for (double s : a.chunk_nll) cr.nll_by_chunk.push_back(s / (ctx_ - 1));
      const Perplexity p = perplexity(cr.nll_by_chunk);
      cr.mean_nll = p.mean_nll;
      cr.ppl = p.ppl;
      cr.ppl_se = p.ppl_se;
      for (double s : a.pos_nll) cr.nll_by_position.push_back(s / r.n_chunks);
      if (full_ >= 0) {
        double kl = 0;
        int64_t agree = 0;
        for (size_t g = 0; g < a.chunk_kl.size(); ++g) {
          kl += a.chunk_kl[g];
          agree += a.chunk_agree[g];
        }
        cr.kl_mean = kl / n_pred;
        cr.top1_agree = static_cast<double>(agree) / n_pred;
        cr.kl_p99 = quantile(a.kl_values, 0.99);
      }
      cr.token_nll = std::move(a.token_nll);
      r.configs.push_back(std::move(cr));
    }
    if (full_ >= 0) {
      const std::vector<double>& base = r.configs[full_].nll_by_chunk;
      for (ConfigResult& cr : r.configs) {
        std::vector<double> d(base.size());
        for (size_t g = 0; g < base.size(); ++g) d[g] = cr.nll_by_chunk[g] - base[g];
        const MeanSe m = mean_and_se(d);
        cr.dnll_mean = m.mean;
        cr.dnll_se = m.se;
      }
    }
    return r;
  }

 private:
  Result<std::unique_ptr<kv::MultiState>> new_state(int c) {
    // A chunk is not a prompt: no policy cuts it at its end (n_prompt 0); `full` reserves it.
    const CacheOptions co{.policy = cfgs_[c].policy,
                          .kv_type = cfgs_[c].kv_type,
                          .reserve = ctx_,
                          .positions = o_.positions};
    return runtime::make_state(m_, co, 0);
  }

  // The sequences of each chunk: [first, last) into seqs, and which one is full.
  struct ChunkRange {
    int chunk, first, last, full_seq;
  };
  std::vector<ChunkRange> chunk_ranges(const std::vector<Seq>& seqs) const {
    std::vector<ChunkRange> ranges;
    for (int s = 0; s < static_cast<int>(seqs.size()); ++s) {
      if (ranges.empty() || ranges.back().chunk != seqs[s].chunk) {
        ranges.push_back({seqs[s].chunk, s, s, -1});
      }
      ChunkRange& r = ranges.back();
      r.last = s + 1;
      if (seqs[s].cfg == full_) r.full_seq = s;
    }
    return ranges;
  }

  // leader_of[s] >= 0: s rides along with that sequence (the largest budget in the same K/V
  // format in its chunk) for positions below follow_until[s], the last micro-batch boundary at
  // or before its budget (it holds every token up to there) and before the chunk's last,
  // partial micro-batch. Every call then still holds at least one whole micro-batch of the
  // leader, and with micro-batches of kMatmulBatchInvariantTokens or more the matmul computes
  // each row as it would without sharing: bit-identical scores.
  void plan_followers(const std::vector<Seq>& seqs, const std::vector<ChunkRange>& ranges,
                      int step, std::vector<int>& leader_of, std::vector<int>& follow_until) const {
    auto budget_of = [&](int s) {
      const kv::PolicySpec& p = cfgs_[seqs[s].cfg].policy;
      return p.bounded() ? p.budget : std::numeric_limits<int>::max();
    };
    auto format_of = [&](int s) -> const KvFormat& { return cfgs_[seqs[s].cfg].kv_type; };
    auto leader_in = [&](const ChunkRange& r, int s) {
      int leader = -1;
      for (int x = r.first; x < r.last; ++x) {
        if (format_of(x) == format_of(s) && (leader < 0 || budget_of(x) > budget_of(leader))) {
          leader = x;
        }
      }
      return leader;
    };
    for (const ChunkRange& r : ranges) {
      for (int s = r.first; s < r.last; ++s) {
        const int leader = leader_in(r, s);
        if (s == leader || !cfgs_[seqs[s].cfg].policy.bounded()) continue;
        // Sliding-window layers may evict before the budget (MultiState::holds_all_until).
        // (holds_all_until is at most the budget, or budget + buffer for rkv.)
        const int holds = std::min(seqs[s].state->holds_all_until(),
                                   seqs[leader].state->holds_all_until());
        const int until = std::min(ctx_ / step, holds / step) * step;
        if (until > 0) {
          leader_of[s] = leader;
          follow_until[s] = until;
        }
      }
    }
  }

  // Feeds whole chunks for a set of sequences (ordered by chunk) through shared forward calls,
  // scoring every prediction. full_store (unbatched sweeps) keeps the current chunk's full
  // logits [ctx - 1][n_vocab] for the configurations that follow it.
  Status run_seqs(std::vector<Seq>& seqs, std::vector<float>* full_store) {
    const int n_seq = static_cast<int>(seqs.size());
    const int64_t by_memory = std::max<int64_t>(1, kMaxLogitFloats / (int64_t{n_seq} * n_vocab_));
    const int step = static_cast<int>(std::min<int64_t>(std::max(1, o_.n_batch), by_memory));
    const std::vector<ChunkRange> ranges = chunk_ranges(seqs);
    std::vector<int> leader_of(n_seq, -1), follow_until(n_seq, 0);
    if (o_.batched && o_.share_prefix && full_store == nullptr &&
        step >= kernels::kMatmulBatchInvariantTokens) {
      plan_followers(seqs, ranges, step, leader_of, follow_until);
    }

    runtime::ForwardBatch batch;
    std::vector<int> row_seq(n_seq);  // the sequence whose logits rows s uses in this call
    std::vector<int> active_index(n_seq);
    std::vector<ScoreItem> items;
    for (int p0 = 0; p0 < ctx_; p0 += step) {
      const int p1 = std::min(ctx_, p0 + step);
      const int n_rows = std::max(0, std::min(p1, ctx_ - 1) - p0);  // rows with logits per seq
      batch.clear();
      int n_active = 0;
      for (int s = 0; s < n_seq; ++s) {
        Seq& sq = seqs[s];
        if (leader_of[s] >= 0 && p0 < follow_until[s]) {
          batch.follow(*seqs[leader_of[s]].state, *sq.state);
          row_seq[s] = leader_of[s];
          n_shared_ += p1 - p0;
          continue;
        }
        row_seq[s] = s;
        active_index[s] = n_active++;
        // Every position but the chunk's last predicts the next token.
        const std::span<const int32_t> part = std::span(chunks_[sq.chunk]).subspan(p0, p1 - p0);
        batch.add(*sq.state, part.first(n_rows), runtime::LogitsAt::kEach);
        batch.add(*sq.state, part.subspan(n_rows), runtime::LogitsAt::kNone);
      }
      logits_.resize(static_cast<size_t>(n_active) * n_rows * n_vocab_);
      TOVA_RETURN_IF_ERROR(batch.run(m_, pool_, scratch_, logits_.data()));
      ++n_forward_;
      auto row = [&](int s, int p) {
        const int a = active_index[row_seq[s]];
        return &logits_[(static_cast<size_t>(a) * n_rows + (p - p0)) * n_vocab_];
      };

      items.clear();
      for (const ChunkRange& r : ranges) {
        const std::vector<int32_t>& ch = chunks_[r.chunk];
        for (int p = p0; p < p0 + n_rows; ++p) {
          const float* full_row = nullptr;
          if (r.full_seq >= 0) {
            full_row = row(r.full_seq, p);
            if (full_store != nullptr) {
              std::memcpy(&(*full_store)[static_cast<size_t>(p) * n_vocab_], full_row,
                          sizeof(float) * n_vocab_);
            }
          } else if (full_store != nullptr) {
            full_row = &(*full_store)[static_cast<size_t>(p) * n_vocab_];
          }
          for (int s = r.first; s < r.last; ++s) {
            items.push_back({.cfg = seqs[s].cfg,
                             .chunk = r.chunk,
                             .pos = p,
                             .target = ch[p + 1],
                             .row = row(s, p),
                             .full_row = full_row});
          }
        }
      }
      score(items);
      accumulate(items);
      progress_.steps_done += static_cast<int64_t>(p1 - p0) * n_seq;
      if (o_.on_progress) {
        progress_.seconds = timer_.seconds();
        o_.on_progress(progress_);
      }
    }
    return ok_status();
  }

  void score(std::span<const ScoreItem> items) {
    scores_.resize(items.size());
    const int n = n_vocab_;
    pool_.parallel_for(static_cast<int64_t>(items.size()), 8, [&](int64_t i0, int64_t i1) {
      std::vector<double> lf(n), pf(n), lc(n);
      const float* cached = nullptr;  // full's row whose log-softmax is in lf
      int32_t full_arg = 0;
      for (int64_t i = i0; i < i1; ++i) {
        const ScoreItem& it = items[i];
        Score& sc = scores_[i];
        log_softmax({it.row, static_cast<size_t>(n)}, lc);
        sc.nll = nll(lc, it.target);
        if (it.full_row != nullptr) {
          if (it.full_row != cached) {
            log_softmax({it.full_row, static_cast<size_t>(n)}, lf);
            for (int v = 0; v < n; ++v) pf[v] = std::exp(lf[v]);
            full_arg = argmax({it.full_row, static_cast<size_t>(n)});
            cached = it.full_row;
          }
          sc.kl = kl_divergence(pf, lf, lc);
          sc.agree = argmax({it.row, static_cast<size_t>(n)}) == full_arg;
        }
      }
    });
  }

  void accumulate(std::span<const ScoreItem> items) {
    for (size_t i = 0; i < items.size(); ++i) {
      const ScoreItem& it = items[i];
      const Score& sc = scores_[i];
      Accumulator& a = acc_[it.cfg];
      a.chunk_nll[it.chunk] += sc.nll;
      a.pos_nll[it.pos] += sc.nll;
      if (!a.token_nll.empty()) {
        a.token_nll[static_cast<size_t>(it.chunk) * (ctx_ - 1) + it.pos] = sc.nll;
      }
      if (it.full_row != nullptr) {
        a.chunk_kl[it.chunk] += sc.kl;
        a.chunk_agree[it.chunk] += sc.agree ? 1 : 0;
        a.kl_values.push_back(static_cast<float>(sc.kl));
      }
    }
  }

  const model::Model& m_;
  ThreadPool& pool_;
  std::span<const std::vector<int32_t>> chunks_;
  const SweepOptions& o_;
  int n_vocab_;
  int ctx_;
  struct Config {
    kv::PolicySpec policy;
    KvFormat kv_type;
  };
  std::vector<Config> cfgs_;  // SweepOptions::configs x its K/V formats, policy-major
  int n_cfg_ = 0;
  int full_ = -1;  // index of the unbounded configuration in the first format
  std::vector<Accumulator> acc_;
  model::ForwardScratch scratch_;
  std::vector<float> logits_;  // [n_seq][rows][n_vocab]
  std::vector<Score> scores_;
  SweepProgress progress_;
  int64_t n_forward_ = 0;
  int64_t n_shared_ = 0;
  Timer timer_;
};

}  // namespace

std::string SweepResult::name(const ConfigResult& c) const {
  std::string s = c.policy.bounded() ? fmt::format("{} k={}", c.policy.label(), c.policy.budget)
                                     : c.policy.label();
  return several_kv_types ? s + " " + c.kv_type.label() : s;
}

Result<SweepResult> run_sweep(const model::Model& m, ThreadPool& pool,
                              std::span<const std::vector<int32_t>> chunks, const SweepOptions& o) {
  if (chunks.empty()) return make_error("no chunks to score");
  if (o.configs.empty()) return make_error("no configurations to score");
  const size_t ctx = chunks.front().size();
  if (ctx < 2) return make_error("chunks of {} tokens hold no prediction", ctx);
  for (size_t g = 0; g < chunks.size(); ++g) {
    if (chunks[g].size() != ctx) {
      return make_error("chunk {} has {} tokens, chunk 0 has {}", g, chunks[g].size(), ctx);
    }
    TOVA_RETURN_IF_ERROR(
        model::check_token_ids(chunks[g], m.config().n_vocab, fmt::format("chunk {}", g)));
  }
  int n_full = 0;
  for (const kv::PolicySpec& s : o.configs) {
    if (s.info == nullptr) return make_error("a configuration has no policy");
    if (!s.bounded()) ++n_full;
  }
  if (n_full > 1) return make_error("the sweep lists the unbounded policy {} times", n_full);

  Timer t;
  Sweep sweep(m, pool, chunks, o);
  TOVA_RETURN_IF_ERROR(sweep.run());
  SweepResult r = sweep.result();
  r.seconds = t.seconds();
  return r;
}

}  // namespace tova::eval
