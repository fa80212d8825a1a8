#include "kv/policies/scoring.h"

#include <algorithm>
#include <functional>

#include "core/check.h"

namespace tova::kv::scoring {

void SlotTable::grow(int n_slot) {
  if (n_slot <= n_slot_) return;
  std::vector<double> v(static_cast<size_t>(groups_) * n_slot, 0.0);
  for (int g = 0; g < groups_; ++g) std::copy_n(row(g), n_slot_, &v[static_cast<size_t>(g) * n_slot]);
  v_.swap(v);
  n_slot_ = n_slot;
}

void SlotTable::shrink(int n_slot) {
  if (n_slot >= n_slot_) return;
  std::vector<double> v(static_cast<size_t>(groups_) * n_slot, 0.0);
  for (int g = 0; g < groups_; ++g) std::copy_n(row(g), n_slot, &v[static_cast<size_t>(g) * n_slot]);
  v_.swap(v);
  n_slot_ = n_slot;
}

Status SlotTable::set_values(std::span<const double> s) {
  if (s.size() != v_.size()) {
    return make_error("policy state has {} values, expected {}", s.size(), v_.size());
  }
  std::copy(s.begin(), s.end(), v_.begin());
  return ok_status();
}

void group_mean(const SlotView& v, const float* probs, bool head_wise, int group, double* out) {
  const int per_group = head_wise ? v.n_head / v.n_head_kv : v.n_head;
  const int h0 = head_wise ? group * per_group : 0;
  const int end = v.end();
  std::fill(out, out + end, 0.0);
  for (int h = h0; h < h0 + per_group; ++h) {
    const float* p = probs + static_cast<int64_t>(h) * v.n_slot;
    for (int s = 0; s < end; ++s) out[s] += p[s];
  }
  const double inv = 1.0 / per_group;
  for (int s = 0; s < end; ++s) out[s] *= inv;
}

void lowest_slots(const int64_t* pos_row, int n_slot, const double* score, Protect protect,
                  int n, int32_t* out) {
  struct Cand {
    double score;
    int64_t pos;
    int32_t slot;
  };
  thread_local std::vector<Cand> cands;  // kept: eviction runs at every step
  cands.clear();
  for (int s = 0; s < n_slot; ++s) {
    const int64_t p = pos_row[s];
    if (p < 0 || p < protect.keep_below || p >= protect.keep_from) continue;
    cands.push_back({score ? score[s] : 0.0, p, s});
  }
  TOVA_CHECK(static_cast<int>(cands.size()) >= n);
  auto less = [](const Cand& a, const Cand& b) {
    return a.score != b.score ? a.score < b.score : a.pos < b.pos;
  };
  std::partial_sort(cands.begin(), cands.begin() + n, cands.end(), less);
  for (int j = 0; j < n; ++j) out[j] = cands[j].slot;
}

int64_t recent_threshold(const int64_t* pos_row, int n_slot, int count) {
  if (count <= 0) return std::numeric_limits<int64_t>::max();
  thread_local std::vector<int64_t> held;
  held.clear();
  for (int s = 0; s < n_slot; ++s) {
    if (pos_row[s] >= 0) held.push_back(pos_row[s]);
  }
  if (static_cast<int>(held.size()) <= count) return 0;
  std::nth_element(held.begin(), held.begin() + (count - 1), held.end(), std::greater<>());
  return held[count - 1];
}

void lowest_per_head(const SlotView& v, const double* scores, int n, int32_t* out) {
  for (int g = 0; g < v.n_head_kv; ++g) {
    const size_t off = static_cast<size_t>(g) * v.n_slot;
    lowest_slots(v.pos + off, v.end(), scores + off, {}, n, out + g * n);
  }
}

void choose_by_head_scores(KvPolicy& policy, const SlotView& v, int n, int32_t* out) {
  thread_local std::vector<double> scores;  // kept: eviction runs at every step
  scores.resize(static_cast<size_t>(v.n_head_kv) * v.n_slot);
  TOVA_CHECK(policy.head_scores(v, scores.data()));
  lowest_per_head(v, scores.data(), n, out);
}

void replicate_group0(const SlotView& v, int n, int32_t* out) {
  for (int g = 1; g < v.n_head_kv; ++g) std::copy(out, out + n, out + g * n);
}

}  // namespace tova::kv::scoring
