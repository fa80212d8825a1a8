// Position modes (spec/POSITIONS.md): which position RoPE sees for each held state. `absolute`
// rotates a state by its original position; `gap` and `rank` move the held states' positions
// at every step, as exact functions of the original positions of the states held at that step.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "tova/position_mode.h"

namespace tova::kv {

// Modes other than absolute move positions: keys are then kept before RoPE and rotated by
// their mapped position at every step.
inline bool moves_positions(PositionMode mode) { return mode != PositionMode::kAbsolute; }

// The gap compression of the paper (section 7.2): G(d) = d for d <= 10, else
// ceil(10 + ln(ln(d - 10 + e))). G(d) <= d for every d >= 0.
int64_t compress_gap(int64_t d);

// Maps the original positions of held states, sorted increasingly, to their positions in
// `mode` (out has the same size).
void map_positions(PositionMode mode, std::span<const int64_t> sorted, std::span<int64_t> out);

// The same for one KV head's slot pool: slot_pos[s] is slot s's original position (-1: free),
// slot_mapped[s] receives its mapped position (-1 for free slots). `order` is scratch.
void map_slot_positions(PositionMode mode, std::span<const int64_t> slot_pos,
                        std::span<int64_t> slot_mapped, std::vector<int32_t>& order);

// The largest mapped position n held states may reach when the newest has original position
// p_last (used to size rotation tables): p_last for absolute, n - 1 for rank, and for gap
// min(p_last, n * G(p_last)).
int64_t max_mapped_position(PositionMode mode, int64_t n, int64_t p_last);

}  // namespace tova::kv
