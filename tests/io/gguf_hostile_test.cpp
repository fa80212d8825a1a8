// Hostile and broken files: each must fail with one line naming the file and the key or tensor
// at fault, never crash, never allocate what a corrupt count asks for.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "gguf_test_util.h"
#include "io/gguf.h"

namespace tova::io {
namespace {

using testing::after_gguf_string;
using testing::Bytes;
using testing::find_gguf_string;
using testing::pattern_bytes;
using testing::peek;
using testing::poke;
using V = GgufValue;
using T = GgufValueType;

constexpr const char* kName = "bad.gguf";

// A small file with values of most kinds and three tensors (data 64, 34 and 8 bytes).
GgufWriter small_writer() {
  GgufWriter w;
  // A long first value keeps the header's count plausibility check loose, so truncation tests
  // reach the later, more specific checks.
  w.set("general.description", V::make_str(std::string(300, 'x')));
  w.set("general.architecture", V::make_str("llama"));
  w.set("k.u32", V::make_u32(7));
  w.set("k.bool", V::make_bool(true));
  w.set("k.f64", V::make_f64(0.5));
  w.set("k.i64", V::make_i64(-9));
  w.set("k.arr", V::make_i32_array({1, 2, 3}));
  w.set("k.strs", V::make_str_array({"a", "bc"}));
  w.set("k.nested", V::make_array(T::kArray, {V::make_f32_array({1.0f}), V::make_f32_array({})}));
  w.set("dup.k1", V::make_u8(1));
  w.set("dup.k2", V::make_u8(2));
  w.add_tensor("t.a", GgmlType::kF32, {8, 2}, pattern_bytes(64, 1));
  w.add_tensor("t.b", GgmlType::kQ8_0, {32}, pattern_bytes(34, 2));
  w.add_tensor("t.c", GgmlType::kF16, {4}, pattern_bytes(8, 3));
  return w;
}

Bytes small_file() { return small_writer().to_bytes(); }

// Where the fields of tensor `name`'s info are.
struct TensorInfoPos {
  size_t n_dims;
  size_t dims;
  size_t type(uint32_t n) const { return dims + 8 * n; }
  size_t offset(uint32_t n) const { return dims + 8 * n + 4; }
};
TensorInfoPos tensor_info(const Bytes& b, std::string_view name) {
  const size_t p = after_gguf_string(b, name);
  return {p, p + 4};
}

// Opening must fail with one line that starts with the file name and contains every needle.
void expect_rejected(const Bytes& bytes, std::initializer_list<std::string_view> needles) {
  auto f = GgufFile::from_bytes(bytes, kName);
  ASSERT_FALSE(f.ok()) << "accepted a broken file";
  const std::string& m = f.message();
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_EQ(m.rfind(std::string(kName) + ": ", 0), 0u) << m;
  for (std::string_view n : needles) EXPECT_NE(m.find(n), std::string::npos) << m;
}

TEST(GgufHostile, TheSmallFileIsValid) {
  auto f = GgufFile::from_bytes(small_file(), kName);
  ASSERT_TRUE(f.ok()) << f.message();
  EXPECT_EQ((*f)->tensors().size(), 3u);
}

TEST(GgufHostile, TruncatedAtEveryByte) {
  const Bytes full = small_file();
  auto f = GgufFile::from_bytes(full);
  ASSERT_TRUE(f.ok()) << f.message();
  // The writer pads after the last tensor; cutting only that padding leaves a valid file.
  uint64_t data_end = 0;
  for (const auto& t : (*f)->tensors()) data_end = std::max(data_end, t.offset + t.n_bytes);
  data_end += (*f)->data_offset();
  ASSERT_LT(data_end, full.size());
  for (size_t n = 0; n <= full.size(); ++n) {
    auto g = GgufFile::from_bytes(std::span<const uint8_t>(full.data(), n), kName);
    if (n < data_end) {
      ASSERT_FALSE(g.ok()) << "accepted a file truncated to " << n << " bytes";
      ASSERT_EQ(g.message().find('\n'), std::string::npos) << g.message();
      ASSERT_EQ(g.message().rfind(std::string(kName) + ": ", 0), 0u) << g.message();
    } else {
      ASSERT_TRUE(g.ok()) << n << ": " << g.message();
    }
  }
}

TEST(GgufHostile, TruncationMessagesNameTheFault) {
  const Bytes full = small_file();
  // Cut inside the values of k.arr: caught by the element count check.
  const size_t arr_values = after_gguf_string(full, "k.arr") + 4 + 4 + 8;
  expect_rejected(Bytes(full.begin(), full.begin() + arr_values + 6),
                  {"key 'k.arr'", "array of 3 i32 elements cannot fit in the 6 bytes left"});
  // Cut inside the second string of k.strs: the message names the key and the element.
  const size_t bc = find_gguf_string(full, "bc");
  expect_rejected(Bytes(full.begin(), full.begin() + bc + 1),
                  {"key 'k.strs'", "element 1 of 2", "string length 2", "past the end"});
  // Cut inside an f64 value.
  const size_t f64_at = after_gguf_string(full, "k.f64") + 4;
  expect_rejected(Bytes(full.begin(), full.begin() + f64_at + 5),
                  {"key 'k.f64'", "file ends", "f64 value"});
  // Cut inside the dims of t.b.
  const TensorInfoPos tb = tensor_info(full, "t.b");
  expect_rejected(Bytes(full.begin(), full.begin() + tb.dims + 3), {"tensor 't.b'", "dimension"});
  // Cut inside the data of t.c: the tensor runs past the end.
  expect_rejected(Bytes(full.begin(), full.end() - 32), {"tensor 't.c'", "past the end"});
}

TEST(GgufHostile, RandomCorruptionNeverCrashes) {
  // Not a proof of anything, but a cheap net for whatever the targeted tests missed: ASan and
  // UBSan runs watch every parse of a mangled file.
  const Bytes full = small_file();
  std::mt19937 rng(1234);
  int accepted = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    Bytes b = full;
    const int n_flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < n_flips; ++k) {
      const size_t at = rng() % b.size();
      b[at] = (rng() % 2 == 0) ? static_cast<uint8_t>(rng()) : static_cast<uint8_t>(b[at] ^ 0x80);
    }
    auto f = GgufFile::from_bytes(b, kName);
    if (f.ok()) {
      ++accepted;
      for (const auto& t : (*f)->tensors()) {
        ASSERT_LE((*f)->data_offset() + t.offset + t.n_bytes, b.size());
      }
    } else {
      ASSERT_EQ(f.message().find('\n'), std::string::npos) << f.message();
      ASSERT_EQ(f.message().rfind(std::string(kName) + ": ", 0), 0u) << f.message();
    }
  }
  EXPECT_LT(accepted, 3000);  // flips in tensor data are fine; most flips elsewhere are not
}

