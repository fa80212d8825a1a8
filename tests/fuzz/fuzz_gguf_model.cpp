// Harness: a GGUF file from a byte buffer, through the reader, the model config and the weight
// table. A file that validates also runs one forward pass of a few tokens: every size the
// forward pass allocates for is backed by tensor bytes of the file, so the input's size (-max_len)
// bounds memory and time, and this cap keeps a pass cheap anyway.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "io/gguf.h"
#include "kv/policy_registry.h"
#include "model/model.h"

namespace {

// Work one forward token costs, in weight bytes read plus activations; larger models are only
// validated. With the fuzzer's -max_len of 64 KiB this is never the binding limit for weights,
// but activations (n_ff, n_vocab, heads) stay small too.
constexpr int64_t kMaxForwardElements = int64_t{1} << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tova;
  auto file = io::GgufFile::from_bytes(std::span<const uint8_t>(data, size), "fuzz.gguf");
  if (!file.ok()) return 0;
  // Every getter on every key must give a value or an error, whatever the type.
  for (const auto& [key, value] : (*file)->metadata()) {
    (void)(*file)->get_string(key);
    (void)(*file)->get_u32(key);
    (void)(*file)->get_i64(key);
    (void)(*file)->get_f32(key);
    (void)(*file)->get_bool(key);
    (void)(*file)->get_string_array(key);
    (void)(*file)->get_f32_array(key);
    (void)(*file)->get_i32_array(key);
  }
  // f32 activations take the dequantizing matmul path: the low bit of the input's last byte
  // (usually weight data) picks it, so both paths see hostile weights.
  const bool f32_act = size > 0 && (data[size - 1] & 1) != 0;
  auto m = model::Model::from_file(std::move(*file), {.f32_activations = f32_act});
  if (!m.ok()) return 0;
  const model::ModelConfig& c = (*m)->config();
  const int64_t q_dim = int64_t{c.n_head} * c.head_dim;
  const int64_t work = int64_t{c.n_layer} * (c.n_embd + q_dim + c.n_ff) + c.n_vocab;
  if (work > kMaxForwardElements) return 0;

  auto policy = kv::parse_policy("window", 2);
  if (!policy.ok()) __builtin_trap();
  auto state = kv::MultiState::create((*m)->state_options(*policy, kv::KvType::kF16));
  if (!state.ok()) __builtin_trap();  // a validated model must give a valid state shape
  ThreadPool pool(1);
  model::ForwardScratch scratch;
  // Three tokens: one batch of two, then one more, so the window of 2 evicts.
  std::vector<float> logits(2 * static_cast<size_t>(c.n_vocab));
  const int32_t last = c.n_vocab - 1;
  const model::BatchToken two[] = {{.token = 0, .state = state->get(), .logits = true},
                                   {.token = last, .state = state->get(), .logits = true}};
  if (!(*m)->forward(two, pool, scratch, logits.data()).ok()) __builtin_trap();
  const model::BatchToken one{.token = std::min(1, last), .state = state->get(), .logits = true};
  if (!(*m)->forward({&one, 1}, pool, scratch, logits.data()).ok()) __builtin_trap();
  // A token outside the vocabulary is an error, not a crash.
  const model::BatchToken bad{.token = c.n_vocab, .state = state->get(), .logits = true};
  if ((*m)->forward({&bad, 1}, pool, scratch, logits.data()).ok()) __builtin_trap();
  return 0;
}
