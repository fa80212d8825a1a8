// The mixer kinds' registry (mixer_registry.cpp) and the layer plan built from it at load
// (layer_plan.h): every kind listed once with a block, a recurrent kind with its state's shape;
// on fixtures of every state kind, each layer's state index counts the layers of its kind and a
// shared-K/V layer points at its owner's; a plan that disagrees with the layer pattern is one
// error.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "model/layer_kinds.h"
#include "model/model_test_util.h"

namespace tova::testing {
namespace {

std::string plan_fixture(const std::string& name) {
  return std::string(TOVA_TEST_DATA_DIR) + "/arch/" + name + "-f32.gguf";
}

TEST(LayerPlan, EveryMixerKindIsListedOnceWithItsBlock) {
  std::set<std::string> names;
  std::set<model::MixerKind> kinds;
  for (const model::MixerSpec* m : model::all_mixers()) {
    SCOPED_TRACE(m->name);
    EXPECT_TRUE(names.insert(m->name).second);
    EXPECT_TRUE(kinds.insert(m->kind).second);
    EXPECT_NE(m->block, nullptr);
    EXPECT_EQ(m->recurrent_shape != nullptr, m->holds == model::MixerState::kRecurrent ||
                                                 m->holds == model::MixerState::kKvAndRecurrent);
    EXPECT_EQ(&model::mixer_spec(m->kind), m);
  }
}

// gemma4e: six attention layers then three reading the K/V of layers 4, 4 and 5; qwen35:
// three DeltaNet layers before each attention layer; lfm2: convolutions around attention at 2
// and 5; falcon-h1: attention beside Mamba2 in every layer (a K/V layer and a recurrent state
// each). The multi-state's sizes are the plan's counts.
TEST(LayerPlan, StateIndicesCountEachKindAndSharedLayersPointAtTheirOwner) {
  for (const char* name : {"gemma4e", "qwen35", "lfm2", "qwen3", "falcon-h1"}) {
    SCOPED_TRACE(name);
    auto m = model::Model::load(plan_fixture(name));
    ASSERT_TRUE(m.ok()) << m.message();
    const model::ModelConfig& c = (*m)->config();
    int n_kv = 0, n_recurrent = 0;
    for (int il = 0; il < c.n_layer; ++il) {
      const model::LayerPlan& lp = (*m)->plan()[il];
      EXPECT_EQ(lp.mixer, (*m)->weights().layers[il].mixer_kind) << il;
      switch (lp.holds) {
        case model::MixerState::kKv:
          EXPECT_EQ(lp.state, n_kv++) << il;
          EXPECT_EQ(lp.owner, il);
          break;
        case model::MixerState::kRecurrent:
          EXPECT_EQ(lp.state, n_recurrent++) << il;
          EXPECT_EQ(lp.owner, il);
          break;
        case model::MixerState::kOwners:
          EXPECT_EQ(lp.owner, c.layer_kv_owner[il]) << il;
          EXPECT_EQ(lp.state, (*m)->plan()[lp.owner].state) << il;
          break;
        case model::MixerState::kKvAndRecurrent:
          EXPECT_EQ(lp.state, n_kv++) << il;
          EXPECT_EQ(lp.recurrent, n_recurrent++) << il;
          EXPECT_EQ(lp.owner, il);
          break;
        case model::MixerState::kNothing:
          EXPECT_EQ(lp.state, -1) << il;
          break;
      }
    }
    auto st = runtime::make_state(**m, cache_options("full", 0), 0);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ((*st)->n_layer(), n_kv);
    EXPECT_EQ((*st)->n_recurrent(), n_recurrent);
  }
}

TEST(LayerPlan, KindsThatDisagreeWithThePatternAreOneError) {
  auto m = model::Model::load(plan_fixture("lfm2"));
  ASSERT_TRUE(m.ok()) << m.message();
  model::ModelConfig c = (*m)->config();
  c.layer_recurrent[0] = false;  // the pattern says attention, the loader chose a convolution
  auto plan = model::plan_layers(c, (*m)->weights());
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.message(), "layer 0: loaded as a shortconv layer, which the layer pattern does "
                            "not say");
}

}  // namespace
}  // namespace tova::testing
