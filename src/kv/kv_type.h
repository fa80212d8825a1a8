// How a multi-state stores its keys and values.
#pragma once

namespace tova::kv {

enum class KvType { kF32, kF16 };

}  // namespace tova::kv
