// The multi-state: per sequence and per layer, a fixed pool of slots per KV head holding
// keys (post-RoPE in `absolute` position mode, pre-RoPE in the modes that move positions, see
// kv/positions.h), values and each state's original position. A new token is written into a
// free slot and an eviction frees one; memory is never shifted. A bounded policy's pool holds
// at most (k + extra) slots x n_layer x n_head_kv x head_dim x 2 elements, where extra is 1 for
// exact processing (the new token joins before the policy evicts) or C for chunked prefill; it
// starts at what the sequence can reach (MultiStateOptions::initial_slots: prompt + tokens to
// generate, or the caller's reserve) and doubles up to that, as the unbounded `full` pool
// doubles without a limit. Growth happens before a forward pass (make_room, reserve), never
// between two tokens of one step, and an allocation failure is an error, not an exception.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/kv_type.h"
#include "core/result.h"
#include "kv/kv_policy.h"
#include "kv/kv_type.h"
#include "kv/policy_registry.h"
#include "kv/positions.h"
#include "kv/recurrent_state.h"

namespace tova::kv {

// Most states an unbounded cache may reserve up front (16M: far past any trained context; a
// hostile count must not allocate terabytes).
inline constexpr int64_t kMaxUnboundedReserve = int64_t{1} << 24;

struct MultiStateOptions {
  int n_layer = 0;
  int n_head = 0;  // query heads (policies average over them)
  int n_head_kv = 0;
  int head_dim = 0;
  PolicySpec policy;
  KvFormat kv_type;  // keys' and values' storage types (f32 unless given)
  int max_new = 1;          // most tokens that join a layer before the policy evicts (chunk C)
  // Most tokens of one image the sequence may take (0: none). An image's tokens attend to each
  // other without a causal mask, so its step is a chunk of its own under every prefill mode:
  // all its tokens join before any attends, the policy observes them and evicts once, after
  // the image (layer_step.h, StepRows::whole). A bounded pool may grow to k + extra + max_image
  // slots for that step (LayerLimits::image_slots); between steps it holds its budget.
  int max_image = 0;
  // Image states are kept (--kv-keep-images): a bounded layer never lets its policy choose a
  // state of an image as a victim (MultiState::mark_image says which positions hold one). They
  // are held beside the budget, not inside it: the policy still keeps k text states (plus its
  // extra), and the pool has room for max_kept_images x max_image image states on top (a
  // window layer: no more than its window leaves room for). A window layer still drops image
  // states its window no longer shows (the model never attends to them there).
  bool keep_images = false;
  int max_kept_images = 0;  // images kept at most (the caller refuses more); keep_images only
  // First allocation in slots per KV head (capped at k + extra for bounded policies), doubled
  // when full: what the sequence can reach, when the caller knows it.
  int initial_slots = 256;
  // Bytes the multi-state may reach under a bounded policy (its k + extra slots per layer); a
  // budget that needs more is refused at creation. 0: the machine's physical memory.
  uint64_t memory_limit = 0;
  // Which position RoPE sees for each held state. `gap` and `rank` move the positions of held
  // states at every step, so their keys are stored BEFORE RoPE and the attention rotates every
  // held key by its mapped position at every step. Storing rotated keys and re-rotating them
  // by the change of position instead would compound a rounding error at each step (and an
  // f16 rounding per step with --kv-type f16); rotating from the pre-RoPE key is exact and
  // costs one rotation per held key per step, the order of the attention's own dot products.
  PositionMode positions = PositionMode::kAbsolute;
  // Sliding-window layers (Gemma 2/3): per layer, how many positions a query sees, its own
  // included (0: every position). Empty: no window layer. A window layer is bounded whatever the
  // policy: it keeps at most min(budget, window - 1) states between steps (window - 1 under
  // `full`), its attention never sees a state older than the window, and states that fall out
  // of the window are dropped before the policy is asked (LayerState::evict).
  std::vector<int> windows;
  // Under an unbounded policy, a window layer drops what leaves its window at the end of a step
  // rather than token by token (LayerLimits::window_only): a batch's tokens all join before any
  // attends, masked by the window. The model asks for it when other layers read a window
  // layer's K/V after its step (Gemma 4 E's shared-K/V layers), which could otherwise not be
  // batched past the window. The results equal one token per call up to the order of the
  // attention's sums (slots are laid out otherwise); without it, the same bits.
  bool window_drops_at_step_end = false;
  // Layers of their own attention shape (Gemma 4: window layers and global layers differ in KV
  // heads and head size): per layer its KV heads and head size; empty: every layer has
  // n_head_kv and head_dim. Each layer's pool, policy and memory follow its own shape.
  std::vector<int> layer_n_head_kv;
  std::vector<int> layer_head_dim;
  // Tokens of the prompt the sequence starts with (0: unknown or none): policies that hold a
  // whole prompt before choosing (LayerPlan::holds_prompt) allocate for it under exact prefill,
  // cut it at its end and then shrink to their bounded size.
  int64_t prompt_end = 0;
  // The model's recurrent layers (Gated DeltaNet), in layer order: each gets a RecurrentState
  // of this shape beside the n_layer attention layers above (which count attention layers
  // only: policies, budgets and windows apply to them alone). Empty: no recurrent layer.
  std::vector<RecurrentShape> recurrent;
};

// Layer il's KV heads and head size (MultiStateOptions::layer_n_head_kv / layer_head_dim).
inline int layer_n_head_kv(const MultiStateOptions& o, int il) {
  return o.layer_n_head_kv.empty() ? o.n_head_kv : o.layer_n_head_kv[il];
}
inline int layer_head_dim(const MultiStateOptions& o, int il) {
  return o.layer_head_dim.empty() ? o.head_dim : o.layer_head_dim[il];
}

// How one layer's pool is bounded (MultiState::create fills it from the policy's LayerPlan).
struct LayerLimits {
  int budget = -1;  // states kept per KV head between steps (-1: unbounded; shared: on average)
  int window = 0;   // see MultiStateOptions::windows (0: none)
  int max_slots = 0;  // the most slots per KV head the pool may grow to for a text step
  // Slots beyond max_slots an image's step may grow the pool to (MultiStateOptions::max_image).
  int image_slots = 0;
  bool shared_heads = false;  // LayerPlan::shared_heads
  int head_floor = 0;
  // Exact prefill under LayerPlan::holds_prompt: the policy does not evict before the token at
  // prompt_end - 1 has attended; the pool (up to prompt_end + 1 slots) then shrinks to
  // settled_slots.
  bool holds_prompt = false;
  int64_t prompt_end = 0;
  int settled_slots = 0;  // 0: the pool never shrinks
  int buffer = 0;  // LayerPlan::buffer: evicts only past budget + buffer, then down to budget
  // A window layer of an unbounded policy whose multi-state drops at the step's end
  // (MultiStateOptions::window_drops_at_step_end): only its window drops states (by position),
  // so a step's tokens may all join before any attends (layer_step.cpp joins_first); the pool
  // grows for the step and holds at most budget = window - 1 states between steps.
  bool window_only = false;
};

// Positions [begin, end) of one image's states (MultiState::mark_image).
struct PosRange {
  int64_t begin = 0;
  int64_t end = 0;
  bool operator==(const PosRange&) const = default;
};

// One layer of one sequence.
class LayerState {
 public:
  // n_slot: slots per KV head allocated now; a pool grows up to limits.max_slots. The
  // allocation may throw std::bad_alloc (MultiState::create turns it into an error).
  LayerState(const MultiStateOptions& o, int n_slot, std::unique_ptr<KvPolicy> policy,
             const LayerLimits& limits);
  // A deep copy: the same slots, keys, values, positions, free slots and policy state.
  LayerState(const LayerState& other);
  LayerState& operator=(const LayerState&) = delete;

