#include "model/config.h"

#include <limits>

namespace tova::model {

const char* supported_architectures() { return "llama, qwen2"; }

namespace {

// Optional integer key with a default.
Result<uint32_t> u32_or(const io::GgufFile& f, const std::string& key, uint32_t def) {
  if (f.find(key) == nullptr) return def;
  return f.get_u32(key);
}
Result<float> f32_or(const io::GgufFile& f, const std::string& key, float def) {
  if (f.find(key) == nullptr) return def;
  return f.get_f32(key);
}

}  // namespace

Result<ModelConfig> load_config(const io::GgufFile& f) {
  ModelConfig c;
  TOVA_ASSIGN_OR_RETURN(c.arch_name, f.get_string("general.architecture"));
  if (c.arch_name == "llama") {
    c.arch = Arch::kLlama;
    c.rope.mode = kernels::RopeMode::kNorm;
  } else if (c.arch_name == "qwen2") {
    c.arch = Arch::kQwen2;
    c.rope.mode = kernels::RopeMode::kNeox;
    c.qkv_bias = true;
  } else {
    return make_error("{}: unsupported architecture '{}' (supported: {})", f.path(), c.arch_name,
                      supported_architectures());
  }
  if (f.find("general.name") != nullptr) {
    auto n = f.get_string("general.name");
    if (n.ok()) c.name = *n;
  }
  const std::string a = c.arch_name + ".";
  TOVA_ASSIGN_OR_RETURN(uint32_t n_embd, f.get_u32(a + "embedding_length"));
  TOVA_ASSIGN_OR_RETURN(uint32_t n_layer, f.get_u32(a + "block_count"));
  TOVA_ASSIGN_OR_RETURN(uint32_t n_ff, f.get_u32(a + "feed_forward_length"));
  TOVA_ASSIGN_OR_RETURN(uint32_t n_head, f.get_u32(a + "attention.head_count"));
  TOVA_ASSIGN_OR_RETURN(uint32_t n_head_kv, u32_or(f, a + "attention.head_count_kv", n_head));
  TOVA_ASSIGN_OR_RETURN(uint32_t n_ctx, u32_or(f, a + "context_length", 2048));
  TOVA_ASSIGN_OR_RETURN(c.rms_eps, f32_or(f, a + "attention.layer_norm_rms_epsilon", 1e-5f));
  TOVA_ASSIGN_OR_RETURN(c.rope.freq_base, f32_or(f, a + "rope.freq_base", 10000.f));

  // Sane maxima, far above real models, for the shape a hostile file claims.
  constexpr uint32_t kMaxDim = 1u << 20;
  if (n_embd == 0 || n_embd > kMaxDim || n_layer == 0 || n_layer > 4096 || n_ff == 0 ||
      n_ff > kMaxDim || n_head == 0 || n_head > 4096 || n_head_kv == 0) {
    return make_error("{}: implausible model shape (embedding_length {}, block_count {}, "
                      "feed_forward_length {}, head_count {}, head_count_kv {})",
                      f.path(), n_embd, n_layer, n_ff, n_head, n_head_kv);
  }
  if (n_ctx > static_cast<uint32_t>(std::numeric_limits<int>::max())) {
    return make_error("{}: {}context_length {} is out of range", f.path(), a, n_ctx);
  }
  if (n_head % n_head_kv != 0) {
    return make_error("{}: {}attention.head_count {} is not a multiple of head_count_kv {}",
                      f.path(), a, n_head, n_head_kv);
  }
  const uint32_t def_hd = n_embd % n_head == 0 ? n_embd / n_head : 0;
  TOVA_ASSIGN_OR_RETURN(uint32_t head_dim, u32_or(f, a + "attention.key_length", def_hd));
  TOVA_ASSIGN_OR_RETURN(uint32_t v_dim, u32_or(f, a + "attention.value_length", head_dim));
  if (head_dim == 0 || head_dim % 2 != 0 || v_dim != head_dim || head_dim > 1024) {
    return make_error("{}: unsupported head size (key_length {}, value_length {})", f.path(),
                      head_dim, v_dim);
  }
  TOVA_ASSIGN_OR_RETURN(uint32_t n_rot, u32_or(f, a + "rope.dimension_count", head_dim));
  if (n_rot == 0 || n_rot > head_dim || n_rot % 2 != 0) {
    return make_error("{}: {}rope.dimension_count {} does not fit head size {}", f.path(), a,
                      n_rot, head_dim);
  }
  c.rope.n_rot = static_cast<int>(n_rot);
  // Linear RoPE scaling: positions are multiplied by 1/factor.
  float factor = 1.f;
  if (f.find(a + "rope.scaling.type") != nullptr) {
    TOVA_ASSIGN_OR_RETURN(std::string type, f.get_string(a + "rope.scaling.type"));
    if (type == "linear") {
      TOVA_ASSIGN_OR_RETURN(factor, f32_or(f, a + "rope.scaling.factor", 1.f));
    } else if (type != "none") {
      return make_error("{}: unsupported {}rope.scaling.type '{}' (supported: none, linear)",
                        f.path(), a, type);
    }
  } else if (f.find(a + "rope.scale_linear") != nullptr) {
    TOVA_ASSIGN_OR_RETURN(factor, f.get_f32(a + "rope.scale_linear"));
  }
  if (!(factor > 0.f) || factor > 1e6f) {
    return make_error("{}: invalid rope scaling factor {}", f.path(), factor);
  }
  c.rope.freq_scale = 1.f / factor;
  if (!(c.rope.freq_base > 0.f) || !(c.rms_eps > 0.f)) {
    return make_error("{}: invalid rope.freq_base {} or rms epsilon {}", f.path(),
                      c.rope.freq_base, c.rms_eps);
  }
  c.n_embd = static_cast<int>(n_embd);
  c.n_layer = static_cast<int>(n_layer);
  c.n_ff = static_cast<int>(n_ff);
  c.n_head = static_cast<int>(n_head);
  c.n_head_kv = static_cast<int>(n_head_kv);
  c.head_dim = static_cast<int>(head_dim);
  c.n_ctx_train = static_cast<int>(n_ctx);
  const io::GgufTensorInfo* emb = f.find_tensor("token_embd.weight");
  if (emb == nullptr) return make_error("{}: missing tensor 'token_embd.weight'", f.path());
  if (emb->dims.size() != 2) {
    return make_error("{}: tensor 'token_embd.weight' has {} dims, expected 2", f.path(),
                      emb->dims.size());
  }
  // Limits of a hostile file: ids are int32 and logits buffers are [n_tok][n_vocab] floats.
  constexpr int64_t kMaxVocab = int64_t{1} << 24;
  if (emb->dims[1] > kMaxVocab) {
    return make_error("{}: tensor 'token_embd.weight' has {} rows, more than the {} tokens "
                      "tova supports",
                      f.path(), emb->dims[1], kMaxVocab);
  }
  c.n_vocab = static_cast<int>(emb->dims[1]);
  c.tied_output = f.find_tensor("output.weight") == nullptr;
  return c;
}

}  // namespace tova::model
