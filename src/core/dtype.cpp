#include "core/dtype.h"

#include <array>
#include <cctype>
#include <string>

namespace tova {
namespace {

struct Entry {
  uint32_t id;
  TypeTraits traits;
};

// QK_K = 256 for the k-quants.
constexpr std::array kTypes = {
    Entry{0, {"f32", 1, 4}},        Entry{1, {"f16", 1, 2}},
    Entry{2, {"q4_0", 32, 18}},     Entry{3, {"q4_1", 32, 20}},
    Entry{6, {"q5_0", 32, 22}},     Entry{7, {"q5_1", 32, 24}},
    Entry{8, {"q8_0", 32, 34}},     Entry{9, {"q8_1", 32, 36}},
    Entry{10, {"q2_k", 256, 84}},   Entry{11, {"q3_k", 256, 110}},
    Entry{12, {"q4_k", 256, 144}},  Entry{13, {"q5_k", 256, 176}},
    Entry{14, {"q6_k", 256, 210}},  Entry{15, {"q8_k", 256, 292}},
    Entry{16, {"iq2_xxs", 256, 66}}, Entry{17, {"iq2_xs", 256, 74}},
    Entry{18, {"iq3_xxs", 256, 98}}, Entry{19, {"iq1_s", 256, 50}},
    Entry{20, {"iq4_nl", 32, 18}},  Entry{21, {"iq3_s", 256, 110}},
    Entry{22, {"iq2_s", 256, 82}},  Entry{23, {"iq4_xs", 256, 136}},
    Entry{24, {"i8", 1, 1}},        Entry{25, {"i16", 1, 2}},
    Entry{26, {"i32", 1, 4}},       Entry{27, {"i64", 1, 8}},
    Entry{28, {"f64", 1, 8}},       Entry{29, {"iq1_m", 256, 56}},
    Entry{30, {"bf16", 1, 2}},      Entry{34, {"tq1_0", 256, 54}},
    Entry{35, {"tq2_0", 256, 66}},  Entry{39, {"mxfp4", 32, 17}},
};

// tova's own layouts (dtype.h): the same block size and bytes as the type they are made from.
constexpr std::array kOwnTypes = {
    Entry{130, {"q4_0_r8", 32, 18}},
};

constexpr std::array kComputeTypes = {
    GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ8_0,
    GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
    GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K,
    GgmlType::kQ6_K, GgmlType::kIQ4_NL, GgmlType::kIQ4_XS, GgmlType::kMXFP4,
};

}  // namespace

const TypeTraits* find_type_traits(uint32_t id) {
  for (const auto& e : kTypes) {
    if (e.id == id) return &e.traits;
  }
  return nullptr;
}

const TypeTraits& type_traits(GgmlType type) {
  const TypeTraits* t = find_type_traits(static_cast<uint32_t>(type));
  for (const auto& e : kOwnTypes) {
    if (t == nullptr && e.id == static_cast<uint32_t>(type)) t = &e.traits;
  }
  static const TypeTraits kUnknown{"unknown", 1, 1};
  return t ? *t : kUnknown;
}

std::string_view type_name(GgmlType type) { return type_traits(type).name; }

Result<GgmlType> parse_type_name(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& e : kTypes) {
    if (e.traits.name == lower) return static_cast<GgmlType>(e.id);
  }
  return make_error("unknown weight type '{}'", name);
}

bool is_compute_supported(GgmlType type) {
  for (GgmlType t : kComputeTypes) {
    if (t == type) return true;
  }
  return false;
}

std::span<const GgmlType> compute_types() { return kComputeTypes; }

Result<uint64_t> bytes_per_row(GgmlType type, int64_t n) {
  const TypeTraits& t = type_traits(type);
  if (n < 0 || n % t.block_size != 0) {
    return make_error("row of {} elements is not a multiple of the {} block size {}", n, t.name,
                     t.block_size);
  }
  return static_cast<uint64_t>(n / t.block_size) * static_cast<uint64_t>(t.type_size);
}

}  // namespace tova