  int n_slot() const { return n_slot_; }
  // States held per KV head: every KV head holds as many, except under a policy that shares the
  // layer's budget between its heads (shared_heads()), where this is the largest count.
  int n_held() const { return n_held_; }
  int n_held(int head_kv) const { return held_[head_kv]; }
  int64_t n_held_total() const;  // over the KV heads
  bool shared_heads() const { return limits_.shared_heads; }
  // More states held than the budget allows between steps (a restored state must not be); kept
  // image states are held beside the budget.
  bool over_budget() const;
  // Image states this layer keeps (MultiStateOptions::keep_images): its policy never chooses
  // them; only the window of a window layer drops them. Ranges in increasing order.
  void keep(PosRange r);
  const std::vector<PosRange>& kept() const { return kept_; }
  bool is_kept(int64_t pos) const;
  // Kept states held by KV head g (every head holds the same ones).
  int n_kept(int g) const;
  int head_dim() const { return head_dim_; }
  int n_head_kv() const { return n_head_kv_; }
  const KvFormat& kv_type() const { return fmt_; }
  // Quantized rows of this layer are stored Hadamard-rotated (keys and values alike).
  bool k_rotated() const { return fmt_.rotate && kv_quantized(fmt_.k); }
  bool v_rotated() const { return fmt_.rotate && kv_quantized(fmt_.v); }
  int budget() const { return limits_.budget; }  // -1: unbounded
  int window() const { return limits_.window; }  // 0: no window
  int buffer() const { return limits_.buffer; }  // LayerPlan::buffer (rkv)
  // The oldest position a query at position p sees in this layer.
  int64_t min_visible(int64_t p) const { return limits_.window > 0 ? p - limits_.window + 1 : 0; }
  const int64_t* pos() const { return pos_.data(); }  // [n_head_kv][n_slot], -1 = free
  // Every held state lies in a slot below this (in every KV head), so attention reads slots
  // [0, slot_end) only. Drops keep it at most n_held + 1 (see evict), so what a step reads
  // follows the states held, not the slots allocated (k + C after chunk:C prefill).
  int slot_end() const { return slot_end_; }
  // Per KV head, a key pool of key_pool_bytes(kv_type().k, head_dim, n_slot) bytes (rows, or
  // tiles of 16 slots when quantized: core/kv_type.h), post-RoPE in absolute position mode,
  // pre-RoPE otherwise (MultiStateOptions::positions).
  const void* keys() const { return keys_.data(); }
  // [n_head_kv][n_slot] value rows of kv_row_bytes(kv_type().v, head_dim) bytes.
  const void* values() const { return values_.data(); }
  // Slot s's key of KV head g as a canonical row (kv_row_bytes(kv_type().k, head_dim) bytes).
  void key_row(int g, int s, uint8_t* row) const;
  KvPolicy& policy() { return *policy_; }
  const KvPolicy& policy() const { return *policy_; }
  SlotView view() const;

