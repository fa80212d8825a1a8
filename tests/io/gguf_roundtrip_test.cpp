// Writer -> reader round trips: every value type, nested arrays, tensors of several types and
// alignments, and the typed getters.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include "gguf_test_util.h"
#include "io/gguf.h"
#include "test_data.h"

namespace tova::io {
namespace {

using testing::Bytes;
using testing::pattern_bytes;
using V = GgufValue;
using T = GgufValueType;

std::vector<std::pair<std::string, GgufValue>> every_value_type() {
  std::vector<std::pair<std::string, GgufValue>> kv;
  kv.emplace_back("s.u8", V::make_u8(255));
  kv.emplace_back("s.i8", V::make_i8(-128));
  kv.emplace_back("s.u16", V::make_u16(65535));
  kv.emplace_back("s.i16", V::make_i16(-32768));
  kv.emplace_back("s.u32", V::make_u32(4294967295u));
  kv.emplace_back("s.i32", V::make_i32(std::numeric_limits<int32_t>::min()));
  kv.emplace_back("s.u64", V::make_u64(std::numeric_limits<uint64_t>::max()));
  kv.emplace_back("s.i64", V::make_i64(std::numeric_limits<int64_t>::min()));
  kv.emplace_back("s.f32", V::make_f32(-1.5e-40f));  // an f32 subnormal
  kv.emplace_back("s.f32_inf", V::make_f32(std::numeric_limits<float>::infinity()));
  kv.emplace_back("s.f32_negzero", V::make_f32(-0.0f));
  kv.emplace_back("s.f64", V::make_f64(3.141592653589793238));
  kv.emplace_back("s.bool_t", V::make_bool(true));
  kv.emplace_back("s.bool_f", V::make_bool(false));
  kv.emplace_back("s.str", V::make_str("h\xc3\xa9llo\n world"));
  kv.emplace_back("s.str_empty", V::make_str(""));
  kv.emplace_back("s.str_nul", V::make_str(std::string("a\0b", 3)));
  kv.emplace_back("a.u8", V::make_array(T::kUint8, {V::make_u8(0), V::make_u8(7)}));
  kv.emplace_back("a.i8", V::make_array(T::kInt8, {V::make_i8(-1), V::make_i8(127)}));
  kv.emplace_back("a.u16", V::make_array(T::kUint16, {V::make_u16(1), V::make_u16(65535)}));
  kv.emplace_back("a.i16", V::make_array(T::kInt16, {V::make_i16(-300)}));
  kv.emplace_back("a.u32", V::make_array(T::kUint32, {V::make_u32(1), V::make_u32(2)}));
  kv.emplace_back("a.i32", V::make_i32_array({-5, 0, 5}));
  kv.emplace_back("a.u64", V::make_array(T::kUint64, {V::make_u64(uint64_t{1} << 63)}));
  kv.emplace_back("a.i64", V::make_array(T::kInt64, {V::make_i64(-(int64_t{1} << 40))}));
  kv.emplace_back("a.f32", V::make_f32_array({0.5f, -2.25f, 1e30f}));
  kv.emplace_back("a.f64", V::make_array(T::kFloat64, {V::make_f64(1e-300)}));
  kv.emplace_back("a.bool", V::make_array(T::kBool, {V::make_bool(true), V::make_bool(false)}));
  kv.emplace_back("a.str", V::make_str_array({"<s>", "", "\xe2\x96\x81the"}));
  kv.emplace_back("a.empty", V::make_array(T::kFloat32, {}));
  // Nested: [[1, 2], [], [3]] and [[["x"]], []].
  kv.emplace_back("n.i32",
                  V::make_array(T::kArray, {V::make_i32_array({1, 2}), V::make_i32_array({}),
                                            V::make_i32_array({3})}));
  kv.emplace_back("n.str3",
                  V::make_array(T::kArray, {V::make_array(T::kArray, {V::make_str_array({"x"})}),
                                            V::make_array(T::kArray, {})}));
  return kv;
}

TEST(GgufRoundTrip, EveryValueTypeInInsertionOrder) {
  GgufWriter w;
  const auto kv = every_value_type();
  for (const auto& [k, v] : kv) w.set(k, v);
  const Bytes bytes = w.to_bytes();
  auto file = GgufFile::from_bytes(bytes, "values.gguf");
  ASSERT_TRUE(file.ok()) << file.message();
  const auto& got = (*file)->metadata();
  ASSERT_EQ(got.size(), kv.size());
  for (size_t j = 0; j < kv.size(); ++j) {
    EXPECT_EQ(got[j].first, kv[j].first);
    EXPECT_TRUE(got[j].second == kv[j].second) << kv[j].first;
  }
  EXPECT_EQ((*file)->version(), 3u);
  EXPECT_EQ((*file)->alignment(), 32u);
  EXPECT_TRUE((*file)->tensors().empty());
  EXPECT_EQ((*file)->find("general.alignment"), nullptr);  // default alignment: not written
  // Bit-exact float payloads.
  EXPECT_TRUE(std::signbit((*file)->find("s.f32_negzero")->f));
  EXPECT_EQ(static_cast<float>((*file)->find("s.f32")->f), -1.5e-40f);
  EXPECT_EQ((*file)->find("s.str_nul")->str.size(), 3u);
}

TEST(GgufRoundTrip, NanSurvives) {
  GgufWriter w;
  w.set("nan32", V::make_f32(std::numeric_limits<float>::quiet_NaN()));
  w.set("nan64", V::make_f64(std::numeric_limits<double>::quiet_NaN()));
  auto file = GgufFile::from_bytes(w.to_bytes());
  ASSERT_TRUE(file.ok()) << file.message();
  EXPECT_TRUE(std::isnan((*file)->find("nan32")->f));
  EXPECT_TRUE(std::isnan((*file)->find("nan64")->f));
}

TEST(GgufRoundTrip, SetReplacesAndKeepsPosition) {
  GgufWriter w;
  w.set("a", V::make_u32(1));
  w.set("b", V::make_u32(2));
  w.set("a", V::make_str("again"));
  auto file = GgufFile::from_bytes(w.to_bytes());
  ASSERT_TRUE(file.ok()) << file.message();
  ASSERT_EQ((*file)->metadata().size(), 2u);
  EXPECT_EQ((*file)->metadata()[0].first, "a");
  EXPECT_EQ((*file)->metadata()[0].second.str, "again");
}

TEST(GgufRoundTrip, HandComputedLayout) {
  // One u32 key and one 2-element f32 tensor; offsets computed by hand from the format.
  GgufWriter w;
  w.set("k", V::make_u32(0xdeadbeef));
  w.add_tensor("t", GgmlType::kF32, {2}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Bytes b = w.to_bytes();
  // header 4+4+8+8 = 24; kv: 8+1 key, 4 type, 4 value = 17 -> 41;
  // tensor info: 8+1 name, 4 n_dims, 8 dim, 4 type, 8 offset = 33 -> 74; pad to 96; data 8 -> 104,
  // padded to 128.
  ASSERT_EQ(b.size(), 128u);
  EXPECT_EQ(std::string(b.begin(), b.begin() + 4), "GGUF");
  EXPECT_EQ(testing::peek<uint32_t>(b, 4), 3u);
  EXPECT_EQ(testing::peek<uint64_t>(b, 8), 1u);
  EXPECT_EQ(testing::peek<uint64_t>(b, 16), 1u);
  EXPECT_EQ(testing::peek<uint32_t>(b, 37), 0xdeadbeefu);
  EXPECT_EQ(b[96], 1);
  EXPECT_EQ(b[103], 8);
  auto file = GgufFile::from_bytes(b);
  ASSERT_TRUE(file.ok()) << file.message();
  EXPECT_EQ((*file)->data_offset(), 96u);
  ASSERT_EQ((*file)->tensors().size(), 1u);
  EXPECT_EQ((*file)->tensors()[0].n_bytes, 8u);
  EXPECT_EQ((*file)->tensors()[0].data[0], 1);
}

struct TensorSpec {
  const char* name;
  GgmlType type;
  std::vector<int64_t> dims;
  uint64_t n_bytes;  // hand-computed
};

// n_bytes by hand: blocks per row * bytes per block * rows.
const std::vector<TensorSpec>& tensor_specs() {
  static const std::vector<TensorSpec> specs = {
      {"f32.2d", GgmlType::kF32, {3, 5}, 3 * 4 * 5},
      {"f16.1d", GgmlType::kF16, {7}, 7 * 2},
      {"bf16.4d", GgmlType::kBF16, {2, 3, 1, 2}, 2 * 2 * 3 * 1 * 2},
      {"q8_0", GgmlType::kQ8_0, {64, 3}, 2 * 34 * 3},
      {"q4_0", GgmlType::kQ4_0, {32}, 18},
      {"q4_1", GgmlType::kQ4_1, {96, 2}, 3 * 20 * 2},
      {"q4_k", GgmlType::kQ4_K, {256, 2}, 144 * 2},
      {"q6_k", GgmlType::kQ6_K, {512}, 2 * 210},
      {"q2_k", GgmlType::kQ2_K, {256, 3}, 84 * 3},
      {"q3_k", GgmlType::kQ3_K, {512}, 2 * 110},
      {"iq4_nl", GgmlType::kIQ4_NL, {64, 2}, 2 * 18 * 2},
      {"iq4_xs", GgmlType::kIQ4_XS, {256, 1, 2}, 136 * 2},
      {"mxfp4.3d", GgmlType::kMXFP4, {64, 3, 2}, 2 * 17 * 3 * 2},  // [n_in][n_out][n_expert]
      {"i8", GgmlType::kI8, {5, 1, 1, 1}, 5},
      {"f64", GgmlType::kF64, {1}, 8},
  };
  return specs;
}

class GgufTensorRoundTrip : public ::testing::TestWithParam<uint64_t> {};

TEST_P(GgufTensorRoundTrip, TypesShapesAndAlignment) {
  const uint64_t alignment = GetParam();
  GgufWriter w;
  w.set("general.architecture", V::make_str("test"));
  w.set_alignment(alignment);
  std::vector<Bytes> datas;
  for (size_t j = 0; j < tensor_specs().size(); ++j) {
    const TensorSpec& s = tensor_specs()[j];
    datas.push_back(pattern_bytes(s.n_bytes, static_cast<uint32_t>(j)));
    w.add_tensor(s.name, s.type, s.dims, datas.back());
  }
  const Bytes bytes = w.to_bytes();
  auto file = GgufFile::from_bytes(bytes, "tensors.gguf");
  ASSERT_TRUE(file.ok()) << file.message();
  const GgufFile& f = **file;
  EXPECT_EQ(f.alignment(), alignment);
  if (alignment == 32) {
    EXPECT_EQ(f.find("general.alignment"), nullptr);
  } else {
    ASSERT_NE(f.find("general.alignment"), nullptr);
    EXPECT_EQ(f.find("general.alignment")->type, T::kUint32);
    EXPECT_EQ(*f.get_u32("general.alignment"), alignment);
  }
  EXPECT_EQ(f.data_offset() % alignment, 0u);
  ASSERT_EQ(f.tensors().size(), tensor_specs().size());
  const uint8_t* first = f.tensors()[0].data - f.tensors()[0].offset - f.data_offset();
  for (size_t j = 0; j < tensor_specs().size(); ++j) {
    const TensorSpec& s = tensor_specs()[j];
    const GgufTensorInfo& t = f.tensors()[j];
    SCOPED_TRACE(s.name);
    EXPECT_EQ(t.name, s.name);
    EXPECT_EQ(t.type, s.type);
    EXPECT_EQ(t.dims, s.dims);
    int64_t n = 1;
    for (int64_t d : s.dims) n *= d;
    EXPECT_EQ(t.n_elements, n);
    EXPECT_EQ(t.n_bytes, s.n_bytes);
    EXPECT_EQ(t.offset % alignment, 0u);
    EXPECT_EQ(t.data, first + f.data_offset() + t.offset);
    // from_bytes keeps the data 64-byte aligned, like a page-aligned mapping.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % std::min<uint64_t>(alignment, 64), 0u);
    ASSERT_EQ(Bytes(t.data, t.data + t.n_bytes), datas[j]);
    EXPECT_EQ(f.find_tensor(s.name), &t);
  }
  EXPECT_EQ(f.find_tensor("missing"), nullptr);
}

INSTANTIATE_TEST_SUITE_P(Alignments, GgufTensorRoundTrip,
                         ::testing::Values(1, 8, 16, 32, 64, 256, 4096));

TEST(GgufRoundTrip, WriteFileThenOpenMapsTheSameBytes) {
  GgufWriter w;
  for (const auto& [k, v] : every_value_type()) w.set(k, v);
  const Bytes data = pattern_bytes(34 * 4, 9);
  w.add_tensor("blk.0.w", GgmlType::kQ8_0, {32, 4}, data);
  const std::string dir = tova::testing::make_temp_dir();
  const std::string path = dir + "/model.gguf";
  const Status st = w.write_file(path);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  {
    auto file = GgufFile::open(path);
    ASSERT_TRUE(file.ok()) << file.message();
    EXPECT_EQ((*file)->path(), path);
    EXPECT_EQ((*file)->file_size(), std::filesystem::file_size(path));
    EXPECT_EQ((*file)->file_size(), w.to_bytes().size());
    const GgufTensorInfo* t = (*file)->find_tensor("blk.0.w");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(Bytes(t->data, t->data + t->n_bytes), data);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data) % 32, 0u);
    ASSERT_EQ((*file)->metadata().size(), every_value_type().size());
  }
  // Overwriting an existing file goes through the same rename.
  GgufWriter w2;
  w2.set("x", V::make_bool(true));
  ASSERT_TRUE(w2.write_file(path).ok());
  auto file = GgufFile::open(path);
  ASSERT_TRUE(file.ok()) << file.message();
  EXPECT_EQ((*file)->metadata().size(), 1u);
  std::filesystem::remove_all(dir);
}

// Deferred tensors (produced when written, one at a time) give the same file as tensors given
// whole, through to_bytes and write_file alike, whatever the alignment.
TEST(GgufWriteFile, DeferredTensorsWriteTheSameBytes) {
  for (uint64_t align : {1u, 32u, 4096u}) {
    GgufWriter whole, deferred;
    whole.set_alignment(align);
    deferred.set_alignment(align);
    for (GgufWriter* w : {&whole, &deferred}) w->set("k", V::make_u32(7));
    const Bytes a = pattern_bytes(34 * 4, 3), b = pattern_bytes(4 * 5, 4);
    whole.add_tensor("a", GgmlType::kQ8_0, {32, 4}, a);
    whole.add_tensor("b", GgmlType::kF32, {5}, b);
    int calls = 0;
    deferred.add_tensor("a", GgmlType::kQ8_0, {32, 4}, [&](std::span<uint8_t> out) {
      ASSERT_EQ(out.size(), a.size());
      std::copy(a.begin(), a.end(), out.begin());
      ++calls;
    });
    deferred.add_tensor("b", GgmlType::kF32, {5}, [&](std::span<uint8_t> out) {
      ASSERT_EQ(out.size(), b.size());
      std::copy(b.begin(), b.end(), out.begin());
      ++calls;
    });
    EXPECT_EQ(deferred.to_bytes(), whole.to_bytes()) << align;
    const std::string dir = tova::testing::make_temp_dir();
    ASSERT_TRUE(deferred.write_file(dir + "/d.gguf").ok());
    std::ifstream f(dir + "/d.gguf", std::ios::binary);
    const Bytes got((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_EQ(got, whole.to_bytes()) << align;
    EXPECT_EQ(calls, 4);
    std::filesystem::remove_all(dir);
  }
}

TEST(GgufWriteFile, MissingDirectoryFailsCleanly) {
  const std::string dir = tova::testing::make_temp_dir();
  const std::string path = dir + "/no/such/dir/model.gguf";
  GgufWriter w;
  w.set("x", V::make_u32(1));
  const Status st = w.write_file(path);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().find('\n'), std::string::npos);
  EXPECT_NE(st.message().find(path), std::string::npos) << st.message();
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
}

TEST(GgufWriteFile, UnwritableFilesystemFailsCleanly) {
  // procfs refuses new files even for root (tests may run as root, where chmod does not bite).
  const std::string path = "/proc/tova-test-model.gguf";
  GgufWriter w;
  w.set("x", V::make_u32(1));
  const Status st = w.write_file(path);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().find('\n'), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(GgufWriteFile, RenameFailureRemovesTheTemporaryFile) {
  // The target is a non-empty directory: the .tmp file is written, then the rename fails.
  const std::string dir = tova::testing::make_temp_dir();
  const std::string path = dir + "/model.gguf";
  std::filesystem::create_directory(path);
  std::filesystem::create_directory(path + "/keep");
  GgufWriter w;
  w.set("x", V::make_u32(1));
  const Status st = w.write_file(path);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().find('\n'), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  EXPECT_TRUE(std::filesystem::is_directory(path + "/keep"));
  std::filesystem::remove_all(dir);
}

// Getters.

class GgufGetters : public ::testing::Test {
 protected:
  void SetUp() override {
    GgufWriter w;
    for (const auto& [k, v] : every_value_type()) w.set(k, v);
    w.set("g.u8", V::make_u8(200));
    w.set("g.i8_neg", V::make_i8(-3));
    w.set("g.i64_pos", V::make_i64(123456789012));
    w.set("g.u64_small", V::make_u64(77));
    w.set("g.u64_big", V::make_u64(uint64_t{1} << 63));
    w.set("g.u32_a", V::make_array(T::kUint32, {V::make_u32(1), V::make_u32(4000000000u)}));
    w.set("g.u16_a", V::make_array(T::kUint16, {V::make_u16(1), V::make_u16(65535)}));
    auto f = GgufFile::from_bytes(w.to_bytes(), "getters.gguf");
    ASSERT_TRUE(f.ok()) << f.message();
    file_ = std::move(*f);
  }

  // Checks a failed getter: one line, names the file and the key, and contains `what`.
  template <typename R>
  void expect_error(const R& r, std::string_view key, std::string_view what) {
    ASSERT_FALSE(r.ok()) << key;
    const std::string& m = r.message();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_EQ(m.rfind("getters.gguf: ", 0), 0u) << m;
    EXPECT_NE(m.find(fmt::format("'{}'", key)), std::string::npos) << m;
    EXPECT_NE(m.find(what), std::string::npos) << m;
  }

  std::unique_ptr<GgufFile> file_;
};

TEST_F(GgufGetters, Integers) {
  const GgufFile& f = *file_;
  EXPECT_EQ(*f.get_u32("g.u8"), 200u);
  EXPECT_EQ(*f.get_u32("s.u32"), 4294967295u);
  EXPECT_EQ(*f.get_u32("g.u64_small"), 77u);
  EXPECT_EQ(*f.get_u32("s.u16"), 65535u);
  EXPECT_EQ(*f.get_i64("g.i8_neg"), -3);
  EXPECT_EQ(*f.get_i64("s.i64"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(*f.get_i64("g.i64_pos"), 123456789012);
  EXPECT_EQ(*f.get_i64("s.u32"), 4294967295);
  expect_error(f.get_u32("g.i8_neg"), "g.i8_neg", "-3 (i8) does not fit in u32");
  expect_error(f.get_u32("g.i64_pos"), "g.i64_pos", "does not fit in u32");
  expect_error(f.get_i64("g.u64_big"), "g.u64_big", "9223372036854775808 (u64)");
  expect_error(f.get_u32("s.f32"), "s.f32", "has type f32, expected an integer");
  expect_error(f.get_u32("s.bool_t"), "s.bool_t", "has type bool");
  expect_error(f.get_i64("a.i32"), "a.i32", "has type array of i32");
  expect_error(f.get_u32("nope"), "nope", "not found");
}

TEST_F(GgufGetters, FloatsBoolsStrings) {
  const GgufFile& f = *file_;
  EXPECT_EQ(*f.get_f32("s.f32"), -1.5e-40f);
  EXPECT_FLOAT_EQ(*f.get_f32("s.f64"), 3.14159265f);
  EXPECT_EQ(*f.get_bool("s.bool_t"), true);
  EXPECT_EQ(*f.get_bool("s.bool_f"), false);
  EXPECT_EQ(*f.get_string("s.str"), "h\xc3\xa9llo\n world");
  expect_error(f.get_f32("s.u32"), "s.u32", "has type u32, expected f32 or f64");
  expect_error(f.get_bool("s.u8"), "s.u8", "has type u8, expected bool");
  expect_error(f.get_string("s.i32"), "s.i32", "has type i32, expected string");
  expect_error(f.get_string("a.str"), "a.str", "has type array of string, expected string");
  expect_error(f.get_string("missing.key"), "missing.key", "not found");
}

TEST_F(GgufGetters, Arrays) {
  const GgufFile& f = *file_;
  EXPECT_EQ(*f.get_string_array("a.str"), (std::vector<std::string>{"<s>", "", "\xe2\x96\x81the"}));
  EXPECT_EQ(*f.get_f32_array("a.f32"), (std::vector<float>{0.5f, -2.25f, 1e30f}));
  EXPECT_EQ(*f.get_f32_array("a.f64"), (std::vector<float>{0.0f}));  // 1e-300 underflows
  EXPECT_TRUE(f.get_f32_array("a.empty")->empty());
  EXPECT_EQ(*f.get_i32_array("a.i32"), (std::vector<int32_t>{-5, 0, 5}));
  EXPECT_EQ(*f.get_i32_array("a.i8"), (std::vector<int32_t>{-1, 127}));
  EXPECT_EQ(*f.get_i32_array("g.u16_a"), (std::vector<int32_t>{1, 65535}));
  expect_error(f.get_i32_array("g.u32_a"), "g.u32_a", "element 1 value 4000000000");
  expect_error(f.get_i32_array("a.f32"), "a.f32", "array of f32, expected array of integers");
  expect_error(f.get_i32_array("n.i32"), "n.i32", "array of array");
  expect_error(f.get_string_array("a.i32"), "a.i32", "expected array of string");
  expect_error(f.get_f32_array("s.f32"), "s.f32", "has type f32, expected array");
  expect_error(f.get_f32_array("gone"), "gone", "not found");
}

TEST(GgufValue, TypeNames) {
  EXPECT_EQ(value_type_name(T::kUint8), "u8");
  EXPECT_EQ(value_type_name(T::kFloat64), "f64");
  EXPECT_EQ(value_type_name(T::kArray), "array");
  EXPECT_EQ(value_type_name(static_cast<T>(42)), "unknown");
}

TEST(GgufValue, FactoriesFillTheDocumentedField) {
  EXPECT_EQ(V::make_u16(9).u, 9u);
  EXPECT_EQ(V::make_i16(-9).i, -9);
  EXPECT_EQ(V::make_f32(0.25f).f, 0.25);
  EXPECT_EQ(V::make_str_array({"a", "b"}).arr[1].str, "b");
  EXPECT_EQ(V::make_str_array({"a"}).elem_type, T::kString);
  EXPECT_EQ(V::make_i32_array({4}).arr[0].type, T::kInt32);
  EXPECT_EQ(V::make_f32_array({}).type, T::kArray);
}

}  // namespace
}  // namespace tova::io
