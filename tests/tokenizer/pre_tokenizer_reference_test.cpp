// The gpt-4o (o200k) pre-tokenizer against Python's `regex` module splitting the same texts with
// the same regex (scripts/pretokenize_reference.py, run live; Debian's python3-regex): the shared
// texts and hand-picked Unicode cases (case changes inside words, non-ASCII capitals, marks,
// scripts without case, digits of other scripts, newline and slash runs, contractions).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_data.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/unicode.h"

namespace tova::tok {
namespace {

namespace fs = std::filesystem;

bool have_reference() {
  return std::system("/usr/bin/python3 -c 'import regex' >/dev/null 2>&1") == 0;
}

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Python's word lengths (code points) for each text, one vector per text.
std::vector<std::vector<uint32_t>> reference(const std::vector<std::string>& texts) {
  const fs::path dir = fs::temp_directory_path();
  const std::string tag = std::to_string(::getpid());
  const fs::path in = dir / ("tova_pretok_in_" + tag);
  const fs::path out = dir / ("tova_pretok_out_" + tag);
  {
    std::ofstream f(in, std::ios::binary);
    for (size_t i = 0; i < texts.size(); ++i) {
      if (i > 0) f.put('\0');
      f << texts[i];
    }
  }
  const std::string script =
      std::string(TOVA_TEST_DATA_DIR) + "/../../scripts/pretokenize_reference.py";
  const std::string cmd = "/usr/bin/python3 '" + script + "' gpt-4o < '" + in.string() +
                          "' > '" + out.string() + "'";
  std::vector<std::vector<uint32_t>> r;
  if (std::system(cmd.c_str()) == 0) {
    std::istringstream lines(read(out));
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream nums(line);
      std::vector<uint32_t> v;
      for (uint32_t n; nums >> n;) v.push_back(n);
      r.push_back(std::move(v));
    }
  }
  fs::remove(in);
  fs::remove(out);
  return r;
}

// The first `bytes` of a text, cut after a newline (so never inside a UTF-8 sequence).
std::string head(const std::string& s, size_t bytes) {
  if (s.size() <= bytes) return s;
  const size_t nl = s.rfind('\n', bytes);
  return s.substr(0, nl == std::string::npos ? bytes : nl + 1);
}

TEST(PreTokenizerReference, Gpt4oEqualsPythonRegex) {
  TOVA_REQUIRE_SHARED();
  TOVA_REQUIRE_TOOL(have_reference(), "python3-regex");
  std::vector<std::string> texts = {
      "Hello WORLD HTTPServer camelCaseWord iPhone McDONALD's",
      "don't I'LL we'Re they've it'S 'tis o'clock '",
      "\xC3\x89""COLE \xC3\xA9""cole na\xC3\xAF""ve \xC3\x85ngstr\xC3\xB6m \xC3\x9F\xE1\xBA\x9E",
      "\xD0\x9F\xD0\xA0\xD0\x98\xD0\x92\xD0\x95\xD0\xA2 \xD0\xBC\xD0\xB8\xD1\x80 "
      "\xCE\x91\xCE\xB8\xCE\xAE\xCE\xBD\xCE\xB1",              // Cyrillic, Greek
      "e\xCC\x81t\xC3\xA9 n\xCC\x83 A\xCC\x8A",                 // combining marks
      "\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87",  // Devanagari
      "\xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C\xE3\x80\x82\xE3\x81\x93\xE3\x82\x93",
      "\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 \xD9\xA3\xD9\xA4\xD9\xA5\xD9\xA6",  // Arabic
      "12345678 3.14159 1,000,000 \xC2\xBD \xE2\x85\xAB x2y33z444",
      "a\r\n\r\nb \n \n c\n\n\n  \t\n",
      "foo/bar//\n\nbaz ...\n\n/// ?! \"quoted\" (parens) [x] {y}",
      "  \t  x   y\t\tz    ",
      "\xC2\xA0x \xE3\x80\x80y \xE2\x80\x83z",                  // NBSP, ideographic, em space
      "\xF0\x9F\x98\x80 \xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB emoji!!",
      "\xC7\x85ungla \xEF\xAC\x81le \xC4\xB0stanbul",           // title case, ligature, dotted I
      "<|start|>system<|message|>You are ChatGPT.<|end|>",
      "def f(x):\n    return x**2  # square\n\n\tif x>=0: pass",
      "",
      " ",
      "'",
  };
  const fs::path dir = fs::path(tova::testing::shared_dir()) / "texts";
  for (const char* name : {"alice.txt", "pride-and-prejudice.txt", "pg19-test-10146.txt",
                           "tinystories-val-1000.txt"}) {
    texts.push_back(head(read(dir / name), 60000));
  }
  const auto ref = reference(texts);
  ASSERT_EQ(ref.size(), texts.size()) << "the reference script failed";
  const PreTokenizer pre(PreTokenizerKind::kGpt4o);
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::vector<uint32_t> mine = pre.split_lengths(decode_utf8(texts[i]));
    if (mine == ref[i]) continue;
    // The first word that differs, for the message.
    const std::vector<uint32_t> cpts = decode_utf8(texts[i]);
    size_t w = 0, at = 0;
    while (w < mine.size() && w < ref[i].size() && mine[w] == ref[i][w]) at += mine[w++];
    std::string ctx;
    for (size_t k = at; k < std::min(cpts.size(), at + 24); ++k) append_utf8(cpts[k], ctx);
    ADD_FAILURE() << "text " << i << ": word " << w << " at code point " << at << " ('" << ctx
                  << "'): ours " << (w < mine.size() ? mine[w] : 0) << " code points, Python's "
                  << (w < ref[i].size() ? ref[i][w] : 0);
  }
}

// By hand, from the regex (pre_tokenizer.cpp): letters split where case changes the way the
// backtracking engine settles it.
TEST(PreTokenizerReference, Gpt4oByHand) {
  const PreTokenizer pre(PreTokenizerKind::kGpt4o);
  auto lengths = [&](const std::string& t) { return pre.split_lengths(decode_utf8(t)); };
  using L = std::vector<uint32_t>;
  EXPECT_EQ(lengths("HTTPServer"), (L{10}));          // U* "HTTPS", W+ "erver"
  EXPECT_EQ(lengths("ABC def"), (L{3, 4}));           // B: upper run alone
  EXPECT_EQ(lengths("\xC3\x89""COLE"), (L{1, 4}));    // A gives back to "É" (both cases)
  EXPECT_EQ(lengths("don't"), (L{5}));                // contraction joins the word
  EXPECT_EQ(lengths("1234567"), (L{3, 3, 1}));
  EXPECT_EQ(lengths("a//\n\nb"), (L{1, 4, 1}));       // other run takes [\r\n/]* after it
  EXPECT_EQ(lengths("x  \n y"), (L{1, 3, 2}));         // \s*[\r\n]+, then " y"
  EXPECT_EQ(lengths("!!hello"), (L{2, 5}));
  EXPECT_EQ(lengths("!hello"), (L{6}));
  EXPECT_EQ(pre_tokenizer_from_name("gpt-4o"), PreTokenizerKind::kGpt4o);
}

}  // namespace
}  // namespace tova::tok
