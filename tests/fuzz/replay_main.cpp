// Replays inputs through a fuzz harness without libFuzzer: `fuzz_replay NAME PATH...` runs the
// harness NAME's LLVMFuzzerTestOneInput over every file (directories: every file in them,
// sorted). One binary holds every harness (replay_table.h); built with any compiler in every
// configuration, so the regression inputs of tests/fuzz/regressions/ and the seed corpus run
// under plain ctest; a crash or failed check aborts with a non-zero status.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "replay_table.h"

namespace {

const tova::fuzz::Harness* find_harness(std::string_view name) {
  for (size_t i = 0; i < tova::fuzz::kNumHarnesses; ++i) {
    if (name == tova::fuzz::kHarnesses[i].name) return &tova::fuzz::kHarnesses[i];
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  const tova::fuzz::Harness* h = argc > 1 ? find_harness(argv[1]) : nullptr;
  if (h == nullptr) {
    std::fprintf(stderr, "usage: %s HARNESS PATH...; harnesses:", argv[0]);
    for (size_t i = 0; i < tova::fuzz::kNumHarnesses; ++i) {
      std::fprintf(stderr, " %s", tova::fuzz::kHarnesses[i].name);
    }
    std::fprintf(stderr, "\n");
    return 2;
  }
  // The harness sees its own arguments as libFuzzer's would pass them: the program, then paths.
  argv[1] = argv[0];
  ++argv;
  --argc;
  if (h->initialize != nullptr) h->initialize(&argc, &argv);
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    if (fs::is_directory(argv[i], ec)) {
      for (const auto& e : fs::recursive_directory_iterator(argv[i], ec)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
    } else if (fs::is_regular_file(argv[i], ec)) {
      files.emplace_back(argv[i]);
    } else {
      std::fprintf(stderr, "%s: no such file or directory: %s\n", argv[0], argv[i]);
      return 2;
    }
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& p : files) {
    std::ifstream in(p, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
    if (in.bad()) {
      std::fprintf(stderr, "%s: cannot read %s\n", argv[0], p.c_str());
      return 2;
    }
    std::fprintf(stderr, "replay %s (%zu bytes)\n", p.c_str(), bytes.size());
    h->test_one_input(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::fprintf(stderr, "%s %s: %zu inputs replayed\n", argv[0], h->name, files.size());
  return 0;
}
