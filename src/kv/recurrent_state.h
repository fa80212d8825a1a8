// The state of a recurrent layer (Gated DeltaNet, short convolution, Mamba2): a fixed size,
// whatever the number of tokens seen, so no policy bounds it and no budget counts it. It holds
// what the layer carries from one token to the next:
//   conv   [conv_channels][conv_taps]     the last conv_taps inputs of each channel of the causal
//                                         conv1d (conv_taps = kernel size - 1), oldest first
//   delta  [n_head][head_dim][state_cols] per head its matrix: DeltaNet's delta-rule matrix S
//                                         (square), stored as llama.cpp stores it: element [j][i]
//                                         is S[i][j] (row j of the stored matrix is column j of
//                                         S); Mamba2's SSM state, head_dim rows of d_state
//                                         (state_cols) as llama.cpp stores it
// Both in float32, both zero before the first token. A recurrent state cannot be cut back to a
// shorter prefix of its tokens: only a whole state (or a copy of it) continues a sequence.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/result.h"

namespace tova::kv {

struct RecurrentShape {
  int conv_channels = 0;
  int conv_taps = 0;  // kernel size - 1
  int n_head = 0;
  int head_dim = 0;
  int state_cols = 0;  // columns of a head's matrix; 0: head_dim (square, DeltaNet)
  int64_t cols() const { return state_cols > 0 ? state_cols : head_dim; }
  int64_t conv_floats() const { return int64_t{conv_channels} * conv_taps; }
  int64_t delta_floats() const { return int64_t{n_head} * head_dim * cols(); }
  bool operator==(const RecurrentShape&) const = default;
};

class RecurrentState {
 public:
  // Zero state; may throw std::bad_alloc (MultiState::create turns it into an error).
  explicit RecurrentState(const RecurrentShape& shape);

  const RecurrentShape& shape() const { return shape_; }
  float* conv() { return conv_.data(); }
  const float* conv() const { return conv_.data(); }
  float* delta() { return delta_.data(); }
  const float* delta() const { return delta_.data(); }
  // Bytes held (both parts).
  uint64_t bytes() const { return (conv_.size() + delta_.size()) * sizeof(float); }
  // Copies another state of the same shape (a follower taking its leader's state).
  void copy_from(const RecurrentState& other);
  // Replaces the contents with saved ones (session files); an error (sizes that do not match
  // the shape, a value that is not finite) changes nothing.
  Status restore(std::span<const float> conv, std::span<const float> delta);

 private:
  RecurrentShape shape_;
  std::vector<float> conv_;
  std::vector<float> delta_;
};

}  // namespace tova::kv
