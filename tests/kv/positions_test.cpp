// Position modes of spec/POSITIONS.md with hand-computed tables.
#include <gtest/gtest.h>

#include <vector>

#include "kv/positions.h"

namespace tova::kv {
namespace {

std::vector<int64_t> mapped(PositionMode mode, const std::vector<int64_t>& sorted) {
  std::vector<int64_t> out(sorted.size());
  map_positions(mode, sorted, out);
  return out;
}

TEST(Positions, CompressGapWorkedValues) {
  // The table of POSITIONS.md.
  for (int64_t d = 0; d <= 10; ++d) EXPECT_EQ(compress_gap(d), d);
  EXPECT_EQ(compress_gap(11), 11);
  EXPECT_EQ(compress_gap(12), 11);
  EXPECT_EQ(compress_gap(48), 12);
  EXPECT_EQ(compress_gap(100), 12);
  EXPECT_EQ(compress_gap(349), 12);
  EXPECT_EQ(compress_gap(1000), 12);
  EXPECT_EQ(compress_gap(70000), 13);
  // By hand: G(16) = ceil(10 + ln(ln(6 + e))) = ceil(10 + ln(2.165)) = ceil(10.77) = 11;
  // G(13) = ceil(10 + ln(ln(5.718))) = ceil(10 + ln(1.744)) = ceil(10.556) = 11.
  EXPECT_EQ(compress_gap(13), 11);
  EXPECT_EQ(compress_gap(16), 11);
  // Never above d, never decreasing.
  for (int64_t d = 1; d < 5000; ++d) {
    EXPECT_LE(compress_gap(d), d);
    EXPECT_LE(compress_gap(d - 1), compress_gap(d));
  }
}

TEST(Positions, SpecExample) {
  // Held 0,1,2,50,51,400: gaps 0,1,1,48,1,349.
  const std::vector<int64_t> held = {0, 1, 2, 50, 51, 400};
  EXPECT_EQ(mapped(PositionMode::kGap, held), (std::vector<int64_t>{0, 1, 2, 14, 15, 27}));
  EXPECT_EQ(mapped(PositionMode::kRank, held), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(mapped(PositionMode::kAbsolute, held), held);
}

TEST(Positions, HandTables) {
  // A sink of 2 and a window of 3 at step 30: 0,1,28,29,30. Gaps 0,1,27,1,1; G(27) =
  // ceil(10 + ln(ln(17 + e))) = ceil(10 + ln(2.982)) = ceil(11.09) = 12.
  EXPECT_EQ(mapped(PositionMode::kGap, {0, 1, 28, 29, 30}),
            (std::vector<int64_t>{0, 1, 13, 14, 15}));
  EXPECT_EQ(mapped(PositionMode::kRank, {0, 1, 28, 29, 30}), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  // First held state not at 0: d_0 = p_0. 5 -> 5; 20 -> G(20) = ceil(10 + ln(ln(10 + e))) =
  // ceil(10 + ln(2.543)) = ceil(10.93) = 11; then +1, +10, +G(11) = 11.
  EXPECT_EQ(mapped(PositionMode::kGap, {5, 6, 16, 27}), (std::vector<int64_t>{5, 6, 16, 27}));
  EXPECT_EQ(mapped(PositionMode::kGap, {20, 21, 31, 42}), (std::vector<int64_t>{11, 12, 22, 33}));
  // Nothing evicted: every mode is absolute.
  std::vector<int64_t> all(40);
  for (int i = 0; i < 40; ++i) all[i] = i;
  EXPECT_EQ(mapped(PositionMode::kGap, all), all);
  EXPECT_EQ(mapped(PositionMode::kRank, all), all);
}

TEST(Positions, SlotPoolsMapBySortedPosition) {
  // Slots in any order, free slots (-1) stay -1.
  const std::vector<int64_t> slot_pos = {400, -1, 1, 51, 0, -1, 50, 2};
  std::vector<int64_t> out(slot_pos.size());
  std::vector<int32_t> order;
  map_slot_positions(PositionMode::kGap, slot_pos, out, order);
  EXPECT_EQ(out, (std::vector<int64_t>{27, -1, 1, 15, 0, -1, 14, 2}));
  map_slot_positions(PositionMode::kRank, slot_pos, out, order);
  EXPECT_EQ(out, (std::vector<int64_t>{5, -1, 1, 4, 0, -1, 3, 2}));
  map_slot_positions(PositionMode::kAbsolute, slot_pos, out, order);
  EXPECT_EQ(out, slot_pos);
}

TEST(Positions, MaxMappedPositionBoundsEveryMapping) {
  const std::vector<int64_t> held = {0, 1, 2, 50, 51, 400, 70400};
  const int64_t n = static_cast<int64_t>(held.size());
  for (PositionMode mode : {PositionMode::kAbsolute, PositionMode::kGap, PositionMode::kRank}) {
    const auto m = mapped(mode, held);
    EXPECT_LE(m.back(), max_mapped_position(mode, n, held.back()));
  }
}

TEST(Positions, ParseNames) {
  for (PositionMode mode : {PositionMode::kAbsolute, PositionMode::kGap, PositionMode::kRank}) {
    auto p = parse_position_mode(position_mode_name(mode));
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(*p, mode);
  }
  auto bad = parse_position_mode("relative");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("absolute | gap | rank"), std::string::npos);
}

}  // namespace
}  // namespace tova::kv
