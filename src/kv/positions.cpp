#include "kv/positions.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/check.h"

namespace tova::kv {

Result<PositionMode> parse_position_mode(std::string_view text) {
  if (text == "absolute") return PositionMode::kAbsolute;
  if (text == "gap") return PositionMode::kGap;
  if (text == "rank") return PositionMode::kRank;
  return make_error("unknown position mode '{}' (absolute | gap | rank)", text);
}

std::string_view position_mode_name(PositionMode mode) {
  switch (mode) {
    case PositionMode::kAbsolute:
      return "absolute";
    case PositionMode::kGap:
      return "gap";
    case PositionMode::kRank:
      return "rank";
  }
  return "?";
}

int64_t compress_gap(int64_t d) {
  if (d <= 10) return d;
  // ln(ln(x)) = k exactly only at x = exp(exp(k)), never an integer plus e - 10, so the ceil of
  // the double is the ceil of the real number.
  return static_cast<int64_t>(
      std::ceil(10.0 + std::log(std::log(static_cast<double>(d) - 10.0 + std::numbers::e))));
}

void map_positions(PositionMode mode, std::span<const int64_t> sorted, std::span<int64_t> out) {
  TOVA_CHECK(out.size() == sorted.size());
  int64_t prev = 0, m = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    switch (mode) {
      case PositionMode::kAbsolute:
        out[i] = sorted[i];
        break;
      case PositionMode::kRank:
        out[i] = static_cast<int64_t>(i);
        break;
      case PositionMode::kGap:
        // d_0 = p_0 (from position 0), then the gap to the previous held state.
        m += compress_gap(sorted[i] - prev);
        prev = sorted[i];
        out[i] = m;
        break;
    }
  }
}

void map_slot_positions(PositionMode mode, std::span<const int64_t> slot_pos,
                        std::span<int64_t> slot_mapped, std::vector<int32_t>& order) {
  TOVA_CHECK(slot_mapped.size() == slot_pos.size());
  order.clear();
  for (size_t s = 0; s < slot_pos.size(); ++s) {
    slot_mapped[s] = -1;
    if (slot_pos[s] >= 0) order.push_back(static_cast<int32_t>(s));
  }
  std::sort(order.begin(), order.end(),
            [&](int32_t a, int32_t b) { return slot_pos[a] < slot_pos[b]; });
  int64_t prev = 0, m = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const int64_t p = slot_pos[order[i]];
    switch (mode) {
      case PositionMode::kAbsolute:
        m = p;
        break;
      case PositionMode::kRank:
        m = static_cast<int64_t>(i);
        break;
      case PositionMode::kGap:
        m += compress_gap(p - prev);
        prev = p;
        break;
    }
    slot_mapped[order[i]] = m;
  }
}

int64_t max_mapped_position(PositionMode mode, int64_t n, int64_t p_last) {
  switch (mode) {
    case PositionMode::kAbsolute:
      return p_last;
    case PositionMode::kRank:
      return std::max<int64_t>(0, n - 1);
    case PositionMode::kGap:
      return std::min(p_last, n * compress_gap(p_last));
  }
  return p_last;
}

}  // namespace tova::kv
