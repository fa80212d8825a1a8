// Helpers for tokenizer tests: loading a vocabulary from shared/, reading files, printing ids.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "test_data.h"
#include "tokenizer/tokenizer.h"

namespace tova::tok::testing {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string ids_to_string(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) s += ' ';
    s += std::to_string(ids[i]);
  }
  return s;
}

// Every integer in a text such as "[1, 301, 427]".
inline std::vector<int32_t> parse_ints(const std::string& text) {
  std::vector<int32_t> out;
  std::string cur;
  for (char c : text) {
    if ((c >= '0' && c <= '9') || (c == '-' && cur.empty())) {
      cur += c;
    } else if (!cur.empty()) {
      out.push_back(std::stoi(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(std::stoi(cur));
  return out;
}

struct LoadedTokenizer {
  std::unique_ptr<io::GgufFile> file;
  std::unique_ptr<Tokenizer> tok;
};

// Opens shared/<rel> and builds its tokenizer; fails the test on any error.
inline LoadedTokenizer load_shared_tokenizer(const std::string& rel) {
  LoadedTokenizer out;
  auto file = io::GgufFile::open(::tova::testing::shared_path(rel));
  EXPECT_TRUE(file.ok()) << file.message();
  if (!file.ok()) return out;
  out.file = std::move(file).value();
  auto tok = Tokenizer::from_gguf(*out.file);
  EXPECT_TRUE(tok.ok()) << tok.message();
  if (tok.ok()) out.tok = std::move(tok).value();
  return out;
}

}  // namespace tova::tok::testing
