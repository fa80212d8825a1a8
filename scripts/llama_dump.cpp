// Golden data from llama.cpp for tova's architecture fixtures. Built OUTSIDE the repository
// against libllama by scripts/make_arch_goldens.sh (never part of tova's build).
//   llama_dump MODEL TOKENS.json LOGITS.f32 N_PROMPT N_GREEDY GREEDY.json [LAST]
//   llama_dump --evict K N_SINK MODEL TOKENS.json LOGITS.f32
//   llama_dump --tokenize VOCAB.gguf INP OUT
// LOGITS.f32: float32 [n_tokens][n_vocab], the logits after every token of TOKENS.json fed in one
// batch (f32 K/V cache, flash attention off, one thread). GREEDY.json: the N_GREEDY tokens that
// argmax decoding produces after the first N_PROMPT tokens of TOKENS.json, one token at a time.
// LAST: only the logits of the last LAST positions are written (long prompts).
// --evict: the logits of every token fed one at a time while, after each step, the cache drops
// positions so that it holds at most K: the N_SINK first positions and the most recent others.
// That is spec/POLICIES.md's `window` (N_SINK 0) and `sink:N` policies with absolute positions
// (keys cached after RoPE, never re-rotated), computed by llama.cpp's own cache.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"

static std::vector<llama_token> read_ids(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  std::vector<llama_token> ids;
  for (size_t i = 0; i < s.size();) {
    if (isdigit(static_cast<unsigned char>(s[i]))) {
      size_t j = i;
      while (j < s.size() && isdigit(static_cast<unsigned char>(s[j]))) ++j;
      ids.push_back(std::atoi(s.substr(i, j - i).c_str()));
      i = j;
    } else {
      ++i;
    }
  }
  return ids;
}

static llama_context* new_context(llama_model* model, uint32_t n_ctx = 512) {
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = n_ctx;
  cp.n_batch = n_ctx;
  cp.n_ubatch = n_ctx;
  cp.n_threads = 1;
  cp.n_threads_batch = 1;
  cp.type_k = GGML_TYPE_F32;
  cp.type_v = GGML_TYPE_F32;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  return llama_init_from_model(model, cp);
}

static int evict_mode(char** argv) {
  const int k = std::atoi(argv[2]);
  const int n_sink = std::atoi(argv[3]);
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[4], mp);
  if (model == nullptr || k <= n_sink) return 1;
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  std::vector<llama_token> ids = read_ids(argv[5]);
  llama_context* ctx = new_context(model);
  llama_memory_t mem = llama_get_memory(ctx);
  std::FILE* f = std::fopen(argv[6], "wb");
  for (size_t p = 0; p < ids.size(); ++p) {
    llama_batch b = llama_batch_init(1, 0, 1);
    b.token[0] = ids[p];
    b.pos[0] = static_cast<llama_pos>(p);
    b.n_seq_id[0] = 1;
    b.seq_id[0][0] = 0;
    b.logits[0] = 1;
    b.n_tokens = 1;
    if (llama_decode(ctx, b) != 0) return 1;
    std::fwrite(llama_get_logits_ith(ctx, 0), sizeof(float), n_vocab, f);
    llama_batch_free(b);
    // Held now: positions 0..N_SINK-1 and p-(K-N_SINK)..p, K+1 in all: drop the oldest non-sink.
    const long drop = static_cast<long>(p) - (k - n_sink);
    if (drop >= n_sink) llama_memory_seq_rm(mem, 0, static_cast<llama_pos>(drop), drop + 1);
  }
  std::fclose(f);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}

