// How a multi-state stores its keys and values: the storage types of core/kv_type.h (f32, f16,
// bf16, q8_0, q4_0), for keys and values each, and the optional rotation of quantized rows.
#pragma once

#include "core/kv_type.h"

namespace tova::kv {

using ::tova::KvFormat;
using ::tova::KvType;

}  // namespace tova::kv
