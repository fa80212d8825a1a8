// What an mmproj file may not be: every key and tensor that changes the arithmetic is used or
// refused by name, a projector other than gemma4v is refused by name, and a projector that does
// not fit the text model is refused in one line naming both files.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include "core/thread_pool.h"
#include "io/gguf.h"
#include "test_data.h"
#include "vision/gemma4v_fixture.h"
#include "vision/mmproj.h"

namespace tova::vision {
namespace {

std::string fixture(const std::string& dir, GgmlType type = GgmlType::kF32) {
  const std::string path = dir + "/mm.gguf";
  EXPECT_TRUE(write_gemma4v_fixture({.type = type}, path).ok());
  return path;
}

// Copies `src` to `dst`, letting `edit` change the keys and tensors on the way.
std::string rewrite(const std::string& src, const std::string& dst,
                    const std::function<void(io::GgufWriter&, const io::GgufFile&)>& edit,
                    const std::string& drop_tensor = "") {
  auto f = io::GgufFile::open(src);
  EXPECT_TRUE(f.ok());
  io::GgufWriter w;
  for (const auto& [k, v] : (*f)->metadata()) w.set(k, v);
  for (const io::GgufTensorInfo& t : (*f)->tensors()) {
    if (t.name == drop_tensor) continue;
    w.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  }
  edit(w, **f);
  EXPECT_TRUE(w.write_file(dst).ok());
  return dst;
}

std::string open_error(const std::string& path) {
  auto m = Mmproj::open(path);
  return m.ok() ? std::string("opened") : m.message();
}

TEST(MmprojRefusal, TheFixtureOpens) {
  const std::string dir = testing::make_temp_dir();
  auto m = Mmproj::open(fixture(dir));
  ASSERT_TRUE(m.ok()) << m.message();
  EXPECT_EQ((*m)->config().projection_dim, 64);
  EXPECT_EQ((*m)->config().ffn_act, VisionFfnAct::kGeluQuick);
  EXPECT_TRUE((*m)->check_text_model(64, "text.gguf").ok());
}

TEST(MmprojRefusal, OtherProjectorTypeNamed) {
  const std::string dir = testing::make_temp_dir();
  const std::string p = rewrite(fixture(dir), dir + "/q.gguf", [](io::GgufWriter& w, const io::GgufFile&) {
    w.set("clip.vision.projector_type", io::GgufValue::make_str("qwen3vl_merger"));
  });
  const std::string e = open_error(p);
  EXPECT_NE(e.find("'qwen3vl_merger'"), std::string::npos) << e;
  EXPECT_NE(e.find("gemma4v"), std::string::npos) << e;
}

TEST(MmprojRefusal, UnknownKeyNamed) {
  const std::string dir = testing::make_temp_dir();
  const std::string p = rewrite(fixture(dir), dir + "/k.gguf", [](io::GgufWriter& w, const io::GgufFile&) {
    w.set("clip.vision.window_size", io::GgufValue::make_u32(112));
  });
  const std::string e = open_error(p);
  EXPECT_NE(e.find("'clip.vision.window_size'"), std::string::npos) << e;
}

TEST(MmprojRefusal, UnusedTensorNamed) {
  const std::string dir = testing::make_temp_dir();
  const std::string p = rewrite(fixture(dir), dir + "/t.gguf", [](io::GgufWriter& w, const io::GgufFile&) {
    w.add_tensor("v.blk.0.ls1.weight", GgmlType::kF32, {32}, std::vector<uint8_t>(128, 0));
  });
  const std::string e = open_error(p);
  EXPECT_NE(e.find("'v.blk.0.ls1.weight'"), std::string::npos) << e;
}

TEST(MmprojRefusal, MissingTensorNamed) {
  const std::string dir = testing::make_temp_dir();
  const std::string p = rewrite(fixture(dir), dir + "/m.gguf", [](io::GgufWriter&, const io::GgufFile&) {},
                                "v.blk.1.ffn_up.weight");
  const std::string e = open_error(p);
  EXPECT_NE(e.find("'v.blk.1.ffn_up.weight'"), std::string::npos) << e;
}

TEST(MmprojRefusal, WrongShapeNamed) {
  const std::string dir = testing::make_temp_dir();
  const std::string p = rewrite(fixture(dir), dir + "/s.gguf", [](io::GgufWriter& w, const io::GgufFile&) {
    w.set("clip.vision.feed_forward_length", io::GgufValue::make_u32(96));
  });
  const std::string e = open_error(p);
  EXPECT_NE(e.find("ffn_gate.weight"), std::string::npos) << e;
}

TEST(MmprojRefusal, WidthMismatchNamesBothFiles) {
  const std::string dir = testing::make_temp_dir();
  auto m = Mmproj::open(fixture(dir));
  ASSERT_TRUE(m.ok()) << m.message();
  const Status st = (*m)->check_text_model(2560, "gemma-4-e4b.gguf");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find((*m)->path()), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("gemma-4-e4b.gguf"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("2560"), std::string::npos) << st.message();
  EXPECT_EQ(st.message().find('\n'), std::string::npos);
}

TEST(MmprojRefusal, CorruptFileIsOneError) {
  const std::string dir = testing::make_temp_dir();
  const std::string src = fixture(dir);
  auto f = io::GgufFile::open(src);
  ASSERT_TRUE(f.ok());
  // Truncated at a third, and with its tensor data cut off.
  for (uint64_t n : {uint64_t{7}, (*f)->file_size() / 3, (*f)->file_size() - 100}) {
    std::ifstream in(src, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string p = dir + "/cut.gguf";
    std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(n));
    const std::string e = open_error(p);
    EXPECT_NE(e, "opened");
    EXPECT_NE(e.find(p), std::string::npos) << e;
  }
}

TEST(MmprojRefusal, TooManyPatchesForThePositionTables) {
  const std::string dir = testing::make_temp_dir();
  auto m = Mmproj::open(fixture(dir));
  ASSERT_TRUE(m.ok()) << m.message();
  // A 1 x 40 strip: the sides stay proportional, so the long side needs more patches than the
  // fixture's 128 position rows.
  RgbImage strip{.width = 4000, .height = 12};
  strip.rgb.assign(size_t{4000} * 12 * 3, 100);
  ThreadPool pool(1);
  auto e = (*m)->encode(strip, pool);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.message().find("position tables"), std::string::npos) << e.message();
}

}  // namespace
}  // namespace tova::vision
