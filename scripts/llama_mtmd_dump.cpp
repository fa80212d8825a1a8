// Golden image embeddings from llama.cpp's libmtmd for tova's vision fixtures. Built OUTSIDE the
// repository by scripts/make_vision_goldens.sh (never part of tova's build).
//   llama_mtmd_dump TEXT_MODEL MMPROJ IMAGE EMBD.f32
// EMBD.f32: float32 [n_tokens][n_embd], the projector's output for IMAGE (decoded by mtmd's
// helper, preprocessed and encoded by libmtmd: one thread, CPU, flash attention off so K and V
// stay float32 as in tova's encoder). Prints "N_TOKENS N_EMBD" on stdout.
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
  if (argc != 5) return fail("usage: llama_mtmd_dump TEXT_MODEL MMPROJ IMAGE EMBD.f32");
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
  const char* marker = mtmd_default_marker();
  mtmd_input_text text{marker, std::strlen(marker), false, true};
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
  mtmd_input_chunks_free(chunks);
  mtmd_free(ctx);
  llama_model_free(model);
  return 0;
}