  // Writes one token's keys and values ([n_head_kv][head_dim] floats each, converted here with
  // core's scalar conversions) into a free slot of every KV head; slots_out[head_kv] receives
  // the slot. A full pool doubles here (up to max_slots)
  // unless make_room made the room before (the forward pass does); a failed growth here is
  // fatal.
  void insert(int64_t pos, const float* k, const float* v, int32_t* slots_out);
  // The same with k and v already as canonical rows of the storage types ([n_head_kv] rows of
  // kv_row_bytes each, rotated where kv_type().rotate says), as the model's vectorised
  // conversion writes them.
  void insert_stored(int64_t pos, const void* k, const void* v, int32_t* slots_out);
  // If more than `budget` states are held, asks the policy and frees the slots it chose.
  // Returns how many states each KV head dropped. After a drop, if a state is held at slot
  // n_held + 1 or above (a chunk of C joined and the pool has k + C slots), the states above
  // n_held move down into the free slots below it, lowest first, with their policy state
  // (KvPolicy::on_move); the next token takes the lowest free slot, so decode reads n_held + 1
  // slots. Exact (one-token) steps never leave such a hole: nothing moves there.
  // last_pos: the step's last position (SlotView::step_last_pos; -1: the newest held). Under
  // shared heads the budget is per KV head on average and the count returned is in all.
  int evict_to(int budget, int64_t last_pos = -1);
  // The end of a step whose last token had position last_pos: a window layer first drops the
  // states the next query will not see (position <= last_pos - window + 1; when head-wise
  // policies left KV heads with different numbers of such states, every head drops as many as
  // the head with fewest, oldest first, and the rest stay masked out of attention until the
  // policy evicts them), then the policy evicts down to the layer's budget. Returns the states
  // each KV head dropped.
  int evict(int64_t last_pos);

