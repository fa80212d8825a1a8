#include "runtime/cache_options.h"

#include <algorithm>
#include <charconv>

namespace tova {

int PrefillMode::max_new(int64_t n_prompt) const {
  if (inf) return static_cast<int>(std::max<int64_t>(1, n_prompt));
  return chunk > 0 ? chunk : 1;
}

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
  if (auto t = kv_type_from_name(text)) return *t;
  return make_error("invalid KV type '{}' (valid: f32, f16, bf16, q8_0, q4_0)", text);
}

Result<KvFormat> parse_kv_format(std::string_view text) {
  KvFormat f;
  std::string_view t = text;
  constexpr std::string_view kRot = "+rot";
  if (t.size() > kRot.size() && t.substr(t.size() - kRot.size()) == kRot) {
    f.rotate = true;
    t.remove_suffix(kRot.size());
  }
  if (t.substr(0, 2) == "k=") {
    const size_t comma = t.find(",v=");
    if (comma == std::string_view::npos) {
      return make_error("invalid KV type '{}' (k=TYPE,v=TYPE: both sides)", text);
    }
    TOVA_ASSIGN_OR_RETURN(f.k, parse_kv_type(t.substr(2, comma - 2)));
    TOVA_ASSIGN_OR_RETURN(f.v, parse_kv_type(t.substr(comma + 3)));
  } else {
    TOVA_ASSIGN_OR_RETURN(const kv::KvType both, parse_kv_type(t));
    f.k = f.v = both;
  }
  TOVA_RETURN_IF_ERROR(check_kv_rotation(f));
  return f;
}

std::string kv_format_text(std::string_view both, std::string_view k, std::string_view v,
                           bool rotate) {
  const std::string_view kk = k.empty() ? both : k, vv = v.empty() ? both : v;
  std::string s = kk == vv ? std::string(kk) : "k=" + std::string(kk) + ",v=" + std::string(vv);
  return rotate ? s + "+rot" : s;
}

std::string CacheOptions::label() const {
  // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on the one chained
  // expression once PolicySpec::bounded() is out of line.
  std::string s = policy.label();
  if (policy.bounded()) s += fmt::format(" k={}", policy.budget);
  s += fmt::format(" {} {}", prefill.label(), kv_type.label());
  if (positions != kv::PositionMode::kAbsolute) {
    s += fmt::format(" {}", kv::position_mode_name(positions));
  }
  if (keep_images) s += fmt::format(" keep-images:{}", max_kept_images);
  return s;
}

Result<CacheOptions> parse_cache_options(std::string_view policy, int budget,
                                         std::string_view prefill, std::string_view kv_type,
                                         std::string_view positions) {
  CacheOptions o;
  TOVA_ASSIGN_OR_RETURN(o.policy, kv::parse_policy(std::string(policy), budget));
  TOVA_ASSIGN_OR_RETURN(o.prefill, parse_prefill(prefill));
  TOVA_ASSIGN_OR_RETURN(o.kv_type, parse_kv_format(kv_type));
  TOVA_ASSIGN_OR_RETURN(o.positions, kv::parse_position_mode(positions));
  return o;
}

}  // namespace tova

namespace tova::runtime {

uint64_t reserve_bytes(const model::Model& m, const CacheOptions& o, int64_t n_prompt,
                       int64_t n_ctx, int max_image) {
  return reserve_bytes(m.state_options(o.policy, o.kv_type, o.prefill.max_new(n_prompt)), o,
                       n_prompt, n_ctx, max_image);
}

uint64_t reserve_bytes(kv::MultiStateOptions so, const CacheOptions& o, int64_t n_prompt,
                       int64_t n_ctx, int max_image) {
  so.prompt_end = std::max<int64_t>(0, n_prompt);
  // An image's step and the kept images' states take slots beside the budget (size_layer).
  so.max_image = std::max(0, max_image);
  so.keep_images = o.keep_images && so.max_image > 0;
  so.max_kept_images = so.keep_images ? o.max_kept_images : 0;
  if (!check_kv_format(o.kv_type, so.head_dim).ok()) return 0;  // refused when the state is made
  // Per layer and KV head: the key pool (whole tiles of 16 slots when quantized), the value
  // rows and one position per slot, as LayerState allocates them; in every layer the most it
  // allocates (a prompt-holding policy's whole prompt until its cut).
  uint64_t total = 0;
  for (int il = 0; il < so.n_layer; ++il) {
    auto z = kv::size_layer(so, il);
    const int64_t n_slot = std::max<int64_t>(1, !o.policy.bounded() ? n_ctx
                                                : z.ok()            ? int64_t{z->limits.max_slots} + z->limits.image_slots
                                                : int64_t{o.policy.budget} + so.max_new);
    // Each layer in its own shape (Gemma 4's window and global layers differ).
    const int n_head_kv = kv::layer_n_head_kv(so, il), head_dim = kv::layer_head_dim(so, il);
    if (!check_kv_format(o.kv_type, head_dim).ok()) return 0;
    total += uint64_t(n_head_kv) *
             (key_pool_bytes(o.kv_type.k, head_dim, n_slot) +
              static_cast<uint64_t>(n_slot) *
                  (kv_row_bytes(o.kv_type.v, head_dim) + sizeof(int64_t)));
  }
  return total;
}

bool continues_exactly(const CacheOptions& o) {
  return o.prefill.exact() && !kv::holds_prompt(o.policy);
}

}  // namespace tova::runtime
