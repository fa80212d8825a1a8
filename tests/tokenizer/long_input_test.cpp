// Long inputs: 1 MB must tokenize in time proportional to its length (a quadratic step would
// take minutes), and round-trip exactly.
#include <gtest/gtest.h>

#include <time.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tokenizer_test_util.h"

namespace tova::tok {
namespace {

using testing::load_shared_tokenizer;
using testing::read_file;

constexpr size_t kBig = size_t{1} << 20;
constexpr size_t kSmall = kBig / 16;

// `seed` repeated to at least n bytes, cut at a line end so no UTF-8 sequence is split.
std::string repeat_to(const std::string& seed, size_t n) {
  std::string s;
  while (s.size() < n) s += seed;
  const size_t cut = s.rfind('\n', n);
  s.resize(cut == std::string::npos ? n : cut + 1);
  return s;
}

// CPU time of this thread: other work on a shared machine does not inflate it.
double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double seconds_to_encode(const Tokenizer& tok, const std::string& text,
                         std::vector<int32_t>* ids = nullptr) {
  const double t0 = thread_seconds();
  std::vector<int32_t> out = tok.encode(text, true, false);
  const double s = thread_seconds() - t0;
  if (ids != nullptr) *ids = std::move(out);
  return s;
}

// Encodes a 64 KB and a 1 MB version of `seed`; 16x the text may take at most 64x the time
// (plus slack for a noisy machine), where a quadratic pass would take 256x.
void check_scaling(const Tokenizer& tok, const std::string& seed, const char* what) {
  const std::string small = repeat_to(seed, kSmall);
  const std::string big = repeat_to(seed, kBig);
  double t_small = 1e9;
  for (int i = 0; i < 3; ++i) t_small = std::min(t_small, seconds_to_encode(tok, small));
  std::vector<int32_t> ids;
  const double t_big = seconds_to_encode(tok, big, &ids);
  EXPECT_LT(t_big, 64 * t_small + 0.5) << what << ": " << small.size() << " bytes in "
                                       << t_small << " s, " << big.size() << " in " << t_big;
  EXPECT_GT(ids.size(), big.size() / 16) << what;
  EXPECT_TRUE(tok.decode(ids) == big) << what << ": 1 MB did not round-trip";
}

TEST(LongInput, SentencePieceStories) {
  TOVA_REQUIRE_SHARED();
  auto loaded = load_shared_tokenizer("models/stories260K.gguf");
  ASSERT_NE(loaded.tok, nullptr);
  const std::string text = read_file(::tova::testing::shared_path("texts/tinystories-val-1000.txt"));
  check_scaling(*loaded.tok, text.substr(0, 200000), "stories260K");
  // One unbroken run: a single merge queue over the whole text.
  check_scaling(*loaded.tok, std::string(4096, 'a'), "stories260K, one character");
}

TEST(LongInput, ByteLevelBpe) {
  TOVA_REQUIRE_SHARED();
  auto loaded = load_shared_tokenizer("vocab/ggml-vocab-gpt-2.gguf");
  ASSERT_NE(loaded.tok, nullptr);
  const std::string text = read_file(::tova::testing::shared_path("texts/alice.txt"));
  check_scaling(*loaded.tok, text, "gpt-2");
  // A single enormous word (one white-space run) goes through one merge queue.
  check_scaling(*loaded.tok, std::string(4096, ' '), "gpt-2, spaces");
}

// deepseek-llm has 2398 user-defined tokens that are split out of the text before BPE.
TEST(LongInput, ManySpecialTokens) {
  TOVA_REQUIRE_SHARED();
  auto loaded = load_shared_tokenizer("vocab/ggml-vocab-deepseek-llm.gguf");
  ASSERT_NE(loaded.tok, nullptr);
  const std::string seed = read_file(
      ::tova::testing::shared_path("vocab/ggml-vocab-deepseek-llm.gguf.inp"));
  check_scaling(*loaded.tok, seed, "deepseek-llm");
}

}  // namespace
}  // namespace tova::tok
