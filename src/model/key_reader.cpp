#include "model/key_reader.h"

#include <cstdint>

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

Result<std::vector<uint32_t>> KeyReader::u32_array(std::string_view suffix, size_t n) {
  read_.insert(key(suffix));
  const io::GgufValue* v = f_.find(key(suffix));
  if (v == nullptr) return make_error("{}: missing metadata key '{}'", f_.path(), key(suffix));
  if (v->type != io::GgufValueType::kArray || v->arr.size() != n) {
    return make_error("{}: metadata key '{}' must be an array of {} entries", f_.path(),
                      key(suffix), n);
  }
  std::vector<uint32_t> out;
  for (const io::GgufValue& e : v->arr) {
    switch (e.type) {
      case io::GgufValueType::kBool: out.push_back(e.b ? 1 : 0); break;
      case io::GgufValueType::kUint8:
      case io::GgufValueType::kUint16:
      case io::GgufValueType::kUint32:
      case io::GgufValueType::kUint64:
        if (e.u > UINT32_MAX) {
          return make_error("{}: metadata key '{}' holds {}, out of range", f_.path(),
                            key(suffix), e.u);
        }
        out.push_back(static_cast<uint32_t>(e.u));
        break;
      case io::GgufValueType::kInt8:
      case io::GgufValueType::kInt16:
      case io::GgufValueType::kInt32:
      case io::GgufValueType::kInt64:
        if (e.i < 0 || e.i > INT64_C(0xFFFFFFFF)) {
          return make_error("{}: metadata key '{}' holds {}, out of range", f_.path(),
                            key(suffix), e.i);
        }
        out.push_back(static_cast<uint32_t>(e.i));
        break;
      default:
        return make_error("{}: metadata key '{}' must hold integers, not {}", f_.path(),
                          key(suffix), io::value_type_name(e.type));
    }
  }
  return out;
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