  // States each KV head dropped so far (shared heads: the mean over heads, rounded down).
  int64_t n_evicted() const { return n_evicted_ / (limits_.shared_heads ? n_head_kv_ : 1); }
  uint64_t bytes() const;

  // Stores every row in another format: each row widened to float, rotated back if it was
  // stored rotated, rotated if `to` rotates, and rounded to the new types (MultiState::
  // with_kv_type). The format must suit head_dim (check_kv_format).
  void convert_to(const KvFormat& to);

  // A pool that holds fewer than n_states slots grows now, to n_states or to twice its size if
  // that is more (but not past at_most), and never past max_slots (k + extra, or its window's
  // worth), so that no later step pays for copying it. An allocation failure changes nothing
  // and is an error.
  Status reserve(int64_t n_states, int64_t at_most);
  // Grows the pool (doubling, up to max_slots, plus image_slots for an image's step: `whole`)
  // so that n_new tokens can join before the policy next evicts; the forward pass calls it
  // before a step. An allocation failure changes nothing and is an error.
  Status make_room(int n_new, bool whole = false);
  int max_slots() const { return limits_.max_slots; }
  // The most slots the pool may ever hold (an image's step included).
  int max_slots_all() const { return limits_.max_slots + limits_.image_slots; }

  // Replaces the contents with saved ones (session files): positions [n_head_kv][n_slot] (-1 =
  // free), keys and values as keys()/values() lay them out, the policy's state. n_slot may be
  // any size from this layer's up to max_slots (the pool grows to it first). Every KV head must
  // hold the same number of states, unless the policy shares the budget between its heads. An
  // error changes nothing.
  Status restore(int n_slot, std::span<const int64_t> pos, std::span<const uint8_t> keys,
                 std::span<const uint8_t> values, int64_t n_evicted,
                 std::span<const double> policy_state);

 private:
  // Copies every state into a pool of n_slot slots (more than now) and tells the policy; an
  // allocation failure changes nothing and is an error.
  Status grow_to(int n_slot);
  // Copies every state into a pool of n_slot slots, fewer than now, every held state lying
  // below n_slot (a prompt-holding pool after its cut).
  void shrink_to(int n_slot);
  int drop_outside_window(int64_t last_pos);
  // Drops the kept states at positions <= cutoff (out of a window layer's window) from every
  // KV head; returns how many each head dropped.
  int drop_kept_outside(int64_t cutoff);
  int drop_to(int budget, int64_t last_pos);  // evict_to without settle()
  int drop_shared(int budget, int64_t last_pos);
  void settle();            // packs held states low after a drop; sets slot_end_
  SlotView eviction_view(int64_t last_pos);  // view() plus what choose_evictions reads
  void update_n_held();
  int min_free() const;  // free slots of the KV head with fewest
  // SlotView::rows for a policy that reads them: every held row widened to float.
  void widen_rows(SlotView& v);
  // Applies the policy's merges of the n evicted slots per KV head (before they are freed).
  void apply_merges(const SlotView& v, int n, const int32_t* evicted);

  // Bytes of KV head g's key pool, and where slot s's key tile starts in keys_.
  size_t key_head_bytes() const { return key_pool_bytes(fmt_.k, head_dim_, n_slot_); }
  uint8_t* key_tile(int g, int s) {
    return keys_.data() + g * key_head_bytes() + key_tile_offset(fmt_.k, head_dim_, s);
  }
  const uint8_t* key_tile(int g, int s) const {
    return keys_.data() + g * key_head_bytes() + key_tile_offset(fmt_.k, head_dim_, s);
  }
  int key_lane(int s) const { return s % key_tile_slots(fmt_.k); }