TEST(GgufHostile, EmptyAndTiny) {
  expect_rejected({}, {"not a GGUF file"});
  expect_rejected({'G', 'G', 'U'}, {"not a GGUF file"});
  expect_rejected({'G', 'G', 'U', 'F', 3, 0}, {"version"});
}

TEST(GgufHostile, WrongMagic) {
  Bytes b = small_file();
  b[3] = 'X';
  expect_rejected(b, {"not a GGUF file", "magic"});
}

TEST(GgufHostile, Versions) {
  Bytes b = small_file();
  poke<uint32_t>(b, 4, 1);
  expect_rejected(b, {"version 1"});
  poke<uint32_t>(b, 4, 99);
  expect_rejected(b, {"version 99"});
  poke<uint32_t>(b, 4, 0);
  expect_rejected(b, {"version 0"});
  poke<uint32_t>(b, 4, 0x03000000u);
  expect_rejected(b, {"big-endian"});
  poke<uint32_t>(b, 4, 2);  // v2 has the same layout as v3
  auto f = GgufFile::from_bytes(b, kName);
  ASSERT_TRUE(f.ok()) << f.message();
  EXPECT_EQ((*f)->version(), 2u);
}

TEST(GgufHostile, AbsurdCounts) {
  Bytes b = small_file();
  poke<uint64_t>(b, 8, uint64_t{1} << 60);
  expect_rejected(b, {"1152921504606846976 tensors"});
  b = small_file();
  poke<uint64_t>(b, 16, uint64_t{1} << 60);
  expect_rejected(b, {"1152921504606846976 metadata entries"});
  b = small_file();
  poke<uint64_t>(b, 16, ~uint64_t{0});
  expect_rejected(b, {"18446744073709551615 metadata entries"});
  b = small_file();
  poke<uint64_t>(b, 8, ~uint64_t{0});
  expect_rejected(b, {"tensors"});
  // Counts that fit the remaining bytes on their own but not together.
  b = small_file();
  const uint64_t rest = b.size() - 24;
  poke<uint64_t>(b, 8, rest / 32);
  poke<uint64_t>(b, 16, rest / 13);
  expect_rejected(b, {"tensors"});
  // A few more entries than are there: the parse runs off the tables and says where.
  b = small_file();
  poke<uint64_t>(b, 16, peek<uint64_t>(b, 16) + 1);
  expect_rejected(b, {});
}

