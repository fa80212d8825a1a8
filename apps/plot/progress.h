// The text of a progress bar with an ETA, for front-ends that draw one.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>

namespace tova::plot {

// "[#########.........]  45%  12.3 s, ETA 15 s" (no newline).
inline std::string progress_line(int64_t done, int64_t total, double seconds, int width = 30) {
  const double f = total > 0 ? std::clamp(static_cast<double>(done) / total, 0.0, 1.0) : 1.0;
  const int filled = static_cast<int>(f * width);
  std::string bar = "[" + std::string(filled, '#') + std::string(width - filled, '.') + "]";
  const std::string eta =
      f > 0 && f < 1 ? fmt::format(", ETA {:.0f} s", seconds * (1 - f) / f) : std::string();
  return fmt::format("{} {:3.0f}%  {:.1f} s{}", bar, f * 100, seconds, eta);
}

}  // namespace tova::plot
