// Reads every shared model and vocabulary: real files from llama.cpp's tools and our converters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "io/gguf.h"
#include "io/mmap_file.h"
#include "test_data.h"

namespace tova::io {
namespace {

std::vector<std::string> gguf_files_in(const std::string& rel_dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(tova::testing::shared_path(rel_dir))) {
    if (e.path().extension() == ".gguf") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The tensor table must describe the file: sizes from the type tables, data inside the file,
// and no two tensors sharing bytes.
void check_tensor_table(const GgufFile& f) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const GgufTensorInfo& t : f.tensors()) {
    SCOPED_TRACE(t.name);
    const TypeTraits* traits = find_type_traits(static_cast<uint32_t>(t.type));
    ASSERT_NE(traits, nullptr);
    ASSERT_FALSE(t.dims.empty());
    int64_t n = 1;
    for (int64_t d : t.dims) n *= d;
    EXPECT_EQ(t.n_elements, n);
    EXPECT_EQ(t.dims[0] % traits->block_size, 0);
    EXPECT_EQ(t.n_bytes, static_cast<uint64_t>(n / traits->block_size * traits->type_size));
    EXPECT_EQ(t.offset % f.alignment(), 0u);
    EXPECT_LE(f.data_offset() + t.offset + t.n_bytes, f.file_size());
    ranges.emplace_back(t.offset, t.offset + t.n_bytes);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t j = 1; j < ranges.size(); ++j) EXPECT_LE(ranges[j - 1].second, ranges[j].first);
  // Pointers are consistent with the offsets.
  if (!f.tensors().empty()) {
    const uint8_t* base = f.tensors()[0].data - f.tensors()[0].offset;
    for (const GgufTensorInfo& t : f.tensors()) EXPECT_EQ(t.data, base + t.offset);
    // A page-aligned mapping plus aligned offsets: aligned tensor data.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(base) % f.alignment(), 0u);
  }
}

TEST(GgufSharedFiles, EveryModelOpens) {
  TOVA_REQUIRE_SHARED();
  const auto files = gguf_files_in("models");
  ASSERT_GE(files.size(), 12u);
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    auto f = GgufFile::open(path);
    ASSERT_TRUE(f.ok()) << f.message();
    EXPECT_EQ((*f)->version(), 3u);
    EXPECT_GT((*f)->tensors().size(), 0u);
    EXPECT_TRUE((*f)->get_string("general.architecture").ok());
    EXPECT_EQ((*f)->get_string_array("tokenizer.ggml.tokens")->size(), 512u);
    check_tensor_table(**f);
  }
}

TEST(GgufSharedFiles, EveryVocabOpens) {
  TOVA_REQUIRE_SHARED();
  const auto files = gguf_files_in("vocab");
  ASSERT_GE(files.size(), 12u);
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    auto f = GgufFile::open(path);
    ASSERT_TRUE(f.ok()) << f.message();
    // Vocab-only files: no tensors, and the file ends right after the metadata.
    EXPECT_TRUE((*f)->tensors().empty());
    auto tokens = (*f)->get_string_array("tokenizer.ggml.tokens");
    ASSERT_TRUE(tokens.ok()) << tokens.message();
    EXPECT_GT(tokens->size(), 1000u);
    EXPECT_TRUE((*f)->get_string("tokenizer.ggml.model").ok());
  }
}

