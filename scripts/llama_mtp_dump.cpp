// Golden data from llama.cpp's draft-mtp path (the Qwen3.5/3.6 multi-token prediction block) for
// tova's *-mtp fixtures. Built OUTSIDE the repository against libllama and its staging header
// src/llama-ext.h by scripts/make_mtp_goldens.sh (never part of tova's build).
//   llama_mtp_dump MODEL TOKENS.json LOGITS.f32 DRAFTS.json N_PROMPT N_DRAFT STEP ROUNDS
// Drives a target context and an MTP context (LLAMA_CONTEXT_TYPE_MTP) the way llama.cpp 34af94cd's
// speculative driver does with --spec-type draft-mtp (common/speculative.cpp, draft-mtp in its
// single-block mode, and examples/speculative-simple):
//   - every batch the target decodes is decoded by the MTP context too, with the same tokens and
//     positions and, as each row's h, the target's final-normed hidden state (h_nextn) of the
//     row before (the first row takes the last row of the previous batch; zeros at first);
//   - a draft starts from the last token (not yet fed to the target) with the last fed row's h,
//     and chains: each step's top token and the MTP context's own h_nextn row feed the next;
//     the MTP context's draft region is then removed (seq_rm), as the driver does.
// The target first decodes the first N_PROMPT - 1 tokens of TOKENS.json; then for each of ROUNDS
// rounds the MTP block drafts N_DRAFT tokens greedily (no p_min) after token P - 1 (P = N_PROMPT
// + round * STEP), and the target decodes the next STEP tokens of TOKENS.json (P - 1 ..
// P + STEP - 2) as an accepted verify batch would.
// LOGITS.f32: float32 [ROUNDS][N_DRAFT][n_vocab], the MTP logits each draft token was chosen
// from. DRAFTS.json: [[round 0's drafts], ...]. f32 K/V, flash attention off, one thread.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "llama-ext.h"
#include "llama.h"

static std::vector<llama_token> read_ids(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string s = ss.str();
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

static llama_context_params context_params() {
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 512;
  cp.n_batch = 512;
  cp.n_ubatch = 512;
  cp.n_threads = 1;
  cp.n_threads_batch = 1;
  cp.type_k = GGML_TYPE_F32;
  cp.type_v = GGML_TYPE_F32;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  return cp;
}

// A batch of n rows carrying both a token and an h row (llama_batch_init allocates one of them).
struct Batch {
  std::vector<llama_token> token;
  std::vector<float> embd;
  std::vector<llama_pos> pos;
  std::vector<int32_t> n_seq;
  std::vector<llama_seq_id> seq;
  std::vector<llama_seq_id*> seq_ptr;
  std::vector<int8_t> logits;
  llama_batch view(int n_embd, bool with_embd) {
    seq.assign(token.size(), 0);
    seq_ptr.resize(token.size());
    for (size_t i = 0; i < token.size(); ++i) seq_ptr[i] = &seq[i];
    n_seq.assign(token.size(), 1);
    llama_batch b{};
    b.n_tokens = static_cast<int32_t>(token.size());
    b.token = token.data();
    b.embd = with_embd ? embd.data() : nullptr;
    b.pos = pos.data();
    b.n_seq_id = n_seq.data();
    b.seq_id = seq_ptr.data();
    b.logits = logits.data();
    (void)n_embd;
    return b;
  }
};

int main(int argc, char** argv) {
  if (argc != 9) {
    std::fprintf(stderr,
                 "usage: %s MODEL TOKENS.json LOGITS.f32 DRAFTS.json N_PROMPT N_DRAFT STEP ROUNDS\n",
                 argv[0]);
    return 2;
  }
  const int n_prompt = std::atoi(argv[5]), n_draft = std::atoi(argv[6]);
  const int step = std::atoi(argv[7]), rounds = std::atoi(argv[8]);
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  mp.load_mtp = true;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (model == nullptr || llama_model_n_layer_nextn(model) != 1) return 1;
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  const int n_embd = llama_model_n_embd_out(model);
  const std::vector<llama_token> ids = read_ids(argv[2]);
  if (n_prompt < 2 || static_cast<size_t>(n_prompt + rounds * step) > ids.size()) return 1;

  llama_context* tgt = llama_init_from_model(model, context_params());
  llama_context_params dp = context_params();
  dp.ctx_type = LLAMA_CONTEXT_TYPE_MTP;
  dp.ctx_other = tgt;
  dp.n_rs_seq = 0;
  llama_context* dft = llama_init_from_model(model, dp);
  if (tgt == nullptr || dft == nullptr) return 1;
  llama_set_embeddings_nextn(tgt, true, /*masked=*/false);
  llama_set_embeddings_nextn(dft, true, /*masked=*/true);

  std::vector<float> pending_h(n_embd, 0.f);
  // The target decodes ids[a, b); the MTP context decodes the same rows, h shifted by one.
  auto feed = [&](int a, int b) -> bool {
    Batch t;
    for (int p = a; p < b; ++p) {
      t.token.push_back(ids[p]);
      t.pos.push_back(p);
      t.logits.push_back(p + 1 == b);
    }
    if (llama_decode(tgt, t.view(n_embd, false)) != 0) return false;
    const float* h = llama_get_embeddings_nextn(tgt);
    Batch m;
    m.token = t.token;
    m.pos = t.pos;
    m.logits.assign(t.token.size(), 0);
    m.embd.resize(t.token.size() * n_embd);
    std::memcpy(m.embd.data(), pending_h.data(), sizeof(float) * n_embd);
    std::memcpy(m.embd.data() + n_embd, h, sizeof(float) * n_embd * (t.token.size() - 1));
    if (llama_decode(dft, m.view(n_embd, true)) != 0) return false;
    std::memcpy(pending_h.data(), h + static_cast<size_t>(b - a - 1) * n_embd,
                sizeof(float) * n_embd);
    return true;
  };

  if (!feed(0, n_prompt - 1)) return 1;
  std::FILE* f = std::fopen(argv[3], "wb");
  std::FILE* jf = std::fopen(argv[4], "w");
  std::fprintf(jf, "[");
  int P = n_prompt;
  for (int r = 0; r < rounds; ++r) {
    llama_token last = ids[P - 1];
    std::vector<float> h = pending_h;
    std::fprintf(jf, r == 0 ? "[" : ", [");
    for (int i = 0; i < n_draft; ++i) {
      Batch m;
      m.token = {last};
      m.pos = {P - 1 + i};
      m.logits = {1};
      m.embd = h;
      if (llama_decode(dft, m.view(n_embd, true)) != 0) return 1;
      const float* lg = llama_get_logits_ith(dft, 0);
      std::fwrite(lg, sizeof(float), n_vocab, f);
      const llama_token d = static_cast<llama_token>(std::max_element(lg, lg + n_vocab) - lg);
      std::fprintf(jf, i == 0 ? "%d" : ", %d", d);
      const float* hr = llama_get_embeddings_nextn_ith(dft, 0);
      std::copy(hr, hr + n_embd, h.begin());
      last = d;
    }
    std::fprintf(jf, "]");
    llama_memory_seq_rm(llama_get_memory(dft), 0, P - 1, -1);
    if (!feed(P - 1, P - 1 + step)) return 1;
    P += step;
  }
  std::fprintf(jf, "]\n");
  std::fclose(f);
  std::fclose(jf);
  llama_free(dft);
  llama_free(tgt);
  llama_model_free(model);
  return 0;
}
