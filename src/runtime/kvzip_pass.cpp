#include "runtime/kvzip_pass.h"

#include <algorithm>

#include "kv/policies/kvzip.h"
#include "runtime/continuation.h"
#include "runtime/sequence.h"

namespace tova::runtime {
namespace {

// Tokens per forward pass of the reconstruction (the copy never evicts: any split gives the
// same scores).
constexpr size_t kPassBatch = 256;

}  // namespace

bool cuts_by_caller(const kv::MultiState& state) {
  if (!state.policy().bounded() || state.n_layer() == 0) return false;
  return kv::kvzip_scorer(const_cast<kv::LayerState&>(state.layer(0)).policy()) != nullptr;
}

std::vector<int32_t> kvzip_reconstruction(const tok::Tokenizer& tk, std::string_view head,
                                          bool chat, std::span<const int32_t> context) {
  std::vector<int32_t> out = continuation_ids(tk, head, chat);
  const size_t skip = !context.empty() && context[0] == tk.bos() ? 1 : 0;
  out.insert(out.end(), context.begin() + skip, context.end());
  return out;
}

Result<int64_t> kvzip_cut(const model::Model& m, ThreadPool& pool, model::ForwardScratch& scratch,
                          kv::MultiState& state, std::span<const int32_t> reconstruction) {
  if (!cuts_by_caller(state)) {
    return make_error("KV policy '{}' is not cut by a scoring pass", state.policy().label());
  }
  std::unique_ptr<kv::MultiState> copy = state.clone();
  const int64_t recon_start = copy->n_seen();
  for (int il = 0; il < copy->n_layer(); ++il) {
    kv::kvzip_scorer(copy->layer(il).policy())->begin_pass(recon_start);
  }
  TOVA_RETURN_IF_ERROR(feed(m, pool, scratch, *copy, reconstruction, kPassBatch, nullptr));
  const int budget = state.policy().budget;
  for (int il = 0; il < state.n_layer(); ++il) {
    kv::LayerState& layer = state.layer(il);
    kv::kvzip_scorer(layer.policy())->set_cut_scores(
        kv::kvzip_scorer(copy->layer(il).policy())->pass_scores());
    layer.evict_to(budget, recon_start - 1);
  }
  return static_cast<int64_t>(reconstruction.size());
}

}  // namespace tova::runtime
