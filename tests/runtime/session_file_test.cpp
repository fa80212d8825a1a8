// Session files (runtime/session_file.h): for every policy and position mode, 300 tokens, save,
// load, 200 more == 500 in one go, bit for bit; a bounded policy's file has the same size after
// 2,000 and 20,000 tokens; truncated, corrupted, foreign and other-version files are refused;
// the K/V storage types travel with the state, and hostile type tags or block counts are refused.
#include <gtest/gtest.h>

#include <cstring>
#include <tuple>

#include "core/hash.h"

#include "model/model_test_util.h"
#include "runtime/session_file.h"
#include "runtime/session_impl.h"
#include "tova/engine.h"
#include "tova/session.h"

namespace tova::testing {
namespace {

using runtime::SessionData;

CacheOptions options(const std::string& policy, int budget, kv::PositionMode mode) {
  CacheOptions o = cache_options(policy, budget);
  o.positions = mode;
  return o;
}

// Logits of ids[from..to) fed in micro-batches of kBatch into state.
constexpr size_t kBatch = 50;
std::vector<float> feed_logits(const model::Model& m, kv::MultiState& state,
                               const std::vector<int32_t>& ids, size_t from, size_t to,
                               ThreadPool& pool) {
  const int n_vocab = m.config().n_vocab;
  model::ForwardScratch scratch;
  std::vector<float> out((to - from) * n_vocab);
  for (size_t i0 = from; i0 < to; i0 += kBatch) {
    std::vector<model::BatchToken> batch;
    for (size_t i = i0; i < std::min(to, i0 + kBatch); ++i) batch.push_back({ids[i], &state, true});
    EXPECT_TRUE(m.forward(batch, pool, scratch, &out[(i0 - from) * n_vocab]).ok());
  }
  return out;
}

// 300 tokens, save, load, 200 more == 500 in one go, bit for bit, for each (policy, mode).
void round_trip(const std::vector<std::string>& policies,
                const std::vector<kv::PositionMode>& modes,
                const std::string& model_path = "") {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(model_path.empty() ? shared_path("models/stories260K.gguf")
                                                 : model_path);
  ASSERT_TRUE(m.ok()) << m.message();
  auto ids = read_ids(shared_path("golden/tokens-1024.json"));
  ids.resize(500);
  ThreadPool pool(2);
  const int n_vocab = (*m)->config().n_vocab;
  for (kv::PositionMode mode : modes) {
    for (const std::string& p : policies) {
      SCOPED_TRACE(p + " " + std::string(kv::position_mode_name(mode)));
      // A 100-token prompt: prompt-holding policies cut it, then save what they chose.
      auto one = runtime::make_state(**m, options(p, 64, mode), 100);
      // A policy that scores pre-RoPE queries against keys stored after RoPE
      // (expected-attention) refuses the modes that store keys before it.
      if (!one.ok() && mode != kv::PositionMode::kAbsolute &&
          one.message().find("needs the absolute position mode") != std::string::npos) {
        continue;
      }
      ASSERT_TRUE(one.ok()) << one.message();
      const auto want = feed_logits(**m, **one, ids, 0, 500, pool);

      auto first = runtime::make_state(**m, options(p, 64, mode), 100);
      ASSERT_TRUE(first.ok());
      feed_logits(**m, **first, ids, 0, 300, pool);
      SessionData d{.state = std::move(first).value(), .history = {1, 2, 3}, .pending = 7};
      d.logits.assign(n_vocab, 0.5f);
      d.rng_state = "not checked here";
      const auto bytes = runtime::encode_session(**m, d);
      auto back = runtime::decode_session_bytes(**m, bytes);
      ASSERT_TRUE(back.ok()) << back.message();
      EXPECT_EQ(back->history, d.history);
      EXPECT_EQ(back->pending, 7);
      EXPECT_EQ(back->logits, d.logits);
      EXPECT_EQ(back->rng_state, d.rng_state);
      EXPECT_EQ(back->state->n_seen(), 300);
      EXPECT_EQ(back->state->positions(), mode);
      // Re-encoding gives the same bytes.
      EXPECT_EQ(runtime::encode_session(**m, *back), bytes);
      const auto got = feed_logits(**m, *back->state, ids, 300, 500, pool);
      EXPECT_EQ(0, std::memcmp(got.data(), &want[300 * n_vocab], got.size() * sizeof(float)));
    }
  }
}

TEST(SessionFile, RoundTripEveryPolicyAbsoluteIsBitIdentical) {
  round_trip(every_policy(), {kv::PositionMode::kAbsolute});
}

// Moved position modes (gap, rank): keys are re-rotated at every step, so these also check that
// RoPE's bits do not depend on where its inputs sit in memory (see
// OpsTest.RopeBitsDoNotDependOnAddresses); scoring policies' scores travel in the file too.
TEST(SessionFile, RoundTripEveryPolicyMovedPositionsIsBitIdentical) {
  round_trip(every_policy(), {kv::PositionMode::kGap, kv::PositionMode::kRank});
}

// A model with sliding-window layers (the gemma3 fixture: five layers of window 16, one global):
// window layers are bounded by their window under every policy, and that travels too.
TEST(SessionFile, RoundTripWithSlidingWindowLayersIsBitIdentical) {
  round_trip(every_policy(), {kv::PositionMode::kAbsolute, kv::PositionMode::kGap},
             std::string(TOVA_TEST_DATA_DIR) + "/arch/gemma3-f32.gguf");
}

TEST(SessionFile, SizeDoesNotGrowWithTokensSeenUnderABoundedPolicy) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  auto base = read_ids(shared_path("golden/tokens-1024.json"));
  std::vector<int32_t> ids;
  while (ids.size() < 20000) ids.insert(ids.end(), base.begin() + 1, base.end());
  ThreadPool pool(2);
  model::ForwardScratch scratch;
  std::vector<size_t> sizes;
  for (size_t n : {size_t{2000}, size_t{20000}}) {
    auto st = runtime::make_state(**m, options("tova", 64, kv::PositionMode::kGap), 0);
    ASSERT_TRUE(st.ok());
    std::vector<float> logits((*m)->config().n_vocab);
    ASSERT_TRUE(runtime::feed(**m, pool, scratch, **st, {ids.data(), n}, 256, logits.data()).ok());
    SessionData d{.state = std::move(st).value(),
                  .history = {ids.begin(), ids.begin() + n},
                  .logits = logits};
    sizes.push_back(runtime::encode_session(**m, d).size());
  }
  EXPECT_EQ(sizes[0], sizes[1]);
}

// The payload of an encoded file with its header's size and checksum made to fit again (so that
// a change reaches the field checks, not the checksum).
std::vector<uint8_t> resealed(std::vector<uint8_t> b) {
  const uint64_t size = b.size() - 32, hash = fnv1a(b.data() + 32, size);
  std::memcpy(&b[16], &size, 8);
  std::memcpy(&b[24], &hash, 8);
  return b;
}

// Offset of the key type tag in a version 2 file of a policy named `name`: header (32),
// fingerprint (8), name (4 + n), arg and budget (8), position mode (1).
size_t key_tag_at_v2(const std::string& name) { return 32 + 8 + 4 + name.size() + 8 + 1; }
// In a version 3 file of a model without recurrent layers: the architecture (4 + its length) and
// the recurrent state count (4) come after the fingerprint.
size_t key_tag_at(const std::string& name, const std::string& arch = "llama") {
  return key_tag_at_v2(name) + 4 + arch.size() + 4;
}
// A version 4 file of a state without images as version 3 wrote it: without the image marks
// (u8 kept, u32 most kept, u32 count) after the tokens seen (key types 7 bytes, chunk size 4,
// tokens seen 8 after the key tag).
std::vector<uint8_t> as_version_3(const std::vector<uint8_t>& v4, const std::string& name) {
  const size_t at = key_tag_at(name) + 7 + 4 + 8;
  std::vector<uint8_t> v3(v4.begin(), v4.begin() + at);
  v3.insert(v3.end(), v4.begin() + at + 9, v4.end());
  v3[8] = 3;
  return resealed(v3);
}
// A version 3 file of a model without recurrent layers as version 2 wrote it.
std::vector<uint8_t> as_version_2(const std::vector<uint8_t>& v3, const std::string& arch) {
  std::vector<uint8_t> v2(v3.begin(), v3.begin() + 40);
  v2.insert(v2.end(), v3.begin() + 40 + 4 + arch.size() + 4, v3.end());
  v2[8] = 2;
  return resealed(v2);
}

// Found by the session_file harness (issue 49's campaign): a file whose architecture held a
// newline made the error quote it on two lines. A name read from a file is printable ASCII, or
// a one-line error naming the field; the same for the policy name.
TEST(SessionFile, ANameThatIsNotPrintableIsAOneLineError) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(m.ok());
  auto st = runtime::make_state(**m, options("tova", 8, kv::PositionMode::kGap), 0);
  ASSERT_TRUE(st.ok());
  SessionData d{.state = std::move(st).value()};
  const std::vector<uint8_t> good = runtime::encode_session(**m, d);
  ASSERT_TRUE(runtime::decode_session_bytes(**m, good).ok());
  // The architecture ("llama" after the fingerprint and its length) and the policy name ("tova"
  // after the recurrent state count), each with its second byte made a newline, then 0xFF.
  const size_t arch_at = 32 + 8 + 4, name_at = arch_at + 5 + 4 + 4;
  ASSERT_EQ(std::string(good.begin() + arch_at, good.begin() + arch_at + 5), "llama");
  ASSERT_EQ(std::string(good.begin() + name_at, good.begin() + name_at + 4), "tova");
  for (const auto& [at, what] : {std::pair{arch_at, "architecture"}, {name_at, "policy name"}}) {
    for (const uint8_t byte : {uint8_t{'\n'}, uint8_t{0xFF}}) {
      std::vector<uint8_t> b = good;
      b[at + 1] = byte;
      auto r = runtime::decode_session_bytes(**m, resealed(b));
      ASSERT_FALSE(r.ok()) << what;
      EXPECT_EQ(r.message().find('\n'), std::string::npos) << r.message();
      EXPECT_NE(r.message().find(what), std::string::npos) << r.message();
      EXPECT_NE(r.message().find("is not a name"), std::string::npos) << r.message();
    }
  }
}

