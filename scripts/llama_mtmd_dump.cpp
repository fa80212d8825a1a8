// Golden image embeddings from llama.cpp's libmtmd for tova's vision fixtures. Built OUTSIDE the
// repository by scripts/make_vision_goldens.sh (never part of tova's build).
//   llama_mtmd_dump TEXT_MODEL MMPROJ IMAGE EMBD.f32 [PROMPT LAYOUT.txt LOGITS.f32]
// EMBD.f32: float32 [n_tokens][n_embd], the projector's output for IMAGE (decoded by mtmd's
// helper, preprocessed and encoded by libmtmd: one thread, CPU, flash attention off so K and V
// stay float32 as in tova's encoder). Prints "N_TOKENS N_EMBD" on stdout.
// With PROMPT (text with one <__media__> marker, BOS added): the prompt as mtmd cuts it into
// chunks (text tokens, the image between the family's markers) is fed to the text model as
// mtmd's helper feeds it (an image chunk in one batch, non-causal where the projector asks),
// except that the last text chunk is decoded with logits at every token. LAYOUT.txt: one line
// per chunk, "text ID ID ..." or "image N_TOKENS N_POS"; LOGITS.f32: float32
// [tokens of the last text chunk][n_vocab]. f32 K/V cache, one thread.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "llama.h"
#include "mtmd-helper.h"
#include "mtmd.h"

static int fail(const char* what) {
  std::fprintf(stderr, "llama_mtmd_dump: %s\n", what);
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 5 && argc != 8) {
    return fail("usage: llama_mtmd_dump TEXT_MODEL MMPROJ IMAGE EMBD.f32 [PROMPT LAYOUT LOGITS]");
  }
  const bool text_side = argc == 8;
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (model == nullptr) return fail("cannot load the text model");

  mtmd_context_params cp = mtmd_context_params_default();
  cp.use_gpu = false;
  cp.print_timings = false;
  cp.n_threads = 1;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  cp.warmup = false;
  mtmd_context* ctx = mtmd_init_from_file(argv[2], model, cp);
  if (ctx == nullptr) return fail("cannot load the mmproj");

  mtmd_helper_bitmap_wrapper bw = mtmd_helper_bitmap_init_from_file(ctx, argv[3], false);
  if (bw.bitmap == nullptr) return fail("cannot read the image");
  const char* prompt = text_side ? argv[5] : mtmd_default_marker();
  mtmd_input_text text{prompt, std::strlen(prompt), text_side, true};
  mtmd_input_chunks* chunks = mtmd_input_chunks_init();
  const mtmd_bitmap* bitmaps[1] = {bw.bitmap};
  if (mtmd_tokenize(ctx, chunks, &text, bitmaps, 1) != 0) return fail("mtmd_tokenize failed");
  const mtmd_input_chunk* image = nullptr;
  for (size_t i = 0; i < mtmd_input_chunks_size(chunks); ++i) {
    const mtmd_input_chunk* c = mtmd_input_chunks_get(chunks, i);
    if (mtmd_input_chunk_get_type(c) == MTMD_INPUT_CHUNK_TYPE_IMAGE) image = c;
  }
  if (image == nullptr) return fail("no image chunk");
  if (mtmd_encode_chunk(ctx, image) != 0) return fail("mtmd_encode_chunk failed");
  const size_t n_tok = mtmd_input_chunk_get_n_tokens(image);
  const int n_embd = llama_model_n_embd_inp(model);
  const float* embd = mtmd_get_output_embd(ctx);
  FILE* out = std::fopen(argv[4], "wb");
  if (out == nullptr) return fail("cannot write the embeddings");
  std::fwrite(embd, sizeof(float), n_tok * n_embd, out);
  std::fclose(out);
  std::printf("%zu %d\n", n_tok, n_embd);

  if (text_side) {
    llama_context_params lp = llama_context_default_params();
    lp.n_ctx = 1024;
    lp.n_batch = 512;
    lp.n_ubatch = 512;
    lp.n_threads = 1;
    lp.n_threads_batch = 1;
    lp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    lp.type_k = GGML_TYPE_F32;
    lp.type_v = GGML_TYPE_F32;
    llama_context* lctx = llama_init_from_model(model, lp);
    if (lctx == nullptr) return fail("cannot make a llama context");
    FILE* layout = std::fopen(argv[6], "w");
    if (layout == nullptr) return fail("cannot write the layout");
    const size_t n_chunks = mtmd_input_chunks_size(chunks);
    llama_pos n_past = 0;
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    for (size_t i = 0; i < n_chunks; ++i) {
      const mtmd_input_chunk* c = mtmd_input_chunks_get(chunks, i);
      if (mtmd_input_chunk_get_type(c) == MTMD_INPUT_CHUNK_TYPE_TEXT) {
        size_t n = 0;
        const llama_token* ids = mtmd_input_chunk_get_tokens_text(c, &n);
        std::fprintf(layout, "text");
        for (size_t j = 0; j < n; ++j) std::fprintf(layout, " %d", ids[j]);
        std::fprintf(layout, "\n");
        if (i + 1 < n_chunks) {
          if (mtmd_helper_eval_chunk_single(ctx, lctx, c, n_past, 0, 512, false, &n_past) != 0) {
            return fail("decoding a text chunk failed");
          }
          continue;
        }
        // The last text chunk: logits at every token.
        llama_batch b = llama_batch_init(static_cast<int32_t>(n), 0, 1);
        for (size_t j = 0; j < n; ++j) {
          b.token[j] = ids[j];
          b.pos[j] = n_past + static_cast<llama_pos>(j);
          b.n_seq_id[j] = 1;
          b.seq_id[j][0] = 0;
          b.logits[j] = 1;
        }
        b.n_tokens = static_cast<int32_t>(n);
        if (llama_decode(lctx, b) != 0) return fail("decoding the last text chunk failed");
        FILE* lo = std::fopen(argv[7], "wb");
        if (lo == nullptr) return fail("cannot write the logits");
        for (size_t j = 0; j < n; ++j) {
          std::fwrite(llama_get_logits_ith(lctx, static_cast<int32_t>(j)), sizeof(float), n_vocab, lo);
        }
        std::fclose(lo);
        llama_batch_free(b);
      } else {
        std::fprintf(layout, "image %zu %d\n", mtmd_input_chunk_get_n_tokens(c),
                     static_cast<int>(mtmd_input_chunk_get_n_pos(c)));
        if (i + 1 == n_chunks) return fail("the prompt must end with text");
        if (mtmd_helper_eval_chunk_single(ctx, lctx, c, n_past, 0, 512, false, &n_past) != 0) {
          return fail("decoding the image chunk failed");
        }
      }
    }
    std::fclose(layout);
    llama_free(lctx);
  }
  mtmd_input_chunks_free(chunks);
  mtmd_free(ctx);
  llama_model_free(model);
  return 0;
}
