// expected-attention[:W] (Expected Attention, Devoto et al. 2025; exact rule in
// docs/POLICIES-EXTRA.md): each KV head evicts the state that the layer's FUTURE queries are
// expected to attend to least. The last W queries before RoPE (positions from 4 on) model a
// query as a Gaussian per query head (mean mu, covariance Sigma); RoPE over the next 512
// positions is averaged into one matrix Rbar; a key's expected logit is
// s k.(Rbar mu) + s^2/2 k^T (Rbar Sigma Rbar^T) k (s the attention scale, 1/sqrt(d)), softmaxed
// over the held keys per query head, averaged over the KV head's query heads, times |v|.
// Positions 0..3 (attention sinks) stay while enough others are held.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "kv/policies/scoring.h"
#include "kv/policy_registry.h"

namespace tova::kv {
namespace {

constexpr int kDefaultWindow = 32;   // queries whose statistics model the future ones
constexpr int kMaxWindow = 4096;
constexpr int kFuture = 512;         // positions RoPE is averaged over (kvpress's default)
constexpr int64_t kSinks = 4;        // kvpress's n_sink

class ExpectedAttentionPolicy final : public KvPolicy {
 public:
  ExpectedAttentionPolicy(const PolicyArgs& a, int window)
      : window_(window),
        n_head_(a.n_head),
        n_head_kv_(a.n_head_kv),
        head_dim_(a.head_dim),
        ring_(static_cast<size_t>(window) * a.n_head * a.head_dim, 0.0) {}

  std::unique_ptr<KvPolicy> clone() const override {
    return std::make_unique<ExpectedAttentionPolicy>(*this);
  }
  bool needs_queries() const override { return true; }
  bool needs_rows() const override { return true; }

  // The queries seen (count, then the ring of the last W): what a session file must keep.
  std::vector<double> state() const override {
    std::vector<double> s;
    s.reserve(ring_.size() + 1);
    s.push_back(static_cast<double>(count_));
    s.insert(s.end(), ring_.begin(), ring_.end());
    return s;
  }
  Status set_state(std::span<const double> s) override {
    if (s.size() != ring_.size() + 1 || !(s[0] >= 0) || s[0] != std::floor(s[0])) {
      return make_error("expected-attention state has {} values, expected {}", s.size(),
                        ring_.size() + 1);
    }
    count_ = static_cast<int64_t>(s[0]);
    std::copy(s.begin() + 1, s.end(), ring_.begin());
    return ok_status();
  }

  void observe(const SlotView& v, const float*) override {
    TOVA_CHECK(v.query != nullptr && v.rope != nullptr);
    if (rope_.theta.empty()) rope_ = *v.rope;
    // kvpress leaves the first n_sink queries out of the statistics (outliers).
    if (v.query_pos >= 0 && v.query_pos < kSinks) return;
    const size_t row = static_cast<size_t>(count_ % window_) * n_head_ * head_dim_;
    std::copy_n(v.query, static_cast<size_t>(n_head_) * head_dim_, &ring_[row]);
    ++count_;
  }

  void choose_evictions(const SlotView& v, int n, int32_t* out) override {
    TOVA_CHECK(v.rows != nullptr && v.rows->head_dim == head_dim_);
    statistics(v.step_last_pos);
    std::vector<double>& score = score_;
    score.assign(static_cast<size_t>(v.n_slot), 0.0);
    for (int g = 0; g < n_head_kv_; ++g) {
      const int64_t* pos = v.pos + static_cast<size_t>(g) * v.n_slot;
      int n_other = 0;
      for (int s = 0; s < v.end(); ++s) n_other += pos[s] >= kSinks;
      // The sinks stay while more than n other states are held.
      const scoring::Protect sinks{.keep_below = n_other >= n ? kSinks : 0};
      head_scores_of(v, g, sinks.keep_below, score.data());
      scoring::lowest_slots(pos, v.end(), score.data(), sinks, n, out + g * n);
    }
  }

 private:
  // mu' = Rbar mu and the centred rows of the window, per query head, for a step whose last
  // token is at position p: the future queries are at p + 1 .. p + kFuture.
  void statistics(int64_t p) {
    const int n_rows = static_cast<int>(std::min<int64_t>(count_, window_));
    n_rows_ = n_rows;
    const size_t hd = static_cast<size_t>(n_head_) * head_dim_;
    mu_.assign(hd, 0.0);
    centred_.assign(static_cast<size_t>(n_rows) * hd, 0.0);
    for (int r = 0; r < n_rows; ++r) {
      for (size_t i = 0; i < hd; ++i) mu_[i] += ring_[r * hd + i];
    }
    for (size_t i = 0; i < hd && n_rows > 0; ++i) mu_[i] /= n_rows;
    for (int r = 0; r < n_rows; ++r) {
      for (size_t i = 0; i < hd; ++i) centred_[r * hd + i] = ring_[r * hd + i] - mu_[i];
    }
    // Rbar's 2x2 blocks [[C, -S], [S, C]], C + iS = mean over m of e^{i m theta}
    //   = e^{i (p + (n + 1) / 2) theta} sin(n theta / 2) / (n sin(theta / 2)).
    const int half = rope_.n_rot / 2;
    cbar_.assign(half, 1.0);
    sbar_.assign(half, 0.0);
    const double nf = kFuture;
    for (int i = 0; i < half && !rope_.theta.empty(); ++i) {
      const double th = rope_.theta[i];
      const double den = nf * std::sin(th / 2);
      const double amp = den == 0 ? 1.0 : std::sin(nf * th / 2) / den;
      const double phase = (static_cast<double>(p) + (nf + 1) / 2) * th;
      cbar_[i] = amp * std::cos(phase);
      sbar_[i] = amp * std::sin(phase);
    }
  }

