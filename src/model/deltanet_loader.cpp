// What qwen35, qwen35moe and qwen3next share (arch_qwen35.cpp, arch_qwen35moe.cpp,
// arch_qwen3next.cpp): the Gated DeltaNet keys and layer pattern, and each layer's mixer, a
// Gated DeltaNet or a gated attention, as llama.cpp's loaders read them (src/models/qwen35*.cpp,
// qwen3next.cpp). qwen3next's DeltaNet differs in the order of its value heads
// (DeltaNetHeads::kGrouped) and in its fused input projections (ssm_ba; ssm_in in older files).
#include <fmt/format.h>

#include "model/arch.h"

namespace tova::model {

namespace {

// The Gated DeltaNet layers' shape (llama.cpp's ssm.* keys).
Status read_deltanet_shape(KeyReader& keys, DeltaNetConfig& d) {
  const std::string& path = keys.file().path();
  TOVA_ASSIGN_OR_RETURN(uint32_t conv, keys.u32("ssm.conv_kernel"));
  TOVA_ASSIGN_OR_RETURN(uint32_t inner, keys.u32("ssm.inner_size"));
  TOVA_ASSIGN_OR_RETURN(uint32_t state, keys.u32("ssm.state_size"));
  TOVA_ASSIGN_OR_RETURN(uint32_t rank, keys.u32("ssm.time_step_rank"));
  TOVA_ASSIGN_OR_RETURN(uint32_t groups, keys.u32("ssm.group_count"));
  if (conv < 1 || conv > 64 || state < 1 || state > 1024 || groups < 1 || rank < 1 ||
      rank > 4096) {
    return make_error("{}: implausible Gated DeltaNet shape ({} {}, {} {}, {} {}, {} {})", path,
                      keys.key("ssm.conv_kernel"), conv, keys.key("ssm.state_size"), state,
                      keys.key("ssm.group_count"), groups, keys.key("ssm.time_step_rank"), rank);
  }
  // Every key head serves the same number of value heads (llama.cpp asserts it).
  if (rank % groups != 0) {
    return make_error("{}: {} {} (value heads) is not a multiple of {} {} (key heads)", path,
                      keys.key("ssm.time_step_rank"), rank, keys.key("ssm.group_count"), groups);
  }
  // llama.cpp sizes the tensors with a value head of state_size and computes with inner_size /
  // time_step_rank: they must agree.
  if (inner != state * rank) {
    return make_error("{}: {} {} is not {} {} x {} {}", path, keys.key("ssm.inner_size"), inner,
                      keys.key("ssm.state_size"), state, keys.key("ssm.time_step_rank"), rank);
  }
  d = {.conv_kernel = static_cast<int>(conv),
       .n_k_head = static_cast<int>(groups),
       .n_v_head = static_cast<int>(rank),
       .head_dim = static_cast<int>(state)};
  return ok_status();
}

// Multi-token prediction blocks: block_count counts them, past the main stack (llama.cpp's
// n_layer() = block_count - nextn_predict_layers). Loaded beside the main layers (load_weights:
// ModelWeights::nextn), never run by the main pass. Returns block_count (every block).
Result<int> read_nextn_blocks(KeyReader& keys, ModelConfig& c) {
  const std::string& path = keys.file().path();
  TOVA_ASSIGN_OR_RETURN(uint32_t nextn, keys.u32_or("nextn_predict_layers", 0));
  if (nextn >= static_cast<uint32_t>(c.n_layer)) {
    return make_error("{}: {} {} leaves no main layer of {} {}", path,
                      keys.key("nextn_predict_layers"), nextn, keys.key("block_count"),
                      c.n_layer);
  }
  const int n_all = c.n_layer;
  c.n_nextn = static_cast<int>(nextn);
  c.n_layer = n_all - c.n_nextn;
  return n_all;
}

// Which main layers are recurrent (the rest attend); n_all: block_count.
Status read_recurrent_pattern(KeyReader& keys, int n_all, ModelConfig& c) {
  const std::string& path = keys.file().path();
  // Which layers are recurrent: attention.recurrent_layers if given, else every layer but each
  // full_attention_interval-th (default 4).
  c.layer_recurrent.assign(c.n_layer, false);
  if (keys.has("attention.recurrent_layers")) {
    // One entry per block, the prediction blocks' included (llama.cpp reads block_count).
    TOVA_ASSIGN_OR_RETURN(const std::vector<uint32_t> r,
                          keys.u32_array("attention.recurrent_layers", n_all));
    for (int il = 0; il < c.n_layer; ++il) c.layer_recurrent[il] = r[il] != 0;
    for (int il = c.n_layer; il < n_all; ++il) {
      if (r[il] != 0) {
        return make_error("{}: {} makes block {} recurrent, but it is a multi-token prediction "
                          "block ({} {}), which attends",
                          path, keys.key("attention.recurrent_layers"), il,
                          keys.key("nextn_predict_layers"), c.n_nextn);
      }
    }
  } else {
    TOVA_ASSIGN_OR_RETURN(uint32_t interval, keys.u32_or("full_attention_interval", 4));
    if (interval < 1) {
      return make_error("{}: {} must be at least 1", path, keys.key("full_attention_interval"));
    }
    for (int il = 0; il < c.n_layer; ++il) c.layer_recurrent[il] = (il + 1) % interval != 0;
  }
  bool any_attention = false;
  for (int il = 0; il < c.n_layer; ++il) any_attention |= !c.layer_recurrent[il];
  if (!any_attention) {
    return make_error("{}: the layer pattern ({}) leaves no attention layer", path,
                      keys.has("attention.recurrent_layers")
                          ? keys.key("attention.recurrent_layers")
                          : keys.key("full_attention_interval"));
  }
  return ok_status();
}

Status read_imrope_sections(KeyReader& keys, ModelConfig& c) {
  const std::string& path = keys.file().path();
  // Interleaved M-RoPE (llama.cpp's IMROPE) on text: every pair whose section is t, h or w
  // turns by the token's position (all three are it), a pair of the fourth section by position
  // 0 (not at all). Implemented: sections that give every rotated pair one of the first three,
  // which is NeoX rotation of the first rope.dimension_count dims.
  c.rope.mode = kernels::RopeMode::kNeox;
  TOVA_ASSIGN_OR_RETURN(const std::vector<uint32_t> counts,
                        keys.u32_array("rope.dimension_sections", 4));
  const std::vector<int64_t> sec(counts.begin(), counts.end());
  const int64_t sect_dims = sec[0] + sec[1] + sec[2] + sec[3];
  for (int pair = 0; pair < c.rope.n_rot / 2; ++pair) {
    const int64_t sector = sect_dims > 0 ? pair % sect_dims : 0;
    const bool turns = (sector % 3 == 0 && sector < 3 * sec[0]) ||
                       (sector % 3 == 1 && sector < 3 * sec[1]) ||
                       (sector % 3 == 2 && sector < 3 * sec[2]);
    if (!turns) {
      return make_error("{}: {} [{}, {}, {}, {}] leaves rotated pair {} of {} unturned on text "
                        "(not implemented)",
                        path, keys.key("rope.dimension_sections"), sec[0], sec[1], sec[2], sec[3],
                        pair, c.rope.n_rot / 2);
    }
  }
  return ok_status();
}

}  // namespace

Status read_deltanet_layers(KeyReader& keys, ModelConfig& c) {
  TOVA_RETURN_IF_ERROR(read_deltanet_shape(keys, c.deltanet));
  TOVA_ASSIGN_OR_RETURN(const int n_all, read_nextn_blocks(keys, c));
  return read_recurrent_pattern(keys, n_all, c);
}

Status read_deltanet_keys(KeyReader& keys, ModelConfig& c) {
  TOVA_RETURN_IF_ERROR(read_deltanet_layers(keys, c));
  return read_imrope_sections(keys, c);
}

Status load_deltanet(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  const DeltaNetConfig& d = c.deltanet;
  const std::string p = fmt::format("blk.{}.", il);
  const int64_t C = d.conv_dim(), V = d.value_dim(), H = d.n_v_head;
  l.mixer_kind = MixerKind::kDeltaNet;
  DeltaNetWeights& w = l.deltanet;
  TOVA_ASSIGN_OR_RETURN(l.attn_norm, ld.vector(p + "attn_norm.weight", c.n_embd));
  // qwen3next (grouped value heads): its files carry ssm_ba, and ssm_in (converted before
  // llama.cpp's converter split it) or attn_qkv + attn_gate; llama.cpp reads nothing else.
  const bool grouped = d.heads == DeltaNetHeads::kGrouped;
  if (grouped && ld.has(p + "ssm_in.weight")) {
    if (ld.has(p + "attn_qkv.weight") || ld.has(p + "attn_gate.weight")) {
      return make_error("{}: layer {} carries both '{}' and the split '{}'/'{}': one input "
                        "projection or the other",
                        ld.file().path(), il, p + "ssm_in.weight", p + "attn_qkv.weight",
                        p + "attn_gate.weight");
    }
    TOVA_ASSIGN_OR_RETURN(w.qkvz, ld.matrix(p + "ssm_in.weight", c.n_embd, C + V));
  } else {
    TOVA_ASSIGN_OR_RETURN(w.qkv, ld.matrix(p + "attn_qkv.weight", c.n_embd, C));
    TOVA_ASSIGN_OR_RETURN(w.z, ld.matrix(p + "attn_gate.weight", c.n_embd, V));
  }
  TOVA_ASSIGN_OR_RETURN(w.conv, ld.vectors(p + "ssm_conv1d.weight", d.conv_kernel, C));
  TOVA_ASSIGN_OR_RETURN(w.dt_bias, ld.vector(p + "ssm_dt.bias", H));
  TOVA_ASSIGN_OR_RETURN(w.a, ld.vector(p + "ssm_a", H));
  if (grouped) {
    TOVA_ASSIGN_OR_RETURN(w.ba, ld.matrix(p + "ssm_ba.weight", c.n_embd, 2 * H));
  } else {
    TOVA_ASSIGN_OR_RETURN(w.beta, ld.matrix(p + "ssm_beta.weight", c.n_embd, H));
    TOVA_ASSIGN_OR_RETURN(w.alpha, ld.matrix(p + "ssm_alpha.weight", c.n_embd, H));
  }
  TOVA_ASSIGN_OR_RETURN(w.norm, ld.vector(p + "ssm_norm.weight", d.head_dim));
  TOVA_ASSIGN_OR_RETURN(w.out, ld.matrix(p + "ssm_out.weight", V, c.n_embd));
  return ok_status();
}

Status load_qwen35_mixer(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  const std::string p = fmt::format("blk.{}.", il);
  const char* pattern = ld.file().find(c.arch_name + ".attention.recurrent_layers") != nullptr
                            ? "attention.recurrent_layers"
                            : "full_attention_interval";
  // A multi-token prediction block (il >= n_layer) is a gated attention layer.
  if (c.recurrent(il)) {
    if (!ld.has(p + "ssm_conv1d.weight") && ld.has(p + "attn_q.weight")) {
      return make_error("{}: the layer pattern ({}.{}) makes layer {} a Gated DeltaNet layer, "
                        "but it has '{}' and no '{}'",
                        ld.file().path(), c.arch_name, pattern, il, p + "attn_q.weight",
                        p + "ssm_conv1d.weight");
    }
    return load_deltanet(ld, c, il, l);
  }
  if (ld.has(p + "ssm_conv1d.weight") && !ld.has(p + "attn_q.weight")) {
    if (il >= c.n_layer) {
      return make_error("{}: block {} is a multi-token prediction block ({}.nextn_predict_layers "
                        "{}), an attention block, but it has '{}' and no '{}'",
                        ld.file().path(), il, c.arch_name, c.n_nextn, p + "ssm_conv1d.weight",
                        p + "attn_q.weight");
    }
    return make_error("{}: the layer pattern ({}.{}) makes layer {} an attention layer, but it "
                      "has '{}' and no '{}'",
                      ld.file().path(), c.arch_name, pattern, il, p + "ssm_conv1d.weight",
                      p + "attn_q.weight");
  }
  // Gated attention: attn_q holds per head a query and an output gate.
  const int64_t q_dim = static_cast<int64_t>(c.n_head) * c.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(c.n_head_kv) * c.head_dim;
  l.mixer_kind = MixerKind::kAttention;
  l.q_gate = true;
  TOVA_ASSIGN_OR_RETURN(l.attn_norm, ld.vector(p + "attn_norm.weight", c.n_embd));
  TOVA_ASSIGN_OR_RETURN(l.wq, ld.matrix(p + "attn_q.weight", c.n_embd, 2 * q_dim));
  TOVA_ASSIGN_OR_RETURN(l.wk, ld.matrix(p + "attn_k.weight", c.n_embd, kv_dim));
  TOVA_ASSIGN_OR_RETURN(l.wv, ld.matrix(p + "attn_v.weight", c.n_embd, kv_dim));
  TOVA_ASSIGN_OR_RETURN(l.wo, ld.matrix(p + "attn_output.weight", q_dim, c.n_embd));
  return load_qk_norm(ld, c, il, l);
}

}  // namespace tova::model
