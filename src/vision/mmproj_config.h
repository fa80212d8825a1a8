// What an mmproj GGUF (llama.cpp's vision encoder + projector files, general.architecture
// "clip") says about its encoder: read once from the clip.* keys, the one description every
// part of the image path reads (preprocessing, the encoder's forward pass, the fixture writer).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "core/result.h"
#include "io/gguf.h"

namespace tova::vision {

enum class ProjectorType { kGemma4v };

// The encoder's gated feed-forward activation (clip.use_gelu / clip.use_silu; neither: the
// quick GELU x * sigmoid(1.702 x), which is what Gemma 4's converted files get).
enum class VisionFfnAct { kGeluQuick, kGeluTanh, kSilu };

struct MmprojConfig {
  ProjectorType projector = ProjectorType::kGemma4v;
  std::string projector_name;  // as the file spells it: "gemma4v"
  int n_embd = 0;              // clip.vision.embedding_length
  int n_ff = 0;                // clip.vision.feed_forward_length
  int n_layer = 0;             // clip.vision.block_count
  int n_head = 0;              // clip.vision.attention.head_count
  int n_head_kv = 0;           // clip.vision.attention.head_count_kv (default n_head)
  int head_dim = 0;            // clip.vision.attention.head_dim (default n_embd / n_head)
  int projection_dim = 0;      // clip.vision.projection_dim: the text model's embedding width
  float eps = 1e-6f;           // clip.vision.attention.layer_norm_epsilon
  int patch_size = 0;          // clip.vision.patch_size
  std::array<float, 3> image_mean{};  // clip.vision.image_mean (pixels scaled to [0, 1] first)
  std::array<float, 3> image_std{};   // clip.vision.image_std
  // Gemma 4's pooling kernel: n_merge x n_merge patches become one image token
  // (clip.vision.projector.scale_factor, default 3 as llama.cpp's gemma4v loader has it).
  int n_merge = 3;
  float rope_theta = 100.f;  // the 2-D RoPE's base (fixed for gemma4v, not a key)
  VisionFfnAct ffn_act = VisionFfnAct::kGeluQuick;
  // How many image tokens an image becomes, at least and at most (llama.cpp's gemma4v limits):
  // the image is resized, keeping its aspect ratio, to a pixel count between these times
  // (patch_size * n_merge)^2.
  int min_tokens = 40;
  int max_tokens = 280;
  bool has_audio_encoder = false;  // clip.has_audio_encoder: its a.* tensors are not read here

  int64_t token_pixels() const {
    return int64_t{patch_size} * patch_size * n_merge * n_merge;
  }
  int64_t min_pixels() const { return min_tokens * token_pixels(); }
  int64_t max_pixels() const { return max_tokens * token_pixels(); }
};

// How a projector's image sits in the text sequence (llama.cpp's mtmd, per projector type): the
// text around its tokens (tokenized with special tokens read), whether its tokens attend to
// each other without a causal mask, and the text family it feeds.
struct ImageTextLayout {
  const char* begin = "";   // before the image's tokens (Gemma 4: "<|image>")
  const char* end = "";     // after them (Gemma 4: "<image|>")
  bool non_causal = false;  // its tokens see each other (mtmd_decode_use_non_causal)
  const char* text_arch = "";  // general.architecture of the text models it feeds
};
ImageTextLayout image_text_layout(ProjectorType p);

// The projector types tova computes, comma-separated ("gemma4v").
std::string projector_type_choices();

// Reads the clip.* keys of an mmproj file. An error names the file and the key: a missing or
// invalid required key, a projector type other than the supported ones (named), a file without
// a vision encoder, or a clip.* key that would change the arithmetic and that tova does not
// implement.
Result<MmprojConfig> read_mmproj_config(const io::GgufFile& f);

}  // namespace tova::vision