  // The dims (a, b) of RoPE pair i.
  std::pair<int, int> pair(int i) const {
    return rope_.neox ? std::pair{i, i + rope_.n_rot / 2} : std::pair{2 * i, 2 * i + 1};
  }

  // out[s] for the held slots of KV head g below v.end() (positions >= keep_below; the rest are
  // kept whatever they score): mean over the group's query heads of the softmax over those
  // slots of the expected logits, times |v_s|.
  void head_scores_of(const SlotView& v, int g, int64_t keep_below, double* out) {
    const int64_t* pos = v.pos + static_cast<size_t>(g) * v.n_slot;
    const int group = n_head_ / n_head_kv_;
    const double scale = rope_.scale > 0 ? rope_.scale : 1.0 / std::sqrt(double(head_dim_));
    const size_t hd = static_cast<size_t>(n_head_) * head_dim_;
    slots_.clear();
    for (int s = 0; s < v.end(); ++s) {
      if (pos[s] >= 0 && pos[s] >= keep_below) slots_.push_back(s);
    }
    const int n = static_cast<int>(slots_.size());
    logits_.assign(static_cast<size_t>(group) * n, 0.0);
    std::vector<double> k(head_dim_);
    for (int j = 0; j < n; ++j) {
      const float* key = v.rows->keys + (static_cast<size_t>(g) * v.n_slot + slots_[j]) * head_dim_;
      // k' = Rbar^T k: the logit of q' = Rbar q against k is q . k'.
      for (int d = 0; d < head_dim_; ++d) k[d] = key[d];
      for (int i = 0; i < static_cast<int>(cbar_.size()); ++i) {
        const auto [a, b] = pair(i);
        const double ka = key[a], kb = key[b];
        k[a] = cbar_[i] * ka + sbar_[i] * kb;
        k[b] = -sbar_[i] * ka + cbar_[i] * kb;
      }
      for (int hg = 0; hg < group; ++hg) {
        const int h = g * group + hg;
        const double* mu = &mu_[static_cast<size_t>(h) * head_dim_];
        double mean = 0;
        for (int d = 0; d < head_dim_; ++d) mean += mu[d] * k[d];
        // k'^T Sigma k' = mean over the window of ((q_r - mu) . k')^2 (Sigma divides by W).
        double var = 0;
        for (int r = 0; r < n_rows_; ++r) {
          const double* c = &centred_[r * hd + static_cast<size_t>(h) * head_dim_];
          double dot = 0;
          for (int d = 0; d < head_dim_; ++d) dot += c[d] * k[d];
          var += dot * dot;
        }
        if (n_rows_ > 0) var /= n_rows_;
        logits_[static_cast<size_t>(hg) * n + j] = scale * mean + scale * scale * var / 2;
      }
    }
    for (int s = 0; s < v.end(); ++s) out[s] = 0;
    for (int hg = 0; hg < group && n > 0; ++hg) {
      const double* z = &logits_[static_cast<size_t>(hg) * n];
      // The layer's attention sink (gpt-oss) joins the denominator as it does in attention.
      const int h = g * group + hg;
      const bool sink = !rope_.sinks.empty();
      double zmax = *std::max_element(z, z + n);
      if (sink) zmax = std::max(zmax, rope_.sinks[h]);
      double sum = sink ? std::exp(rope_.sinks[h] - zmax) : 0.0;
      for (int j = 0; j < n; ++j) sum += std::exp(z[j] - zmax);
      for (int j = 0; j < n; ++j) out[slots_[j]] += std::exp(z[j] - zmax) / sum / group;
    }
    for (int j = 0; j < n; ++j) {
      const float* val =
          v.rows->values + (static_cast<size_t>(g) * v.n_slot + slots_[j]) * head_dim_;
      double n2 = 0;
      for (int d = 0; d < head_dim_; ++d) n2 += double(val[d]) * val[d];
      out[slots_[j]] *= std::sqrt(n2);
    }
  }

  int window_;
  int n_head_, n_head_kv_, head_dim_;
  std::vector<double> ring_;  // [window][n_head][head_dim] the last queries, row count % window
  int64_t count_ = 0;         // queries recorded
  QueryRope rope_;            // the model's, from the first observed row
  // choose_evictions scratch
  int n_rows_ = 0;
  std::vector<double> mu_, centred_, cbar_, sbar_, logits_, score_;
  std::vector<int> slots_;
};

TOVA_REGISTER_POLICY(PolicyInfo{
    .name = "expected-attention",
    .arg_name = "W",
    .help = "each KV head evicts the state future queries are expected to attend to least "
            "(Gaussian of the last W queries, default 32, RoPE averaged over 512 positions, x |v|)",
    .arg_optional = true,
    .validate =
        [](int, std::optional<int> w) -> Status {
          if (w && (*w < 1 || *w > kMaxWindow)) {
            return make_error("KV policy 'expected-attention': query window W must be 1..{}, got {}",
                              kMaxWindow, *w);
          }
          return ok_status();
        },
    .examples = {"expected-attention", "expected-attention:4"},
    .make =
        [](const PolicyArgs& a) {
          return std::make_unique<ExpectedAttentionPolicy>(a, a.arg.value_or(kDefaultWindow));
        },
});

}  // namespace
}  // namespace tova::kv
