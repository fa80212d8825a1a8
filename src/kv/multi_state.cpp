#include "kv/multi_state.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "core/check.h"
#include "core/half.h"
#include "core/memory.h"
#include "kv/key_similarity.h"

namespace tova::kv {

LayerState::LayerState(const MultiStateOptions& o, int n_slot, std::unique_ptr<KvPolicy> policy,
                       const LayerLimits& limits)
    : n_head_kv_(o.n_head_kv),
      head_dim_(o.head_dim),
      fmt_(o.kv_type),
      k_row_(kv_row_bytes(o.kv_type.k, o.head_dim)),
      v_row_(kv_row_bytes(o.kv_type.v, o.head_dim)),
      n_slot_(n_slot),
      held_(o.n_head_kv, 0),
      keys_(static_cast<size_t>(o.n_head_kv) * key_pool_bytes(o.kv_type.k, o.head_dim, n_slot)),
      values_(static_cast<size_t>(o.n_head_kv) * n_slot * v_row_),
      pos_(static_cast<size_t>(o.n_head_kv) * n_slot, -1),
      free_(o.n_head_kv),
      policy_(std::move(policy)),
      n_head_(o.n_head),
      limits_(limits) {
  for (auto& f : free_) {
    f.reserve(n_slot);
    for (int s = n_slot - 1; s >= 0; --s) f.push_back(s);
  }
}

LayerState::LayerState(const LayerState& o)
    : n_head_kv_(o.n_head_kv_),
      head_dim_(o.head_dim_),
      fmt_(o.fmt_),
      k_row_(o.k_row_),
      v_row_(o.v_row_),
      n_slot_(o.n_slot_),
      n_held_(o.n_held_),
      held_(o.held_),
      slot_end_(o.slot_end_),
      keys_(o.keys_),
      values_(o.values_),
      pos_(o.pos_),
      free_(o.free_),
      policy_(o.policy_->clone()),
      n_head_(o.n_head_),
      limits_(o.limits_),
      n_evicted_(o.n_evicted_),
      kept_(o.kept_) {}

int64_t LayerState::n_held_total() const {
  int64_t n = 0;
  for (int h : held_) n += h;
  return n;
}

bool LayerState::over_budget() const {
  if (limits_.budget < 0) return false;
  int64_t kept = 0;
  for (int g = 0; g < n_head_kv_; ++g) kept += n_kept(g);
  if (limits_.shared_heads) return n_held_total() - kept > int64_t{limits_.budget} * n_head_kv_;
  return n_held_ - kept / n_head_kv_ > limits_.budget + limits_.buffer;
}

void LayerState::keep(PosRange r) {
  TOVA_CHECK(r.begin < r.end);
  // Marks of a step that failed before it was fed (its positions come again) are replaced.
  std::erase_if(kept_, [&](const PosRange& k) { return k.end > r.begin; });
  kept_.push_back(r);
}

bool LayerState::is_kept(int64_t pos) const {
  if (kept_.empty() || pos < 0) return false;
  // The last range starting at or before pos.
  auto it = std::upper_bound(kept_.begin(), kept_.end(), pos,
                             [](int64_t p, const PosRange& r) { return p < r.begin; });
  return it != kept_.begin() && pos < std::prev(it)->end;
}

int LayerState::n_kept(int g) const {
  if (kept_.empty()) return 0;
  int n = 0;
  const int64_t* p = &pos_[static_cast<size_t>(g) * n_slot_];
  for (int s = 0; s < slot_end_; ++s) n += is_kept(p[s]);
  return n;
}

void LayerState::update_n_held() { n_held_ = *std::max_element(held_.begin(), held_.end()); }

int LayerState::min_free() const {
  size_t n = free_[0].size();
  for (const auto& f : free_) n = std::min(n, f.size());
  return static_cast<int>(n);
}

SlotView LayerState::view() const {
  return SlotView{.n_head = n_head_,
                  .n_head_kv = n_head_kv_,
                  .n_slot = n_slot_,
                  .n_held = n_held_,
                  .n_held_head = held_.data(),
                  .pos = pos_.data(),
                  .slot_end = slot_end_};
}

Status LayerState::reserve(int64_t n_states, int64_t at_most) {
  // A window layer holds at most its window between steps (make_room grows it for a step).
  const int max_slots =
      limits_.window > 0 ? std::min(limits_.max_slots, limits_.window) : limits_.max_slots;
  if (n_states <= n_slot_ || n_slot_ >= max_slots) return ok_status();
  // At least double, as growing by one token would, so that a conversation reserving a little
  // more before every turn copies its cache O(log n) times, not once per turn.
  const int64_t doubled = std::min<int64_t>(int64_t{n_slot_} * 2, at_most);
  return grow_to(static_cast<int>(std::min<int64_t>(std::max(n_states, doubled), max_slots)));
}

Status LayerState::make_room(int n_new, bool whole) {
  // Heads sharing a budget fill unevenly: the fullest decides.
  const int64_t n_free = min_free();
  const int64_t most = int64_t{limits_.max_slots} + (whole ? limits_.image_slots : 0);
  if (n_new <= n_free || n_slot_ >= most) return ok_status();
  const int64_t want = int64_t{n_slot_} + (n_new - n_free);
  return grow_to(static_cast<int>(std::min<int64_t>(std::max(want, int64_t{n_slot_} * 2), most)));
}

Status LayerState::grow_to(int new_slot) {
  TOVA_CHECK(new_slot > n_slot_ && new_slot <= max_slots_all());
  const size_t k_head = key_pool_bytes(fmt_.k, head_dim_, new_slot);
  std::vector<uint8_t> k, v;
  std::vector<int64_t> p;
  const uint64_t bytes = uint64_t(n_head_kv_) * (k_head + uint64_t(new_slot) * v_row_);
  try {
    k.resize(static_cast<size_t>(n_head_kv_) * k_head);
    v.resize(static_cast<size_t>(n_head_kv_) * new_slot * v_row_);
    p.assign(static_cast<size_t>(n_head_kv_) * new_slot, -1);
    for (auto& f : free_) f.reserve(new_slot);
    policy_->on_grow(new_slot);
  } catch (const std::bad_alloc&) {
    return make_error("out of memory growing a K/V pool from {} to {} slots ({} of keys and values)",
                      n_slot_, new_slot, human_bytes(bytes));
  }
  for (int g = 0; g < n_head_kv_; ++g) {
    // Key tiles keep their index (slot s stays in tile s / tile_slots).
    std::memcpy(&k[g * k_head], &keys_[g * key_head_bytes()], key_head_bytes());
    std::memcpy(&v[g * new_slot * v_row_], &values_[g * n_slot_ * v_row_], n_slot_ * v_row_);
    std::copy_n(&pos_[static_cast<size_t>(g) * n_slot_], n_slot_,
                &p[static_cast<size_t>(g) * new_slot]);
    // The new slots are all above the free ones (a reserve may come before the pool is full):
    // under them on the stack, so the lowest free slot stays on top.
    std::vector<int32_t>& f = free_[g];
    f.insert(f.begin(), static_cast<size_t>(new_slot - n_slot_), 0);
    for (int i = 0; i < new_slot - n_slot_; ++i) f[i] = new_slot - 1 - i;
  }
  keys_.swap(k);
  values_.swap(v);
  pos_.swap(p);
  n_slot_ = new_slot;
  return ok_status();
}

void LayerState::shrink_to(int new_slot) {
  TOVA_CHECK(new_slot < n_slot_ && new_slot >= 1);
  // Key tiles keep their index, so a head's first tiles are its new pool.
  const size_t k_head = key_pool_bytes(fmt_.k, head_dim_, new_slot);
  std::vector<uint8_t> k(static_cast<size_t>(n_head_kv_) * k_head);
  std::vector<uint8_t> v(static_cast<size_t>(n_head_kv_) * new_slot * v_row_);
  std::vector<int64_t> p(static_cast<size_t>(n_head_kv_) * new_slot, -1);
  for (int g = 0; g < n_head_kv_; ++g) {
    const int64_t* old_pos = &pos_[static_cast<size_t>(g) * n_slot_];
    for (int s = new_slot; s < n_slot_; ++s) TOVA_CHECK(old_pos[s] < 0);  // nothing held is lost
    std::memcpy(&k[g * k_head], &keys_[g * key_head_bytes()], k_head);
    std::memcpy(&v[g * new_slot * v_row_], &values_[g * n_slot_ * v_row_], new_slot * v_row_);
    std::copy_n(old_pos, new_slot, &p[static_cast<size_t>(g) * new_slot]);
    std::erase_if(free_[g], [&](int32_t s) { return s >= new_slot; });
  }
  keys_.swap(k);
  values_.swap(v);
  pos_.swap(p);
  n_slot_ = new_slot;
  key_similarity_.clear();
  policy_->on_shrink(new_slot);
}

void LayerState::insert(int64_t pos, const float* k, const float* v, int32_t* slots_out) {
  if (fmt_.k == KvType::kF32 && fmt_.v == KvType::kF32) return insert_stored(pos, k, v, slots_out);
  row_scratch_.resize(n_head_kv_ * (k_row_ + v_row_));
  uint8_t* ks = row_scratch_.data();
  uint8_t* vs = ks + n_head_kv_ * k_row_;
  std::vector<float> tmp(head_dim_);
  auto convert = [&](KvType t, bool rotate, const float* x, uint8_t* y) {
    if (rotate) {
      std::copy_n(x, head_dim_, tmp.data());
      hadamard_ref(tmp.data(), head_dim_);
      x = tmp.data();
    }
    kv_quantize_row_ref(t, x, y, head_dim_);
  };
  for (int g = 0; g < n_head_kv_; ++g) {
    convert(fmt_.k, k_rotated(), k + g * head_dim_, ks + g * k_row_);
    convert(fmt_.v, v_rotated(), v + g * head_dim_, vs + g * v_row_);
  }
  insert_stored(pos, ks, vs, slots_out);
}

void LayerState::key_row(int g, int s, uint8_t* row) const {
  key_get_row(fmt_.k, head_dim_, key_tile(g, s), key_lane(s), row);
}

void LayerState::insert_stored(int64_t pos, const void* k, const void* v, int32_t* slots_out) {
  if (min_free() == 0) {
    const Status st = make_room(1);
    TOVA_CHECK(st.ok());
  }
  for (int g = 0; g < n_head_kv_; ++g) {
    TOVA_CHECK(!free_[g].empty());
    const int32_t s = free_[g].back();
    free_[g].pop_back();
    pos_[static_cast<size_t>(g) * n_slot_ + s] = pos;
    key_put_row(fmt_.k, head_dim_, key_tile(g, s), key_lane(s),
                static_cast<const uint8_t*>(k) + g * k_row_);
    std::memcpy(values_.data() + (static_cast<size_t>(g) * n_slot_ + s) * v_row_,
                static_cast<const uint8_t*>(v) + g * v_row_, v_row_);
    policy_->on_insert(g, s);
    slots_out[g] = s;
    slot_end_ = std::max(slot_end_, s + 1);
    ++held_[g];
  }
  update_n_held();
}

int LayerState::evict_to(int budget, int64_t last_pos) {
  if (last_pos < 0) last_pos = *std::max_element(pos_.begin(), pos_.end());
  const int n = drop_to(budget, last_pos);
  if (n > 0) settle();
  return n;
}

void LayerState::widen_rows(SlotView& v) {
  // Scratch per thread, not per layer: a sequence's layers do not keep a float copy of their
  // states between steps.
  thread_local std::vector<float> keys, values;
  thread_local std::vector<uint8_t> row;
  const size_t n = static_cast<size_t>(n_head_kv_) * n_slot_ * head_dim_;
  if (keys.size() < n) {
    keys.resize(n);
    values.resize(n);
  }
  row.resize(std::max(k_row_, v_row_));
  for (int g = 0; g < n_head_kv_; ++g) {
    for (int s = 0; s < v.end(); ++s) {
      const size_t at = static_cast<size_t>(g) * n_slot_ + s;
      if (pos_[at] < 0) continue;
      float* k = &keys[at * head_dim_];
      float* x = &values[at * head_dim_];
      key_row(g, s, row.data());
      kv_dequantize_row_ref(fmt_.k, row.data(), k, head_dim_);
      if (k_rotated()) hadamard_ref(k, head_dim_);  // its own inverse
      kv_dequantize_row_ref(fmt_.v, values_.data() + at * v_row_, x, head_dim_);
      if (v_rotated()) hadamard_ref(x, head_dim_);
    }
  }
  rows_ = SlotRows{.head_dim = head_dim_, .keys = keys.data(), .values = values.data()};
  v.rows = &rows_;
}

void LayerState::apply_merges(const SlotView& v, int n, const int32_t* evicted) {
  policy_->merge(v, n, evicted, merges_);
  if (merges_.empty()) return;
  // Per target, in the order the policy gave: the sum in double of its value and every weight x
  // evicted value, read from the rows widened before any merge, then stored once in its type.
  std::vector<double> acc(head_dim_);
  std::vector<float> x(head_dim_);
  std::vector<uint8_t> out(v_row_);
  std::vector<char> done(merges_.size(), 0);
  for (size_t i = 0; i < merges_.size(); ++i) {
    if (done[i]) continue;
    const int g = merges_[i].head_kv, to = merges_[i].to;
    TOVA_CHECK(g >= 0 && g < n_head_kv_ && to >= 0 && to < v.end());
    const size_t at_to = static_cast<size_t>(g) * n_slot_ + to;
    TOVA_CHECK(pos_[at_to] >= 0);
    for (int32_t e = 0; e < n; ++e) TOVA_CHECK(evicted[static_cast<size_t>(g) * n + e] != to);
    const float* base = v.rows->values + at_to * head_dim_;
    for (int d = 0; d < head_dim_; ++d) acc[d] = base[d];
    for (size_t j = i; j < merges_.size(); ++j) {
      const ValueMerge& m = merges_[j];
      if (done[j] || m.head_kv != g || m.to != to) continue;
      done[j] = 1;
      TOVA_CHECK(m.from >= 0 && m.from < v.end());
      const size_t at_from = static_cast<size_t>(g) * n_slot_ + m.from;
      TOVA_CHECK(pos_[at_from] >= 0);
      const float* from = v.rows->values + at_from * head_dim_;
      for (int d = 0; d < head_dim_; ++d) acc[d] += m.weight * from[d];
    }
    for (int d = 0; d < head_dim_; ++d) x[d] = static_cast<float>(acc[d]);
    if (v_rotated()) hadamard_ref(x.data(), head_dim_);
    kv_quantize_row_ref(fmt_.v, x.data(), out.data(), head_dim_);
    std::memcpy(values_.data() + at_to * v_row_, out.data(), v_row_);
  }
}

SlotView LayerState::eviction_view(int64_t last_pos) {
  SlotView v = view();
  v.step_last_pos = last_pos;
  // Kept image states are not the policy's to choose: it sees their slots as free (the count
  // of states held without them), so every rule (oldest, lowest score, recent window, anchor of
  // the keys, merge targets) runs over the other states alone.
  if (!kept_.empty()) {
    masked_pos_.assign(pos_.begin(), pos_.end());
    masked_held_.assign(held_.begin(), held_.end());
    for (int g = 0; g < n_head_kv_; ++g) {
      int64_t* p = &masked_pos_[static_cast<size_t>(g) * n_slot_];
      for (int s = 0; s < slot_end_; ++s) {
        if (is_kept(p[s])) {
          p[s] = -1;
          --masked_held_[g];
        }
      }
    }
    v.pos = masked_pos_.data();
    v.n_held_head = masked_held_.data();
    v.n_held = *std::max_element(masked_held_.begin(), masked_held_.end());
  }
  if (policy_->needs_rows()) widen_rows(v);
  if (policy_->needs_key_similarity()) {
    key_similarity_.resize(static_cast<size_t>(n_head_kv_) * n_slot_);
    key_similarity(KeyRows{.keys = keys_.data(),
                           .type = fmt_.k,
                           .pos = v.pos,
                           .n_head_kv = n_head_kv_,
                           .n_slot = n_slot_,
                           .slot_end = v.end(),
                           .head_dim = head_dim_},
                   key_similarity_.data());
    v.key_similarity = key_similarity_.data();
  }
  return v;
}

int LayerState::drop_shared(int budget, int64_t last_pos) {
  int64_t kept = 0;
  for (int g = 0; g < n_head_kv_; ++g) kept += n_kept(g);
  const int64_t n_total = n_held_total() - kept - int64_t{budget} * n_head_kv_;
  if (n_total <= 0) return 0;
  evict_scratch_.assign(static_cast<size_t>(n_total), -1);
  policy_->choose_shared_evictions(eviction_view(last_pos), static_cast<int>(n_total),
                                   evict_scratch_.data());
  for (int32_t e : evict_scratch_) {
    TOVA_CHECK(e >= 0 && e < n_head_kv_ * n_slot_);
    const int g = e / n_slot_;
    int64_t& p = pos_[e];
    TOVA_CHECK(p >= 0 && !is_kept(p));  // a policy must choose held, distinct, unkept slots
    p = -1;
    free_[g].push_back(e % n_slot_);
    --held_[g];
    TOVA_CHECK(held_[g] >= std::max(1, limits_.head_floor));
  }
  for (auto& f : free_) std::sort(f.begin(), f.end(), std::greater<>());
  update_n_held();
  n_evicted_ += n_total;
  return static_cast<int>(n_total);
}

int LayerState::drop_to(int budget, int64_t last_pos) {
  if (budget < 0) return 0;
  if (limits_.shared_heads) return drop_shared(budget, last_pos);
  // Kept image states are held beside the budget (every KV head holds the same ones).
  const int kept = n_kept(0);
  if (n_held_ - kept <= budget + limits_.buffer) return 0;
  const int n = n_held_ - kept - budget;
  evict_scratch_.assign(static_cast<size_t>(n) * n_head_kv_, -1);
  const SlotView ev = eviction_view(last_pos);
  policy_->choose_evictions(ev, n, evict_scratch_.data());
  if (policy_->merges()) apply_merges(ev, n, evict_scratch_.data());
  for (int g = 0; g < n_head_kv_; ++g) {
    for (int j = 0; j < n; ++j) {
      const int32_t s = evict_scratch_[static_cast<size_t>(g) * n + j];
      TOVA_CHECK(s >= 0 && s < n_slot_);
      int64_t& p = pos_[static_cast<size_t>(g) * n_slot_ + s];
      TOVA_CHECK(p >= 0 && !is_kept(p));  // a policy must choose held, distinct, unkept slots
      p = -1;
      free_[g].push_back(s);
    }
    // Keep the lowest free slot on top, so layer-wise policies keep identical layouts in every
    // KV head and the choice of slot never depends on eviction order.
    std::sort(free_[g].begin(), free_[g].end(), std::greater<>());
    held_[g] -= n;
  }
  update_n_held();
  n_evicted_ += n;
  return n;
}

int LayerState::drop_kept_outside(int64_t cutoff) {
  int n = 0;
  for (int g = 0; g < n_head_kv_; ++g) {
    int64_t* p = &pos_[static_cast<size_t>(g) * n_slot_];
    int n_g = 0;
    for (int s = 0; s < n_slot_; ++s) {
      if (p[s] >= 0 && p[s] <= cutoff && is_kept(p[s])) {
        p[s] = -1;
        free_[g].push_back(s);
        ++n_g;
      }
    }
    // Every KV head holds the same kept states (none is ever chosen), so drops as many.
    TOVA_CHECK(g == 0 || n_g == n);
    n = n_g;
    std::sort(free_[g].begin(), free_[g].end(), std::greater<>());
    held_[g] -= n_g;
  }
  std::erase_if(kept_, [&](const PosRange& r) { return r.end - 1 <= cutoff; });
  if (n == 0) return 0;
  update_n_held();
  n_evicted_ += static_cast<int64_t>(n) * (limits_.shared_heads ? n_head_kv_ : 1);
  return n;
}

int LayerState::drop_outside_window(int64_t last_pos) {
  if (limits_.window <= 0) return 0;
  const int64_t cutoff = last_pos - limits_.window + 1;  // the next query does not see these
  if (cutoff < 0) return 0;
  // Kept image states the window no longer shows go first, from every head alike: the heads'
  // kept states stay the same (drop_to counts them in head 0).
  const int n_kept_out = kept_.empty() ? 0 : drop_kept_outside(cutoff);
  auto outside = [&](int g, std::vector<int32_t>& out) {
    out.clear();
    const int64_t* p = &pos_[static_cast<size_t>(g) * n_slot_];
    for (int s = 0; s < n_slot_; ++s) {
      if (p[s] >= 0 && p[s] <= cutoff) out.push_back(s);
    }
    return static_cast<int>(out.size());
  };
  int n = INT_MAX;
  for (int g = 0; g < n_head_kv_ && n > 0; ++g) n = std::min(n, outside(g, window_scratch_));
  if (n == 0) return n_kept_out;
  for (int g = 0; g < n_head_kv_; ++g) {
    outside(g, window_scratch_);
    int64_t* p = &pos_[static_cast<size_t>(g) * n_slot_];
    // Oldest first (only head-wise policies can leave more than n here).
    std::sort(window_scratch_.begin(), window_scratch_.end(),
              [&](int32_t a, int32_t b) { return p[a] < p[b]; });
    for (int j = 0; j < n; ++j) {
      p[window_scratch_[j]] = -1;
      free_[g].push_back(window_scratch_[j]);
    }
    std::sort(free_[g].begin(), free_[g].end(), std::greater<>());
    held_[g] -= n;
  }
  update_n_held();
  n_evicted_ += static_cast<int64_t>(n) * (limits_.shared_heads ? n_head_kv_ : 1);
  return n + n_kept_out;
}

int LayerState::evict(int64_t last_pos) {
  // A prompt-holding policy under exact prefill chooses once the prompt's last token attended.
  const bool in_prompt = limits_.holds_prompt && last_pos + 1 < limits_.prompt_end;
  int n = drop_outside_window(last_pos);
  if (!in_prompt && !limits_.window_only) n += drop_to(limits_.budget, last_pos);
  if (n > 0) settle();
  // The cut is made: the pool that held the prompt shrinks to its bounded size (settle() packed
  // every held state below n_held + 1).
  if (limits_.settled_slots > 0 && !in_prompt) {
    if (n_slot_ > limits_.settled_slots) shrink_to(limits_.settled_slots);
    limits_.max_slots = limits_.settled_slots;
    limits_.settled_slots = 0;
    slot_end_ = std::min(slot_end_, n_slot_);
  }
  return n;
}

void LayerState::settle() {
  int end = 0;
  for (int g = 0; g < n_head_kv_; ++g) {
    const int64_t* p = &pos_[static_cast<size_t>(g) * n_slot_];
    for (int s = n_slot_ - 1; s >= end; --s) {
      if (p[s] >= 0) {
        end = s + 1;
        break;
      }
    }
  }
  slot_end_ = end;
  if (end <= n_held_ + 1) return;
  // KV head g holds held_[g] states, so as many are held at or above held_[g] as are free
  // below it; pair them in slot order (layer-wise policies' identical layouts stay identical).
  row_scratch_.resize(k_row_);
  for (int g = 0; g < n_head_kv_; ++g) {
    int64_t* p = &pos_[static_cast<size_t>(g) * n_slot_];
    const int n_g = held_[g];
    int to = 0;
    for (int from = n_g; from < n_slot_; ++from) {
      if (p[from] < 0) continue;
      while (p[to] >= 0) ++to;
      TOVA_CHECK(to < n_g);
      key_row(g, from, row_scratch_.data());
      key_put_row(fmt_.k, head_dim_, key_tile(g, to), key_lane(to), row_scratch_.data());
      std::memcpy(values_.data() + (static_cast<size_t>(g) * n_slot_ + to) * v_row_,
                  values_.data() + (static_cast<size_t>(g) * n_slot_ + from) * v_row_, v_row_);
      p[to] = p[from];
      p[from] = -1;
      policy_->on_move(g, from, to);
    }
    free_[g].clear();
    for (int s = n_slot_ - 1; s >= n_g; --s) free_[g].push_back(s);
  }
  slot_end_ = n_held_;
}

Status LayerState::restore(int n_slot, std::span<const int64_t> pos, std::span<const uint8_t> keys,
                           std::span<const uint8_t> values, int64_t n_evicted,
                           std::span<const double> policy_state) {
  if (n_slot < n_slot_ || n_slot > max_slots_all()) {
    return make_error("saved layer has {} slots, this cache {} to {}", n_slot, n_slot_,
                      max_slots_all());
  }
  const size_t n_pos = static_cast<size_t>(n_head_kv_) * n_slot;
  if (pos.size() != n_pos || keys.size() != n_pos * k_row_ || values.size() != n_pos * v_row_) {
    return make_error("saved layer sizes do not match the cache shape");
  }
  if (n_evicted < 0) return make_error("saved layer has a negative eviction count");
  std::vector<int> held(n_head_kv_, 0);
  for (int g = 0; g < n_head_kv_; ++g) {
    for (int s = 0; s < n_slot; ++s) {
      const int64_t p = pos[static_cast<size_t>(g) * n_slot + s];
      if (p < -1) return make_error("saved layer has an invalid position {}", p);
      held[g] += p >= 0;
    }
    if (!limits_.shared_heads && held[g] != held[0]) {
      return make_error("saved KV heads hold different counts");
    }
  }
  std::unique_ptr<KvPolicy> policy = policy_->clone();
  policy->on_grow(n_slot);
  TOVA_RETURN_IF_ERROR(policy->set_state(policy_state));
  policy_ = std::move(policy);
  n_slot_ = n_slot;
  pos_.assign(pos.begin(), pos.end());
  keys_.assign(static_cast<size_t>(n_head_kv_) * key_pool_bytes(fmt_.k, head_dim_, n_slot), 0);
  for (int g = 0; g < n_head_kv_; ++g) {
    for (int s = 0; s < n_slot; ++s) {
      key_put_row(fmt_.k, head_dim_, key_tile(g, s), key_lane(s),
                  keys.data() + (static_cast<size_t>(g) * n_slot + s) * k_row_);
    }
  }
  values_.assign(values.begin(), values.end());
  for (int g = 0; g < n_head_kv_; ++g) {
    free_[g].clear();
    for (int s = n_slot - 1; s >= 0; --s) {
      if (pos_[static_cast<size_t>(g) * n_slot + s] < 0) free_[g].push_back(s);
    }
  }
  held_ = held;
  update_n_held();
  n_evicted_ = n_evicted * (limits_.shared_heads ? n_head_kv_ : 1);
  slot_end_ = 0;
  for (size_t i = 0; i < pos_.size(); ++i) {
    if (pos_[i] >= 0) slot_end_ = std::max(slot_end_, static_cast<int>(i % n_slot) + 1);
  }
  return ok_status();
}

void LayerState::convert_to(const KvFormat& to) {
  const size_t k_row = kv_row_bytes(to.k, head_dim_), v_row = kv_row_bytes(to.v, head_dim_);
  const bool k_rot = to.rotate && kv_quantized(to.k), v_rot = to.rotate && kv_quantized(to.v);
  std::vector<uint8_t> keys(static_cast<size_t>(n_head_kv_) * key_pool_bytes(to.k, head_dim_, n_slot_));
  std::vector<uint8_t> values(static_cast<size_t>(n_head_kv_) * n_slot_ * v_row);
  std::vector<uint8_t> in(std::max(k_row_, v_row_)), out(std::max(k_row, v_row));
  std::vector<float> x(head_dim_);
  // One row from (type, rotated) to (type, rotated).
  auto recode = [&](KvType from_t, bool from_rot, KvType to_t, bool to_rot) {
    kv_dequantize_row_ref(from_t, in.data(), x.data(), head_dim_);
    if (from_rot != to_rot) hadamard_ref(x.data(), head_dim_);  // its own inverse
    kv_quantize_row_ref(to_t, x.data(), out.data(), head_dim_);
  };
  const size_t to_k_head = key_pool_bytes(to.k, head_dim_, n_slot_);
  for (int g = 0; g < n_head_kv_; ++g) {
    for (int s = 0; s < n_slot_; ++s) {
      key_row(g, s, in.data());
      recode(fmt_.k, k_rotated(), to.k, k_rot);
      key_put_row(to.k, head_dim_, keys.data() + g * to_k_head + key_tile_offset(to.k, head_dim_, s),
                  s % key_tile_slots(to.k), out.data());
      const size_t at = static_cast<size_t>(g) * n_slot_ + s;
      std::memcpy(in.data(), values_.data() + at * v_row_, v_row_);
      recode(fmt_.v, v_rotated(), to.v, v_rot);
      std::memcpy(values.data() + at * v_row, out.data(), v_row);
    }
  }
  keys_.swap(keys);
  values_.swap(values);
  fmt_ = to;
  k_row_ = k_row;
  v_row_ = v_row;
}

uint64_t LayerState::bytes() const {
  return keys_.size() + values_.size() + pos_.size() * sizeof(int64_t);
}

PolicyArgs policy_args(const MultiStateOptions& o, int il) {
  PolicyArgs a = o.policy.args();
  a.n_head = o.n_head;
  a.n_head_kv = layer_n_head_kv(o, il);
  a.head_dim = layer_head_dim(o, il);
  a.layer = il;
  a.n_layer = o.n_layer;
  a.prompt_end = o.prompt_end;
  a.max_new = o.max_new;
  return a;
}

int64_t kept_slots(const MultiStateOptions& o) {
  return o.keep_images ? int64_t{std::max(0, o.max_kept_images)} * std::max(0, o.max_image) : 0;
}

namespace {

// Slots an image's step may add to a pool of max_slots (MultiStateOptions::max_image): a
// bounded pool takes the image beside what it holds, as a chunk; an unbounded one (INT_MAX)
// grows without a limit anyway.
int image_slots(const MultiStateOptions& o, int64_t max_slots) {
  if (max_slots >= INT_MAX || o.max_image <= o.max_new) return 0;
  return static_cast<int>(std::min<int64_t>(o.max_image - o.max_new, INT_MAX - max_slots));
}

}  // namespace

Result<LayerSizing> size_layer(const MultiStateOptions& o, int il) {
  const int window = o.windows.empty() ? 0 : o.windows[il];
  if (window < 0 || window == 1) return make_error("invalid sliding window {}", window);
  LayerSizing z;
  LayerLimits& l = z.limits;
  l.window = window;
  int64_t budget = -1;
  int64_t cut_budget = -1;  // LayerPlan::cut_by_caller: the budget a caller's cut keeps
  if (o.policy.bounded()) {
    const LayerPlan plan = layer_plan(o.policy, policy_args(o, il));
    if (plan.budget < 1) {
      return make_error("KV policy '{}' leaves layer {} a budget of {} states (k = {})",
                        o.policy.label(), il, plan.budget, o.policy.budget);
    }
    budget = plan.budget;
    l.shared_heads = plan.shared_heads;
    l.head_floor = plan.head_floor;
    l.holds_prompt = plan.holds_prompt && o.max_new == 1;
    l.prompt_end = o.prompt_end;
    if (plan.buffer < 0) return make_error("KV policy '{}': negative buffer", o.policy.label());
    l.buffer = plan.buffer;
    if (plan.cut_by_caller) {
      cut_budget = budget;
      budget = -1;
      l.holds_prompt = false;
    }
  }
  if (window > 0 && budget > window - 1 && l.shared_heads) {
    // The policy is made with the window's budget (create: args.budget), so its floor per head
    // is the one that budget gives, not the one of k: with k's, the heads' pool would be sized
    // for a floor no head keeps (adakv at k = 128 on a 16-token window: 30 - 25 slots).
    PolicyArgs a = policy_args(o, il);
    a.budget = window - 1;
    l.head_floor = layer_plan(o.policy, a).head_floor;
  }
  if (window > 0) budget = budget < 0 ? window - 1 : std::min<int64_t>(budget, window - 1);
  // A window layer never holds more than its window: the buffer fills at most what is left.
  if (window > 0) l.buffer = static_cast<int>(std::clamp<int64_t>(window - 1 - budget, 0, l.buffer));
  l.budget = static_cast<int>(budget);
  // The most states one KV head holds between steps: its budget, or, when heads share the
  // layer's budget, all of it but the other heads' floors.
  const int n_head_kv = layer_n_head_kv(o, il);
  const int64_t per_head =
      budget < 0 ? int64_t{INT_MAX}
                 : (l.shared_heads ? budget * n_head_kv -
                                         int64_t{n_head_kv - 1} * std::max(1, l.head_floor)
                                   : budget);
  int64_t max_slots = budget >= 0 ? per_head + l.buffer + o.max_new : INT_MAX;
  // Kept image states are held beside the budget: room for as many as the sequence may keep
  // (a window layer: only what its window can show beside the budget's states).
  const int64_t kept_most = kept_slots(o);
  int64_t kept_room = 0;
  if (budget >= 0 && kept_most > 0) {
    kept_room = window > 0 ? std::clamp<int64_t>(window - 1 - budget - l.buffer, 0, kept_most)
                           : kept_most;
    max_slots += kept_room;
  }
  // A window layer of an unbounded policy drops states by position alone, as the attention's
  // window mask hides them: a step's tokens may all join before any attends (layer_step.cpp
  // joins_first) and its pool grows to hold them beside the window for that step (as
  // llama.cpp's sliding-window cache holds n_swa + n_ubatch cells). Between steps it holds at
  // most window - 1 states; reserve() allocates no more than its window.
  const bool window_only = window > 0 && !o.policy.bounded() && o.window_drops_at_step_end;
  l.window_only = window_only;
  if (window_only) max_slots = INT_MAX;
  z.holds_all_until = budget >= 0 ? static_cast<int>(std::min<int64_t>(budget + l.buffer, INT_MAX))
                                  : INT_MAX;
  // A prompt-holding layer holds the whole prompt until its cut, then shrinks; it first evicts
  // when the prompt's last token joins (if it holds more than its budget then).
  if (l.holds_prompt && o.prompt_end + 1 > max_slots) {
    l.settled_slots = static_cast<int>(max_slots);
    max_slots = o.prompt_end + 1;
  }
  if (l.holds_prompt && o.prompt_end > budget) {
    z.holds_all_until = static_cast<int>(std::min<int64_t>(o.prompt_end - 1, INT_MAX));
  }
  // It holds everything until a caller's cut keeps cut_budget states.
  if (cut_budget >= 0) z.holds_all_until = static_cast<int>(std::min<int64_t>(z.holds_all_until, cut_budget));
  if (max_slots > INT_MAX) return make_error("budget {} is too large", budget);
  l.max_slots = static_cast<int>(max_slots);
  // The kept room holds the image being fed too (it counts among the images kept), except on a
  // window layer, whose room is cut to its window.
  l.image_slots = kept_room > 0 && window == 0 ? 0 : image_slots(o, max_slots);
  // Every pool starts at what the sequence can reach (initial_slots) and doubles up to its
  // most: k + extra when bounded, its window on a window layer, without limit otherwise.
  z.n_slot = static_cast<int>(
      std::min<int64_t>(std::max(1, o.initial_slots), window_only ? window : max_slots));
  return z;
}

namespace {

// The shape a multi-state is asked for, before anything is allocated.
Status check_options(const MultiStateOptions& o) {
  if (o.policy.info == nullptr) return make_error("no KV policy given");
  if (o.n_layer < 1 || o.n_head_kv < 1 || o.head_dim < 1 || o.n_head % o.n_head_kv != 0) {
    return make_error("invalid cache shape: {} layers, {} heads, {} KV heads, head_dim {}",
                      o.n_layer, o.n_head, o.n_head_kv, o.head_dim);
  }
  if (o.max_new < 1) return make_error("invalid chunk size {}", o.max_new);
  if (o.max_image < 0) return make_error("invalid image size {}", o.max_image);
  if (o.max_kept_images < 0 || o.max_kept_images > (1 << 16)) {
    return make_error("invalid count of kept images {}", o.max_kept_images);
  }
  if (o.prompt_end < 0) return make_error("invalid prompt length {}", o.prompt_end);
  for (const std::vector<int>* v : {&o.layer_n_head_kv, &o.layer_head_dim}) {
    if (!v->empty() && static_cast<int>(v->size()) != o.n_layer) {
      return make_error("{} per-layer attention shapes given for {} layers", v->size(), o.n_layer);
    }
  }
  for (int il = 0; il < o.n_layer; ++il) {
    const int n_kv = layer_n_head_kv(o, il), hd = layer_head_dim(o, il);
    if (n_kv < 1 || hd < 1 || o.n_head % n_kv != 0) {
      return make_error("invalid cache shape of layer {}: {} heads, {} KV heads, head_dim {}", il,
                        o.n_head, n_kv, hd);
    }
    TOVA_RETURN_IF_ERROR(check_kv_format(o.kv_type, hd));
  }
  if (!o.windows.empty() && static_cast<int>(o.windows.size()) != o.n_layer) {
    return make_error("{} sliding windows given for {} layers", o.windows.size(), o.n_layer);
  }
  return ok_status();
}

// What layer il of n slots allocates: per KV head a key pool (whole tiles of 16 slots when
// quantized), the value rows and one position per slot.
uint64_t layer_bytes(const MultiStateOptions& o, int il, int64_t n) {
  const int hd = layer_head_dim(o, il);
  return uint64_t(layer_n_head_kv(o, il)) *
         (key_pool_bytes(o.kv_type.k, hd, n) +
          static_cast<uint64_t>(n) * (kv_row_bytes(o.kv_type.v, hd) + sizeof(int64_t)));
}

}  // namespace

Result<std::vector<LayerSizing>> MultiState::size_layers(const MultiStateOptions& o) {
  std::vector<LayerSizing> sizing;
  for (int il = 0; il < o.n_layer; ++il) {
    TOVA_ASSIGN_OR_RETURN(LayerSizing z, size_layer(o, il));
    if (o.policy.bounded() && z.limits.budget >= 0) {
      max_bytes_ += layer_bytes(o, il, int64_t{z.limits.max_slots} + z.limits.image_slots);
    }
    holds_all_until_ = std::min(holds_all_until_, z.holds_all_until);
    sizing.push_back(z);
  }
  if (max_bytes_ > 0) {
    for (const RecurrentShape& r : o.recurrent) {
      max_bytes_ += static_cast<uint64_t>(r.conv_floats() + r.delta_floats()) * sizeof(float);
    }
  }
  // A budget is refused when the bytes it allows do not fit, however few it would hold at
  // first: the pool grows to k + extra as the sequence goes on.
  const uint64_t limit = o.memory_limit > 0 ? o.memory_limit : physical_memory_bytes();
  if (o.policy.bounded() && limit > 0 && max_bytes_ > limit) {
    const int64_t kept = kept_slots(o);
    return make_error(
        "K/V budget {} needs {} per sequence ({} layers x {} KV heads x {} slots{}, {}), more "
        "than {} ({})",
        o.policy.budget, human_bytes(max_bytes_), o.n_layer, o.n_head_kv,
        sizing.front().limits.max_slots,
        kept > 0 ? fmt::format(", {} of them for {} kept images", kept, o.max_kept_images) : "",
        o.kv_type.label(), o.memory_limit > 0 ? "the K/V memory limit" : "this machine's memory",
        human_bytes(limit));
  }
  return sizing;
}

Status MultiState::make_layers(const MultiStateOptions& o, const std::vector<LayerSizing>& sizing) {
  try {
    for (int il = 0; il < o.n_layer; ++il) {
      const LayerSizing& z = sizing[il];
      PolicyArgs args = policy_args(o, il);
      if (z.limits.budget >= 0) args.budget = z.limits.budget;
      args.n_slot = z.n_slot;
      auto policy = o.policy.info->make(args);
      score_need_ = policy->score_need();
      needs_queries_ = policy->needs_queries();
      // Queries before RoPE are scored against keys stored after it at their true positions.
      if (needs_queries_ && o.positions != PositionMode::kAbsolute) {
        return make_error("KV policy '{}' scores keys stored after RoPE at their positions: it "
                          "needs the absolute position mode, not '{}'",
                          o.policy.label(), position_mode_name(o.positions));
      }
      MultiStateOptions lo;  // the shape LayerState reads, of this layer
      lo.n_head = o.n_head;
      lo.n_head_kv = layer_n_head_kv(o, il);
      lo.head_dim = layer_head_dim(o, il);
      lo.kv_type = o.kv_type;
      layers_.push_back(std::make_unique<LayerState>(lo, z.n_slot, std::move(policy), z.limits));
    }
    for (const RecurrentShape& r : o.recurrent) {
      recurrent_.push_back(std::make_unique<RecurrentState>(r));
    }
  } catch (const std::bad_alloc&) {
    return make_error("out of memory allocating a K/V cache of {} slots per layer",
                      std::max(1, o.initial_slots));
  }
  return ok_status();
}

Result<std::unique_ptr<MultiState>> MultiState::create(const MultiStateOptions& o) {
  TOVA_RETURN_IF_ERROR(check_options(o));
  auto ms = std::unique_ptr<MultiState>(new MultiState());
  ms->spec_ = o.policy;
  ms->kv_type_ = o.kv_type;
  ms->max_new_ = o.max_new;
  ms->max_image_ = o.max_image;
  ms->keep_images_ = o.keep_images;
  ms->max_kept_images_ = o.keep_images ? o.max_kept_images : 0;
  ms->positions_ = o.positions;
  ms->holds_all_until_ = INT_MAX;
  ms->window_drops_at_step_end_ = o.window_drops_at_step_end && !o.policy.bounded();
  TOVA_ASSIGN_OR_RETURN(const std::vector<LayerSizing> sizing, ms->size_layers(o));
  TOVA_RETURN_IF_ERROR(ms->make_layers(o, sizing));
  return ms;
}

std::unique_ptr<MultiState> MultiState::clone() const {
  auto ms = std::unique_ptr<MultiState>(new MultiState());
  ms->spec_ = spec_;
  ms->kv_type_ = kv_type_;
  ms->score_need_ = score_need_;
  ms->needs_queries_ = needs_queries_;
  ms->max_new_ = max_new_;
  ms->max_image_ = max_image_;
  ms->keep_images_ = keep_images_;
  ms->max_kept_images_ = max_kept_images_;
  ms->images_ = images_;
  ms->positions_ = positions_;
  ms->holds_all_until_ = holds_all_until_;
  ms->window_drops_at_step_end_ = window_drops_at_step_end_;
  ms->n_seen_ = n_seen_;
  ms->max_bytes_ = max_bytes_;
  ms->layers_.reserve(layers_.size());
  for (const auto& l : layers_) ms->layers_.push_back(std::make_unique<LayerState>(*l));
  for (const auto& r : recurrent_) ms->recurrent_.push_back(std::make_unique<RecurrentState>(*r));
  return ms;
}

Result<std::unique_ptr<MultiState>> MultiState::with_kv_type(const KvFormat& to) const {
  for (const auto& l : layers_) {
    TOVA_RETURN_IF_ERROR(check_kv_format(to, l->head_dim()));
  }
  std::unique_ptr<MultiState> ms = clone();
  ms->kv_type_ = to;
  for (auto& l : ms->layers_) l->convert_to(to);
  return ms;
}

Status MultiState::reserve(int64_t n_states, int64_t at_most) {
  if (n_states > kMaxUnboundedReserve && !spec_.bounded()) {
    return make_error("cannot reserve a cache of {} tokens (at most {})", n_states,
                      kMaxUnboundedReserve);
  }
  for (auto& l : layers_) {
    TOVA_RETURN_IF_ERROR(l->reserve(n_states, std::min(at_most, kMaxUnboundedReserve)));
  }
  return ok_status();
}

Status MultiState::make_room(int n_new, bool whole) {
  for (auto& l : layers_) TOVA_RETURN_IF_ERROR(l->make_room(n_new, whole));
  return ok_status();
}

namespace {

// Whether some layer of `layers` holds a state at a position in r.
bool holds_any(const std::vector<std::unique_ptr<LayerState>>& layers, const PosRange& r) {
  for (const auto& l : layers) {
    const int64_t* p = l->pos();
    const size_t n = static_cast<size_t>(l->n_head_kv()) * l->n_slot();
    for (size_t i = 0; i < n; ++i) {
      if (p[i] >= r.begin && p[i] < r.end) return true;
    }
  }
  return false;
}

}  // namespace

std::vector<PosRange> MultiState::images_held() const {
  std::vector<PosRange> out;
  for (const PosRange& r : images_) {
    if (holds_any(layers_, r)) out.push_back(r);
  }
  return out;
}

void MultiState::mark_image(PosRange r) {
  TOVA_CHECK(r.begin < r.end);
  // Marks of a step that failed before it was fed (its positions come again) are replaced.
  std::erase_if(images_, [&](const PosRange& im) { return im.end > r.begin; });
  // Forget the images no layer holds a state of (evicted, or out of every window).
  std::erase_if(images_, [&](const PosRange& im) { return !holds_any(layers_, im); });
  images_.push_back(r);
  if (!keep_images_) return;
  for (auto& l : layers_) l->keep(r);
}

void MultiState::restore_images(std::span<const PosRange> images) {
  images_.assign(images.begin(), images.end());
  if (!keep_images_) return;
  for (auto& l : layers_) {
    for (const PosRange& r : images) l->keep(r);
  }
}

int64_t MultiState::image_rows(int il) const {
  const LayerState& l = *layers_[il];
  if (images_.empty()) return 0;
  int64_t n = 0;
  const int64_t* p = l.pos();
  const size_t total = static_cast<size_t>(l.n_head_kv()) * l.n_slot();
  for (size_t i = 0; i < total; ++i) {
    if (p[i] < 0) continue;
    auto it = std::upper_bound(images_.begin(), images_.end(), p[i],
                               [](int64_t q, const PosRange& r) { return q < r.begin; });
    n += it != images_.begin() && p[i] < std::prev(it)->end;
  }
  return n;
}

uint64_t MultiState::bytes() const {
  uint64_t b = 0;
  for (const auto& l : layers_) b += l->bytes();
  return b + recurrent_bytes();
}

uint64_t MultiState::recurrent_bytes() const {
  uint64_t b = 0;
  for (const auto& r : recurrent_) b += r->bytes();
  return b;
}

}  // namespace tova::kv
