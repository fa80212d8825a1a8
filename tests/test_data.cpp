#include "test_data.h"

#include <cstdlib>
#include <filesystem>
#include <random>

namespace tova::testing {

std::string shared_dir() {
  std::string dir;
  if (const char* env = std::getenv("TOVA_SHARED_DIR"); env != nullptr && *env != '\0') {
    dir = env;
  } else {
    dir = TOVA_SHARED_DIR_DEFAULT;
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(dir + "/golden", ec)) return "";
  return dir;
}

std::string shared_path(const std::string& rel) { return shared_dir() + "/" + rel; }

std::string binary_dir() { return TOVA_BINARY_DIR_PATH; }
const char* binary_dir_cstr() { return TOVA_BINARY_DIR_PATH; }
const char* test_data_dir_cstr() { return TOVA_TEST_DATA_DIR_PATH; }

std::string make_temp_dir() {
  std::random_device rd;
  for (;;) {
    auto p = std::filesystem::temp_directory_path() /
             ("tova-test-" + std::to_string(rd()) + std::to_string(rd()));
    std::error_code ec;
    if (std::filesystem::create_directory(p, ec)) return p.string();
  }
}

}  // namespace tova::testing
