// How a multi-state stores its keys and values: the storage types of tova/kv_format.h (f32, f16,
// bf16, q8_0, q4_0; tova::kv::KvType and KvFormat) and their layouts (core/kv_type.h).
#pragma once

#include "core/kv_type.h"
