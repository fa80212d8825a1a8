// What a user chooses for a session: how its multi-state is kept (policy, budget, K/V storage,
// prefill mode, positions) and how it samples. Plain data; the parse_* functions read it from
// text (command-line flags, request fields, Python keywords), each error naming the option.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tova/result.h"
#include "tova/kv_format.h"
#include "tova/policy_spec.h"
#include "tova/position_mode.h"

namespace tova {

// How a prompt joins the multi-state (spec/POLICIES.md).
struct PrefillMode {
  int chunk = 0;     // 0: exact (token-by-token semantics); C > 0: chunk:C
  bool inf = false;  // chunk:inf: the whole prompt is one chunk
  std::string label() const;
  bool exact() const { return chunk == 0 && !inf; }
  // The most tokens that join a layer before the policy evicts, for a prompt of n_prompt tokens.
  int max_new(int64_t n_prompt) const;
};
Result<PrefillMode> parse_prefill(std::string_view text);  // "exact" | "chunk:C" | "chunk:inf"
// "f32" | "f16" | "bf16" | "q8_0" | "q4_0" (kv_type_name writes them).
Result<kv::KvType> parse_kv_type(std::string_view text);
// A format as KvFormat::label() writes it: "q8_0" (keys and values), "k=q8_0,v=f16" (each its
// own), either with "+rot" (quantized rows Hadamard-rotated).
Result<kv::KvFormat> parse_kv_format(std::string_view text);
// The --kv-type / --kv-type-k / --kv-type-v / --kv-rotate flags together (empty k or v: as
// `both`), as one format label for parse_cache_options.
std::string kv_format_text(std::string_view both, std::string_view k, std::string_view v,
                           bool rotate);

// A change of a saved state's K/V format, side by side (a resumed session given --kv-type,
// -ctk, -ctv or --kv-rotate): what is not set stays as saved.
struct KvOverride {
  std::optional<kv::KvType> k, v;
  std::optional<bool> rotate;
  bool any() const { return k || v || rotate; }
  kv::KvFormat applied_to(const kv::KvFormat& saved) const {
    return kv::KvFormat(k.value_or(saved.k), v.value_or(saved.v), rotate.value_or(saved.rotate));
  }
};

struct CacheOptions {
  kv::PolicySpec policy;
  kv::KvFormat kv_type;  // storage of keys and values (f32 unless given)
  PrefillMode prefill;
  // Slots allocated up front, the tokens the caller expects the sequence to hold (as llama.cpp
  // sizes its context; a bounded pool at most k + chunk). A pool that fills its allocation
  // doubles it and copies every state, a stall of a whole-cache copy inside one step;
  // reserving what a run will hold means that never happens within it. 0: a small first
  // allocation.
  int64_t reserve = 0;
  // Bytes a bounded multi-state may reach (k + chunk slots per layer): a larger budget is
  // refused when the state is made. 0: the machine's physical memory.
  uint64_t memory_limit = 0;
  kv::PositionMode positions = kv::PositionMode::kAbsolute;
  // --kv-keep-images: the states of images (Session::queue_image) are never a policy's victims,
  // under every policy. They are held beside the budget: the policy keeps its k text states as
  // without images, and each kept image adds its tokens' rows to every bounded layer (a window
  // layer drops them when its window moves past them, as it must). So K/V memory grows with
  // the images kept, up to max_kept_images of the engine's largest image (counted in
  // max_bytes, reserve_bytes, memory_limit); a session asked to take more images than that
  // refuses the image with an error. It needs an engine with an mmproj (no image could join
  // otherwise: the session is refused rather than the option ignored). Off (the default): a
  // policy chooses among image and text states by its own rule.
  bool keep_images = false;
  int max_kept_images = 8;  // --kv-keep-images-max (1..65536); read only with keep_images
  // "tova k=256 exact f32" ("... q8_0", "... k=q8_0,v=f16+rot", "... keep-images:8"): equal
  // labels mean interchangeable states (prefix reuse keys on it).
  std::string label() const;
};

// The textual options together; each error names the option at fault. kv_type is a format
// label (parse_kv_format).
Result<CacheOptions> parse_cache_options(std::string_view policy, int budget,
                                         std::string_view prefill = "exact",
                                         std::string_view kv_type = "f32",
                                         std::string_view positions = "absolute");

// The sampler chain: repetition penalty -> top-k -> top-p -> min-p -> temperature -> draw, in
// llama.cpp's order, so its users get what they expect from the same flags.
struct SamplerParams {
  float temp = 0.8f;            // <= 0: greedy (argmax, ties to the smallest id)
  int top_k = 40;               // <= 0: off
  float top_p = 0.95f;          // >= 1: off
  float min_p = 0.05f;          // <= 0: off
  float repeat_penalty = 1.0f;  // 1: off
  int repeat_last_n = 64;       // how many recent tokens the penalty looks at
  uint64_t seed = 0;
  // A GBNF grammar (tova/grammar.h) the generated text must follow, from its `root`; empty:
  // unconstrained. Each new sampler (set_sampling, a new session) starts it afresh.
  std::string grammar;
};
// An error names the parameter out of range, or the grammar's fault (line, column, rule).
Status validate(const SamplerParams& p);

// Speculative decoding (runtime/speculation.h), with llama.cpp's names: a drafter proposes the
// next tokens, one forward pass feeds the sampled token and the drafts, and the sampler takes a
// draft only where it samples that very token from the target's logits, so the text is the one
// decoding without speculation gives, token for token (greedy) and draw for draw (sampling).
struct SpeculativeOptions {
  // "" (off) | "ngram-simple" (draft-free lookup in the prompt and the generated text) |
  // "ngram-mod" (a hashed n-gram table of the history) | "draft-simple" (a second model with
  // the same vocabulary, EngineOptions::draft_model_path) | "draft-mtp" (the file's own
  // multi-token prediction block). llama.cpp's other names (draft-eagle3, draft-dflash,
  // ngram-map-k, ...) are recognized and refused as not implemented.
  std::string type;
  int n_max = 16;        // --spec-draft-n-max: most tokens drafted per step (1..256)
  int n_min = 0;         // --spec-draft-n-min: fewer drafted tokens are not verified
  float p_min = 0.75f;   // --spec-draft-p-min: a draft model stops below this probability
  int ngram_size_n = 12;  // --spec-ngram-simple-size-n: the n-gram looked up (1..1024)
  int ngram_size_m = 48;  // --spec-ngram-simple-size-m: the m-gram after it drafted (1..1024)
  int ngram_mod_n_match = 24;  // --spec-ngram-mod-n-match: ngram-mod's n-gram (1..1024)
  bool on() const { return !type.empty(); }
};
// An error names the flag: an unknown or unimplemented type, a draft length of 0 or absurd.
Status validate_speculative(const SpeculativeOptions& o);
// The types tova implements, for errors and help: "ngram-simple, ngram-mod, draft-simple,
// draft-mtp".
std::string speculative_type_choices();

}  // namespace tova
