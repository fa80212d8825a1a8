#include "runtime/cache_options.h"

#include <algorithm>
#include <charconv>

namespace tova {

std::string PrefillMode::label() const {
  if (inf) return "chunk:inf";
  return chunk > 0 ? "chunk:" + std::to_string(chunk) : "exact";
}

Result<PrefillMode> parse_prefill(std::string_view text) {
  PrefillMode m;
  if (text == "exact") return m;
  if (text == "chunk:inf") {
    m.inf = true;
    return m;
  }
  if (text.substr(0, 6) == "chunk:") {
    const std::string_view a = text.substr(6);
    int c = 0;
    auto [p, ec] = std::from_chars(a.data(), a.data() + a.size(), c);
    if (ec == std::errc() && p == a.data() + a.size() && c >= 1 && c <= (1 << 20)) {
      m.chunk = c;
      return m;
    }
  }
  return make_error("invalid prefill mode '{}' (valid: exact, chunk:C with C >= 1, chunk:inf)",
                    text);
}

Result<kv::KvType> parse_kv_type(std::string_view text) {
  if (text == "f32") return kv::KvType::kF32;
  if (text == "f16") return kv::KvType::kF16;
  return make_error("invalid KV type '{}' (valid: f32, f16)", text);
}

std::string_view kv_type_name(kv::KvType type) {
  return type == kv::KvType::kF16 ? "f16" : "f32";
}

std::string CacheOptions::label() const {
  const std::string k = policy.bounded() ? " k=" + std::to_string(policy.budget) : "";
  return policy.label() + k + " " + prefill.label() +
         " " + std::string(kv_type_name(kv_type)) +
         (positions == kv::PositionMode::kAbsolute
              ? ""
              : " " + std::string(kv::position_mode_name(positions)));
}

Result<CacheOptions> parse_cache_options(std::string_view policy, int budget,
                                         std::string_view prefill, std::string_view kv_type,
                                         std::string_view positions) {
  CacheOptions o;
  TOVA_ASSIGN_OR_RETURN(o.policy, kv::parse_policy(std::string(policy), budget));
  TOVA_ASSIGN_OR_RETURN(o.prefill, parse_prefill(prefill));
  TOVA_ASSIGN_OR_RETURN(o.kv_type, parse_kv_type(kv_type));
  TOVA_ASSIGN_OR_RETURN(o.positions, kv::parse_position_mode(positions));
  return o;
}

}  // namespace tova

namespace tova::runtime {

int max_new_for(const PrefillMode& p, int64_t n_prompt) {
  if (p.inf) return static_cast<int>(std::max<int64_t>(1, n_prompt));
  return p.chunk > 0 ? p.chunk : 1;
}

uint64_t reserve_bytes(const model::Model& m, const CacheOptions& o, int64_t n_prompt,
                       int64_t n_ctx) {
  auto so = m.state_options(o.policy, o.kv_type, max_new_for(o.prefill, n_prompt));
  so.prompt_end = std::max<int64_t>(0, n_prompt);
  const uint64_t elem = o.kv_type == kv::KvType::kF16 ? 2 : 4;
  // Keys and values, plus one position per slot and KV head, in every layer: the most a layer
  // allocates (a prompt-holding policy's whole prompt until its cut).
  const uint64_t per_slot =
      uint64_t(so.n_head_kv) * (2 * uint64_t(so.head_dim) * elem + sizeof(int64_t));
  uint64_t total = 0;
  for (int il = 0; il < so.n_layer; ++il) {
    auto z = kv::size_layer(so, il);
    const int64_t n_slot = !o.policy.bounded() ? n_ctx
                           : z.ok()           ? z->limits.max_slots
                                              : int64_t{o.policy.budget} + so.max_new;
    total += per_slot * static_cast<uint64_t>(std::max<int64_t>(1, n_slot));
  }
  return total;
}

bool continues_exactly(const CacheOptions& o) {
  return o.prefill.exact() && !kv::holds_prompt(o.policy);
}

}  // namespace tova::runtime
