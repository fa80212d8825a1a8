// Tiny vocabularies crafted in memory, with answers worked out by hand: merge order, byte
// fallback, unknown characters, special tokens, flags, and the errors for what we refuse.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace tova::tok {
namespace {

using io::GgufValue;
using testing::ids_to_string;

const std::string kMark = "\xE2\x96\x81";  // "▁"

struct Token {
  std::string text;
  float score = 0.0f;
  int32_t type = 1;  // normal
};

struct Built {
  std::unique_ptr<io::GgufFile> file;
  std::unique_ptr<Tokenizer> tok;
  std::string error;
};

// Writes a vocabulary-only GGUF image and builds its tokenizer. `edit` may add or replace keys.
template <typename Edit>
Built build(const std::string& model, const std::vector<Token>& tokens, Edit edit) {
  io::GgufWriter w;
  w.set("general.architecture", GgufValue::make_str("llama"));
  w.set("tokenizer.ggml.model", GgufValue::make_str(model));
  std::vector<std::string> texts;
  std::vector<float> scores;
  std::vector<int32_t> types;
  for (const Token& t : tokens) {
    texts.push_back(t.text);
    scores.push_back(t.score);
    types.push_back(t.type);
  }
  w.set("tokenizer.ggml.tokens", GgufValue::make_str_array(texts));
  w.set("tokenizer.ggml.scores", GgufValue::make_f32_array(scores));
  w.set("tokenizer.ggml.token_type", GgufValue::make_i32_array(types));
  edit(w);
  Built b;
  auto file = io::GgufFile::from_bytes(w.to_bytes(), "synthetic.gguf");
  EXPECT_TRUE(file.ok()) << file.message();
  if (!file.ok()) return b;
  b.file = std::move(file).value();
  auto tok = Tokenizer::from_gguf(*b.file);
  if (tok.ok()) {
    b.tok = std::move(tok).value();
  } else {
    b.error = tok.message();
  }
  return b;
}

Built build(const std::string& model, const std::vector<Token>& tokens) {
  return build(model, tokens, [](io::GgufWriter&) {});
}

// 0..2 are the usual SentencePiece specials.
std::vector<Token> spm_base() {
  return {{"<unk>", 0, 2}, {"<s>", 0, 3}, {"</s>", 0, 3}};
}

TEST(SpmSynthetic, MergesHighestScoreFirst) {
  std::vector<Token> v = spm_base();
  v.insert(v.end(), {{kMark, -10},        // 3
                     {"a", -10},          // 4
                     {"b", -10},          // 5
                     {"c", -10},          // 6
                     {kMark + "a", -1},   // 7
                     {"ab", -2},          // 8
                     {"bc", -0.5f},       // 9
                     {"abc", -3}});       // 10
  Built b = build("llama", v);
  ASSERT_NE(b.tok, nullptr) << b.error;
  // "▁abc": "bc" (-0.5) merges first, then "▁a" (-1) beats "abc" (-3); "▁abc" is no token.
  EXPECT_EQ(ids_to_string(b.tok->encode("abc", false)), "7 9");
  // "▁ab": "▁a" (-1) before "ab" (-2), and "▁ab" does not exist.
  EXPECT_EQ(ids_to_string(b.tok->encode("ab", false)), "7 5");
  // "▁bc a" -> "▁", "bc", "▁a".
  EXPECT_EQ(ids_to_string(b.tok->encode("bc a", false)), "3 9 7");
  EXPECT_EQ(b.tok->decode(b.tok->encode("bc a", true)), "bc a");
}

TEST(SpmSynthetic, EqualScoresMergeLeftmostFirst) {
  std::vector<Token> v = spm_base();
  v.insert(v.end(), {{kMark, -10}, {"a", -10}, {"aa", -1}});  // 3, 4, 5
  Built b = build("llama", v);
  ASSERT_NE(b.tok, nullptr) << b.error;
  EXPECT_EQ(ids_to_string(b.tok->encode("aaa", false)), "3 5 4");
  EXPECT_EQ(ids_to_string(b.tok->encode("aaaa", false)), "3 5 5");
}

TEST(SpmSynthetic, ByteFallbackAndUnknown) {
  std::vector<Token> v = spm_base();
  v.insert(v.end(), {{kMark, -10}, {"a", -10}, {"<0xC3>", 0, 6}, {"<0xA9>", 0, 6}});  // 3..6
  Built b = build("llama", v);
  ASSERT_NE(b.tok, nullptr) << b.error;
  // "é" is C3 A9: both bytes have tokens.
  EXPECT_EQ(ids_to_string(b.tok->encode("a\xC3\xA9", false)), "3 4 5 6");
  EXPECT_EQ(b.tok->decode(b.tok->encode("a\xC3\xA9", true)), "a\xC3\xA9");
  // "ë" is C3 AB: 0xAB has no byte token, so the character is unknown (id 0).
  EXPECT_EQ(ids_to_string(b.tok->encode("\xC3\xAB" "a", false)), "3 0 4");
  // Unknown renders as nothing.
  EXPECT_EQ(b.tok->decode(b.tok->encode("\xC3\xAB" "a", false)), "a");
}

TEST(SpmSynthetic, MissingCharacterWithoutByteTokensIsUnknown) {
  std::vector<Token> v = spm_base();
  v.insert(v.end(), {{kMark, -10}, {"x", -10}});  // 3, 4
  Built b = build("llama", v, [](io::GgufWriter& w) {
    w.set("tokenizer.ggml.unknown_token_id", GgufValue::make_u32(0));
  });
  ASSERT_NE(b.tok, nullptr) << b.error;
  // One unknown per missing character, however many bytes it has.
  EXPECT_EQ(ids_to_string(b.tok->encode("x\xF0\x9F\xA6\x99y", false)), "3 4 0 0");
  // Invalid UTF-8 never crashes: a stray byte is one unknown character.
  EXPECT_EQ(ids_to_string(b.tok->encode("x\xFF", false)), "3 4 0");
}

TEST(SpmSynthetic, SpecialTokensAndFlags) {
  std::vector<Token> v = spm_base();
  v.insert(v.end(), {{kMark, -10},                // 3
                     {"a", -10},                  // 4
                     {"<", -10},                  // 5
                     {"s", -10},                  // 6
                     {">", -10},                  // 7
                     {kMark + "a", -1},           // 8
                     {"<tool>", 0, 4}});          // 9, user-defined
  Built b = build("llama", v);
  ASSERT_NE(b.tok, nullptr) << b.error;
  const Tokenizer& t = *b.tok;
  // parse_special: "<s>" is BOS; the text after a special token gets a prefix space again.
  EXPECT_EQ(ids_to_string(t.encode("a<s>a", false, true)), "8 1 8");
  // Without it, "<s>" is plain text.
  EXPECT_EQ(ids_to_string(t.encode("a<s>a", false, false)), "8 5 6 7 4");
  // User-defined tokens are split out either way.
  EXPECT_EQ(ids_to_string(t.encode("a<tool>a", false, false)), "8 9 8");
  EXPECT_EQ(t.decode(t.encode("a<tool>a", false)), "a<tool> a");
  // Empty input: nothing, or BOS alone.
  EXPECT_TRUE(t.encode("", false).empty());
  EXPECT_EQ(ids_to_string(t.encode("", true)), "1");
  EXPECT_EQ(t.decode(std::vector<int32_t>{}), "");
  // Control tokens render empty unless asked; llama.cpp keeps the space after BOS.
  const std::vector<int32_t> ids = {1, 8, 2};
  EXPECT_EQ(t.decode(ids), "a");
  EXPECT_EQ(t.decode(ids, {.render_special = true}), "<s>a</s>");
  EXPECT_EQ(t.decode(ids, {.render_special = true, .strip_space_after_bos = false}),
            "<s> a</s>");
  EXPECT_EQ(t.token_to_piece(8, -1), "a");
  EXPECT_EQ(t.token_to_piece(8, 1), "a");
  EXPECT_EQ(t.token_to_piece(8, 4), " a");
  EXPECT_TRUE(t.is_eog(2));
  EXPECT_EQ(t.token_text(9), "<tool>");
  EXPECT_EQ(t.token_text(-1), "");
  EXPECT_EQ(t.decode(std::vector<int32_t>{-5, 999, 8}), " a");  // bad ids render as nothing

  Built flags = build("llama", v, [](io::GgufWriter& w) {
    w.set("tokenizer.ggml.add_space_prefix", GgufValue::make_bool(false));
    w.set("tokenizer.ggml.add_eos_token", GgufValue::make_bool(true));
    w.set("tokenizer.ggml.add_bos_token", GgufValue::make_bool(false));
  });
  ASSERT_NE(flags.tok, nullptr) << flags.error;
  EXPECT_EQ(ids_to_string(flags.tok->encode("a a", true)), "4 8 2");
  EXPECT_EQ(flags.tok->decode(flags.tok->encode(" a", true)), " a");
}

TEST(SpmSynthetic, LongerSpecialTokensWinAndPhi3StripsAfterThem) {
  std::vector<Token> v = spm_base();
  v.insert(v.end(), {{kMark, -10},        // 3
                     {"a", -10},          // 4
                     {"c", -10},          // 5
                     {"d", -10},          // 6
                     {"ab", 0, 4},        // 7, user-defined
                     {"bcd", 0, 4},       // 8, user-defined
                     {kMark + "a", -1}}); // 9
  Built plain = build("llama", v);
  ASSERT_NE(plain.tok, nullptr) << plain.error;
  // "bcd" is longer, so it is split out first even though "ab" starts earlier.
  EXPECT_EQ(ids_to_string(plain.tok->encode("abcd", false)), "9 8");
  EXPECT_EQ(ids_to_string(plain.tok->encode("abab", false)), "7 7");
  EXPECT_EQ(ids_to_string(plain.tok->encode("bcd  a", false)), "8 3 3 9");

  // Phi-3's special tokens drop the white space that follows them.
  Built phi = build("llama", v, [](io::GgufWriter& w) {
    w.set("general.name", GgufValue::make_str("Phi3"));
  });
  ASSERT_NE(phi.tok, nullptr) << phi.error;
  EXPECT_EQ(ids_to_string(phi.tok->encode("bcd  a", false)), "8 9");
  EXPECT_EQ(ids_to_string(phi.tok->encode("bcd  ", false)), "8");
}

// A byte-level BPE vocabulary over the letters a..c and 'Ġ' (space).
std::vector<Token> bpe_tokens() {
  return {{"a"}, {"b"}, {"c"}, {"\xC4\xA0"}, {"ab"}, {"bc"}, {"abc"}, {"\xC4\xA0" "a"},
          {"<|endoftext|>", 0, 3}};
}

Built build_bpe(const std::string& pre, std::vector<std::string> merges) {
  return build("gpt2", bpe_tokens(), [&](io::GgufWriter& w) {
    w.set("tokenizer.ggml.pre", GgufValue::make_str(pre));
    w.set("tokenizer.ggml.merges", GgufValue::make_str_array(merges));
    w.set("tokenizer.ggml.eos_token_id", GgufValue::make_u32(8));
    w.set("tokenizer.ggml.bos_token_id", GgufValue::make_u32(8));
  });
}

TEST(BpeSynthetic, MergesByRank) {
  // (b, c) has rank 0, so "abc" becomes a + bc, then (a, bc) at rank 2 gives "abc".
  Built b1 = build_bpe("gpt-2", {"b c", "a b", "a bc"});
  ASSERT_NE(b1.tok, nullptr) << b1.error;
  EXPECT_EQ(ids_to_string(b1.tok->encode("abc", false)), "6");
  // Without (a, bc) the word stops at a + bc even though (a, b) exists.
  Built b2 = build_bpe("gpt-2", {"b c", "a b"});
  ASSERT_NE(b2.tok, nullptr) << b2.error;
  EXPECT_EQ(ids_to_string(b2.tok->encode("abc", false)), "0 5");
  // (a, b) first: ab + c, and there is no (ab, c) merge.
  Built b3 = build_bpe("gpt-2", {"a b", "b c"});
  ASSERT_NE(b3.tok, nullptr) << b3.error;
  EXPECT_EQ(ids_to_string(b3.tok->encode("abc", false)), "4 2");
  // Words never merge across the pre-tokenizer's split: "ab" + " a" ("Ġa").
  Built b4 = build_bpe("gpt-2", {"a b", "\xC4\xA0 a"});
  ASSERT_NE(b4.tok, nullptr) << b4.error;
  EXPECT_EQ(ids_to_string(b4.tok->encode("ab a", false)), "4 7");
  EXPECT_EQ(b4.tok->decode(b4.tok->encode("ab a", false)), "ab a");
  // GPT-2 adds no BOS; "<|endoftext|>" is an end-of-generation control token.
  EXPECT_EQ(ids_to_string(b4.tok->encode("ab", true)), "4");
  EXPECT_EQ(ids_to_string(b4.tok->encode("ab<|endoftext|>", false, true)), "4 8");
  EXPECT_TRUE(b4.tok->is_eog(8));
  EXPECT_EQ(b4.tok->decode(std::vector<int32_t>{4, 8, 7}), "ab a");
}

// Harmony (gpt-oss's o200k vocabulary): <|return|> and <|call|> end a turn, <|end|> only ends a
// message within it (the analysis before the final answer), so it does not stop generation;
// where there is no <|return|>/<|call|> pair (Phi-3), <|end|> ends the turn.
TEST(BpeSynthetic, HarmonyEndsTheTurnAtReturnOrCallNotAtEnd) {
  std::vector<Token> tokens = bpe_tokens();
  for (const char* t : {"<|end|>", "<|return|>", "<|call|>", "<|channel|>"}) {
    tokens.push_back({t, 0, 3});  // 9, 10, 11, 12
  }
  Built h = build("gpt2", tokens, [](io::GgufWriter& w) {
    w.set("tokenizer.ggml.pre", GgufValue::make_str("gpt-2"));
    w.set("tokenizer.ggml.merges", GgufValue::make_str_array({"a b"}));
    w.set("tokenizer.ggml.eos_token_id", GgufValue::make_u32(10));
    w.set("tokenizer.ggml.eot_token_id", GgufValue::make_u32(9));
  });
  ASSERT_NE(h.tok, nullptr) << h.error;
  EXPECT_FALSE(h.tok->is_eog(9));
  EXPECT_TRUE(h.tok->is_eog(10));
  EXPECT_TRUE(h.tok->is_eog(11));
  EXPECT_FALSE(h.tok->is_eog(12));
  tokens.resize(tokens.size() - 2);  // no <|call|>, no <|channel|>
  Built p = build("gpt2", tokens, [](io::GgufWriter& w) {
    w.set("tokenizer.ggml.pre", GgufValue::make_str("gpt-2"));
    w.set("tokenizer.ggml.merges", GgufValue::make_str_array({"a b"}));
  });
  ASSERT_NE(p.tok, nullptr) << p.error;
  EXPECT_TRUE(p.tok->is_eog(9));
}

TEST(BpeSynthetic, CharactersOutsideTheVocabularyAreDropped) {
  Built b = build_bpe("gpt-2", {"a b"});
  ASSERT_NE(b.tok, nullptr) << b.error;
  // 'z' has no token and the vocabulary has no unknown token: it is skipped, never a crash.
  EXPECT_EQ(ids_to_string(b.tok->encode("azb", false)), "0 1");
}

TEST(Unsupported, TokenizerModelsAndPreTokenizersAreNamed) {
  Built bert = build("bert", spm_base());
  EXPECT_EQ(bert.tok, nullptr);
  EXPECT_EQ(bert.error, "unsupported tokenizer 'bert' (tokenizer.ggml.model) in synthetic.gguf");
  Built t5 = build("t5", spm_base());
  EXPECT_EQ(t5.error, "unsupported tokenizer 't5' (tokenizer.ggml.model) in synthetic.gguf");
  Built pre = build_bpe("chatglm-bpe", {"a b"});
  EXPECT_EQ(pre.tok, nullptr);
  EXPECT_EQ(pre.error,
            "unsupported pre-tokenizer 'chatglm-bpe' (tokenizer.ggml.pre) in synthetic.gguf");
}

TEST(Unsupported, BrokenMetadataIsAnError) {
  Built short_scores = build("llama", spm_base(), [](io::GgufWriter& w) {
    w.set("tokenizer.ggml.scores", GgufValue::make_f32_array({0.0f}));
  });
  EXPECT_EQ(short_scores.tok, nullptr);
  EXPECT_NE(short_scores.error.find("tokenizer.ggml.scores"), std::string::npos)
      << short_scores.error;
  Built no_merges = build("gpt2", bpe_tokens(), [](io::GgufWriter& w) {
    w.set("tokenizer.ggml.pre", GgufValue::make_str("gpt-2"));
  });
  EXPECT_NE(no_merges.error.find("tokenizer.ggml.merges"), std::string::npos) << no_merges.error;
  Built wrong_type = build("llama", spm_base(), [](io::GgufWriter& w) {
    w.set("tokenizer.ggml.tokens", GgufValue::make_u32(3));
  });
  EXPECT_NE(wrong_type.error.find("tokenizer.ggml.tokens"), std::string::npos)
      << wrong_type.error;

  io::GgufWriter w;
  w.set("general.architecture", GgufValue::make_str("llama"));
  auto file = io::GgufFile::from_bytes(w.to_bytes(), "novocab.gguf");
  ASSERT_TRUE(file.ok()) << file.message();
  auto tok = Tokenizer::from_gguf(**file);
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.message().find("tokenizer.ggml.model"), std::string::npos) << tok.message();
}

}  // namespace
}  // namespace tova::tok
