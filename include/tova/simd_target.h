// Which SIMD target the kernels run on. Highway compiles every kernel once per target and
// dispatches at run time to the best one this CPU supports; set_simd_target narrows that to a
// named target, so any compiled target's kernels can be run and measured on any machine that
// can execute them (an AVX2 run on an AVX-512 CPU, a scalar run for a reference).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tova/result.h"

namespace tova::kernels {

// Lower-case names of the compiled targets this CPU can run, best first (here e.g. "avx3_dl",
// "avx3", "avx2", "sse4", "ssse3", "emu128"). "scalar" is accepted as a name for the last one.
std::vector<std::string> simd_targets_supported();

// Makes every kernel dispatch to the named target (case-insensitive); "native" or "" restores
// the best one. The error names the targets this CPU supports. Call it before kernels run on
// other threads (it changes a process-wide choice).
Status set_simd_target(std::string_view name);

// Name of the target the kernels dispatch to now, as Highway spells it (e.g. "AVX3_DL").
const char* simd_target_name();

}  // namespace tova::kernels
