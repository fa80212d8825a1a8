#include "kv/multi_state.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "core/check.h"
#include "core/half.h"
#include "core/memory.h"

namespace tova::kv {

LayerState::LayerState(const MultiStateOptions& o, int n_slot, std::unique_ptr<KvPolicy> policy,
                       int budget, int window, int max_slots)
    : n_head_kv_(o.n_head_kv),
      head_dim_(o.head_dim),
      kv_type_(o.kv_type),
      elem_bytes_(o.kv_type == KvType::kF16 ? 2 : 4),
      n_slot_(n_slot),
      keys_(static_cast<size_t>(o.n_head_kv) * n_slot * o.head_dim * elem_bytes_),
      values_(keys_.size()),
      pos_(static_cast<size_t>(o.n_head_kv) * n_slot, -1),
      free_(o.n_head_kv),
      policy_(std::move(policy)),
      n_head_(o.n_head),
      budget_(budget),
      window_(window),
      max_slots_(max_slots) {
  for (auto& f : free_) {
    f.reserve(n_slot);
    for (int s = n_slot - 1; s >= 0; --s) f.push_back(s);
  }
}

LayerState::LayerState(const LayerState& o)
    : n_head_kv_(o.n_head_kv_),
      head_dim_(o.head_dim_),
      kv_type_(o.kv_type_),
      elem_bytes_(o.elem_bytes_),
      n_slot_(o.n_slot_),
      n_held_(o.n_held_),
      slot_end_(o.slot_end_),
      keys_(o.keys_),
      values_(o.values_),
      pos_(o.pos_),
      free_(o.free_),
      policy_(o.policy_->clone()),
      n_head_(o.n_head_),
      budget_(o.budget_),
      window_(o.window_),
      max_slots_(o.max_slots_),
      n_evicted_(o.n_evicted_) {}

SlotView LayerState::view() const {
  return SlotView{.n_head = n_head_,
                  .n_head_kv = n_head_kv_,
                  .n_slot = n_slot_,
                  .n_held = n_held_,
                  .pos = pos_.data(),
                  .slot_end = slot_end_};
}

Status LayerState::reserve(int64_t n_states, int64_t at_most) {
  if (n_states <= n_slot_ || n_slot_ >= max_slots_) return ok_status();
  // At least double, as growing by one token would, so that a conversation reserving a little
  // more before every turn copies its cache O(log n) times, not once per turn.
  const int64_t doubled = std::min<int64_t>(int64_t{n_slot_} * 2, at_most);
  return grow_to(static_cast<int>(std::min<int64_t>(std::max(n_states, doubled), max_slots_)));
}

Status LayerState::make_room(int n_new) {
  const int64_t n_free = static_cast<int64_t>(free_[0].size());
  if (n_new <= n_free || n_slot_ >= max_slots_) return ok_status();
  const int64_t want = int64_t{n_slot_} + (n_new - n_free);
  return grow_to(static_cast<int>(
      std::min<int64_t>(std::max(want, int64_t{n_slot_} * 2), max_slots_)));
}

Status LayerState::grow_to(int new_slot) {
  TOVA_CHECK(new_slot > n_slot_ && new_slot <= max_slots_);
  const size_t row = static_cast<size_t>(head_dim_) * elem_bytes_;
  std::vector<uint8_t> k, v;
  std::vector<int64_t> p;
  const uint64_t bytes = 2ull * n_head_kv_ * new_slot * row;
  try {
    k.resize(static_cast<size_t>(n_head_kv_) * new_slot * row);
    v.resize(k.size());
    p.assign(static_cast<size_t>(n_head_kv_) * new_slot, -1);
    for (auto& f : free_) f.reserve(new_slot);
    policy_->on_grow(new_slot);
  } catch (const std::bad_alloc&) {
    return make_error("out of memory growing a K/V pool from {} to {} slots ({} of keys and values)",
                      n_slot_, new_slot, human_bytes(bytes));
  }
  for (int g = 0; g < n_head_kv_; ++g) {
    std::memcpy(&k[g * new_slot * row], &keys_[g * n_slot_ * row], n_slot_ * row);
    std::memcpy(&v[g * new_slot * row], &values_[g * n_slot_ * row], n_slot_ * row);
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

void LayerState::insert(int64_t pos, const float* k, const float* v, int32_t* slots_out) {
  if (kv_type_ == KvType::kF32) return insert_stored(pos, k, v, slots_out);
  const size_t n = static_cast<size_t>(n_head_kv_) * head_dim_;
  f16_scratch_.resize(2 * n);
  for (size_t i = 0; i < n; ++i) {
    f16_scratch_[i] = fp32_to_fp16(k[i]);
    f16_scratch_[n + i] = fp32_to_fp16(v[i]);
  }
  insert_stored(pos, f16_scratch_.data(), f16_scratch_.data() + n, slots_out);
}

void LayerState::insert_stored(int64_t pos, const void* k, const void* v, int32_t* slots_out) {
  if (free_[0].empty()) {
    const Status st = make_room(1);
    TOVA_CHECK(st.ok());
  }
  const size_t row = static_cast<size_t>(head_dim_) * elem_bytes_;
  for (int g = 0; g < n_head_kv_; ++g) {
    TOVA_CHECK(!free_[g].empty());
    const int32_t s = free_[g].back();
    free_[g].pop_back();
    pos_[static_cast<size_t>(g) * n_slot_ + s] = pos;
    const size_t off = (static_cast<size_t>(g) * n_slot_ + s) * row;
    std::memcpy(keys_.data() + off, static_cast<const uint8_t*>(k) + g * row, row);
    std::memcpy(values_.data() + off, static_cast<const uint8_t*>(v) + g * row, row);
    policy_->on_insert(g, s);
    slots_out[g] = s;
    slot_end_ = std::max(slot_end_, s + 1);
  }
  ++n_held_;
}

int LayerState::evict_to(int budget) {
  const int n = drop_to(budget);
  if (n > 0) settle();
  return n;
}

int LayerState::drop_to(int budget) {
  if (budget < 0 || n_held_ <= budget) return 0;
  const int n = n_held_ - budget;
  evict_scratch_.assign(static_cast<size_t>(n) * n_head_kv_, -1);
  policy_->choose_evictions(view(), n, evict_scratch_.data());
  for (int g = 0; g < n_head_kv_; ++g) {
    for (int j = 0; j < n; ++j) {
      const int32_t s = evict_scratch_[static_cast<size_t>(g) * n + j];
      TOVA_CHECK(s >= 0 && s < n_slot_);
      int64_t& p = pos_[static_cast<size_t>(g) * n_slot_ + s];
      TOVA_CHECK(p >= 0);  // a policy must choose held, distinct slots
      p = -1;
      free_[g].push_back(s);
    }
    // Keep the lowest free slot on top, so layer-wise policies keep identical layouts in every
    // KV head and the choice of slot never depends on eviction order.
    std::sort(free_[g].begin(), free_[g].end(), std::greater<>());
  }
  n_held_ -= n;
  n_evicted_ += n;
  return n;
}

int LayerState::drop_outside_window(int64_t last_pos) {
  if (window_ <= 0) return 0;
  const int64_t cutoff = last_pos - window_ + 1;  // the next query does not see these
  if (cutoff < 0) return 0;
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
  if (n == 0) return 0;
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
  }
  n_held_ -= n;
  n_evicted_ += n;
  return n;
}

int LayerState::evict(int64_t last_pos) {
  const int n = drop_outside_window(last_pos) + drop_to(budget_);
  if (n > 0) settle();
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
  // Every KV head holds n_held_ states, so as many are held at or above n_held_ as are free
  // below it; pair them in slot order (layer-wise policies' identical layouts stay identical).
  const size_t row = static_cast<size_t>(head_dim_) * elem_bytes_;
  for (int g = 0; g < n_head_kv_; ++g) {
    int64_t* p = &pos_[static_cast<size_t>(g) * n_slot_];
    int to = 0;
    for (int from = n_held_; from < n_slot_; ++from) {
      if (p[from] < 0) continue;
      while (p[to] >= 0) ++to;
      TOVA_CHECK(to < n_held_);
      const size_t dst = (static_cast<size_t>(g) * n_slot_ + to) * row;
      const size_t src = (static_cast<size_t>(g) * n_slot_ + from) * row;
      std::memcpy(keys_.data() + dst, keys_.data() + src, row);
      std::memcpy(values_.data() + dst, values_.data() + src, row);
      p[to] = p[from];
      p[from] = -1;
      policy_->on_move(g, from, to);
    }
    free_[g].clear();
    for (int s = n_slot_ - 1; s >= n_held_; --s) free_[g].push_back(s);
  }
  slot_end_ = n_held_;
}

Status LayerState::restore(int n_slot, std::span<const int64_t> pos, std::span<const uint8_t> keys,
                           std::span<const uint8_t> values, int64_t n_evicted,
                           std::span<const double> policy_state) {
  if (n_slot < n_slot_ || n_slot > max_slots_) {
    return make_error("saved layer has {} slots, this cache {} to {}", n_slot, n_slot_,
                      max_slots_);
  }
  const size_t n_pos = static_cast<size_t>(n_head_kv_) * n_slot;
  const size_t n_bytes = n_pos * head_dim_ * elem_bytes_;
  if (pos.size() != n_pos || keys.size() != n_bytes || values.size() != n_bytes) {
    return make_error("saved layer sizes do not match the cache shape");
  }
  if (n_evicted < 0) return make_error("saved layer has a negative eviction count");
  int held = -1;
  for (int g = 0; g < n_head_kv_; ++g) {
    int h = 0;
    for (int s = 0; s < n_slot; ++s) {
      const int64_t p = pos[static_cast<size_t>(g) * n_slot + s];
      if (p < -1) return make_error("saved layer has an invalid position {}", p);
      h += p >= 0;
    }
    if (held >= 0 && h != held) return make_error("saved KV heads hold different counts");
    held = h;
  }
  std::unique_ptr<KvPolicy> policy = policy_->clone();
  policy->on_grow(n_slot);
  TOVA_RETURN_IF_ERROR(policy->set_state(policy_state));
  policy_ = std::move(policy);
  n_slot_ = n_slot;
  pos_.assign(pos.begin(), pos.end());
  keys_.assign(keys.begin(), keys.end());
  values_.assign(values.begin(), values.end());
  for (int g = 0; g < n_head_kv_; ++g) {
    free_[g].clear();
    for (int s = n_slot - 1; s >= 0; --s) {
      if (pos_[static_cast<size_t>(g) * n_slot + s] < 0) free_[g].push_back(s);
    }
  }
  n_held_ = held;
  n_evicted_ = n_evicted;
  slot_end_ = 0;
  for (size_t i = 0; i < pos_.size(); ++i) {
    if (pos_[i] >= 0) slot_end_ = std::max(slot_end_, static_cast<int>(i % n_slot) + 1);
  }
  return ok_status();
}

uint64_t LayerState::bytes() const {
  return keys_.size() + values_.size() + pos_.size() * sizeof(int64_t);
}

Result<std::unique_ptr<MultiState>> MultiState::create(const MultiStateOptions& o) {
  if (o.policy.info == nullptr) return make_error("no KV policy given");
  if (o.n_layer < 1 || o.n_head_kv < 1 || o.head_dim < 1 || o.n_head % o.n_head_kv != 0) {
    return make_error("invalid cache shape: {} layers, {} heads, {} KV heads, head_dim {}",
                      o.n_layer, o.n_head, o.n_head_kv, o.head_dim);
  }
  if (o.max_new < 1) return make_error("invalid chunk size {}", o.max_new);
  auto ms = std::unique_ptr<MultiState>(new MultiState());
  ms->spec_ = o.policy;
  ms->kv_type_ = o.kv_type;
  ms->max_new_ = o.max_new;
  ms->positions_ = o.positions;
  if (!o.windows.empty() && static_cast<int>(o.windows.size()) != o.n_layer) {
    return make_error("{} sliding windows given for {} layers", o.windows.size(), o.n_layer);
  }
  ms->holds_all_until_ = INT_MAX;
  // Bytes of one slot of one layer: keys and values of every KV head, and their positions.
  const uint64_t per_slot = uint64_t(o.n_head_kv) *
                            (2 * uint64_t(o.head_dim) * (o.kv_type == KvType::kF16 ? 2 : 4) +
                             sizeof(int64_t));
  std::vector<int64_t> max_slots(o.n_layer), budgets(o.n_layer);
  for (int il = 0; il < o.n_layer; ++il) {
    const int window = o.windows.empty() ? 0 : o.windows[il];
    if (window < 0 || window == 1) return make_error("invalid sliding window {}", window);
    int64_t budget = o.policy.bounded() ? o.policy.budget : -1;
    if (window > 0) budget = budget < 0 ? window - 1 : std::min<int64_t>(budget, window - 1);
    budgets[il] = budget;
    max_slots[il] = budget >= 0 ? budget + o.max_new : INT_MAX;
    if (max_slots[il] > INT_MAX) return make_error("budget {} is too large", budget);
    if (o.policy.bounded()) ms->max_bytes_ += per_slot * static_cast<uint64_t>(max_slots[il]);
  }
  // A budget is refused when the bytes it allows do not fit, however few it would hold at
  // first: the pool grows to k + extra as the sequence goes on.
  const uint64_t limit = o.memory_limit > 0 ? o.memory_limit : physical_memory_bytes();
  if (o.policy.bounded() && limit > 0 && ms->max_bytes_ > limit) {
    return make_error(
        "K/V budget {} needs {} per sequence ({} layers x {} KV heads x {} slots, {}), more than "
        "{} ({})",
        o.policy.budget, human_bytes(ms->max_bytes_), o.n_layer, o.n_head_kv,
        int64_t{o.policy.budget} + o.max_new, o.kv_type == KvType::kF16 ? "f16" : "f32",
        o.memory_limit > 0 ? "the K/V memory limit" : "this machine's memory", human_bytes(limit));
  }
  try {
    for (int il = 0; il < o.n_layer; ++il) {
      const int window = o.windows.empty() ? 0 : o.windows[il];
      // Every pool starts at what the sequence can reach (initial_slots) and doubles up to its
      // most: k + extra when bounded, its window on a window layer, without limit otherwise.
      const int n_slot =
          static_cast<int>(std::min<int64_t>(std::max(1, o.initial_slots), max_slots[il]));
      const int budget = static_cast<int>(budgets[il]);
      if (budget >= 0) ms->holds_all_until_ = std::min(ms->holds_all_until_, budget);
      const PolicyArgs args{.budget = budget >= 0 ? budget : o.policy.budget,
                            .arg = o.policy.arg,
                            .n_head = o.n_head,
                            .n_head_kv = o.n_head_kv,
                            .n_slot = n_slot};
      auto policy = o.policy.info->make(args);
      ms->score_need_ = policy->score_need();
      ms->layers_.push_back(std::make_unique<LayerState>(o, n_slot, std::move(policy), budget,
                                                         window, static_cast<int>(max_slots[il])));
    }
  } catch (const std::bad_alloc&) {
    return make_error("out of memory allocating a K/V cache of {} slots per layer",
                      std::max(1, o.initial_slots));
  }
  return ms;
}

std::unique_ptr<MultiState> MultiState::clone() const {
  auto ms = std::unique_ptr<MultiState>(new MultiState());
  ms->spec_ = spec_;
  ms->kv_type_ = kv_type_;
  ms->score_need_ = score_need_;
  ms->max_new_ = max_new_;
  ms->positions_ = positions_;
  ms->holds_all_until_ = holds_all_until_;
  ms->n_seen_ = n_seen_;
  ms->max_bytes_ = max_bytes_;
  ms->layers_.reserve(layers_.size());
  for (const auto& l : layers_) ms->layers_.push_back(std::make_unique<LayerState>(*l));
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

Status MultiState::make_room(int n_new) {
  for (auto& l : layers_) TOVA_RETURN_IF_ERROR(l->make_room(n_new));
  return ok_status();
}

uint64_t MultiState::bytes() const {
  uint64_t b = 0;
  for (const auto& l : layers_) b += l->bytes();
  return b;
}

}  // namespace tova::kv
