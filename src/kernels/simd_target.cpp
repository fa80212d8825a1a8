#include "kernels/simd_target.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "hwy/targets.h"

namespace tova::kernels {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// What the CPU supports, with dispatch pinned to the best of it. In Highway 1.0, every
// hwy::SupportedTargets() call with no mask in force re-detects the CPU and re-chooses the
// target for dispatch, and on ARM (1.0.3) it chooses before adding SVE_256 and SVE2_128, which
// need the vector length: kernels then ran SVE2 where SVE_256 or SVE2_128 was the best (qemu, 256
// and 128-bit SVE). Setting the detected targets as the mask makes Highway choose again from the
// whole set and stop re-detecting; on x86 it chooses the same target as before.
int64_t detect_and_pin() {
  const int64_t detected = hwy::SupportedTargets();
  hwy::SetSupportedTargetsForTest(detected);
  return detected;
}

// Dispatch restricted to `targets` (0: what the CPU supports). A "supported targets" mask is
// what Highway 1.0 keeps (hwy::DisableTargets is undone by re-detection), and setting it makes
// the next dispatched call choose again.
void dispatch_only(int64_t targets) {
  hwy::SetSupportedTargetsForTest(0);
  hwy::SetSupportedTargetsForTest(targets != 0 ? targets : detect_and_pin());
}

// The lowest set bit: the best target of a mask (in Highway's masks a lower bit is better).
int64_t best_of(int64_t targets) { return targets & ~(targets - 1); }

// Compiled targets this CPU runs, best first, whatever set_simd_target chose. Leaves dispatch
// unrestricted.
std::vector<int64_t> runnable_targets() {
  dispatch_only(0);
  std::vector<int64_t> out;
  for (int64_t t = hwy::SupportedTargets() & HWY_TARGETS; t != 0; t &= t - 1) {
    out.push_back(best_of(t));
  }
  return out;
}

// All runnable targets from `target` down (dispatch picks the best of them: `target`).
int64_t from(int64_t target, const std::vector<int64_t>& runnable) {
  int64_t mask = 0;
  for (int64_t t : runnable) {
    if (t >= target) mask |= t;
  }
  return mask;
}

bool is_scalar_target(int64_t t) {
#ifdef HWY_EMU128
  if (t == HWY_EMU128) return true;
#endif
  return t == HWY_SCALAR;
}

}  // namespace

std::vector<std::string> simd_targets_supported() {
  const int64_t chosen = best_of(hwy::SupportedTargets() & HWY_TARGETS);
  const std::vector<int64_t> runnable = runnable_targets();
  std::vector<std::string> names;
  for (int64_t t : runnable) names.push_back(lower(hwy::TargetName(t)));
  if (chosen != runnable.front()) dispatch_only(from(chosen, runnable));  // put it back
  return names;
}

Status set_simd_target(std::string_view name) {
  const std::string want = lower(name);
  const int64_t chosen = best_of(hwy::SupportedTargets() & HWY_TARGETS);
  const std::vector<int64_t> runnable = runnable_targets();  // also lifts an earlier choice
  if (want.empty() || want == "native") return ok_status();
  std::string names;
  for (int64_t t : runnable) {
    const std::string n = lower(hwy::TargetName(t));
    if (n == want || (want == "scalar" && is_scalar_target(t))) {
      if (t != runnable.front()) dispatch_only(from(t, runnable));
      return ok_status();
    }
    if (n != "scalar") names += (names.empty() ? "" : ", ") + n;  // "scalar" is named below
  }
  // A refused choice leaves the dispatch as it was.
  if (chosen != runnable.front()) dispatch_only(from(chosen, runnable));
  return make_error("SIMD target '{}' is not available on this CPU (supported: {}, scalar, native)",
                    name, names);
}

const char* simd_target_name() {
  const int64_t t = detect_and_pin() & HWY_TARGETS;
  return t == 0 ? "unknown" : hwy::TargetName(best_of(t));
}

}  // namespace tova::kernels