TEST(GgufHostile, AbsurdStringLengths) {
  Bytes b = small_file();
  // The value of general.architecture.
  poke<uint64_t>(b, find_gguf_string(b, "llama") - 8, uint64_t{1} << 62);
  expect_rejected(b, {"key 'general.architecture'", "string length 4611686018427387904"});
  b = small_file();
  poke<uint64_t>(b, find_gguf_string(b, "llama") - 8, 5000);  // under the cap, past the end
  expect_rejected(b, {"key 'general.architecture'", "past the end"});
  // The first key itself.
  b = small_file();
  poke<uint64_t>(b, 24, ~uint64_t{0});
  expect_rejected(b, {"metadata entry 0", "key length"});
  // A tensor name.
  b = small_file();
  poke<uint64_t>(b, find_gguf_string(b, "t.b") - 8, uint64_t{1} << 40);
  expect_rejected(b, {"tensor 1 of 3", "tensor name length"});
  // A string inside an array.
  b = small_file();
  poke<uint64_t>(b, find_gguf_string(b, "bc") - 8, 1u << 20);
  expect_rejected(b, {"key 'k.strs'", "element 1 of 2"});
}

TEST(GgufHostile, AbsurdArrayCounts) {
  Bytes b = small_file();
  const size_t count_at = after_gguf_string(b, "k.arr") + 4 + 4;
  ASSERT_EQ(peek<uint64_t>(b, count_at), 3u);
  poke<uint64_t>(b, count_at, uint64_t{1} << 61);
  expect_rejected(b, {"key 'k.arr'", "array of 2305843009213693952 i32 elements"});
  poke<uint64_t>(b, count_at, ~uint64_t{0});
  expect_rejected(b, {"key 'k.arr'", "cannot fit"});
  // Inner array of a nested array.
  b = small_file();
  const size_t inner = after_gguf_string(b, "k.nested") + 4 + 4 + 8 + 4;
  ASSERT_EQ(peek<uint64_t>(b, inner), 1u);
  poke<uint64_t>(b, inner, uint64_t{1} << 59);
  expect_rejected(b, {"key 'k.nested'", "element 0 of 2", "cannot fit"});
}

// An array whose bytes are all there is still refused past 4M elements in a file: each element
// costs ~100 bytes in memory for 1 on disk.
TEST(GgufHostile, ArrayElementsAreLimitedPerFile) {
  auto file_with_u8_array = [](uint64_t n) {
    Bytes b = {'G', 'G', 'U', 'F'};
    auto put = [&b](auto v) {
      const auto* p = reinterpret_cast<const uint8_t*>(&v);
      b.insert(b.end(), p, p + sizeof(v));
    };
    put(uint32_t{3});  // version
    put(uint64_t{0});  // tensors
    put(uint64_t{1});  // metadata entries
    put(uint64_t{1});  // key "k"
    b.push_back('k');
    put(static_cast<uint32_t>(T::kArray));
    put(static_cast<uint32_t>(T::kUint8));
    put(n);
    b.resize(b.size() + n, 1);
    return b;
  };
  EXPECT_TRUE(GgufFile::from_bytes(file_with_u8_array(1000), kName).ok());
  expect_rejected(file_with_u8_array((uint64_t{1} << 22) + 1),
                  {"key 'k'", "array of 4194305 elements exceeds the limit"});
}

TEST(GgufHostile, BadValueTypes) {
  Bytes b = small_file();
  poke<uint32_t>(b, after_gguf_string(b, "k.u32"), 13);
  expect_rejected(b, {"key 'k.u32'", "value type id 13"});
  b = small_file();
  poke<uint32_t>(b, after_gguf_string(b, "k.u32"), 0xffffffffu);
  expect_rejected(b, {"key 'k.u32'", "4294967295"});
  b = small_file();
  poke<uint32_t>(b, after_gguf_string(b, "k.arr") + 4, 99);  // the element type
  expect_rejected(b, {"key 'k.arr'", "array element type id 99"});
  b = small_file();
  const size_t bool_at = after_gguf_string(b, "k.bool") + 4;
  ASSERT_EQ(b[bool_at], 1);
  b[bool_at] = 2;
  expect_rejected(b, {"key 'k.bool'", "not 0 or 1"});
}

