// What the vision tests share: where their data is, and reading float32 goldens.
#pragma once

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "test_data.h"

namespace tova::testing {

inline std::string vision_dir() { return std::string(TOVA_TEST_DATA_DIR) + "/vision"; }

inline std::vector<float> read_f32(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> v(b.size() / sizeof(float));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(float));
  return v;
}

}  // namespace tova::testing