// Every storage format travels with the state: 300 tokens, save, load (the same format, the same
// bytes when saved again), 100 more == 400 in one go, bit for bit. Hostile type tags, rotation
// flags and block counts are one clear error; a version 1 file (one type tag) still loads; a
// state loaded into another format is converted.
TEST(SessionFile, StorageTypesTravelWithTheState) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(m.ok());
  auto ids = read_ids(shared_path("golden/tokens-1024.json"));
  ThreadPool pool(2);
  for (const char* text : {"q8_0", "q4_0+rot", "k=q8_0,v=f16", "bf16", "f32"}) {
    SCOPED_TRACE(text);
    CacheOptions o = options("tova", 64, kv::PositionMode::kAbsolute);
    auto fmt = parse_kv_format(text);
    ASSERT_TRUE(fmt.ok());
    o.kv_type = *fmt;
    auto one = runtime::make_state(**m, o, 0);
    ASSERT_TRUE(one.ok());
    const auto want = feed_logits(**m, **one, ids, 0, 400, pool);
    auto first = runtime::make_state(**m, o, 0);
    feed_logits(**m, **first, ids, 0, 300, pool);
    SessionData d{.state = std::move(first).value(), .history = {1, 2}};
    const std::vector<uint8_t> bytes = runtime::encode_session(**m, d);
    auto back = runtime::decode_session_bytes(**m, bytes);
    ASSERT_TRUE(back.ok()) << back.message();
    EXPECT_TRUE(back->state->kv_type() == *fmt);
    EXPECT_EQ(runtime::encode_session(**m, *back), bytes);
    const auto got = feed_logits(**m, *back->state, ids, 300, 400, pool);
    ASSERT_EQ(0, std::memcmp(got.data(), &want[300 * (*m)->config().n_vocab],
                             got.size() * sizeof(float)));

    const size_t at = key_tag_at("tova");
    ASSERT_EQ(bytes[at], static_cast<uint8_t>(fmt->k));
    for (const auto& [offset, value, needle] :
         {std::tuple<size_t, uint8_t, const char*>{0, 9, "unknown key type tag 9"},
          {1, 5, "unknown value type tag 5"},
          {2, 2, "invalid rotation flag 2"},
          {3, 3, "rows have 3 blocks"},
          {5, 0, "rows have 0 blocks"}}) {
      auto bad = bytes;
      bad[at + offset] = value;
      auto r = runtime::decode_session_bytes(**m, resealed(bad));
      ASSERT_FALSE(r.ok()) << needle;
      EXPECT_NE(r.message().find(needle), std::string::npos) << r.message();
      EXPECT_EQ(r.message().find('\n'), std::string::npos);
    }
  }
  // Version 1: the same state as a file with one type tag.
  {
    auto st = runtime::make_state(**m, options("tova", 64, kv::PositionMode::kAbsolute), 0);
    feed_logits(**m, **st, ids, 0, 100, pool);
    SessionData d{.state = std::move(st).value()};
    const std::vector<uint8_t> v4 = runtime::encode_session(**m, d);
    const std::vector<uint8_t> v3 = as_version_3(v4, "tova");
    auto r3 = runtime::decode_session_bytes(**m, v3);
    ASSERT_TRUE(r3.ok()) << r3.message();
    EXPECT_EQ(runtime::encode_session(**m, *r3), v4);
    const std::vector<uint8_t> v2 = as_version_2(v3, "llama");
    auto r2 = runtime::decode_session_bytes(**m, v2);
    ASSERT_TRUE(r2.ok()) << r2.message();
    EXPECT_EQ(runtime::encode_session(**m, *r2), v4);
    const size_t at = key_tag_at_v2("tova");
    std::vector<uint8_t> v1(v2.begin(), v2.begin() + at);
    v1.push_back(0);  // f32
    v1.insert(v1.end(), v2.begin() + at + 7, v2.end());
    v1[8] = 1;
    auto r = runtime::decode_session_bytes(**m, resealed(v1));
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(runtime::encode_session(**m, *r), v4);
  }
  // Loaded into another format: converted (and what converts back to f32 is the stored rows).
  {
    CacheOptions o = options("tova", 64, kv::PositionMode::kAbsolute);
    auto st = runtime::make_state(**m, o, 0);
    feed_logits(**m, **st, ids, 0, 100, pool);
    auto d = runtime::decode_session_bytes(
        **m, runtime::encode_session(**m, SessionData{.state = std::move(st).value()}));
    ASSERT_TRUE(d.ok());
    auto e = Engine::load({.model_path = shared_path("models/stories260K.gguf"),
                           .n_threads = 1,
                           .need_tokenizer = false});
    ASSERT_TRUE(e.ok()) << e.message();
    auto s = runtime::resume_session(
        **e, {.cache = o, .kv_override = {.k = KvType::kQ8_0, .v = KvType::kQ8_0}},
        std::move(*d));
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_TRUE(runtime::state_of(**s).kv_type() == KvFormat(KvType::kQ8_0));
    EXPECT_EQ((*s)->cache().kv_type.label(), "q8_0");
  }
}