TEST(GgufHostile, DeepNesting) {
  GgufValue v = V::make_i32_array({1});
  for (int depth = 0; depth < 12; ++depth) v = V::make_array(T::kArray, {v});
  GgufWriter w;
  w.set("deep", v);
  expect_rejected(w.to_bytes(), {"key 'deep'", "nested deeper"});
  // Depth 4 is fine.
  GgufValue ok = V::make_i32_array({1});
  for (int depth = 0; depth < 3; ++depth) ok = V::make_array(T::kArray, {ok});
  GgufWriter w2;
  w2.set("ok", ok);
  EXPECT_TRUE(GgufFile::from_bytes(w2.to_bytes()).ok());
}

TEST(GgufHostile, DuplicateKeys) {
  Bytes b = small_file();
  b[find_gguf_string(b, "dup.k2") + 5] = '1';  // dup.k2 -> dup.k1
  expect_rejected(b, {"duplicate key 'dup.k1'"});
}

TEST(GgufHostile, NamesInMessagesStayOnOneLine) {
  GgufWriter w;
  w.set("line\nbreak", V::make_u8(1));
  w.set("line\nbreaK", V::make_u8(2));
  Bytes b = w.to_bytes();
  b[find_gguf_string(b, "line\nbreaK") + 9] = 'k';
  expect_rejected(b, {"duplicate key 'line\\x0abreak'"});
  // Long names are shortened.
  GgufWriter w2;
  const std::string long_key(5000, 'z');
  w2.set(long_key, V::make_u32(1));
  w2.set("other", V::make_u32(1));
  Bytes b2 = w2.to_bytes();
  poke<uint32_t>(b2, after_gguf_string(b2, long_key), 77);
  auto f = GgufFile::from_bytes(b2, kName);
  ASSERT_FALSE(f.ok());
  EXPECT_LT(f.message().size(), 400u) << f.message();
  EXPECT_NE(f.message().find("(5000 bytes)"), std::string::npos) << f.message();
}

TEST(GgufHostile, EmptyNames) {
  GgufWriter w;
  w.set("", V::make_u32(1));
  expect_rejected(w.to_bytes(), {"metadata entry 0 of 1", "empty key"});
  GgufWriter w2;
  w2.add_tensor("", GgmlType::kF32, {1}, {0, 0, 0, 0});
  expect_rejected(w2.to_bytes(), {"tensor 0 of 1", "empty name"});
}

TEST(GgufHostile, DuplicateTensorNames) {
  Bytes b = small_file();
  b[find_gguf_string(b, "t.b") + 2] = 'a';
  expect_rejected(b, {"duplicate tensor 't.a'"});
}

TEST(GgufHostile, BadTensorType) {
  Bytes b = small_file();
  const TensorInfoPos p = tensor_info(b, "t.a");
  ASSERT_EQ(peek<uint32_t>(b, p.type(2)), 0u);
  poke<uint32_t>(b, p.type(2), 200);
  expect_rejected(b, {"tensor 't.a'", "unknown ggml type id 200"});
  poke<uint32_t>(b, p.type(2), 4);  // a removed ggml type (Q4_2)
  expect_rejected(b, {"tensor 't.a'", "type id 4"});
}

TEST(GgufHostile, BadDimensionCounts) {
  Bytes b = small_file();
  const TensorInfoPos p = tensor_info(b, "t.a");
  ASSERT_EQ(peek<uint32_t>(b, p.n_dims), 2u);
  poke<uint32_t>(b, p.n_dims, 0);
  expect_rejected(b, {"tensor 't.a'", "0 dimensions"});
  poke<uint32_t>(b, p.n_dims, 7);
  expect_rejected(b, {"tensor 't.a'", "7 dimensions"});
  poke<uint32_t>(b, p.n_dims, 0x80000000u);
  expect_rejected(b, {"tensor 't.a'", "2147483648 dimensions"});
}

