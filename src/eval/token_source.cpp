#include "eval/token_source.h"

namespace tova::eval {

TokenSource::TokenSource(const model::Model& m, uint64_t seed) : rng_(seed) {
  const io::GgufFile& f = m.file();
  const int n_vocab = m.config().n_vocab;
  std::vector<int32_t> types;
  if (f.find("tokenizer.ggml.token_type") != nullptr) {
    auto t = f.get_i32_array("tokenizer.ggml.token_type");
    if (t.ok() && t->size() == static_cast<size_t>(n_vocab)) types = std::move(*t);
  }
  for (int32_t id = 0; id < n_vocab; ++id) {
    if (types.empty() || types[id] == 1) ids_.push_back(id);  // 1: normal
  }
  if (ids_.empty()) {
    for (int32_t id = 0; id < n_vocab; ++id) ids_.push_back(id);
  }
  bool add_bos = true;
  if (f.find("tokenizer.ggml.add_bos_token") != nullptr) {
    auto a = f.get_bool("tokenizer.ggml.add_bos_token");
    if (a.ok()) add_bos = *a;
  }
  if (add_bos && f.find("tokenizer.ggml.bos_token_id") != nullptr) {
    auto b = f.get_u32("tokenizer.ggml.bos_token_id");
    if (b.ok() && *b < static_cast<uint32_t>(n_vocab)) bos_ = static_cast<int32_t>(*b);
  }
}

std::vector<int32_t> TokenSource::draw(int n, bool fresh) {
  std::vector<int32_t> t(n);
  std::uniform_int_distribution<size_t> pick(0, ids_.size() - 1);
  for (int i = 0; i < n; ++i) t[i] = ids_[pick(rng_)];
  if (fresh && bos_ >= 0 && n > 0) t[0] = bos_;
  return t;
}

}  // namespace tova::eval
