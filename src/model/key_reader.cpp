#include "model/key_reader.h"

namespace tova::model {

Result<uint32_t> KeyReader::u32(std::string_view suffix) {
  read_.insert(key(suffix));
  return f_.get_u32(key(suffix));
}

Result<float> KeyReader::f32(std::string_view suffix) {
  read_.insert(key(suffix));
  return f_.get_f32(key(suffix));
}

Result<std::string> KeyReader::str(std::string_view suffix) {
  read_.insert(key(suffix));
  return f_.get_string(key(suffix));
}

Result<uint32_t> KeyReader::u32_or(std::string_view suffix, uint32_t def) {
  if (!has(suffix)) return def;
  return u32(suffix);
}

Result<float> KeyReader::f32_or(std::string_view suffix, float def) {
  if (!has(suffix)) return def;
  return f32(suffix);
}

Status KeyReader::check_all_read() const {
  const std::string prefix = arch_ + ".";
  for (const auto& [k, v] : f_.metadata()) {
    if (k.compare(0, prefix.size(), prefix) != 0 || read_.contains(k)) continue;
    return make_error(
        "{}: metadata key '{}' is not implemented for architecture '{}' (it may "
        "change what the model computes; see docs/ARCHITECTURES.md)",
        f_.path(), k, arch_);
  }
  return ok_status();
}

}  // namespace tova::model
