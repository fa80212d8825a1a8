// Typed access to GGUF metadata. Integer getters accept any integer type whose value fits, as
// writers disagree on widths (token ids as u32 or i32, counts as u32 or u64).
#include <limits>

#include "io/gguf.h"
#include "io/gguf_format.h"

namespace tova::io {
namespace {

namespace fmt_ = gguf_format;

std::string describe(const GgufValue& v) {
  if (v.type == GgufValueType::kArray) {
    return fmt::format("array of {}", value_type_name(v.elem_type));
  }
  return std::string(value_type_name(v.type));
}

std::string int_text(const GgufValue& v) {
  return fmt_::is_signed_integer(v.type) ? std::to_string(v.i) : std::to_string(v.u);
}

// The value of an integer GgufValue as T, if it is an integer and fits.
template <typename T>
bool int_fits(const GgufValue& v, T& out) {
  if (!fmt_::is_integer(v.type)) return false;
  if (fmt_::is_signed_integer(v.type)) {
    if (v.i < static_cast<int64_t>(std::numeric_limits<T>::min())) return false;
    if (v.i >= 0 &&
        static_cast<uint64_t>(v.i) > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
      return false;
    }
    out = static_cast<T>(v.i);
    return true;
  }
  if (v.u > static_cast<uint64_t>(std::numeric_limits<T>::max())) return false;
  out = static_cast<T>(v.u);
  return true;
}

Result<const GgufValue*> lookup(const GgufFile& file, std::string_view key) {
  const GgufValue* v = file.find(key);
  if (v == nullptr) return make_error("{}: key '{}' not found", file.path(), key);
  return v;
}

Error wrong_type(const GgufFile& file, std::string_view key, const GgufValue& v,
                 std::string_view expected) {
  return make_error("{}: key '{}' has type {}, expected {}", file.path(), key, describe(v),
                    expected);
}

}  // namespace

Result<std::string> GgufFile::get_string(std::string_view key) const {
  TOVA_ASSIGN_OR_RETURN(const GgufValue* v, lookup(*this, key));
  if (v->type != GgufValueType::kString) return wrong_type(*this, key, *v, "string");
  return v->str;
}

Result<uint32_t> GgufFile::get_u32(std::string_view key) const {
  TOVA_ASSIGN_OR_RETURN(const GgufValue* v, lookup(*this, key));
  if (!fmt_::is_integer(v->type)) return wrong_type(*this, key, *v, "an integer");
  uint32_t out = 0;
  if (!int_fits(*v, out)) {
    return make_error("{}: key '{}' value {} ({}) does not fit in u32", path_, key, int_text(*v),
                      value_type_name(v->type));
  }
  return out;
}

Result<int64_t> GgufFile::get_i64(std::string_view key) const {
  TOVA_ASSIGN_OR_RETURN(const GgufValue* v, lookup(*this, key));
  if (!fmt_::is_integer(v->type)) return wrong_type(*this, key, *v, "an integer");
  int64_t out = 0;
  if (!int_fits(*v, out)) {
    return make_error("{}: key '{}' value {} ({}) does not fit in i64", path_, key, int_text(*v),
                      value_type_name(v->type));
  }
  return out;
}

Result<float> GgufFile::get_f32(std::string_view key) const {
  TOVA_ASSIGN_OR_RETURN(const GgufValue* v, lookup(*this, key));
  if (v->type != GgufValueType::kFloat32 && v->type != GgufValueType::kFloat64) {
    return wrong_type(*this, key, *v, "f32 or f64");
  }
  return static_cast<float>(v->f);
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
  TOVA_ASSIGN_OR_RETURN(const GgufValue* v, lookup(*this, key));
  if (v->type != GgufValueType::kBool) return wrong_type(*this, key, *v, "bool");
  return v->b;
}

Result<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
  TOVA_ASSIGN_OR_RETURN(const GgufValue* v, lookup(*this, key));
  if (v->type != GgufValueType::kArray || v->elem_type != GgufValueType::kString) {
    return wrong_type(*this, key, *v, "array of string");
  }
  std::vector<std::string> out;
  out.reserve(v->arr.size());
  for (const GgufValue& e : v->arr) out.push_back(e.str);
  return out;
}

Result<std::vector<float>> GgufFile::get_f32_array(std::string_view key) const {
  TOVA_ASSIGN_OR_RETURN(const GgufValue* v, lookup(*this, key));
  if (v->type != GgufValueType::kArray ||
      (v->elem_type != GgufValueType::kFloat32 && v->elem_type != GgufValueType::kFloat64)) {
    return wrong_type(*this, key, *v, "array of f32 or f64");
  }
  std::vector<float> out;
  out.reserve(v->arr.size());
  for (const GgufValue& e : v->arr) out.push_back(static_cast<float>(e.f));
  return out;
}

Result<std::vector<int32_t>> GgufFile::get_i32_array(std::string_view key) const {
  TOVA_ASSIGN_OR_RETURN(const GgufValue* v, lookup(*this, key));
  if (v->type != GgufValueType::kArray || !fmt_::is_integer(v->elem_type)) {
    return wrong_type(*this, key, *v, "array of integers");
  }
  std::vector<int32_t> out(v->arr.size());
  for (size_t j = 0; j < v->arr.size(); ++j) {
    if (!int_fits(v->arr[j], out[j])) {
      return make_error("{}: key '{}' element {} value {} ({}) does not fit in i32", path_, key, j,
                        int_text(v->arr[j]), value_type_name(v->elem_type));
    }
  }
  return out;
}

}  // namespace tova::io