  int n_head_kv_;
  int head_dim_;
  KvFormat fmt_;
  size_t k_row_;  // bytes of a canonical key row
  size_t v_row_;  // bytes of a value row
  int n_slot_;
  int n_held_ = 0;         // the largest of held_
  std::vector<int> held_;  // [n_head_kv] states held
  int slot_end_ = 0;  // 1 + the highest slot that may hold a state, over the KV heads
  std::vector<uint8_t> keys_;               // [n_head_kv][key pool] (see keys())
  std::vector<uint8_t> values_;             // [n_head_kv][n_slot][v_row_]
  std::vector<int64_t> pos_;                // [n_head_kv][n_slot]
  std::vector<std::vector<int32_t>> free_;  // per KV head, a stack; lowest slot on top
  std::unique_ptr<KvPolicy> policy_;
  std::vector<int32_t> evict_scratch_;
  std::vector<uint8_t> row_scratch_;  // insert(): one token's rows; settle(): one key row
  int n_head_;
  LayerLimits limits_;
  int64_t n_evicted_ = 0;  // over the KV heads under shared heads, else per KV head
  std::vector<int32_t> window_scratch_;
  std::vector<double> key_similarity_;  // [n_head_kv][n_slot], for policies that read it
  SlotRows rows_;                       // what widen_rows() last filled
  std::vector<ValueMerge> merges_;
  std::vector<PosRange> kept_;        // see keep()
  std::vector<int64_t> masked_pos_;   // eviction_view: pos_ with kept states shown as free
  std::vector<int> masked_held_;      // [n_head_kv] states the policy sees held
};

// How layer il of a multi-state made with o is bounded, and the slots its pool allocates at
// creation (MultiState::create's arithmetic, for callers that size memory ahead).
struct LayerSizing {
  LayerLimits limits;
  int n_slot = 0;
  int holds_all_until = 0;  // tokens it holds before it first evicts
};
Result<LayerSizing> size_layer(const MultiStateOptions& o, int il);
// Slots per KV head a bounded layer keeps beside its budget for kept image states
// (MultiStateOptions::keep_images: max_kept_images x max_image; 0 when images are not kept).
int64_t kept_slots(const MultiStateOptions& o);
// The arguments the policy of layer il receives (n_slot left 0).
PolicyArgs policy_args(const MultiStateOptions& o, int il);

// All layers of one sequence, plus how many tokens it has seen (a new token's position).
class MultiState {
 public:
  static Result<std::unique_ptr<MultiState>> create(const MultiStateOptions& o);
  // An independent copy holding the same states (and policy state): continuing it gives
  // exactly what continuing this one would. Allocates as much as this one holds allocated.
  std::unique_ptr<MultiState> clone() const;
  // A copy whose keys and values are stored in `to` (LayerState::convert_to); an error when `to`
  // does not suit the model's head_dim. Loading a session into another --kv-type uses it.
  Result<std::unique_ptr<MultiState>> with_kv_type(const KvFormat& to) const;

