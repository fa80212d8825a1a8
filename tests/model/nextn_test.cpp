// Files with a multi-token prediction (MTP) block (qwen35-mtp, qwen35moe-mtp, qwen3next-mtp
// fixtures: 4 main layers and the block as blk.4, as llama.cpp's converter writes Qwen3.5 and
// Qwen3-Next files): they load, the
// block's tensors are read once and counted apart from what the main pass streams, the main
// model's logits are bit for bit those of the same file with the block taken out (against
// llama.cpp's: arch_golden_test.cpp, which runs every registered fixture), and a malformed
// block is one error naming the tensor or key at fault.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "model/config.h"
#include "model/model_test_util.h"
#include "model/weights.h"

namespace tova::testing {
namespace {

std::string mtp_fixture(const std::string& family) {
  return std::string(TOVA_TEST_DATA_DIR) + "/arch/" + family + "-mtp-f32.gguf";
}

bool in_block(const std::string& tensor, int il) {
  return tensor.starts_with("blk." + std::to_string(il) + ".");
}

// The fixture rewritten: tensors dropped or replaced (by name), keys set, the block removed.
struct Rewrite {
  std::vector<std::string> drop;
  std::vector<std::pair<std::string, io::GgufValue>> keys;
  std::vector<std::string> drop_keys;
  bool remove_block = false;          // no block, block_count 4, no nextn key
  std::vector<int64_t> eh_proj_dims;  // non-empty: eh_proj reshaped (same bytes)
  std::string extra;                  // non-empty: a copy of enorm under this name
};

Result<std::unique_ptr<model::Model>> load_rewritten(const std::string& family, const Rewrite& r) {
  TOVA_ASSIGN_OR_RETURN(auto f, io::GgufFile::open(mtp_fixture(family), io::GgufFile::Load::kRead));
  const std::string a = family + ".";
  io::GgufWriter out;
  for (const auto& [k, v] : f->metadata()) {
    if (r.remove_block && k == a + "nextn_predict_layers") continue;
    if (std::find(r.drop_keys.begin(), r.drop_keys.end(), k) != r.drop_keys.end()) continue;
    out.set(k, v);
  }
  if (r.remove_block) out.set(a + "block_count", io::GgufValue::make_u32(4));
  for (const auto& [k, v] : r.keys) out.set(k, v);
  for (const auto& t : f->tensors()) {
    if (std::find(r.drop.begin(), r.drop.end(), t.name) != r.drop.end()) continue;
    if (r.remove_block && in_block(t.name, 4)) continue;
    std::vector<int64_t> dims = t.dims;
    if (t.name == "blk.4.nextn.eh_proj.weight" && !r.eh_proj_dims.empty()) dims = r.eh_proj_dims;
    out.add_tensor(t.name, t.type, dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
    if (!r.extra.empty() && t.name == "blk.4.nextn.enorm.weight") {
      out.add_tensor(r.extra, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
    }
  }
  TOVA_ASSIGN_OR_RETURN(auto g, io::GgufFile::from_bytes(out.to_bytes(), "mtp.gguf"));
  return model::Model::from_file(std::move(g));
}

std::string load_error(const std::string& family, const Rewrite& r) {
  auto m = load_rewritten(family, r);
  return m.ok() ? "" : m.message();
}

class Mtp : public ::testing::TestWithParam<std::string> {};

TEST_P(Mtp, TheBlockLoadsOnceBesideTheMainStack) {
  auto m = model::Model::load(mtp_fixture(GetParam()));
  ASSERT_TRUE(m.ok()) << m.message();
  const model::ModelConfig& c = (*m)->config();
  EXPECT_EQ(c.n_layer, 4);
  EXPECT_EQ(c.n_nextn, 1);
  const model::ModelWeights& w = (*m)->weights();
  ASSERT_EQ(w.layers.size(), 4u);
  ASSERT_EQ(w.nextn.size(), 1u);
  const model::NextnWeights& n = w.nextn[0];
  EXPECT_EQ(n.layer.mixer_kind, model::MixerKind::kAttention);
  EXPECT_TRUE(n.layer.q_gate);
  EXPECT_EQ(n.layer.ffn_kind,
            GetParam() == "qwen35" ? model::FfnKind::kDense : model::FfnKind::kMoe);
  EXPECT_EQ(n.eh_proj.n_in, 2 * c.n_embd);
  EXPECT_EQ(n.eh_proj.n_out, c.n_embd);
  EXPECT_EQ(n.enorm.size(), static_cast<size_t>(c.n_embd));
  EXPECT_EQ(n.hnorm.size(), static_cast<size_t>(c.n_embd));
  // The converter writes shared_head_norm and shares the embedding and the output matrix.
  EXPECT_EQ(n.embed.data, w.token_embd.data);
  EXPECT_EQ(n.head.data, w.output.data);
  EXPECT_NE(n.head_norm, w.output_norm);
  // Memory: the block's tensors (every blk.4.*) apart from what the main pass streams.
  uint64_t block = 0, rest = 0;
  for (const io::GgufTensorInfo& t : (*m)->file().tensors()) {
    (in_block(t.name, 4) ? block : rest) += t.n_bytes;
  }
  EXPECT_GT(block, 0u);
  EXPECT_EQ(w.n_bytes_nextn, block);
  EXPECT_EQ(w.n_bytes, rest);
  auto without = load_rewritten(GetParam(), {.remove_block = true});
  ASSERT_TRUE(without.ok()) << without.message();
  EXPECT_EQ((*without)->weights().n_bytes, w.n_bytes);
  EXPECT_EQ((*without)->weights().n_bytes_nextn, 0u);
  EXPECT_EQ((*without)->config().n_nextn, 0);
}

// The block changes nothing the main pass computes: every position's logits, bit for bit,
// under `full` and a bounded policy, are those of the file with the block taken out.
TEST_P(Mtp, MainLogitsAreTheFileWithoutTheBlocksBitForBit) {
  TOVA_REQUIRE_SHARED();
  auto with = model::Model::load(mtp_fixture(GetParam()));
  ASSERT_TRUE(with.ok()) << with.message();
  auto without = load_rewritten(GetParam(), {.remove_block = true});
  ASSERT_TRUE(without.ok()) << without.message();
  auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ids.resize(48);
  ThreadPool pool(2);
  for (const char* policy : {"full", "window"}) {
    const auto a = all_logits(**with, ids, cache_options(policy, 16), 8, pool);
    const auto b = all_logits(**without, ids, cache_options(policy, 16), 8, pool);
    EXPECT_TRUE(a == b) << policy;
  }
}

TEST_P(Mtp, AMalformedBlockIsOneErrorNamingTheTensor) {
  const std::string& f = GetParam();
  ASSERT_EQ(load_error(f, {}), "");
  std::vector<std::string> tensors = {"blk.4.nextn.eh_proj.weight",      "blk.4.nextn.enorm.weight",
                                      "blk.4.nextn.hnorm.weight",        "blk.4.attn_q.weight",
                                      "blk.4.attn_k_norm.weight",        "blk.4.attn_output.weight",
                                      "blk.4.post_attention_norm.weight"};
  if (f != "qwen35") {  // qwen35moe, qwen3next: the block's feed-forward is the mixture
    tensors.push_back("blk.4.ffn_gate_exps.weight");
    tensors.push_back("blk.4.ffn_down_shexp.weight");
  } else {
    tensors.push_back("blk.4.ffn_down.weight");
  }
  for (const std::string& t : tensors) {
    const std::string e = load_error(f, {.drop = {t}});
    EXPECT_NE(e.find("'" + t + "'"), std::string::npos) << t << ": " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  // A wrong shape names the tensor and both shapes.
  std::string e = load_error(f, {.eh_proj_dims = {64, 128}});
  EXPECT_NE(e.find("'blk.4.nextn.eh_proj.weight' has shape [64, 128], expected [128, 64]"),
            std::string::npos)
      << e;
  // A tensor of the block tova does not read is refused by name, never ignored.
  e = load_error(f, {.extra = "blk.4.nextn.unknown.weight"});
  EXPECT_NE(e.find("'blk.4.nextn.unknown.weight' is not used"), std::string::npos) << e;
  // The key: as many blocks as block_count leaves no main layer.
  e = load_error(f, {.keys = {{f + ".nextn_predict_layers", io::GgufValue::make_u32(5)}}});
  EXPECT_NE(e.find(f + ".nextn_predict_layers 5 leaves no main layer of " + f + ".block_count 5"),
            std::string::npos)
      << e;
  // Two blocks claimed, one there: the main stack is 3 DeltaNet layers, no attention layer.
  e = load_error(f, {.keys = {{f + ".nextn_predict_layers", io::GgufValue::make_u32(2)}}});
  EXPECT_NE(e.find("leaves no attention layer"), std::string::npos) << e;
  // No block claimed: its tensors are unused.
  e = load_error(f, {.keys = {{f + ".nextn_predict_layers", io::GgufValue::make_u32(0)}}});
  EXPECT_NE(e.find("'blk.4."), std::string::npos) << e;
  // A layer pattern (one entry per block, as llama.cpp reads it) that makes the block
  // recurrent.
  const std::string interval = f + ".full_attention_interval";
  e = load_error(f, {.keys = {{f + ".attention.recurrent_layers",
                               io::GgufValue::make_i32_array({1, 1, 1, 0, 1})}},
                     .drop_keys = {interval}});
  EXPECT_NE(e.find("makes block 4 recurrent"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  // The pattern given per block, the block's entry 0: loads.
  e = load_error(f, {.keys = {{f + ".attention.recurrent_layers",
                               io::GgufValue::make_i32_array({1, 1, 1, 0, 0})}},
                     .drop_keys = {interval}});
  EXPECT_EQ(e, "");
}

INSTANTIATE_TEST_SUITE_P(Families, Mtp, ::testing::Values("qwen35", "qwen35moe", "qwen3next"));

}  // namespace
}  // namespace tova::testing
