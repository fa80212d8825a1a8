// The SIMD target choice is part of the public face (tova/simd_target.h).
#pragma once

#include "tova/simd_target.h"
