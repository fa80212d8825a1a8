// Reads a GGUF's tensors for the model loader, checked against the architecture's shapes, and
// remembers every tensor it read, so the loader can refuse a file with a tensor it does not use
// (an unused tensor is part of a model tova would otherwise compute wrongly without a word).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/result.h"
#include "io/gguf.h"
#include "kernels/matmul.h"

namespace tova::model {

class TensorLoader {
 public:
  explicit TensorLoader(const io::GgufFile& f) : f_(f) {}

  const io::GgufFile& file() const { return f_; }
  bool has(const std::string& name) const { return f_.find_tensor(name) != nullptr; }

  // A matrix with ggml dims {n_in, n_out}, in a type the matmul kernels compute with.
  Result<kernels::WeightMatrix> matrix(const std::string& name, int64_t n_in, int64_t n_out);
  // A stack of n_mat matrices with ggml dims {n_in, n_out, n_mat} (a mixture's experts), one
  // view per matrix.
  Result<std::vector<kernels::WeightMatrix>> matrices(const std::string& name, int64_t n_in,
                                                      int64_t n_out, int64_t n_mat);
  // Rows [row0, row0 + n_rows) of a matrix (a fused matrix split into its parts).
  static kernels::WeightMatrix rows(const kernels::WeightMatrix& m, int64_t row0, int64_t n_rows);
  // A vector of n floats (stored as f32, f16 or bf16), converted to float32.
  Result<std::vector<float>> vector(const std::string& name, int64_t n);
  // n_vec vectors of n floats, ggml dims {n, n_vec} (a mixture's per-expert biases), one after
  // the other.
  Result<std::vector<float>> vectors(const std::string& name, int64_t n, int64_t n_vec);

  // A tensor the file may carry that the architecture reads nowhere and that changes nothing
  // (llama.cpp reads it nowhere either): its shape is checked, it counts as read (not as bytes
  // streamed). Gemma 4's shared-K/V layers may carry K projections they never compute.
  Status unused(const std::string& name, const std::vector<int64_t>& dims);

  // Bytes of tensor data read so far (what the forward pass streams).
  uint64_t n_bytes() const { return n_bytes_; }
  // The tensors read so far, sorted.
  std::vector<std::string> tensors_read() const { return {read_.begin(), read_.end()}; }
  // One error naming the first tensor of the file that was not read.
  Status check_all_read(const std::string& arch) const;

 private:
  Result<const io::GgufTensorInfo*> tensor(const std::string& name,
                                           const std::vector<int64_t>& dims);
  Result<std::vector<float>> vectors_of(const std::string& name, const std::vector<int64_t>& dims);

  const io::GgufFile& f_;
  uint64_t n_bytes_ = 0;
  std::set<std::string> read_;
};

}  // namespace tova::model
