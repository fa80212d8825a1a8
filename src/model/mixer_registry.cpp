// The list of token mixer kinds: the only place that names them all. One line per MixerSpec
// that a layer_*.cpp file defines. And the layer plan built from it (layer_plan.h).
#include "core/check.h"
#include "model/layer_kinds.h"

#define TOVA_MIXERS(X) \
  X(kMixerAttention)   \
  X(kMixerSharedKv)    \
  X(kMixerDeltaNet)    \
  X(kMixerShortConv)   \
  X(kMixerMamba2)      \
  X(kMixerNone)        \
  X(kMixerAttnMamba2)

namespace tova::model {

#define TOVA_DECLARE_MIXER(spec) extern const MixerSpec spec;
TOVA_MIXERS(TOVA_DECLARE_MIXER)

namespace {
#define TOVA_LIST_MIXER(spec) &spec,
constexpr const MixerSpec* kMixers[] = {TOVA_MIXERS(TOVA_LIST_MIXER)};
}  // namespace

std::span<const MixerSpec* const> all_mixers() { return kMixers; }

const MixerSpec& mixer_spec(MixerKind kind) {
  for (const MixerSpec* m : kMixers) {
    if (m->kind == kind) return *m;
  }
  TOVA_CHECK(false && "a MixerKind without a line in mixer_registry.cpp");
  return *kMixers[0];
}

Result<std::vector<LayerPlan>> plan_layers(const ModelConfig& c, const ModelWeights& w) {
  std::vector<LayerPlan> plan(c.n_layer);
  int n_kv = 0, n_recurrent = 0;
  for (int il = 0; il < c.n_layer; ++il) {
    const MixerSpec& m = mixer_spec(w.layers[il].mixer_kind);
    LayerPlan& lp = plan[il];
    lp = {.mixer = m.kind, .holds = m.holds, .owner = il};
    if (m.holds == MixerState::kKv) lp.state = n_kv++;
    if (m.holds == MixerState::kRecurrent) lp.state = n_recurrent++;
    if (m.holds == MixerState::kKvAndRecurrent) {
      lp.state = n_kv++;
      lp.recurrent = n_recurrent++;
    }
    if (m.holds == MixerState::kOwners) {
      const int o = c.shared_kv(il) ? c.layer_kv_owner[il] : -1;
      if (o < 0 || o >= il || plan[o].holds != MixerState::kKv) {
        return make_error("layer {}: a {} layer whose K/V owner ({}) is no earlier layer with "
                          "K/V of its own",
                          il, m.name, o);
      }
      lp.owner = o;
      lp.state = plan[o].state;
    }
    // The multi-state is sized from the config's pattern (batch_prep.cpp checks it): the kinds
    // the loader chose must agree with it.
    if ((m.holds == MixerState::kRecurrent) != c.recurrent(il) ||
        (m.holds == MixerState::kOwners) != c.shared_kv(il) ||
        (m.holds == MixerState::kNothing) != c.ffn_only(il) ||
        (m.holds == MixerState::kKvAndRecurrent) != c.parallel(il)) {
      return make_error("layer {}: loaded as a {} layer, which the layer pattern does not say",
                        il, m.name);
    }
  }
  return plan;
}

}  // namespace tova::model
