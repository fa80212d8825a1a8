// rkv[:B] (R-KV, Cai et al. 2025; exact rule in docs/POLICIES-EXTRA.md): new states gather in a
// buffer of B (default 128, R-KV's); when k + B + 1 are held, each KV head keeps its 8 newest
// (the observation window) and, of the others, those with the highest
// lambda * importance - (1 - lambda) * redundancy (lambda = 0.1): importance is the attention
// the window's 8 queries paid each state (mean over the rows and the KV head's query heads,
// max-pooled over 7 neighbours), redundancy the softmax over the candidates of each key's mean
// cosine similarity to the other candidates' keys (its most recent near copy, cos > 0.5, not
// counted). Down to k.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/check.h"
#include "kv/policies/scoring.h"
#include "kv/policy_registry.h"

namespace tova::kv {
namespace {

constexpr int kDefaultBuffer = 128;  // R-KV's B_buffer
constexpr int kMaxBuffer = 1 << 20;
constexpr int kObserve = 8;          // R-KV's observation window alpha
constexpr double kLambda = 0.1;      // R-KV's lambda (importance weight)
constexpr int kPoolRadius = 3;       // max-pooling kernel 7
constexpr double kNearCopy = 0.5;    // cosine above which a key is a near copy

class RkvPolicy final : public KvPolicy {
 public:
  explicit RkvPolicy(const PolicyArgs& a)
      : n_head_kv_(a.n_head_kv), rows_(kObserve * a.n_head_kv, a.n_slot) {}

  std::unique_ptr<KvPolicy> clone() const override { return std::make_unique<RkvPolicy>(*this); }
  ScoreNeed score_need() const override { return ScoreNeed::kAccumulated; }
  bool needs_rows() const override { return true; }

  // Per slot only (the rows): a session file, a clone and a slot permutation keep it whole.
  std::vector<double> state() const override { return rows_.values(); }
  Status set_state(std::span<const double> s) override { return rows_.set_values(s); }

  void on_grow(int n_slot) override { rows_.grow(n_slot); }
  void on_shrink(int n_slot) override { rows_.shrink(n_slot); }
  // A joining state was seen by none of the window's earlier rows.
  void on_insert(int g, int slot) override {
    for (int r = 0; r < kObserve; ++r) rows_.row(r * n_head_kv_ + g)[slot] = 0.0;
  }
  void on_move(int g, int from, int to) override {
    for (int r = 0; r < kObserve; ++r) rows_.move(r * n_head_kv_ + g, from, to);
  }

  // Each row's mean over the KV head's query heads; the last kObserve rows, newest first.
  void observe(const SlotView& v, const float* probs) override {
    for (int g = 0; g < n_head_kv_; ++g) {
      for (int r = kObserve - 1; r > 0; --r) {
        std::copy_n(rows_.row((r - 1) * n_head_kv_ + g), v.end(), rows_.row(r * n_head_kv_ + g));
      }
      scoring::group_mean(v, probs, true, g, rows_.row(g));
    }
  }

