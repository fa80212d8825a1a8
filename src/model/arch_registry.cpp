// The list of architectures: the only place that names them all. One line per ArchSpec that an
// arch_*.cpp file defines.
#include "model/arch.h"

#define TOVA_ARCHITECTURES(X) \
  X(kArchLlama)               \
  X(kArchQwen2)               \
  X(kArchQwen3)               \
  X(kArchPhi3)                \
  X(kArchGemma2)              \
  X(kArchGemma3)              \
  X(kArchSmolLM3)             \
  X(kArchGemma4)              \
  X(kArchQwen2Moe)            \
  X(kArchQwen3Moe)            \
  X(kArchGptOss)              \
  X(kArchQwen35)              \
  X(kArchQwen35Moe)           \
  X(kArchQwen3Next)           \
  X(kArchLfm2)                \
  X(kArchLfm2Moe)             \
  X(kArchGraniteHybrid)       \
  X(kArchNemotronH)           \
  X(kArchNemotronHMoe)        \
  X(kArchFalconH1)

namespace tova::model {

#define TOVA_DECLARE_ARCH(spec) extern const ArchSpec spec;
TOVA_ARCHITECTURES(TOVA_DECLARE_ARCH)

namespace {
#define TOVA_LIST_ARCH(spec) &spec,
constexpr const ArchSpec* kArchs[] = {TOVA_ARCHITECTURES(TOVA_LIST_ARCH)};
}  // namespace

std::span<const ArchSpec* const> all_archs() { return kArchs; }

const ArchSpec* find_arch(std::string_view name) {
  for (const ArchSpec* a : kArchs) {
    if (name == a->name) return a;
  }
  return nullptr;
}

std::string supported_architectures() {
  std::string s;
  for (const ArchSpec* a : kArchs) s += (s.empty() ? "" : ", ") + std::string(a->name);
  return s;
}

}  // namespace tova::model
