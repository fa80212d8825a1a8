#include "vision/mmproj_config.h"

#include <algorithm>
#include <string_view>
#include <vector>

namespace tova::vision {

namespace {

// The clip.* keys the gemma4v path reads, and those that say nothing about the vision
// encoder's arithmetic (the audio encoder's, read by nothing here). Any other clip.* key is
// refused by name: it belongs to an encoder tova does not implement (windowed attention, tiles,
// feature layers, ...), and ignoring it would compute another model without a word.
constexpr std::string_view kReadKeys[] = {
    "clip.projector_type",
    "clip.vision.projector_type",
    "clip.has_vision_encoder",
    "clip.has_audio_encoder",
    "clip.use_gelu",
    "clip.use_silu",
    "clip.vision.embedding_length",
    "clip.vision.feed_forward_length",
    "clip.vision.block_count",
    "clip.vision.projection_dim",
    "clip.vision.attention.head_count",
    "clip.vision.attention.head_count_kv",
    "clip.vision.attention.head_dim",
    "clip.vision.attention.layer_norm_epsilon",
    // Read by llama.cpp for every vision encoder; gemma4v's dynamic resize never uses it.
    "clip.vision.image_size",
    "clip.vision.patch_size",
    "clip.vision.image_mean",
    "clip.vision.image_std",
    "clip.vision.projector.scale_factor",
};

bool is_known_key(std::string_view key) {
  if (key.starts_with("general.")) return true;    // names, file type, licence: no arithmetic
  if (key.starts_with("clip.audio.")) return true;  // the audio encoder's (not read here)
  return std::find(std::begin(kReadKeys), std::end(kReadKeys), key) != std::end(kReadKeys);
}

Result<int> positive(const io::GgufFile& f, std::string_view key) {
  TOVA_ASSIGN_OR_RETURN(const uint32_t v, f.get_u32(key));
  if (v == 0 || v > (1u << 20)) {
    return make_error("{}: key '{}' is {}, expected 1 .. {}", f.path(), key, v, 1u << 20);
  }
  return static_cast<int>(v);
}

Result<int> positive_or(const io::GgufFile& f, std::string_view key, int fallback) {
  if (f.find(key) == nullptr) return fallback;
  return positive(f, key);
}

Result<bool> bool_or(const io::GgufFile& f, std::string_view key, bool fallback) {
  if (f.find(key) == nullptr) return fallback;
  return f.get_bool(key);
}

Result<std::array<float, 3>> rgb(const io::GgufFile& f, std::string_view key) {
  TOVA_ASSIGN_OR_RETURN(const std::vector<float> v, f.get_f32_array(key));
  if (v.size() != 3) {
    return make_error("{}: key '{}' has {} values, expected 3 (R, G, B)", f.path(), key,
                      v.size());
  }
  return std::array<float, 3>{v[0], v[1], v[2]};
}

// The encoder's shape: widths, layers, heads, the norm epsilon.
Status read_encoder_shape(const io::GgufFile& f, MmprojConfig& c) {
  const std::string& path = f.path();
  TOVA_ASSIGN_OR_RETURN(c.n_embd, positive(f, "clip.vision.embedding_length"));
  TOVA_ASSIGN_OR_RETURN(c.n_ff, positive(f, "clip.vision.feed_forward_length"));
  TOVA_ASSIGN_OR_RETURN(c.n_layer, positive(f, "clip.vision.block_count"));
  TOVA_ASSIGN_OR_RETURN(c.projection_dim, positive(f, "clip.vision.projection_dim"));
  TOVA_ASSIGN_OR_RETURN(c.n_head, positive(f, "clip.vision.attention.head_count"));
  TOVA_ASSIGN_OR_RETURN(c.n_head_kv,
                        positive_or(f, "clip.vision.attention.head_count_kv", c.n_head));
  TOVA_ASSIGN_OR_RETURN(c.head_dim,
                        positive_or(f, "clip.vision.attention.head_dim", c.n_embd / c.n_head));
  TOVA_ASSIGN_OR_RETURN(c.eps, f.get_f32("clip.vision.attention.layer_norm_epsilon"));
  if (!(c.eps > 0.f && c.eps < 1.f)) {
    return make_error("{}: clip.vision.attention.layer_norm_epsilon is {}, expected 0 .. 1",
                      path, c.eps);
  }
  return ok_status();
}

// How an image becomes patches: patch size, mean and deviation per channel, the pooling
// factor; and the feed-forward's activation.
Status read_image_keys(const io::GgufFile& f, MmprojConfig& c) {
  const std::string& path = f.path();
  TOVA_ASSIGN_OR_RETURN(c.patch_size, positive(f, "clip.vision.patch_size"));
  if (f.find("clip.vision.image_size") != nullptr) {
    TOVA_RETURN_IF_ERROR(positive(f, "clip.vision.image_size"));
  }
  TOVA_ASSIGN_OR_RETURN(c.image_mean, rgb(f, "clip.vision.image_mean"));
  TOVA_ASSIGN_OR_RETURN(c.image_std, rgb(f, "clip.vision.image_std"));
  for (int i = 0; i < 3; ++i) {
    if (!(c.image_std[i] > 0.f)) {
      return make_error("{}: clip.vision.image_std[{}] is {}, expected > 0", path, i,
                        c.image_std[i]);
    }
  }
  TOVA_ASSIGN_OR_RETURN(c.n_merge, positive_or(f, "clip.vision.projector.scale_factor", 3));

  TOVA_ASSIGN_OR_RETURN(const bool gelu, bool_or(f, "clip.use_gelu", false));
  TOVA_ASSIGN_OR_RETURN(const bool silu, bool_or(f, "clip.use_silu", false));
  if (gelu && silu) return make_error("{}: both clip.use_gelu and clip.use_silu are true", path);
  c.ffn_act = gelu ? VisionFfnAct::kGeluTanh : silu ? VisionFfnAct::kSilu : VisionFfnAct::kGeluQuick;

  return ok_status();
}

// What the encoder's arithmetic needs of the shape.
Status check_encoder_shape(const std::string& path, const MmprojConfig& c) {
  if (c.n_head % c.n_head_kv != 0) {
    return make_error("{}: clip.vision.attention.head_count {} is not a multiple of "
                      "head_count_kv {}",
                      path, c.n_head, c.n_head_kv);
  }
  // The 2-D RoPE rotates each half of a head (x, then y) NEOX-style: pairs within a half.
  if (c.head_dim % 4 != 0) {
    return make_error("{}: clip.vision.attention.head_dim {} is not a multiple of 4 (gemma4v's "
                      "2-D RoPE rotates pairs in each half of a head)",
                      path, c.head_dim);
  }
  if (c.token_pixels() > (int64_t{1} << 24)) {
    return make_error("{}: clip.vision.patch_size {} and scale_factor {} give image tokens of "
                      "{} pixels, too many",
                      path, c.patch_size, c.n_merge, c.token_pixels());
  }
  return ok_status();
}

}  // namespace

ImageTextLayout image_text_layout(ProjectorType p) {
  switch (p) {
    case ProjectorType::kGemma4v:
      return {.begin = "<|image>", .end = "<image|>", .non_causal = true, .text_arch = "gemma4"};
  }
  return {};
}

std::string projector_type_choices() { return "gemma4v"; }

Result<MmprojConfig> read_mmproj_config(const io::GgufFile& f) {
  const std::string& path = f.path();
  for (const auto& [key, value] : f.metadata()) {
    if (!is_known_key(key)) {
      return make_error("{}: key '{}' is not supported by tova's vision encoders "
                        "(it would change the computation)",
                        path, key);
    }
  }
  if (f.find("general.architecture") != nullptr) {
    TOVA_ASSIGN_OR_RETURN(const std::string arch, f.get_string("general.architecture"));
    if (arch != "clip") {
      return make_error("{}: general.architecture is '{}', expected 'clip' (an mmproj file)",
                        path, arch);
    }
  }
  MmprojConfig c;
  TOVA_ASSIGN_OR_RETURN(const bool has_vision, bool_or(f, "clip.has_vision_encoder", false));
  if (!has_vision) {
    return make_error("{}: clip.has_vision_encoder is not true: no vision encoder to run", path);
  }
  TOVA_ASSIGN_OR_RETURN(c.has_audio_encoder, bool_or(f, "clip.has_audio_encoder", false));
  // As llama.cpp looks it up: the shared key first, then the vision encoder's own (files with
  // an audio encoder too).
  const char* type_key = f.find("clip.projector_type") != nullptr ? "clip.projector_type"
                                                                   : "clip.vision.projector_type";
  TOVA_ASSIGN_OR_RETURN(c.projector_name, f.get_string(type_key));
  if (c.projector_name != "gemma4v") {
    return make_error("{}: projector type '{}' ({}) is not supported (supported: {})", path,
                      c.projector_name, type_key, projector_type_choices());
  }
  c.projector = ProjectorType::kGemma4v;

  TOVA_RETURN_IF_ERROR(read_encoder_shape(f, c));
  TOVA_RETURN_IF_ERROR(read_image_keys(f, c));
  TOVA_RETURN_IF_ERROR(check_encoder_shape(path, c));
  return c;
}

}  // namespace tova::vision
