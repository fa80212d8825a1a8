// Reads a GGUF's metadata for the model loader and remembers every key it read, so the loader
// can refuse a file whose architecture keys it did not read (each one may change the arithmetic;
// running without it would compute a different model without saying so).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "io/gguf.h"

namespace tova::model {

class KeyReader {
 public:
  // `arch` is general.architecture: keys are named "{arch}.{suffix}".
  KeyReader(const io::GgufFile& file, std::string arch) : f_(file), arch_(std::move(arch)) {}

  const io::GgufFile& file() const { return f_; }
  const std::string& arch() const { return arch_; }
  std::string key(std::string_view suffix) const { return arch_ + "." + std::string(suffix); }
  bool has(std::string_view suffix) const { return f_.find(key(suffix)) != nullptr; }

  // Required keys: an error names the key if it is missing or of the wrong type.
  Result<uint32_t> u32(std::string_view suffix);
  Result<float> f32(std::string_view suffix);
  Result<std::string> str(std::string_view suffix);
  // Optional keys with a default.
  Result<uint32_t> u32_or(std::string_view suffix, uint32_t def);
  Result<float> f32_or(std::string_view suffix, float def);
  // A per-layer array of exactly n entries (converters write one where layers differ, e.g.
  // Gemma 4's head_count_kv and sliding_window_pattern): unsigned integers (any integer element
  // type, each in 0..2^32-1), or bools as 0/1. An error names the key if it is not such an array.
  Result<std::vector<uint32_t>> u32_array(std::string_view suffix, size_t n);
  bool is_array(std::string_view suffix) const {
    const io::GgufValue* v = f_.find(key(suffix));
    return v != nullptr && v->type == io::GgufValueType::kArray;
  }
  // Marks a key as accounted for without using its value (e.g. it is known not to change what
  // the forward pass computes).
  void accept(std::string_view suffix) { read_.insert(key(suffix)); }

  // The "{arch}." keys read so far, sorted.
  std::vector<std::string> keys_read() const { return {read_.begin(), read_.end()}; }
  // One error naming the first "{arch}." key of the file that was not read.
  Status check_all_read() const;

 private:
  const io::GgufFile& f_;
  std::string arch_;
  std::set<std::string> read_;
};

}  // namespace tova::model