TEST(GgufHostile, BadDimensions) {
  Bytes b = small_file();
  const TensorInfoPos p = tensor_info(b, "t.a");
  poke<int64_t>(b, p.dims, int64_t{1} << 32);
  poke<int64_t>(b, p.dims + 8, int64_t{1} << 32);
  expect_rejected(b, {"tensor 't.a'", "overflows"});
  b = small_file();
  poke<int64_t>(b, p.dims + 8, -1);
  expect_rejected(b, {"tensor 't.a'", "dimension 1 is -1"});
  b = small_file();
  poke<int64_t>(b, p.dims, 0);
  expect_rejected(b, {"tensor 't.a'", "dimension 0 is 0"});
  // Fits in int64 elements, but not in uint64 bytes once multiplied by 4 bytes per f32.
  b = small_file();
  poke<int64_t>(b, p.dims, int64_t{1} << 31);
  poke<int64_t>(b, p.dims + 8, (int64_t{1} << 31) + 1);
  expect_rejected(b, {"tensor 't.a'"});
  // q8_0 rows must be whole blocks of 32.
  b = small_file();
  const TensorInfoPos q = tensor_info(b, "t.b");
  poke<int64_t>(b, q.dims, 48);
  expect_rejected(b, {"tensor 't.b'", "row length 48", "block size 32"});
  // The same for the low-bit types of mixture-of-experts files (t.b is one-dimensional).
  struct Bad {
    GgmlType type;
    int64_t row;
    const char* needle;
  };
  for (const Bad& bad : {Bad{GgmlType::kMXFP4, 48, "the mxfp4 block size 32"},
                         Bad{GgmlType::kIQ4_NL, 40, "the iq4_nl block size 32"},
                         Bad{GgmlType::kQ2_K, 288, "the q2_k block size 256"},
                         Bad{GgmlType::kQ3_K, 64, "the q3_k block size 256"},
                         Bad{GgmlType::kIQ4_XS, 320, "the iq4_xs block size 256"}}) {
    b = small_file();
    poke<int64_t>(b, q.dims, bad.row);
    poke<uint32_t>(b, q.type(1), static_cast<uint32_t>(bad.type));
    expect_rejected(b, {"tensor 't.b'", "row length " + std::to_string(bad.row), bad.needle});
  }
}

TEST(GgufHostile, OffsetsPastTheEnd) {
  Bytes b = small_file();
  const TensorInfoPos p = tensor_info(b, "t.c");
  poke<uint64_t>(b, p.offset(1), 1u << 20);
  expect_rejected(b, {"tensor 't.c'", "extends past the end of the file", "bytes)"});
  poke<uint64_t>(b, p.offset(1), uint64_t{1} << 63);
  expect_rejected(b, {"tensor 't.c'", "past the end of the file"});
  poke<uint64_t>(b, p.offset(1), ~uint64_t{31});  // aligned, and offset + size overflows
  expect_rejected(b, {"tensor 't.c'", "past the end of the file"});
}

TEST(GgufHostile, MisalignedOffset) {
  Bytes b = small_file();
  const TensorInfoPos p = tensor_info(b, "t.b");
  poke<uint64_t>(b, p.offset(1), peek<uint64_t>(b, p.offset(1)) + 4);
  expect_rejected(b, {"tensor 't.b'", "not a multiple of the alignment 32"});
}

TEST(GgufHostile, OverlappingTensors) {
  Bytes b = small_file();
  // t.a holds [0, 64); moving t.b to 32 makes them share bytes.
  const TensorInfoPos p = tensor_info(b, "t.b");
  poke<uint64_t>(b, p.offset(1), 32);
  expect_rejected(b, {"tensors 't.a'", "'t.b'", "overlap"});
  // Identical offsets.
  poke<uint64_t>(b, p.offset(1), 0);
  expect_rejected(b, {"'t.a'", "'t.b'", "overlap"});
  // Out of table order: t.c at the start.
  b = small_file();
  const TensorInfoPos c = tensor_info(b, "t.c");
  poke<uint64_t>(b, c.offset(1), 0);
  expect_rejected(b, {"'t.c'", "'t.a'", "overlap"});
}

TEST(GgufHostile, BadAlignment) {
  for (uint32_t a : {0u, 3u, 48u}) {
    SCOPED_TRACE(a);
    GgufWriter w = small_writer();
    w.set("general.alignment", V::make_u32(a));
    expect_rejected(w.to_bytes(), {"'general.alignment'", "power of two", std::to_string(a)});
  }
  GgufWriter w = small_writer();
  w.set("general.alignment", V::make_u64(32));
  expect_rejected(w.to_bytes(), {"'general.alignment'", "has type u64, expected u32"});
  // A valid but different alignment than the layout: the offsets are now misaligned.
  GgufWriter w2 = small_writer();
  w2.set("general.alignment", V::make_u32(128));
  expect_rejected(w2.to_bytes(), {"tensor 't.b'", "alignment 128"});
}

TEST(GgufHostile, TensorsWithoutDataSection) {
  // Tables claim a tensor but the file ends right after them (no padding, no data).
  GgufWriter w;
  w.add_tensor("only", GgmlType::kF32, {1}, {0, 0, 128, 63});
  Bytes b = w.to_bytes();
  auto f = GgufFile::from_bytes(b);
  ASSERT_TRUE(f.ok()) << f.message();
  b.resize((*f)->data_offset() - 1);
  expect_rejected(b, {"tensor 'only'", "past the end"});
}

}  // namespace
}  // namespace tova::io