TEST(GgufSharedFiles, VocabFacts) {
  TOVA_REQUIRE_SHARED();
  auto spm = GgufFile::open(tova::testing::shared_path("vocab/ggml-vocab-llama-spm.gguf"));
  ASSERT_TRUE(spm.ok()) << spm.message();
  auto tokens = (*spm)->get_string_array("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens->size(), 32000u);
  EXPECT_EQ((*tokens)[0], "<unk>");
  EXPECT_EQ((*tokens)[1], "<s>");
  EXPECT_EQ((*spm)->get_f32_array("tokenizer.ggml.scores")->size(), 32000u);
  EXPECT_EQ((*spm)->get_i32_array("tokenizer.ggml.token_type")->at(0), 2);  // UNKNOWN
  EXPECT_EQ(*(*spm)->get_bool("tokenizer.ggml.add_bos_token"), true);
  EXPECT_EQ(*(*spm)->get_bool("tokenizer.ggml.add_eos_token"), false);

  auto gpt2 = GgufFile::open(tova::testing::shared_path("vocab/ggml-vocab-gpt-2.gguf"));
  ASSERT_TRUE(gpt2.ok()) << gpt2.message();
  EXPECT_EQ((*gpt2)->get_string_array("tokenizer.ggml.tokens")->size(), 50257u);
  auto merges = (*gpt2)->get_string_array("tokenizer.ggml.merges");
  ASSERT_EQ(merges->size(), 50000u);
  EXPECT_EQ((*merges)[0], "\xc4\xa0 t");  // "Ġ t"
  EXPECT_EQ(*(*gpt2)->get_u32("tokenizer.ggml.eos_token_id"), 50256u);
}

TEST(GgufSharedFiles, Stories260KFacts) {
  TOVA_REQUIRE_SHARED();
  auto f = GgufFile::open(tova::testing::shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(f.ok()) << f.message();
  const GgufFile& g = **f;
  EXPECT_EQ(*g.get_string("general.architecture"), "llama");
  EXPECT_EQ(*g.get_u32("llama.block_count"), 5u);
  EXPECT_EQ(*g.get_u32("llama.embedding_length"), 64u);
  EXPECT_EQ(*g.get_u32("llama.feed_forward_length"), 172u);
  EXPECT_EQ(*g.get_u32("llama.attention.head_count"), 8u);
  EXPECT_EQ(*g.get_u32("llama.attention.head_count_kv"), 4u);
  EXPECT_EQ(*g.get_u32("llama.context_length"), 2048u);
  EXPECT_FLOAT_EQ(*g.get_f32("llama.attention.layer_norm_rms_epsilon"), 1e-5f);
  EXPECT_EQ(*g.get_i64("tokenizer.ggml.padding_token_id"), 4294967295);
  EXPECT_EQ(g.alignment(), 32u);
  // 9 tensors per block, plus token_embd, output_norm and output.
  ASSERT_EQ(g.tensors().size(), 5u * 9u + 3u);

  const GgufTensorInfo* emb = g.find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->type, GgmlType::kF32);
  EXPECT_EQ(emb->dims, (std::vector<int64_t>{64, 512}));
  EXPECT_EQ(emb->n_bytes, 64u * 512u * 4u);
  EXPECT_EQ(emb->offset, 0u);
  const GgufTensorInfo* down = g.find_tensor("blk.4.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->dims, (std::vector<int64_t>{172, 64}));
  EXPECT_EQ(down->n_bytes, 172u * 64u * 4u);
  const GgufTensorInfo* k = g.find_tensor("blk.0.attn_k.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->dims, (std::vector<int64_t>{64, 32}));  // 4 kv heads of 8
  // The tensors are packed back to back: the last one ends exactly at the end of the file.
  uint64_t end = 0;
  for (const GgufTensorInfo& t : g.tensors()) end = std::max(end, t.offset + t.n_bytes);
  EXPECT_EQ(g.data_offset() + end, g.file_size());
}

TEST(GgufSharedFiles, QuantizedTensorSizes) {
  TOVA_REQUIRE_SHARED();
  auto f = GgufFile::open(tova::testing::shared_path("models/rand-qwen2-q4_0.gguf"));
  ASSERT_TRUE(f.ok()) << f.message();
  const GgufTensorInfo* q = (*f)->find_tensor("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->type, GgmlType::kQ4_0);
  EXPECT_EQ(q->dims, (std::vector<int64_t>{256, 256}));
  EXPECT_EQ(q->n_bytes, 256u / 32u * 18u * 256u);
  const GgufTensorInfo* bias = (*f)->find_tensor("blk.0.attn_q.bias");
  ASSERT_NE(bias, nullptr);
  EXPECT_EQ(bias->type, GgmlType::kF32);
  EXPECT_EQ(bias->n_bytes, 256u * 4u);
  EXPECT_EQ(*(*f)->get_string("general.architecture"), "qwen2");
  EXPECT_FLOAT_EQ(*(*f)->get_f32("qwen2.rope.freq_base"), 1e6f);
}

// The writer reproduces real files byte for byte from what the reader parsed: the strongest
// check that reader and writer agree with llama.cpp's layout (metadata order, tensor info,
// padding between and after tensors).
TEST(GgufSharedFiles, WriterReproducesModelsByteForByte) {
  TOVA_REQUIRE_SHARED();
  for (const std::string& path : gguf_files_in("models")) {
    SCOPED_TRACE(path);
    auto f = GgufFile::open(path);
    ASSERT_TRUE(f.ok()) << f.message();
    GgufWriter w;
    for (const auto& [k, v] : (*f)->metadata()) w.set(k, v);
    w.set_alignment((*f)->alignment());
    for (const GgufTensorInfo& t : (*f)->tensors()) {
      w.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
    }
    const std::vector<uint8_t> bytes = w.to_bytes();
    ASSERT_EQ(bytes.size(), (*f)->file_size());
    const uint8_t* mapped =
        (*f)->tensors()[0].data - (*f)->tensors()[0].offset - (*f)->data_offset();
    EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), mapped));
  }
}

// Reading a file into memory of its own gives the same file as mapping it: metadata, tensor
// table and every tensor byte, at an aligned address.
TEST(GgufSharedFiles, ReadIntoMemoryEqualsMapping) {
  TOVA_REQUIRE_SHARED();
  for (const std::string& path : gguf_files_in("models")) {
    SCOPED_TRACE(path);
    auto a = GgufFile::open(path, GgufFile::Load::kMap);
    auto b = GgufFile::open(path, GgufFile::Load::kRead);
    ASSERT_TRUE(a.ok()) << a.message();
    ASSERT_TRUE(b.ok()) << b.message();
    EXPECT_EQ((*a)->file_size(), (*b)->file_size());
    EXPECT_EQ((*a)->metadata().size(), (*b)->metadata().size());
    ASSERT_EQ((*a)->tensors().size(), (*b)->tensors().size());
    check_tensor_table(**b);
    auto c = GgufFile::open(path, GgufFile::Load::kReadDropCache);
    ASSERT_TRUE(c.ok()) << c.message();
    for (size_t i = 0; i < (*a)->tensors().size(); ++i) {
      const GgufTensorInfo& x = (*a)->tensors()[i];
      const GgufTensorInfo& y = (*b)->tensors()[i];
      ASSERT_EQ(x.name, y.name);
      ASSERT_NE(x.data, y.data);
      ASSERT_EQ(std::memcmp(x.data, y.data, x.n_bytes), 0) << x.name;
      ASSERT_EQ(std::memcmp(x.data, (*c)->tensors()[i].data, x.n_bytes), 0) << x.name;
    }
  }
}

// Read in chunks with the page cache dropped behind each one: every byte of the file, for
// chunk sizes that do and do not divide it (a 4 KiB page, an odd size, one chunk for all).
TEST(GgufSharedFiles, ReadDroppingThePageCacheKeepsEveryByte) {
  TOVA_REQUIRE_SHARED();
  const std::string path = tova::testing::shared_path("models/stories260K.gguf");
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const uint64_t chunk : {uint64_t{4096}, uint64_t{12345}, uint64_t{1} << 30}) {
    SCOPED_TRACE(chunk);
    auto r = tova::io::read_file_to_memory(path, true, chunk);
    ASSERT_TRUE(r.ok()) << r.message();
    ASSERT_EQ(r->size, bytes.size());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(r->addr) % (uintptr_t{2} << 20), 0u);
    EXPECT_EQ(std::memcmp(r->addr, bytes.data(), bytes.size()), 0);
    tova::io::unmap_region(*r);
  }
}