TEST(SessionFile, HostileFilesAreOneClearErrorAndChangeNothing) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(shared_path("models/stories260K.gguf"));
  auto other = model::Model::load(shared_path("models/booklm-3m.gguf"));
  ASSERT_TRUE(m.ok() && other.ok());
  auto ids = read_ids(shared_path("golden/tokens-1024.json"));
  ThreadPool pool(2);
  auto st = runtime::make_state(**m, options("h2o", 32, kv::PositionMode::kRank), 0);
  ASSERT_TRUE(st.ok());
  feed_logits(**m, **st, ids, 0, 100, pool);
  SessionData d{.state = std::move(st).value(), .history = {5, 6}};
  const std::vector<uint8_t> good = runtime::encode_session(**m, d);
  ASSERT_TRUE(runtime::decode_session_bytes(**m, good).ok());

  // Truncated at every 10 %.
  for (int pct = 0; pct < 100; pct += 10) {
    const size_t n = good.size() * pct / 100;
    auto r = runtime::decode_session_bytes(**m, {good.data(), n});
    ASSERT_FALSE(r.ok()) << pct << "%";
    EXPECT_EQ(r.message().find('\n'), std::string::npos);
  }
  // Flipped bytes anywhere.
  for (size_t at = 0; at < good.size(); at += good.size() / 97 + 1) {
    auto bad = good;
    bad[at] ^= 0x5a;
    auto r = runtime::decode_session_bytes(**m, bad);
    EXPECT_FALSE(r.ok()) << "byte " << at;
  }
  // Another model.
  auto r = runtime::decode_session_bytes(**other, good);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("another model"), std::string::npos) << r.message();
  // Another version.
  auto v5 = good;
  v5[8] = 5;
  r = runtime::decode_session_bytes(**m, v5);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("version 5"), std::string::npos) << r.message();
  // Unknown header flags.
  auto flagged = good;
  flagged[12] = 2;
  r = runtime::decode_session_bytes(**m, flagged);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("unknown flags 2"), std::string::npos) << r.message();
  // Not a session file at all.
  r = runtime::decode_session_bytes(**m, std::vector<uint8_t>(100, 'x'));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("not a tova session"), std::string::npos);

  // A front-end note travels with the state; truncating or flipping it is refused too.
  {
    auto st2 = runtime::make_state(**m, options("tova", 16, kv::PositionMode::kGap), 0);
    ASSERT_TRUE(st2.ok());
    SessionData dn{.state = std::move(st2).value(), .note = "{\"tova_chat\":1}"};
    const auto with_note = runtime::encode_session(**m, dn);
    EXPECT_EQ(with_note[12], runtime::kSessionFlagNote);
    auto back = runtime::decode_session_bytes(**m, with_note);
    ASSERT_TRUE(back.ok()) << back.message();
    EXPECT_EQ(back->note, dn.note);
    EXPECT_EQ(runtime::encode_session(**m, *back), with_note);
    for (size_t cut = 1; cut <= dn.note.size() + 8; ++cut) {
      EXPECT_FALSE(
          runtime::decode_session_bytes(**m, {with_note.data(), with_note.size() - cut}).ok());
    }
    auto bad = with_note;
    bad.back() ^= 0x20;
    EXPECT_FALSE(runtime::decode_session_bytes(**m, bad).ok());
    // Without a note the flag is clear (files of earlier builds read the same).
    EXPECT_EQ(good[12], 0);
  }

  // load_session on a bad file names it; save is atomic (no .tmp left, old file replaced).
  const std::string dir = make_temp_dir();
  const std::string path = dir + "/s.bin";
  ASSERT_TRUE(runtime::save_session(path, **m, d).ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  auto loaded = runtime::load_session(path, **m);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(good.data()),
              static_cast<std::streamsize>(good.size() / 2));
  }
  loaded = runtime::load_session(path, **m);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.message().find(path), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tova::testing
