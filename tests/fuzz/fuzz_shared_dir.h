// Where the harnesses find ../shared (models, vocabularies): $TOVA_SHARED_DIR, else the folder
// CMake saw at configure time, else ../shared.
#pragma once

#include <cstdlib>
#include <string>

namespace tova::fuzz {

inline std::string shared_dir() {
  if (const char* env = std::getenv("TOVA_SHARED_DIR"); env != nullptr && *env != '\0') return env;
#ifdef TOVA_SHARED_DIR_DEFAULT
  return TOVA_SHARED_DIR_DEFAULT;
#else
  return "../shared";
#endif
}

}  // namespace tova::fuzz
