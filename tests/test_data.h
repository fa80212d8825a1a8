// Finding ../shared from tests: one setting, the TOVA_SHARED_DIR environment variable, else
// the CMake option of the same name. If the data is missing, tests skip locally but FAIL when
// CI=true, so a CI run can never pass without the golden data.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace tova::testing {

// The shared/ directory, or "" if it does not exist.
std::string shared_dir();
// shared_dir() + "/" + rel.
std::string shared_path(const std::string& rel);
// The build directory (for the tova binary: binary_dir() + "/bin/tova").
std::string binary_dir();
// A fresh temporary directory for one test.
std::string make_temp_dir();

}  // namespace tova::testing

// Use at the top of a test that needs shared/ data.
#define TOVA_REQUIRE_SHARED()                                                           \
  do {                                                                                  \
    if (::tova::testing::shared_dir().empty()) {                                         \
      const char* ci = std::getenv("CI");                                               \
      if (ci != nullptr && std::string(ci) == "true") {                                 \
        FAIL() << "shared data folder not found (set TOVA_SHARED_DIR); CI requires it"; \
      }                                                                                 \
      GTEST_SKIP() << "shared data folder not found (set TOVA_SHARED_DIR)";             \
    }                                                                                   \
  } while (0)
