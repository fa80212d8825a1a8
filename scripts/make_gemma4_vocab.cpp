// Writes a small vocabulary of tokenizer.ggml.model "gemma4" (SentencePiece-style BPE: tokens
// spell spaces as U+2581, merges over raw UTF-8, <0xXX> byte tokens) for tova's tokenizer
// goldens, built OUTSIDE the repository against ggml's gguf API by
// scripts/make_gemma4_tokenizer_goldens.sh. No real Gemma 4 vocabulary is at hand (262,144
// tokens); this one derives from a SentencePiece vocabulary (stories260K's: 3 controls, 256
// bytes, 253 pieces) the way SentencePiece vocabularies become BPE ones: every piece of two or
// more characters gets the merges "left right" of each split into two pieces of the vocabulary,
// ranked by the piece's score (most frequent first), then by where the split falls. Appended
// as Gemma 4's vocabulary has them: newline runs "\n" .. "\n\n\n\n" (llama.cpp emits such a run
// whole), a few pieces with runs of U+2581, and the USER_DEFINED markers the converter keeps
// visible ("<|channel>", "<channel|>").
//   make_gemma4_vocab SOURCE.gguf OUT.gguf
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "gguf.h"

static size_t utf8_len(unsigned char c) {
  return c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_gemma4_vocab SOURCE.gguf OUT.gguf\n");
    return 1;
  }
  gguf_init_params ip = {/*no_alloc =*/true, /*ctx =*/nullptr};
  gguf_context* src = gguf_init_from_file(argv[1], ip);
  if (src == nullptr) {
    std::fprintf(stderr, "cannot read %s\n", argv[1]);
    return 1;
  }
  const int64_t k_tok = gguf_find_key(src, "tokenizer.ggml.tokens");
  const int64_t k_score = gguf_find_key(src, "tokenizer.ggml.scores");
  const int64_t k_type = gguf_find_key(src, "tokenizer.ggml.token_type");
  if (k_tok < 0 || k_score < 0 || k_type < 0) {
    std::fprintf(stderr, "%s: no SentencePiece vocabulary\n", argv[1]);
    return 1;
  }
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  const size_t n = gguf_get_arr_n(src, k_tok);
  const float* sc = static_cast<const float*>(gguf_get_arr_data(src, k_score));
  const int32_t* ty = static_cast<const int32_t*>(gguf_get_arr_data(src, k_type));
  for (size_t i = 0; i < n; ++i) {
    tokens.push_back(gguf_get_arr_str(src, k_tok, i));
    scores.push_back(sc[i]);
    types.push_back(ty[i]);
  }
  const float low = *std::min_element(scores.begin(), scores.end()) - 1.f;
  auto add = [&](const std::string& t, int32_t type) {
    if (std::find(tokens.begin(), tokens.end(), t) != tokens.end()) return;
    tokens.push_back(t);
    scores.push_back(low);
    types.push_back(type);
  };
  const std::string sp = "\xe2\x96\x81";  // U+2581
  for (const char* t : {"\n", "\n\n", "\n\n\n", "\n\n\n\n"}) add(t, 1);
  add(sp + sp, 1);
  add(sp + sp + sp + sp, 1);
  add(sp + "\n", 1);
  add("<|channel>", 4);
  add("<channel|>", 4);

  // Merges: (score rank of the piece, split position, text).
  std::vector<std::tuple<float, size_t, std::string>> merges;
  auto id_of = [&](const std::string& t) {
    auto it = std::find(tokens.begin(), tokens.end(), t);
    return it == tokens.end() ? -1 : static_cast<int>(it - tokens.begin());
  };
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (types[i] != 1) continue;  // normal pieces only
    const std::string& t = tokens[i];
    for (size_t cut = utf8_len(t[0]); cut < t.size(); cut += utf8_len(t[cut])) {
      const std::string a = t.substr(0, cut), b = t.substr(cut);
      const int ia = id_of(a), ib = id_of(b);
      if (ia < 0 || ib < 0 || types[ia] != 1 || types[ib] != 1) continue;
      merges.emplace_back(-scores[i], cut, a + " " + b);
    }
  }
  std::stable_sort(merges.begin(), merges.end(), [](const auto& x, const auto& y) {
    return std::get<0>(x) < std::get<0>(y) ||
           (std::get<0>(x) == std::get<0>(y) && std::get<1>(x) < std::get<1>(y));
  });

  gguf_context* out = gguf_init_empty();
  gguf_set_kv(out, src);
  gguf_set_val_str(out, "general.name", "gemma4-style vocabulary (tova tokenizer goldens)");
  gguf_set_val_str(out, "tokenizer.ggml.model", "gemma4");
  gguf_set_val_str(out, "tokenizer.ggml.pre", "gemma4");
  std::vector<const char*> tok_c, merge_c;
  for (const std::string& t : tokens) tok_c.push_back(t.c_str());
  for (const auto& m : merges) merge_c.push_back(std::get<2>(m).c_str());
  gguf_set_arr_str(out, "tokenizer.ggml.tokens", tok_c.data(), tok_c.size());
  gguf_set_arr_data(out, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, scores.data(), scores.size());
  gguf_set_arr_data(out, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types.data(), types.size());
  gguf_set_arr_str(out, "tokenizer.ggml.merges", merge_c.data(), merge_c.size());
  gguf_set_val_bool(out, "tokenizer.ggml.add_bos_token", true);
  gguf_set_val_bool(out, "tokenizer.ggml.add_space_prefix", false);
  if (!gguf_write_to_file(out, argv[2], /*only_meta =*/false)) {
    std::fprintf(stderr, "cannot write %s\n", argv[2]);
    return 1;
  }
  std::printf("%s: %zu tokens, %zu merges\n", argv[2], tokens.size(), merges.size());
  gguf_free(out);
  gguf_free(src);
  return 0;
}
