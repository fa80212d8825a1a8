// Harness: session files (src/runtime/session_file) from arbitrary bytes, for the bundled
// stories260K model. Whatever decodes must be a usable state: it takes one more token through
// the model without a fault, and re-encoding it gives a file that decodes again.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "fuzz_shared_dir.h"
#include "model/model.h"
#include "runtime/session_file.h"

namespace {

std::unique_ptr<tova::model::Model> g_model;
std::unique_ptr<tova::ThreadPool> g_pool;

std::string model_path() { return tova::fuzz::shared_dir() + "/models/stories260K.gguf"; }

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  auto m = tova::model::Model::load(model_path());
  if (!m.ok()) {
    std::fprintf(stderr, "fuzz_session_file: %s (set TOVA_SHARED_DIR)\n", m.message().c_str());
    std::exit(77);
  }
  g_model = std::move(*m);
  g_pool = std::make_unique<tova::ThreadPool>(1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tova;
  auto d = runtime::decode_session_bytes(*g_model, std::span<const uint8_t>(data, size));
  if (!d.ok()) {
    if (d.message().empty() || d.message().find('\n') != std::string::npos) __builtin_trap();
    return 0;
  }
  const std::vector<uint8_t> again = runtime::encode_session(*g_model, *d);
  auto back = runtime::decode_session_bytes(*g_model, again);
  if (!back.ok()) __builtin_trap();
  model::ForwardScratch scratch;
  std::vector<float> logits(g_model->config().n_vocab);
  const model::BatchToken t{.token = 1, .state = d->state.get(), .logits = true};
  const Status s = g_model->forward({&t, 1}, *g_pool, scratch, logits.data());
  if (!s.ok() && s.message().find('\n') != std::string::npos) __builtin_trap();
  return 0;
}
