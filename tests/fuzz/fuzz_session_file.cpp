// Harness: session files (src/runtime/session_file) from arbitrary bytes, for a model of each
// state kind (session_models.h: bounded attention K/V, sliding-window K/V, shared K/V, recurrent
// DeltaNet and short-convolution states), byte 0 of the input picking the model and whether the
// header's size and checksum are made to fit (so that the fuzzer's mutations reach the payload's
// parser). Whatever decodes must be a usable state: it takes one more token through the model
// without a fault, and re-encoding it gives a file that decodes again. The models, their
// fingerprints (Model::fingerprint) and the forward pass's scratch are made once per process.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/hash.h"
#include "core/thread_pool.h"
#include "model/model.h"
#include "runtime/session_file.h"
#include "session_models.h"

namespace {

struct Loaded {
  std::unique_ptr<tova::model::Model> model;
  tova::model::ForwardScratch scratch;  // reused: its buffers keep their size between inputs
  std::vector<float> logits;            // [n_vocab]
};
std::array<Loaded, tova::fuzz::kSessionModels> g_models;
std::unique_ptr<tova::ThreadPool> g_pool;

// Header: "TOVASESS", u32 version, u32 flags, u64 payload bytes, u64 FNV-1a of the payload.
constexpr size_t kHeader = 8 + 4 + 4 + 8 + 8;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const auto models = tova::fuzz::session_models();
  for (size_t i = 0; i < models.size(); ++i) {
    auto m = tova::model::Model::load(models[i].path);
    if (!m.ok()) {
      std::fprintf(stderr, "fuzz_session_file: %s (set TOVA_SHARED_DIR)\n", m.message().c_str());
      std::exit(77);
    }
    g_models[i].model = std::move(*m);
    g_models[i].logits.resize(g_models[i].model->config().n_vocab);
  }
  g_pool = std::make_unique<tova::ThreadPool>(1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tova;
  if (size < 1) return 0;
  Loaded& l = g_models[fuzz::model_of(data[0])];
  const model::Model& m = *l.model;
  std::vector<uint8_t> file(data + 1, data + size);
  if ((data[0] & fuzz::kFixHeader) != 0 && file.size() >= kHeader) {
    const uint64_t n = file.size() - kHeader;
    const uint64_t h = fnv1a(file.data() + kHeader, n);
    std::memcpy(file.data() + 16, &n, sizeof(n));
    std::memcpy(file.data() + 24, &h, sizeof(h));
  }
  auto d = runtime::decode_session_bytes(m, file);
  if (!d.ok()) {
    if (d.message().empty() || d.message().find('\n') != std::string::npos) __builtin_trap();
    return 0;
  }
  const std::vector<uint8_t> again = runtime::encode_session(m, *d);
  auto back = runtime::decode_session_bytes(m, again);
  if (!back.ok()) __builtin_trap();
  const model::BatchToken t{.token = 1, .state = d->state.get(), .logits = true};
  const Status s = m.forward({&t, 1}, *g_pool, l.scratch, l.logits.data());
  if (!s.ok() && s.message().find('\n') != std::string::npos) __builtin_trap();
  return 0;
}
