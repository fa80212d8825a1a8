// Which positions RoPE gives the states a multi-state keeps (spec/POSITIONS.md): their own, or
// positions moved closer once others were evicted. The mappings are the library's
// (kv/positions.h).
#pragma once

#include <string_view>

#include "tova/result.h"

namespace tova::kv {

enum class PositionMode {
  kAbsolute,  // m_i = p_i (the paper's evaluations)
  kGap,       // m_i = G(d_0) + ... + G(d_i): gaps over 10 compressed doubly-logarithmically
  kRank,      // m_i = i (StreamingLLM's pos_shift)
};

// Every mode, the one list (tests and front-ends iterate it).
inline constexpr PositionMode kPositionModes[] = {PositionMode::kAbsolute, PositionMode::kGap,
                                                  PositionMode::kRank};

// "absolute" | "gap" | "rank"; the error lists the choices.
Result<PositionMode> parse_position_mode(std::string_view text);
std::string_view position_mode_name(PositionMode mode);

}  // namespace tova::kv
