// KVzip's scoring pass (kv/policies/kvzip.cpp; the rule: docs/POLICIES-EXTRA.md): a state whose
// policy cuts only when a caller asks (LayerPlan::cut_by_caller) is cut here. On a copy of the
// state the model is fed the reconstruction prompt, "Repeat the previous context:" (a user turn
// in the model's chat template when it has one) followed by the context, teacher-forced; every
// held state scores the largest attention it receives from those rows over the query heads of
// its KV group, and each KV head of the state keeps its k highest. The copy, with the
// reconstruction's own states, is dropped.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "kv/multi_state.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace tova::runtime {

inline constexpr std::string_view kKvzipInstruction = "Repeat the previous context:";

// True if some layer of the state evicts only when a caller cuts it (kvzip).
bool cuts_by_caller(const kv::MultiState& state);

// The tokens fed after a state to reconstruct `context` (its tokens; a leading BOS is not
// repeated): `head`, the instruction as the conversation's next user turn with the assistant's
// header after it in the model's chat template (encoded with special tokens), or raw text
// (kKvzipRawHead); then the context.
inline constexpr std::string_view kKvzipRawHead = " Repeat the previous context:";
std::vector<int32_t> kvzip_reconstruction(const tok::Tokenizer& tk, std::string_view head,
                                          bool chat, std::span<const int32_t> context);

// Scores every held state by the pass over `reconstruction` (on a copy) and cuts `state` to its
// budget. Returns the tokens the pass processed (its cost).
Result<int64_t> kvzip_cut(const model::Model& m, ThreadPool& pool, model::ForwardScratch& scratch,
                          kv::MultiState& state, std::span<const int32_t> reconstruction);

}  // namespace tova::runtime