// A truncated model: the same one-line error whether mapped or read into memory (the copy is
// exactly the file's bytes, never padded to a page).
TEST(GgufSharedFiles, TruncatedFileFailsTheSameBothWays) {
  TOVA_REQUIRE_SHARED();
  std::ifstream in(tova::testing::shared_path("models/stories260K.gguf"), std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 1000u);
  const std::string dir = tova::testing::make_temp_dir();
  const std::string cut = dir + "/cut.gguf";
  {
    std::ofstream out(cut, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size() - 7));
  }
  auto a = GgufFile::open(cut, GgufFile::Load::kMap);
  auto b = GgufFile::open(cut, GgufFile::Load::kRead);
  ASSERT_FALSE(a.ok());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(a.message(), b.message());
  EXPECT_EQ(b.message().find('\n'), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(GgufSharedFiles, OpenErrorsNameThePath) {
  for (GgufFile::Load load :
       {GgufFile::Load::kMap, GgufFile::Load::kRead, GgufFile::Load::kReadDropCache}) {
  SCOPED_TRACE(load == GgufFile::Load::kMap ? "map" : "read");
  const std::string dir = tova::testing::make_temp_dir();
  auto missing = GgufFile::open(dir + "/missing.gguf", load);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find(dir + "/missing.gguf: cannot open"), std::string::npos)
      << missing.message();
  auto directory = GgufFile::open(dir, load);
  ASSERT_FALSE(directory.ok());
  EXPECT_NE(directory.message().find("not a regular file"), std::string::npos)
      << directory.message();
  const std::string empty = dir + "/empty.gguf";
  {
    std::FILE* fp = std::fopen(empty.c_str(), "wb");
    ASSERT_NE(fp, nullptr);
    std::fclose(fp);
  }
  auto e = GgufFile::open(empty, load);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.message().rfind(empty + ": not a GGUF file", 0), 0u) << e.message();
  std::filesystem::remove_all(dir);
  }
}

}  // namespace
}  // namespace tova::io
