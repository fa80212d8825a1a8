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
// The repository's tests/data folder and the build folder, as C strings (configured into
// test_data.cpp alone: see tests/CMakeLists.txt).
const char* test_data_dir_cstr();
const char* binary_dir_cstr();

}  // namespace tova::testing

// tests/data, and the build folder: std::string(TOVA_TEST_DATA_DIR) + "/arch/...".
#define TOVA_TEST_DATA_DIR (::tova::testing::test_data_dir_cstr())
#define TOVA_BINARY_DIR (::tova::testing::binary_dir_cstr())

// Use where a test needs a tool the set-up installs (a python3 module, a program): skips with
// `what` locally, fails under CI=true (scripts/setup.sh installs everything CI needs).
#define TOVA_REQUIRE_TOOL(available, what)                                          \
  do {                                                                               \
    if (!(available)) {                                                              \
      const char* ci = std::getenv("CI");                                            \
      if (ci != nullptr && std::string(ci) == "true") {                              \
        FAIL() << (what) << " is missing; CI requires it (scripts/setup.sh installs it)"; \
      }                                                                              \
      GTEST_SKIP() << (what) << " is missing (scripts/setup.sh installs it)";        \
    }                                                                                \
  } while (0)

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