  const PolicySpec& policy() const { return spec_; }
  const KvFormat& kv_type() const { return kv_type_; }
  PositionMode positions() const { return positions_; }
  int budget() const { return spec_.bounded() ? spec_.budget : -1; }  // -1: unbounded
  // How many tokens every layer holds before any of them evicts: the smallest layer budget (a
  // window layer's is at most window - 1), or INT_MAX when no layer is bounded.
  int holds_all_until() const { return holds_all_until_; }
  // MultiStateOptions::window_drops_at_step_end, under an unbounded policy.
  bool window_drops_at_step_end() const { return window_drops_at_step_end_; }
  int n_layer() const { return static_cast<int>(layers_.size()); }
  LayerState& layer(int il) { return *layers_[il]; }
  const LayerState& layer(int il) const { return *layers_[il]; }
  // The recurrent layers' states (MultiStateOptions::recurrent), in layer order.
  int n_recurrent() const { return static_cast<int>(recurrent_.size()); }
  RecurrentState& recurrent(int ir) { return *recurrent_[ir]; }
  const RecurrentState& recurrent(int ir) const { return *recurrent_[ir]; }
  // Bytes of the recurrent states (fixed; part of bytes()).
  uint64_t recurrent_bytes() const;
  ScoreNeed score_need() const { return score_need_; }
  // The policy reads each row's query before RoPE (KvPolicy::needs_queries): the model keeps
  // a copy for this sequence.
  bool needs_queries() const { return needs_queries_; }
  // Most tokens that may join a layer before the policy evicts: 1 for exact processing, C for
  // chunked prefill.
  int max_new() const { return max_new_; }
  // MultiStateOptions::max_image: most tokens of one image (0: the sequence takes none).
  int max_image() const { return max_image_; }
  // MultiStateOptions::keep_images and max_kept_images.
  bool keep_images() const { return keep_images_; }
  int max_kept_images() const { return max_kept_images_; }
  // The states at positions [begin, end) hold an image (fed whole, before the step that takes
  // it evicts anything): recorded for every policy (stats, session files), and kept by every
  // layer when keep_images. Images no layer holds any more are forgotten here.
  void mark_image(PosRange r);
  // The images marked, in order (those no layer holds any more are forgotten at the next mark).
  const std::vector<PosRange>& images() const { return images_; }
  // Those some layer still holds a state of, and how many.
  std::vector<PosRange> images_held() const;
  int n_images_held() const { return static_cast<int>(images_held().size()); }
  // Session files: the marks of a restored state (increasing, apart), kept by every layer when
  // keep_images.
  void restore_images(std::span<const PosRange> images);
  // Image states layer il holds, over its KV heads.
  int64_t image_rows(int il) const;

  int64_t n_seen() const { return n_seen_; }
  void advance(int64_t n) { n_seen_ += n; }
  // Session files: the tokens seen of a restored state.
  void set_n_seen(int64_t n) { n_seen_ = n; }
  // Bytes of K/V (and position) memory allocated for this sequence, plus its recurrent states.
  uint64_t bytes() const;
  // A cache that will hold n_states tokens allocates them now (LayerState::reserve: at least
  // doubling, up to at_most slots and at most k + extra under a bounded policy): the
  // open-ended sessions (chat turns, server requests) call it before a turn, so the copy of a
  // growing cache happens there, never inside a decode step.
  Status reserve(int64_t n_states, int64_t at_most = kMaxUnboundedReserve);
  // Every layer can take n_new tokens before its policy next evicts (LayerState::make_room;
  // whole: an image's step).
  Status make_room(int n_new, bool whole = false);
  // The most bytes this multi-state can reach: k + extra slots per layer under a bounded
  // policy, plus the recurrent states (0 when unbounded: `full` grows with the tokens).
  uint64_t max_bytes() const { return max_bytes_; }

 private:
  MultiState() = default;
  // create()'s steps: every layer's slots and limits (and the bytes a bounded state reaches,
  // checked against the memory limit), then the layers and recurrent states themselves.
  Result<std::vector<LayerSizing>> size_layers(const MultiStateOptions& o);
  Status make_layers(const MultiStateOptions& o, const std::vector<LayerSizing>& sizing);
  PolicySpec spec_;
  KvFormat kv_type_;
  ScoreNeed score_need_ = ScoreNeed::kNone;
  bool needs_queries_ = false;
  int max_new_ = 1;
  int max_image_ = 0;
  bool keep_images_ = false;
  int max_kept_images_ = 0;
  std::vector<PosRange> images_;
  PositionMode positions_ = PositionMode::kAbsolute;
  int holds_all_until_ = 0;
  bool window_drops_at_step_end_ = false;
  std::vector<std::unique_ptr<LayerState>> layers_;
  std::vector<std::unique_ptr<RecurrentState>> recurrent_;
  int64_t n_seen_ = 0;
  uint64_t max_bytes_ = 0;
};

}  // namespace tova::kv
