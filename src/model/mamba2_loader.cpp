// The Mamba2 (SSD) layers' keys and tensors, shared by the families that have them
// (granitehybrid, nemotron_h, falcon-h1; declared in arch.h), as llama.cpp reads them for
// Mamba-2 (llama-model.cpp's hparams and tensors of GRANITE_HYBRID, NEMOTRON_H and FALCON_H1,
// the last with ssm_conv1d.bias and ssm_norm optional; the converters'
// mamba.py and granite.py write them: ssm_a = -exp(A_log), ssm_norm [n_group][d_inner / n_group]).
// The arithmetic is layer_mamba2.cpp's.
#include <fmt/format.h>

#include "model/arch.h"

namespace tova::model {
namespace {

// Conv kernels accepted: Mamba2 ships 4; beyond 64 a file is broken, not a model.
constexpr uint32_t kMaxConvKernel = 64;
constexpr uint32_t kMaxDim = 1u << 20;

}  // namespace

Status read_mamba2_keys(KeyReader& keys, ModelConfig& c) {
  const std::string& path = keys.file().path();
  TOVA_ASSIGN_OR_RETURN(uint32_t conv, keys.u32("ssm.conv_kernel"));
  TOVA_ASSIGN_OR_RETURN(uint32_t inner, keys.u32("ssm.inner_size"));
  TOVA_ASSIGN_OR_RETURN(uint32_t state, keys.u32("ssm.state_size"));
  TOVA_ASSIGN_OR_RETURN(uint32_t heads, keys.u32("ssm.time_step_rank"));
  TOVA_ASSIGN_OR_RETURN(uint32_t groups, keys.u32("ssm.group_count"));
  // The conv keeps conv_kernel - 1 inputs: a kernel of 1 would be no convolution, 0 none.
  if (conv < 2 || conv > kMaxConvKernel) {
    return make_error("{}: {} {} is out of range (2..{})", path, keys.key("ssm.conv_kernel"), conv,
                      kMaxConvKernel);
  }
  if (state < 1 || state > 4096 || inner < 1 || inner > kMaxDim || heads < 1 || heads > 4096 ||
      groups < 1 || heads % groups != 0 || inner % heads != 0) {
    return make_error(
        "{}: implausible Mamba2 shape ({} {}, {} {}, {} {}, {} {}): the inner size "
        "must be a multiple of the heads, the heads of the groups",
        path, keys.key("ssm.inner_size"), inner, keys.key("ssm.state_size"), state,
        keys.key("ssm.time_step_rank"), heads, keys.key("ssm.group_count"), groups);
  }
  c.mamba2 = {.conv_kernel = static_cast<int>(conv),
              .d_inner = static_cast<int>(inner),
              .d_state = static_cast<int>(state),
              .n_head = static_cast<int>(heads),
              .n_group = static_cast<int>(groups)};
  return ok_status();
}

Status load_mamba2(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l,
                   bool optional_bias_norm) {
  const std::string p = fmt::format("blk.{}.", il);
  const Mamba2Config& m = c.mamba2;
  const int64_t D = m.d_inner, H = m.n_head, G = m.n_group;
  l.mixer_kind = MixerKind::kMamba2;
  Mamba2Weights& w = l.mamba2;
  TOVA_ASSIGN_OR_RETURN(w.in, ld.matrix(p + "ssm_in.weight", c.n_embd, m.in_proj_dim()));
  TOVA_ASSIGN_OR_RETURN(w.conv, ld.vectors(p + "ssm_conv1d.weight", m.conv_kernel, m.conv_dim()));
  if (!optional_bias_norm || ld.has(p + "ssm_conv1d.bias")) {
    TOVA_ASSIGN_OR_RETURN(w.conv_b, ld.vector(p + "ssm_conv1d.bias", m.conv_dim()));
  }
  TOVA_ASSIGN_OR_RETURN(w.dt_bias, ld.vector(p + "ssm_dt.bias", H));
  TOVA_ASSIGN_OR_RETURN(w.a, ld.vectors(p + "ssm_a", 1, H));
  TOVA_ASSIGN_OR_RETURN(w.d, ld.vectors(p + "ssm_d", 1, H));
  if (!optional_bias_norm || ld.has(p + "ssm_norm.weight")) {
    TOVA_ASSIGN_OR_RETURN(w.norm, ld.vectors(p + "ssm_norm.weight", D / G, G));
  }
  TOVA_ASSIGN_OR_RETURN(w.out, ld.matrix(p + "ssm_out.weight", D, c.n_embd));
  return ok_status();
}

}  // namespace tova::model
