// What the recurrent mixer kinds share (layer_kinds.h): the causal conv1d over each sequence of
// the batch through its state (DeltaNet's with silu, the short convolution's without), and
// followers ending a layer with their leader's recurrent state.
#include <algorithm>

#include "kernels/delta_rule.h"
#include "model/layer_kinds.h"

namespace tova::model {

void causal_conv_runs(const LayerPass& p, int ir, const float* w, float* x, int64_t x_stride,
                      int64_t channels, int taps, bool silu) {
  // Each sequence's tokens in order (its state carries them), in place; blocks of channels (a
  // multiple of every target's lanes) on separate threads.
  const std::vector<SequenceRun>& runs = p.s.runs;
  const int64_t n_runs = static_cast<int64_t>(runs.size());
  constexpr int64_t kConvBlock = 512;
  const int64_t n_blocks = (channels + kConvBlock - 1) / kConvBlock;
  const auto conv = silu ? kernels::causal_conv1d_silu : kernels::causal_conv1d;
  p.pool.for_each_dynamic(n_runs * n_blocks, [&](int64_t job, int) {
    const SequenceRun& run = runs[job / n_blocks];
    const int64_t c0 = (job % n_blocks) * kConvBlock, c1 = std::min(channels, c0 + kConvBlock);
    conv(run.state->recurrent(ir).conv(), w, x, x_stride, run.idx.data(),
         static_cast<int64_t>(run.idx.size()), taps, c0, c1);
  });
}

void followers_take_recurrent(const LayerPass& p, int ir) {
  // Followers ride their leader while their states are equal: they end with its state.
  for (const SequenceRun& run : p.s.runs) {
    for (kv::MultiState* f : run.followers) {
      f->recurrent(ir).copy_from(run.state->recurrent(ir));
    }
  }
}

}  // namespace tova::model
