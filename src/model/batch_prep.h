// The batch bookkeeping of a forward call, before its first operation: which sequences the
// batch holds, their followers, room in their pools, the key/value storage types to convert
// to, and each token's position.
#pragma once

#include <span>

#include "core/result.h"
#include "model/config.h"
#include "model/forward_scratch.h"

namespace tova::model {

// Groups the batch by sequence, in order of first appearance, into runs (no followers).
void group_by_sequence(std::span<const BatchToken> batch, std::vector<SequenceRun>& runs);

// Checks the batch (token ids, states of this model, chunk sizes, followers), groups it by
// sequence into s.runs with their followers, grows every pool that cannot take this call's
// tokens (an error if memory is short: never inside a layer), marks the storage types to
// convert new keys and values to (s.conv_k, s.conv_v), and sets s.pos.
Status prepare_batch(std::span<const BatchToken> batch, std::span<const Follower> followers,
                     const ModelConfig& c, ForwardScratch& s);

}  // namespace tova::model
