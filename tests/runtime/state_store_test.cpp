// --session-dir shared by two servers (two StateStores on one folder, as two replicas): a state
// one writes, the other continues and removes; a deletion spares a file replaced since it was
// looked at; the size cap deletes this model's least recently written files only; nothing but
// whole *.sess files is ever left.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "runtime/batch_scheduler.h"
#include "runtime/state_store.h"
#include "runtime/stories_engine.h"
#include "test_data.h"
#include "tova/engine.h"

namespace tova::runtime {
namespace {

namespace fs = std::filesystem;

using testing::stories;

SessionOptions tova8() {
  SessionOptions o;
  auto c = parse_cache_options("tova", 8, "exact", "f32");
  EXPECT_TRUE(c.ok()) << c.message();
  o.cache = *c;
  o.sampling.temp = 0;
  return o;
}

// A session that has fed `tokens`.
std::unique_ptr<Session> fed(const std::vector<int32_t>& tokens) {
  auto s = stories().new_session(tova8());
  EXPECT_TRUE(s.ok()) << s.message();
  (*s)->queue(tokens);
  BatchScheduler sched(stories());
  std::vector<Session*> one = {s->get()};
  while ((*s)->n_pending() > 0) EXPECT_TRUE(sched.step(one).ok());
  return std::move(*s);
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

void set_mtime(const std::string& path, int64_t seconds) {
  const timespec t[2] = {{.tv_sec = seconds, .tv_nsec = 0}, {.tv_sec = seconds, .tv_nsec = 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), t, 0), 0);
}

const std::vector<int32_t> kConversation = {1, 50, 60, 70, 80, 90, 100, 110, 120, 130};

TEST(StateStore, AStateOneServerWritesTheOtherContinuesAndRemoves) {
  const std::string dir = testing::make_temp_dir();
  auto a = StateStore::open(stories(), dir, 1ull << 30);
  auto b = StateStore::open(stories(), dir, 1ull << 30);
  ASSERT_TRUE(a.ok() && b.ok());
  auto s = fed(kConversation);
  const std::string label = s->cache().label();
  ASSERT_TRUE((*a)->put(kConversation, *s, /*sync=*/false).ok());
  std::vector<int32_t> prompt = kConversation;
  prompt.insert(prompt.end(), {140, 150});
  // b never wrote it and looks it up by name, with no index of its own.
  EXPECT_EQ((*b)->longest_prefix(prompt, label), kConversation.size());
  EXPECT_EQ((*b)->longest_prefix(prompt, "tova k=9 exact f32 absolute"), 0u);
  auto t = (*b)->take(prompt, label, tova8());
  ASSERT_TRUE(t.ok()) << t.message();
  EXPECT_EQ((*t)->history(), kConversation);
  EXPECT_EQ((*t)->n_seen(), s->n_seen());
  // Taken: gone for both, and no file is left behind.
  EXPECT_EQ((*a)->longest_prefix(prompt, label), 0u);
  EXPECT_FALSE((*a)->take(prompt, label, tova8()).ok());
  EXPECT_EQ(files_in(dir), std::vector<std::string>{});
}

TEST(StateStore, ADeletionSparesAFileReplacedSinceItWasLookedAt) {
  const std::string dir = testing::make_temp_dir();
  auto a = StateStore::open(stories(), dir, 1ull << 30);
  auto b = StateStore::open(stories(), dir, 1ull << 30);
  ASSERT_TRUE(a.ok() && b.ok());
  auto s = fed(kConversation);
  ASSERT_TRUE((*a)->put(kConversation, *s, false).ok());
  const auto names = files_in(dir);
  ASSERT_EQ(names.size(), 1u);
  const std::string path = dir + "/" + names[0];
  auto seen = file_id(path);
  ASSERT_TRUE(seen.ok());
  // The other server writes the same conversation again: a new file takes the name.
  ASSERT_TRUE((*b)->put(kConversation, *s, false).ok());
  auto now = file_id(path);
  ASSERT_TRUE(now.ok());
  ASSERT_NE(now->ino, seen->ino);
  // Deleting what was looked at before leaves the newer file in place.
  EXPECT_FALSE(remove_if_unchanged(path, *seen, dir + "/.tova-test-claim"));
  auto after = file_id(path);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->ino, now->ino);
  EXPECT_EQ(files_in(dir), names);
  // The file as it is now goes.
  EXPECT_TRUE(remove_if_unchanged(path, *now, dir + "/.tova-test-claim"));
  EXPECT_EQ(files_in(dir), std::vector<std::string>{});
  // A file already gone: nothing to do.
  EXPECT_FALSE(remove_if_unchanged(path, *now, dir + "/.tova-test-claim"));
}

TEST(StateStore, TheCapDeletesThisModelsLeastRecentlyWrittenFilesOnly) {
  const std::string dir = testing::make_temp_dir();
  auto a = StateStore::open(stories(), dir, 1ull << 30);
  ASSERT_TRUE(a.ok());
  // Each state's file is the one its write adds; dated 1000, 2000, 3000 s, so which is oldest
  // does not depend on the clock's resolution.
  std::vector<std::string> by_age;
  for (int i = 0; i < 3; ++i) {
    const std::vector<int32_t> conv = {1, 40 + i, 50, 60, 70};
    const auto before = files_in(dir);
    ASSERT_TRUE((*a)->put(conv, *fed(conv), false).ok());
    for (const auto& n : files_in(dir)) {
      if (std::find(before.begin(), before.end(), n) == before.end()) by_age.push_back(n);
    }
    ASSERT_EQ(by_age.size(), static_cast<size_t>(i + 1));
    set_mtime(dir + "/" + by_age.back(), 1000 * (i + 1));
  }
  const uint64_t one = fs::file_size(dir + "/" + by_age[0]);
  // Another model's file (another fingerprint) and a file that is not a state, both older.
  const std::string foreign = dir + "/0000000000000000-0000000000000001.sess";
  { std::ofstream(foreign) << std::string(one, 'x'); }
  set_mtime(foreign, 10);
  { std::ofstream(dir + "/junk.sess") << "not a session"; }
  set_mtime(dir + "/junk.sess", 10);
  // A cap of two files: opening (as a restart does) deletes the oldest of ours.
  auto capped = StateStore::open(stories(), dir, 2 * one + one / 2);
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ((*capped)->count(), 2u);
  EXPECT_EQ((*capped)->skipped(), 2);
  auto left = files_in(dir);
  EXPECT_EQ(std::count(left.begin(), left.end(), by_age[0]), 0);
  EXPECT_EQ(std::count(left.begin(), left.end(), by_age[1]), 1);
  EXPECT_EQ(std::count(left.begin(), left.end(), by_age[2]), 1);
  EXPECT_TRUE(fs::exists(foreign));
  EXPECT_TRUE(fs::exists(dir + "/junk.sess"));
  // A new state: the cap keeps it and deletes the oldest other one.
  std::vector<int32_t> fourth = {1, 99, 98, 97, 96};
  ASSERT_TRUE((*capped)->put(fourth, *fed(fourth), false).ok());
  left = files_in(dir);
  EXPECT_EQ(std::count(left.begin(), left.end(), by_age[1]), 0);
  EXPECT_EQ(std::count(left.begin(), left.end(), by_age[2]), 1);
  EXPECT_EQ((*capped)->count(), 2u);
  // Only whole files: no temporary file of a write or a deletion is left.
  for (const auto& n : left) EXPECT_NE(n.substr(0, 6), ".tova-") << n;
}

}  // namespace
}  // namespace tova::runtime
