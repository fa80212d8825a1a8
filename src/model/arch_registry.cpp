// The list of architectures: the only place that names them all.
#include "model/arch.h"

namespace tova::model {

extern const ArchSpec kArchLlama;
extern const ArchSpec kArchQwen2;
extern const ArchSpec kArchQwen3;
extern const ArchSpec kArchPhi3;
extern const ArchSpec kArchGemma2;
extern const ArchSpec kArchGemma3;

const ArchSpec* find_arch(std::string_view name) {
  for (const ArchSpec* a : {&kArchLlama, &kArchQwen2, &kArchQwen3, &kArchPhi3, &kArchGemma2, &kArchGemma3}) {
    if (name == a->name) return a;
  }
  return nullptr;
}

}  // namespace tova::model