// --tokenize: each string of INP (separated by "\n__ggml_vocab_test__\n", as llama.cpp's
// tokenizer tests write them) tokenized by llama.cpp with add_special = false and
// parse_special = false, one line of space-separated ids per string in OUT; then the same with
// add_special = true and parse_special = true into OUT.special.
static int tokenize_mode(char** argv) {
  llama_model_params mp = llama_model_default_params();
  mp.vocab_only = true;
  llama_model* model = llama_model_load_from_file(argv[2], mp);
  if (model == nullptr) return 1;
  const llama_vocab* vocab = llama_model_get_vocab(model);
  std::ifstream in(argv[3], std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string all = ss.str();
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0; pos < all.size();) {
    const size_t next = all.find(sep, pos);
    texts.push_back(all.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
    if (next == std::string::npos) break;
    pos = next + sep.size();
  }
  for (int special = 0; special < 2; ++special) {
    const std::string out_path = std::string(argv[4]) + (special ? ".special" : "");
    FILE* out = std::fopen(out_path.c_str(), "w");
    if (out == nullptr) return 1;
    for (const std::string& t : texts) {
      std::vector<llama_token> ids(t.size() + 8);
      const int n = llama_tokenize(vocab, t.data(), static_cast<int32_t>(t.size()), ids.data(),
                                   static_cast<int32_t>(ids.size()), special != 0, special != 0);
      if (n < 0) return 1;
      for (int i = 0; i < n; ++i) std::fprintf(out, i == 0 ? "%d" : " %d", ids[i]);
      std::fprintf(out, "\n");
    }
    std::fclose(out);
  }
  llama_model_free(model);
  return 0;
}

int main(int argc, char** argv) {
  llama_backend_init();
  if (argc == 7 && std::string(argv[1]) == "--evict") return evict_mode(argv);
  if (argc == 5 && std::string(argv[1]) == "--tokenize") return tokenize_mode(argv);
  if (argc != 7 && argc != 8) {
    std::fprintf(stderr,
                 "usage: %s MODEL TOKENS.json LOGITS.f32 N_PROMPT N_GREEDY GREEDY.json [LAST]\n",
                 argv[0]);
    return 2;
  }
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (model == nullptr) return 1;
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  std::vector<llama_token> ids = read_ids(argv[2]);
  const int n_prompt = std::atoi(argv[4]);
  const int n_greedy = std::atoi(argv[5]);
  const size_t last = argc == 8 ? static_cast<size_t>(std::atoi(argv[7])) : ids.size();
  // A context that holds the prompt and the greedy tokens (at least llama.cpp's usual 512).
  uint32_t n_ctx = 512;
  while (n_ctx < ids.size() + static_cast<size_t>(n_greedy)) n_ctx *= 2;

  // All positions in one batch.
  llama_context* ctx = new_context(model, n_ctx);
  llama_batch b = llama_batch_init(static_cast<int32_t>(ids.size()), 0, 1);
  for (size_t i = 0; i < ids.size(); ++i) {
    b.token[i] = ids[i];
    b.pos[i] = static_cast<llama_pos>(i);
    b.n_seq_id[i] = 1;
    b.seq_id[i][0] = 0;
    b.logits[i] = 1;
  }
  b.n_tokens = static_cast<int32_t>(ids.size());
  if (llama_decode(ctx, b) != 0) return 1;
  std::FILE* f = std::fopen(argv[3], "wb");
  for (size_t i = ids.size() - std::min(last, ids.size()); i < ids.size(); ++i) {
    std::fwrite(llama_get_logits_ith(ctx, static_cast<int32_t>(i)), sizeof(float), n_vocab, f);
  }
  std::fclose(f);
  llama_batch_free(b);
  llama_free(ctx);

  // Greedy decoding after the prompt.
  ctx = new_context(model, n_ctx);
  std::vector<llama_token> prompt(ids.begin(), ids.begin() + n_prompt);
  if (llama_decode(ctx, llama_batch_get_one(prompt.data(), n_prompt)) != 0) return 1;
  std::vector<llama_token> out;
  for (int t = 0; t < n_greedy; ++t) {
    const float* l = llama_get_logits_ith(ctx, -1);
    llama_token best = 0;
    for (int v = 1; v < n_vocab; ++v) {
      if (l[v] > l[best]) best = v;
    }
    out.push_back(best);
    if (llama_decode(ctx, llama_batch_get_one(&out.back(), 1)) != 0) return 1;
  }
  f = std::fopen(argv[6], "w");
  std::fprintf(f, "[");
  for (size_t i = 0; i < out.size(); ++i) std::fprintf(f, "%s%d", i ? ", " : "", out[i]);
  std::fprintf(f, "]\n");
  std::fclose(f);
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