  void choose_evictions(const SlotView& v, int n, int32_t* out) override {
    TOVA_CHECK(v.rows != nullptr);
    const int dim = v.rows->head_dim;
    for (int g = 0; g < n_head_kv_; ++g) {
      const int64_t* pos = v.pos + static_cast<size_t>(g) * v.n_slot;
      held_.clear();
      for (int s = 0; s < v.end(); ++s) {
        if (pos[s] >= 0) held_.push_back(s);
      }
      std::sort(held_.begin(), held_.end(), [&](int a, int b) { return pos[a] < pos[b]; });
      const int n_held = static_cast<int>(held_.size());
      TOVA_CHECK(n_held >= n);
      // The newest kObserve stay (fewer when too few others are held).
      const int n_cand = n_held - std::min(kObserve, n_held - n);
      // Importance: the sum over the window's rows / kObserve (rows not yet seen count 0),
      // max-pooled over the candidates.
      imp_.assign(n_cand, 0.0);
      for (int j = 0; j < n_cand; ++j) {
        for (int r = 0; r < kObserve; ++r) imp_[j] += rows_.row(r * n_head_kv_ + g)[held_[j]];
        imp_[j] /= kObserve;
      }
      pooled_.assign(n_cand, 0.0);
      for (int j = 0; j < n_cand; ++j) {
        const int lo = std::max(0, j - kPoolRadius), hi = std::min(n_cand - 1, j + kPoolRadius);
        pooled_[j] = *std::max_element(imp_.begin() + lo, imp_.begin() + hi + 1);
      }
      // Redundancy: unit keys, their cosine matrix (0 on the diagonal and at each key's most
      // recent near copy), row means, softmax over the candidates.
      unit_.assign(static_cast<size_t>(n_cand) * dim, 0.0);
      for (int j = 0; j < n_cand; ++j) {
        const float* k = v.rows->keys + (static_cast<size_t>(g) * v.n_slot + held_[j]) * dim;
        double n2 = 0;
        for (int d = 0; d < dim; ++d) n2 += double(k[d]) * k[d];
        const double inv = n2 > 0 ? 1.0 / std::sqrt(n2) : 0.0;
        for (int d = 0; d < dim; ++d) unit_[static_cast<size_t>(j) * dim + d] = k[d] * inv;
      }
      red_.assign(n_cand, 0.0);
      cos_.assign(n_cand, 0.0);
      for (int i = 0; i < n_cand; ++i) {
        const double* ui = &unit_[static_cast<size_t>(i) * dim];
        int last_near = -1;
        for (int j = 0; j < n_cand; ++j) {
          if (j == i) {
            cos_[j] = 0;
            continue;
          }
          const double* uj = &unit_[static_cast<size_t>(j) * dim];
          double c = 0;
          for (int d = 0; d < dim; ++d) c += ui[d] * uj[d];
          cos_[j] = c;
          if (c > kNearCopy) last_near = j;  // candidates are in position order
        }
        if (last_near >= 0) cos_[last_near] = 0;
        red_[i] = std::accumulate(cos_.begin(), cos_.end(), 0.0) / n_cand;
      }
      if (n_cand > 0) {
        const double rmax = *std::max_element(red_.begin(), red_.end());
        double sum = 0;
        for (double& r : red_) sum += (r = std::exp(r - rmax));
        for (double& r : red_) r /= sum;
      }
      score_.assign(v.n_slot, 0.0);
      for (int j = 0; j < n_cand; ++j) {
        score_[held_[j]] = kLambda * pooled_[j] - (1 - kLambda) * red_[j];
      }
      const scoring::Protect window{
          .keep_from = n_cand < n_held ? pos[held_[n_cand]] : std::numeric_limits<int64_t>::max()};
      scoring::lowest_slots(pos, v.end(), score_.data(), window, n, out + g * n);
    }
  }

 private:
  int n_head_kv_;
  // [kObserve * n_head_kv][n_slot]: the r-th newest row of KV head g at r * H + g
  scoring::SlotTable rows_;
  // choose_evictions scratch
  std::vector<int> held_;
  std::vector<double> imp_, pooled_, unit_, red_, cos_, score_;
};

TOVA_REGISTER_POLICY(PolicyInfo{
    .name = "rkv",
    .arg_name = "B",
    .help = "R-KV: new states gather in a buffer of B (default 128); then each KV head keeps "
            "its 8 newest and the best 0.1 x attention - 0.9 x key redundancy, down to k",
    .arg_optional = true,
    .validate =
        [](int, std::optional<int> b) -> Status {
          if (b && (*b < 1 || *b > kMaxBuffer)) {
            return make_error("KV policy 'rkv': buffer B must be 1..{}, got {}", kMaxBuffer, *b);
          }
          return ok_status();
        },
    .plan =
        [](const PolicyArgs& a) {
          return LayerPlan{.budget = a.budget, .buffer = a.arg.value_or(kDefaultBuffer)};
        },
    .examples = {"rkv", "rkv:4"},
    .make = [](const PolicyArgs& a) { return std::make_unique<RkvPolicy>(a); },
});

}  // namespace
}  // namespace tova::kv
