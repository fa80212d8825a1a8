#include <utility>

#include "core/check.h"
#include "io/gguf.h"

namespace tova::io {

std::string_view value_type_name(GgufValueType t) {
  switch (t) {
    case GgufValueType::kUint8:
      return "u8";
    case GgufValueType::kInt8:
      return "i8";
    case GgufValueType::kUint16:
      return "u16";
    case GgufValueType::kInt16:
      return "i16";
    case GgufValueType::kUint32:
      return "u32";
    case GgufValueType::kInt32:
      return "i32";
    case GgufValueType::kFloat32:
      return "f32";
    case GgufValueType::kBool:
      return "bool";
    case GgufValueType::kString:
      return "string";
    case GgufValueType::kArray:
      return "array";
    case GgufValueType::kUint64:
      return "u64";
    case GgufValueType::kInt64:
      return "i64";
    case GgufValueType::kFloat64:
      return "f64";
  }
  return "unknown";
}

namespace {

GgufValue make_unsigned(GgufValueType t, uint64_t v) {
  GgufValue out;
  out.type = t;
  out.u = v;
  return out;
}

GgufValue make_signed(GgufValueType t, int64_t v) {
  GgufValue out;
  out.type = t;
  out.i = v;
  return out;
}

GgufValue make_float(GgufValueType t, double v) {
  GgufValue out;
  out.type = t;
  out.f = v;
  return out;
}

}  // namespace

GgufValue GgufValue::make_u8(uint8_t v) { return make_unsigned(GgufValueType::kUint8, v); }
GgufValue GgufValue::make_u16(uint16_t v) { return make_unsigned(GgufValueType::kUint16, v); }
GgufValue GgufValue::make_u32(uint32_t v) { return make_unsigned(GgufValueType::kUint32, v); }
GgufValue GgufValue::make_u64(uint64_t v) { return make_unsigned(GgufValueType::kUint64, v); }
GgufValue GgufValue::make_i8(int8_t v) { return make_signed(GgufValueType::kInt8, v); }
GgufValue GgufValue::make_i16(int16_t v) { return make_signed(GgufValueType::kInt16, v); }
GgufValue GgufValue::make_i32(int32_t v) { return make_signed(GgufValueType::kInt32, v); }
GgufValue GgufValue::make_i64(int64_t v) { return make_signed(GgufValueType::kInt64, v); }
GgufValue GgufValue::make_f32(float v) { return make_float(GgufValueType::kFloat32, v); }
GgufValue GgufValue::make_f64(double v) { return make_float(GgufValueType::kFloat64, v); }

GgufValue GgufValue::make_bool(bool v) {
  GgufValue out;
  out.type = GgufValueType::kBool;
  out.b = v;
  return out;
}

GgufValue GgufValue::make_str(std::string v) {
  GgufValue out;
  out.type = GgufValueType::kString;
  out.str = std::move(v);
  return out;
}

GgufValue GgufValue::make_array(GgufValueType elem_type, std::vector<GgufValue> elems) {
  for (const GgufValue& e : elems) TOVA_CHECK(e.type == elem_type);
  GgufValue out;
  out.type = GgufValueType::kArray;
  out.elem_type = elem_type;
  out.arr = std::move(elems);
  return out;
}

GgufValue GgufValue::make_str_array(const std::vector<std::string>& v) {
  std::vector<GgufValue> elems;
  elems.reserve(v.size());
  for (const std::string& s : v) elems.push_back(make_str(s));
  return make_array(GgufValueType::kString, std::move(elems));
}

GgufValue GgufValue::make_f32_array(const std::vector<float>& v) {
  std::vector<GgufValue> elems;
  elems.reserve(v.size());
  for (float x : v) elems.push_back(make_f32(x));
  return make_array(GgufValueType::kFloat32, std::move(elems));
}

GgufValue GgufValue::make_i32_array(const std::vector<int32_t>& v) {
  std::vector<GgufValue> elems;
  elems.reserve(v.size());
  for (int32_t x : v) elems.push_back(make_i32(x));
  return make_array(GgufValueType::kInt32, std::move(elems));
}

}  // namespace tova::io
