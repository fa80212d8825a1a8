#include "model/tensor_loader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string_view>
#include <vector>

#include "kernels/quant.h"

namespace tova::model {

namespace {

// Shapes as ggml compares them: dims past a tensor's last are 1, so [512] and [512, 1] are one
// shape (llama-quantize writes Granite 4.0-H's ssm_norm [512, 1] of one group back as [512]).
bool same_shape(std::vector<int64_t> a, std::vector<int64_t> b) {
  while (a.size() > 1 && a.back() == 1) a.pop_back();
  while (b.size() > 1 && b.back() == 1) b.pop_back();
  return a == b;
}

}  // namespace

Result<const io::GgufTensorInfo*> TensorLoader::tensor(const std::string& name,
                                                       const std::vector<int64_t>& dims) {
  const io::GgufTensorInfo* t = f_.find_tensor(name);
  if (t == nullptr) return make_error("{}: missing tensor '{}'", f_.path(), name);
  if (!same_shape(t->dims, dims)) {
    return make_error("{}: tensor '{}' has shape [{}], expected [{}] for this architecture",
                      f_.path(), name, fmt::join(t->dims, ", "), fmt::join(dims, ", "));
  }
  if (read_.contains(name)) n_bytes_ -= t->n_bytes;  // read twice (tied output): count once
  read_.insert(name);
  n_bytes_ += t->n_bytes;
  return t;
}

Result<kernels::WeightMatrix> TensorLoader::matrix(const std::string& name, int64_t n_in,
                                                   int64_t n_out) {
  TOVA_ASSIGN_OR_RETURN(const io::GgufTensorInfo* t, tensor(name, {n_in, n_out}));
  if (!is_compute_supported(t->type)) {
    std::vector<std::string_view> names;
    for (GgmlType c : compute_types()) names.push_back(type_name(c));
    return make_error(
        "{}: tensor '{}' has weight type {}, which tova does not support "
        "(supported: {})",
        f_.path(), name, type_name(t->type), fmt::join(names, ", "));
  }
  TOVA_ASSIGN_OR_RETURN(uint64_t row, bytes_per_row(t->type, n_in));
  return kernels::WeightMatrix{
      .type = t->type, .data = t->data, .n_in = n_in, .n_out = n_out, .row_bytes = row};
}

Result<std::vector<kernels::WeightMatrix>> TensorLoader::matrices(const std::string& name,
                                                                  int64_t n_in, int64_t n_out,
                                                                  int64_t n_mat) {
  TOVA_ASSIGN_OR_RETURN(const io::GgufTensorInfo* t, tensor(name, {n_in, n_out, n_mat}));
  if (!is_compute_supported(t->type)) {
    return make_error("{}: tensor '{}' has weight type {}, which tova does not support", f_.path(),
                      name, type_name(t->type));
  }
  TOVA_ASSIGN_OR_RETURN(uint64_t row, bytes_per_row(t->type, n_in));
  std::vector<kernels::WeightMatrix> ms;
  ms.reserve(n_mat);
  for (int64_t e = 0; e < n_mat; ++e) {
    ms.push_back({.type = t->type,
                  .data = t->data + static_cast<uint64_t>(e) * n_out * row,
                  .n_in = n_in,
                  .n_out = n_out,
                  .row_bytes = row});
  }
  return ms;
}

Status TensorLoader::unused(const std::string& name, const std::vector<int64_t>& dims) {
  const bool counted = read_.contains(name);
  TOVA_ASSIGN_OR_RETURN(const io::GgufTensorInfo* t, tensor(name, dims));
  if (!counted) n_bytes_ -= t->n_bytes;
  return ok_status();
}

kernels::WeightMatrix TensorLoader::rows(const kernels::WeightMatrix& m, int64_t row0,
                                         int64_t n_rows) {
  kernels::WeightMatrix r = m;
  r.data = m.data + static_cast<uint64_t>(row0) * m.row_bytes;
  r.n_out = n_rows;
  return r;
}

Result<std::vector<float>> TensorLoader::vector(const std::string& name, int64_t n) {
  return vectors_of(name, {n});
}

Result<std::vector<float>> TensorLoader::vectors(const std::string& name, int64_t n,
                                                 int64_t n_vec) {
  return vectors_of(name, {n, n_vec});
}

Result<std::vector<float>> TensorLoader::vectors_of(const std::string& name,
                                                    const std::vector<int64_t>& dims) {
  TOVA_ASSIGN_OR_RETURN(const io::GgufTensorInfo* t, tensor(name, dims));
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  if (t->type != GgmlType::kF32 && t->type != GgmlType::kF16 && t->type != GgmlType::kBF16) {
    return make_error("{}: tensor '{}' has type {}, expected f32, f16 or bf16", f_.path(), name,
                      type_name(t->type));
  }
  std::vector<float> v(n);
  kernels::dequantize_row_ref(t->type, t->data, v.data(), n);
  return v;
}

Status TensorLoader::check_all_read(const std::string& arch) const {
  for (const io::GgufTensorInfo& t : f_.tensors()) {
    if (read_.contains(t.name)) continue;
    return make_error(
        "{}: tensor '{}' is not used by tova's '{}' architecture (a model that "
        "needs it would compute something else; see docs/ARCHITECTURES.md)",
        f_.path(), t.name, arch);
  }
  return ok_status();
}

}  // namespace tova::model
