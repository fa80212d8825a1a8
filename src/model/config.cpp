#include "model/config.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

#include "model/arch.h"

namespace tova::model {

Status read_rope_scaling(KeyReader& keys, ModelConfig& c, bool yarn) {
  const std::string& path = keys.file().path();
  // Linear RoPE scaling: positions are multiplied by 1/factor.
  float factor = 1.f;
  bool is_yarn = false;
  if (keys.has("rope.scaling.type")) {
    TOVA_ASSIGN_OR_RETURN(std::string type, keys.str("rope.scaling.type"));
    if (type == "linear") {
      TOVA_ASSIGN_OR_RETURN(factor, keys.f32_or("rope.scaling.factor", 1.f));
    } else if (type == "none") {
      if (keys.has("rope.scaling.factor")) keys.accept("rope.scaling.factor");  // unused
    } else if (type == "yarn" && yarn) {
      TOVA_ASSIGN_OR_RETURN(factor, keys.f32_or("rope.scaling.factor", 1.f));
      is_yarn = true;
    } else {
      return make_error("{}: unsupported {} '{}' (supported: none, linear{})", path,
                        keys.key("rope.scaling.type"), type, yarn ? ", yarn" : "");
    }
  } else if (keys.has("rope.scale_linear")) {
    TOVA_ASSIGN_OR_RETURN(factor, keys.f32("rope.scale_linear"));
  }
  // Only what the scaling type uses is read: a yarn/longrope key under "linear" stays unread
  // and is refused by name.
  if (keys.has("rope.scaling.finetuned")) keys.accept("rope.scaling.finetuned");  // a label
  if (!(factor > 0.f) || factor > 1e6f) {
    return make_error("{}: invalid rope scaling factor {}", path, factor);
  }
  c.rope.freq_scale = 1.f / factor;
  if (!is_yarn) return ok_status();
  // YaRN as llama.cpp sets it up (llama_context's cparams): ext_factor 1, beta_fast 32 and
  // beta_slow 1 (the files carry no yarn_beta_* keys that llama.cpp reads for these families:
  // such keys stay unread and are refused), the correction dims over original_context_length
  // (default context_length). Its attention factor: llama.cpp divides out the 1 + 0.1 ln(factor)
  // that ggml's rope multiplies in, times get_mscale(factor) and rope.scaling.attn_factor: the
  // cos/sin end up scaled by attn_factor * (factor > 1 ? 1 + 0.1 ln(factor) : 1).
  TOVA_ASSIGN_OR_RETURN(uint32_t n_orig, keys.u32_or("rope.scaling.original_context_length",
                                                     static_cast<uint32_t>(c.n_ctx_train)));
  if (n_orig < 1 || n_orig > (1u << 30)) {
    return make_error("{}: {} {} is out of range", path,
                      keys.key("rope.scaling.original_context_length"), n_orig);
  }
  TOVA_ASSIGN_OR_RETURN(float attn_factor, keys.f32_or("rope.scaling.attn_factor", 1.f));
  if (!(attn_factor > 0.f) || !std::isfinite(attn_factor)) {
    return make_error("{}: {} {} must be positive", path, keys.key("rope.scaling.attn_factor"),
                      attn_factor);
  }
  c.rope.yarn_ext_factor = 1.f;
  c.rope.yarn_beta_fast = 32.f;
  c.rope.yarn_beta_slow = 1.f;
  // Converters write the Hugging Face config's yarn parameters (gpt-oss: beta_fast 32, beta_slow
  // 1); llama.cpp does not read them for these families and computes with its defaults, so a
  // file is accepted when they are those values and refused (by name) when they differ.
  const std::pair<const char*, float> fixed[] = {{"rope.scaling.yarn_beta_fast", 32.f},
                                                 {"rope.scaling.yarn_beta_slow", 1.f},
                                                 {"rope.scaling.yarn_ext_factor", 1.f}};
  for (const auto& [key, value] : fixed) {
    if (!keys.has(key)) continue;
    TOVA_ASSIGN_OR_RETURN(float v, keys.f32(key));
    if (v != value) {
      return make_error("{}: {} {} is not implemented (llama.cpp computes this family with {})",
                        path, keys.key(key), v, value);
    }
  }
  c.rope.yarn_n_ctx_orig = static_cast<int>(n_orig);
  // In float, step for step as llama.cpp and ggml compute it.
  const float f = 1.f / c.rope.freq_scale;
  float attn = f <= 1.f ? 1.f : 0.1f * std::log(f) + 1.f;
  attn *= 1.f / (1.f + 0.1f * std::log(f));
  attn *= attn_factor;
  c.rope.mscale = attn * (1.f + 0.1f * std::log(1.f / c.rope.freq_scale));
  return ok_status();
}

Status read_expert_keys(KeyReader& keys, ModelConfig& c, const ExpertKeys& k) {
  const std::string& path = keys.file().path();
  if (c.n_expert == 0 && k.required) {
    return make_error("{}: {} is 0 or absent, but architecture '{}' is a mixture of experts",
                      path, keys.key("expert_count"), c.arch_name);
  }
  if (c.n_expert == 0) return ok_status();
  const bool norm = k.norm, shared_expert = k.shared_expert, ff_exp_key = k.ff_exp_key;
  constexpr uint32_t kMaxDim = 1u << 20;
  uint32_t ff_exp = static_cast<uint32_t>(c.n_ff);
  if (ff_exp_key) {
    TOVA_ASSIGN_OR_RETURN(ff_exp, keys.u32_or("expert_feed_forward_length",
                                              static_cast<uint32_t>(c.n_ff / c.n_expert_used)));
  }
  if (ff_exp == 0 && !ff_exp_key) {
    return make_error("{}: {} is absent or 0 (each expert's width in architecture '{}')", path,
                      keys.key("feed_forward_length"), c.arch_name);
  }
  if (ff_exp == 0 && !keys.has("expert_feed_forward_length")) {
    return make_error("{}: {} is absent and {} gives no default for it (absent or 0)", path,
                      keys.key("expert_feed_forward_length"), keys.key("feed_forward_length"));
  }
  if (ff_exp == 0 || ff_exp > kMaxDim) {
    return make_error("{}: {} {} is out of range", path, keys.key("expert_feed_forward_length"),
                      ff_exp);
  }
  c.n_ff_exp = static_cast<int>(ff_exp);
  if (shared_expert) {
    TOVA_ASSIGN_OR_RETURN(uint32_t ff_sh, keys.u32_or("expert_shared_feed_forward_length",
                                                      static_cast<uint32_t>(c.n_ff)));
    // Absent with no feed_forward_length to default to: 0, and a layer that has a shared
    // expert refuses it by name (load_moe_ffn).
    if (ff_sh == 0 && !keys.has("expert_shared_feed_forward_length")) {
      c.n_ff_shexp = 0;
    } else if (ff_sh == 0 || ff_sh > kMaxDim) {
      return make_error("{}: {} {} is out of range", path,
                        keys.key("expert_shared_feed_forward_length"), ff_sh);
    } else {
      c.n_ff_shexp = static_cast<int>(ff_sh);
    }
  }
  c.expert_weights_norm = norm;
  if (keys.has("expert_weights_norm")) {
    const io::GgufValue* v = keys.file().find(keys.key("expert_weights_norm"));
    if (v->type != io::GgufValueType::kBool) {
      return make_error("{}: {} must be a bool", path, keys.key("expert_weights_norm"));
    }
    keys.accept("expert_weights_norm");
    c.expert_weights_norm = v->b;
  }
  TOVA_ASSIGN_OR_RETURN(c.expert_weights_scale, keys.f32_or("expert_weights_scale", 1.f));
  if (!std::isfinite(c.expert_weights_scale) || c.expert_weights_scale == 0.f) {
    return make_error("{}: {} {} is invalid", path, keys.key("expert_weights_scale"),
                      c.expert_weights_scale);
  }
  // llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE: 1 softmax (what these families use), 2 sigmoid,
  // 3 softmax over the chosen.
  TOVA_ASSIGN_OR_RETURN(uint32_t gating, keys.u32_or("expert_gating_func", 1));
  if (gating == 2 && k.sigmoid_gating) {
    c.moe_gating = MoeGating::kSigmoid;
  } else if (gating != 1) {
    return make_error("{}: {} {} is not implemented (only 1, softmax{})", path,
                      keys.key("expert_gating_func"), gating,
                      k.sigmoid_gating ? ", and 2, sigmoid" : "");
  }
  return ok_status();
}

namespace {

// Sane maxima, far above real models, for the shape a hostile file claims.
constexpr uint32_t kMaxShapeDim = 1u << 20;

// The feed-forward width: the key's one value, or the widest of one per layer (llama.cpp reads
// a scalar or an array of n_layer), the others kept in layer_n_ff where they differ.
Result<uint32_t> read_ff_width(KeyReader& k, uint32_t n_layer, ModelConfig& c) {
  const io::GgufFile& f = k.file();
  uint32_t n_ff = 0;
  if (k.is_array("feed_forward_length") && n_layer > 0 && n_layer <= 4096) {
    TOVA_ASSIGN_OR_RETURN(std::vector<uint32_t> ff, k.u32_array("feed_forward_length", n_layer));
    for (uint32_t w : ff) {
      if (w == 0 || w > (1u << 20)) {
        return make_error("{}: {} holds {}, out of range", f.path(),
                          k.key("feed_forward_length"), w);
      }
      n_ff = std::max(n_ff, w);
    }
    if (std::any_of(ff.begin(), ff.end(), [&](uint32_t w) { return w != n_ff; })) {
      c.layer_n_ff.assign(ff.begin(), ff.end());
    }
    return n_ff;
  }
  // Optional, as llama.cpp reads it: a model whose every feed-forward is a mixture of experts
  // (qwen35moe, qwen3moe, ...) need not carry it. 0 here; a layer that has a dense
  // feed-forward refuses a width of 0 by the key's name (load_dense_ffn), and the expert
  // widths that default to it refuse theirs (read_expert_keys).
  return k.u32_or("feed_forward_length", 0);
}

// LFM2: a layer with 0 KV heads has no attention (the family's recurrent kind); the attention
// layers share one count.
Result<uint32_t> read_kv_heads_marking_recurrent(KeyReader& k, uint32_t n_layer,
                                                 ModelConfig& c) {
  const io::GgufFile& f = k.file();
  const std::string key = k.key("attention.head_count_kv");
  TOVA_ASSIGN_OR_RETURN(std::vector<uint32_t> kv_heads,
                        k.u32_array("attention.head_count_kv", n_layer));
  uint32_t n_head_kv = 0;
  c.layer_recurrent.assign(n_layer, false);
  for (uint32_t il = 0; il < n_layer; ++il) {
    const uint32_t h = kv_heads[il];
    c.layer_recurrent[il] = h == 0;
    if (h != 0 && n_head_kv != 0 && h != n_head_kv) {
      return make_error("{}: {} holds {} and {}: attention layers of different KV head counts "
                        "are not implemented",
                        f.path(), key, n_head_kv, h);
    }
    if (h != 0) n_head_kv = h;
  }
  if (n_head_kv == 0) return make_error("{}: {} leaves no attention layer", f.path(), key);
  return n_head_kv;
}

// Nemotron-H (ArchSpec::layer_blocks): each layer one block, told by the per-layer arrays
// feed_forward_length and attention.head_count_kv (llama.cpp's reading): both 0 a Mamba2
// layer, a width a feed-forward-only layer, else (width 0, KV heads > 0) an attention-only
// layer. A layer with both is no layer of this pattern. Returns {n_ff, n_head_kv}.
Result<std::pair<uint32_t, uint32_t>> read_layer_blocks(KeyReader& k, uint32_t n_layer,
                                                        ModelConfig& c) {
  const io::GgufFile& f = k.file();
  const std::string ff_key = k.key("feed_forward_length");
  const std::string kv_key = k.key("attention.head_count_kv");
  if (n_layer == 0 || n_layer > 4096) {
    return make_error("{}: {} {} is out of range", f.path(), k.key("block_count"), n_layer);
  }
  // The converter appends multi-token prediction blocks to the pattern (nemotron_h_moe): they
  // are no layers of it, and no family of this pattern runs them.
  TOVA_ASSIGN_OR_RETURN(uint32_t n_nextn, k.u32_or("nextn_predict_layers", 0));
  if (n_nextn > 0) {
    return make_error("{}: {} {}: multi-token prediction blocks are not implemented for "
                      "architecture '{}' (a file converted with --no-mtp has none)",
                      f.path(), k.key("nextn_predict_layers"), n_nextn, c.arch_name);
  }
  if (!k.is_array("feed_forward_length") || !k.is_array("attention.head_count_kv")) {
    return make_error("{}: {} and {} must be per-layer arrays (they say which block each layer "
                      "is)",
                      f.path(), ff_key, kv_key);
  }
  TOVA_ASSIGN_OR_RETURN(std::vector<uint32_t> ff, k.u32_array("feed_forward_length", n_layer));
  TOVA_ASSIGN_OR_RETURN(std::vector<uint32_t> kv,
                        k.u32_array("attention.head_count_kv", n_layer));
  uint32_t n_ff = 0, n_head_kv = 0;
  c.layer_recurrent.assign(n_layer, false);
  c.layer_ffn_only.assign(n_layer, false);
  for (uint32_t il = 0; il < n_layer; ++il) {
    if (ff[il] > (1u << 20)) {
      return make_error("{}: {} holds {}, out of range", f.path(), ff_key, ff[il]);
    }
    if (ff[il] != 0 && kv[il] != 0) {
      return make_error("{}: layer {} has a feed-forward ({} {}) and attention ({} {}): each "
                        "layer of architecture '{}' is one block",
                        f.path(), il, ff_key, ff[il], kv_key, kv[il], c.arch_name);
    }
    c.layer_recurrent[il] = ff[il] == 0 && kv[il] == 0;
    c.layer_ffn_only[il] = ff[il] != 0;
    n_ff = std::max(n_ff, ff[il]);
    if (kv[il] != 0 && n_head_kv != 0 && kv[il] != n_head_kv) {
      return make_error("{}: {} holds {} and {}: attention layers of different KV head counts "
                        "are not implemented",
                        f.path(), kv_key, n_head_kv, kv[il]);
    }
    if (kv[il] != 0) n_head_kv = kv[il];
  }
  if (n_head_kv == 0) return make_error("{}: {} leaves no attention layer", f.path(), kv_key);
  c.layer_n_ff.assign(ff.begin(), ff.end());
  return std::pair{n_ff, n_head_kv};
}

// The KV head count: one for every layer, the most of one per layer (families with
// ArchSpec::layer_kv_heads, kept in layer_n_head_kv), or LFM2's marking of recurrent layers.
Result<uint32_t> read_kv_heads(KeyReader& k, const ArchSpec& spec, uint32_t n_head,
                               uint32_t n_layer, ModelConfig& c) {
  const bool per_layer = k.is_array("attention.head_count_kv") && n_layer <= 4096;
  if (spec.layer_kv_heads && per_layer) {
    TOVA_ASSIGN_OR_RETURN(std::vector<uint32_t> kv_heads,
                          k.u32_array("attention.head_count_kv", n_layer));
    uint32_t n_head_kv = 0;
    for (uint32_t h : kv_heads) {
      if (h == 0 || n_head % h != 0) {
        return make_error("{}: {} holds {}, not a divisor of head_count {}", k.file().path(),
                          k.key("attention.head_count_kv"), h, n_head);
      }
      n_head_kv = std::max(n_head_kv, h);
    }
    c.layer_n_head_kv.assign(kv_heads.begin(), kv_heads.end());
    return n_head_kv;
  }
  if (spec.kv_heads_mark_recurrent && per_layer) {
    return read_kv_heads_marking_recurrent(k, n_layer, c);
  }
  return k.u32_or("attention.head_count_kv", n_head);
}

// Head size (key and value length) and the rotated dimensions.
Status read_head_dims(KeyReader& k, uint32_t n_embd, uint32_t n_head, ModelConfig& c) {
  const io::GgufFile& f = k.file();
  const uint32_t def_hd = n_embd % n_head == 0 ? n_embd / n_head : 0;
  TOVA_ASSIGN_OR_RETURN(uint32_t head_dim, k.u32_or("attention.key_length", def_hd));
  TOVA_ASSIGN_OR_RETURN(uint32_t v_dim, k.u32_or("attention.value_length", head_dim));
  if (head_dim == 0 || head_dim % 2 != 0 || v_dim != head_dim || head_dim > 1024) {
    return make_error("{}: unsupported head size (key_length {}, value_length {})", f.path(),
                      head_dim, v_dim);
  }
  TOVA_ASSIGN_OR_RETURN(uint32_t n_rot, k.u32_or("rope.dimension_count", head_dim));
  if (n_rot == 0 || n_rot > head_dim || n_rot % 2 != 0) {
    return make_error("{}: {} {} does not fit head size {}", f.path(),
                      k.key("rope.dimension_count"), n_rot, head_dim);
  }
  c.rope.n_rot = static_cast<int>(n_rot);
  c.head_dim = static_cast<int>(head_dim);
  return ok_status();
}

// The vocabulary's size: token_embd.weight's rows, which vocab_size (if present) must match.
Status read_vocab_size(KeyReader& k, ModelConfig& c) {
  const io::GgufFile& f = k.file();
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
  if (k.has("vocab_size")) {
    TOVA_ASSIGN_OR_RETURN(uint32_t n_vocab, k.u32("vocab_size"));
    if (static_cast<int64_t>(n_vocab) != c.n_vocab) {
      return make_error("{}: {} {} does not match token_embd.weight's {} rows", f.path(),
                        k.key("vocab_size"), n_vocab, c.n_vocab);
    }
  }
  return ok_status();
}

// A mixture of experts (families with ArchSpec::experts); 0 experts, as some converters write
// for dense models, changes nothing.
Status read_expert_counts(KeyReader& k, const ArchSpec& spec, ModelConfig& c) {
  const io::GgufFile& f = k.file();
  TOVA_ASSIGN_OR_RETURN(uint32_t n_expert, k.u32_or("expert_count", 0));
  TOVA_ASSIGN_OR_RETURN(uint32_t n_expert_used, k.u32_or("expert_used_count", 0));
  if (n_expert == 0 && n_expert_used == 0) return ok_status();
  if (!spec.experts) {
    return make_error("{}: {} {}: mixture-of-experts models of architecture '{}' are not "
                      "implemented",
                      f.path(), k.key("expert_count"), n_expert, c.arch_name);
  }
  constexpr uint32_t kMaxExperts = 4096;
  if (n_expert == 0 || n_expert > kMaxExperts) {
    return make_error("{}: {} {} is out of range (1..{}) with {} {}", f.path(),
                      k.key("expert_count"), n_expert, kMaxExperts, k.key("expert_used_count"),
                      n_expert_used);
  }
  if (n_expert_used == 0 || n_expert_used > n_expert) {
    return make_error("{}: {} {} must be between 1 and {} {}", f.path(),
                      k.key("expert_used_count"), n_expert_used, k.key("expert_count"), n_expert);
  }
  c.n_expert = static_cast<int>(n_expert);
  c.n_expert_used = static_cast<int>(n_expert_used);
  return ok_status();
}

// The shape every family shares: widths, head counts, context, rope and norm constants.
Status read_shape(KeyReader& k, const ArchSpec& spec, ModelConfig& c) {
  const io::GgufFile& f = k.file();
  TOVA_ASSIGN_OR_RETURN(uint32_t n_embd, k.u32("embedding_length"));
  TOVA_ASSIGN_OR_RETURN(uint32_t n_layer, k.u32("block_count"));
  TOVA_ASSIGN_OR_RETURN(uint32_t n_head, k.u32("attention.head_count"));
  uint32_t n_ff = 0, n_head_kv = 0;
  if (spec.layer_blocks) {
    TOVA_ASSIGN_OR_RETURN(auto ff_kv, read_layer_blocks(k, n_layer, c));
    std::tie(n_ff, n_head_kv) = ff_kv;
  } else {
    TOVA_ASSIGN_OR_RETURN(n_ff, read_ff_width(k, n_layer, c));
    TOVA_ASSIGN_OR_RETURN(n_head_kv, read_kv_heads(k, spec, n_head, n_layer, c));
  }
  TOVA_ASSIGN_OR_RETURN(uint32_t n_ctx, k.u32_or("context_length", 2048));
  TOVA_ASSIGN_OR_RETURN(c.rms_eps, k.f32_or("attention.layer_norm_rms_epsilon", 1e-5f));
  TOVA_ASSIGN_OR_RETURN(c.rope.freq_base, k.f32_or("rope.freq_base", 10000.f));
  if (n_embd == 0 || n_embd > kMaxShapeDim || n_layer == 0 || n_layer > 4096 ||
      n_ff > kMaxShapeDim || n_head == 0 || n_head > 4096 || n_head_kv == 0) {
    return make_error(
        "{}: implausible model shape (embedding_length {}, block_count {}, "
        "feed_forward_length {}, head_count {}, head_count_kv {})",
        f.path(), n_embd, n_layer, n_ff, n_head, n_head_kv);
  }
  if (n_ctx > static_cast<uint32_t>(std::numeric_limits<int>::max())) {
    return make_error("{}: {} {} is out of range", f.path(), k.key("context_length"), n_ctx);
  }
  if (n_head % n_head_kv != 0) {
    return make_error("{}: {} {} is not a multiple of head_count_kv {}", f.path(),
                      k.key("attention.head_count"), n_head, n_head_kv);
  }
  TOVA_RETURN_IF_ERROR(read_head_dims(k, n_embd, n_head, c));
  c.n_ctx_train = static_cast<int>(n_ctx);
  TOVA_RETURN_IF_ERROR(read_rope_scaling(k, c, spec.yarn));
  if (!(c.rope.freq_base > 0.f) || !(c.rms_eps > 0.f)) {
    return make_error("{}: invalid rope.freq_base {} or rms epsilon {}", f.path(), c.rope.freq_base,
                      c.rms_eps);
  }
  c.n_embd = static_cast<int>(n_embd);
  c.n_layer = static_cast<int>(n_layer);
  c.n_ff = static_cast<int>(n_ff);
  c.n_head = static_cast<int>(n_head);
  c.n_head_kv = static_cast<int>(n_head_kv);
  return ok_status();
}

}  // namespace

Result<ModelConfig> load_config(const io::GgufFile& f) {
  ModelConfig c;
  TOVA_ASSIGN_OR_RETURN(c.arch_name, f.get_string("general.architecture"));
  const ArchSpec* spec = find_arch(c.arch_name);
  if (spec == nullptr) {
    return make_error("{}: unsupported architecture '{}' (supported: {})", f.path(), c.arch_name,
                      supported_architectures());
  }
  if (f.find("general.name") != nullptr) {
    auto n = f.get_string("general.name");
    if (n.ok()) c.name = *n;
  }
  KeyReader k(f, c.arch_name);
  TOVA_RETURN_IF_ERROR(read_shape(k, *spec, c));
  TOVA_RETURN_IF_ERROR(read_vocab_size(k, c));
  c.tied_output = f.find_tensor("output.weight") == nullptr;
  TOVA_RETURN_IF_ERROR(read_expert_counts(k, *spec, c));
  // The provenance of the (already permuted) tensors of older llama files.
  if (k.has("tensor_data_layout")) k.accept("tensor_data_layout");
  TOVA_RETURN_IF_ERROR(spec->configure(k, c));
  TOVA_RETURN_IF_ERROR(k.check_all_read());
  c.keys_read = k.keys_read();
  return c;
}

}  // namespace tova::model
