// What the vision tests share: where their data is, and reading float32 goldens.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
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

// One chunk of a prompt as llama.cpp's mtmd cut it (NAME.IMAGE.layout.txt).
struct Chunk {
  bool image = false;
  std::vector<int32_t> ids;  // text
  int n_image = 0;           // image tokens
};

inline std::vector<Chunk> read_layout(const std::string& path) {
  std::ifstream in(path);
  std::vector<Chunk> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::string kind;
    ss >> kind;
    Chunk c;
    if (kind == "image") {
      c.image = true;
      ss >> c.n_image;
    } else {
      int32_t id = 0;
      while (ss >> id) c.ids.push_back(id);
    }
    out.push_back(c);
  }
  return out;
}

struct Compare {
  double rel_l2 = 0;
  double top1 = 0;
};

// Rows of n_vocab logits against the reference's: relative L2 over all, and the share of rows
// whose largest entry is at the same index.
inline Compare compare(const std::vector<float>& a, const std::vector<float>& ref, int n_vocab) {
  double num = 0, den = 0;
  int same = 0;
  const size_t n = ref.size() / n_vocab;
  for (size_t r = 0; r < n; ++r) {
    const float* x = &a[r * n_vocab];
    const float* y = &ref[r * n_vocab];
    for (int i = 0; i < n_vocab; ++i) {
      num += (double{x[i]} - y[i]) * (double{x[i]} - y[i]);
      den += double{y[i]} * y[i];
    }
    same += std::max_element(x, x + n_vocab) - x == std::max_element(y, y + n_vocab) - y;
  }
  return {std::sqrt(num / den), static_cast<double>(same) / static_cast<double>(n)};
}

}  // namespace tova::testing
