// The "no mixer" kind (layer_kinds.h): a layer whose only block is its feed-forward, as
// Nemotron-H's MLP layers are (each of its layers is one block: a Mamba2 mixer, attention, or a
// feed-forward). Such a layer mixes no tokens, so it keeps nothing per sequence in the
// multi-state (MixerState::kNothing) and its block leaves the residual stream as it is; the
// layer plan still lists it, so that everyone who walks the layers sees every layer.
#include "model/layer_kinds.h"

namespace tova::model {
namespace {

void no_mixer_block(const LayerPass& /*p*/, int /*il*/, const LayerPlan& /*lp*/,
                    const LayerWeights& /*L*/) {}

}  // namespace

extern const MixerSpec kMixerNone{.kind = MixerKind::kNone,
                                  .name = "none",
                                  .holds = MixerState::kNothing,
                                  .block = no_mixer_block};

}  // namespace tova::model
