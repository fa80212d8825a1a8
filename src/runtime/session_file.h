// Session files: a sequence saved between runs — its multi-state (every layer's slots, keys,
// values, positions and policy state), tokens seen, the last tokens (for the repetition
// penalty), a sampled token not yet fed, the last logits and the sampler's random state.
// Under a bounded policy the size does not depend on how many tokens were seen.
//
// Layout (little-endian): "TOVASESS", u32 version, u32 flags, u64 payload bytes, u64 FNV-1a
// hash of the payload, then the payload (model fingerprint, cache options, layers, tokens,
// logits, sampler; version 3: architecture and recurrent states after the fingerprint; with
// flag 1, u64 bytes of a front-end note and the note). The K/V storage
// travels with the state: u8 key type, u8 value type (core/kv_type.h tags), u8 rotated, u16
// blocks per key row, u16 blocks per value row, and each layer's keys and values as canonical
// rows of those types. Any truncation, flipped byte, other model, other version, unknown type
// tag or block count that does not fit the model is one clear error.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "kv/multi_state.h"
#include "model/model.h"

namespace tova::runtime {

// Version 3 stores, after the model fingerprint, the model's architecture (a file of another
// one is refused by name) and the recurrent layers' states (hybrid models: u32 count, then per
// state u32 conv floats, u32 delta floats and the floats; kv/recurrent_state.h). Version 2
// stores the keys' and values' storage types, the rotation flag and their blocks per row;
// versions 1 (one type tag, f32 or f16) and 2 are still read (for models without recurrent
// layers).
// Version 4 adds, after the tokens seen, the images' marks: u8 kept (--kv-keep-images), u32 the
// most images kept, u32 count, then per image i64 first and i64 end position (the images some
// layer holds); versions 1 to 3 load with no image marked and none kept.
inline constexpr uint32_t kSessionVersion = 4;
// Header flag: the payload ends with a front-end note (SessionData::note).
inline constexpr uint32_t kSessionFlagNote = 1;
// Tokens of history kept (the repetition penalty looks back at most this far).
inline constexpr int kSessionHistory = 256;

struct SessionData {
  std::unique_ptr<kv::MultiState> state;
  std::vector<int32_t> history;  // the last tokens fed or sampled, at most kSessionHistory
  int32_t pending = -1;          // sampled but not yet fed (-1: none)
  std::vector<float> logits;     // [n_vocab] after the last token fed (empty: none)
  std::string rng_state;         // Sampler::rng_state()
  // What a front-end keeps with the state, opaque here (tova chat: its messages as JSON). It is
  // the only part of the file whose size may grow with the conversation; empty: none.
  std::string note;
};

// A hash of the model's shape and weights' first bytes: a session only loads into its model
// (model::Model::fingerprint(), computed once at load).
uint64_t model_fingerprint(const model::Model& m);

std::vector<uint8_t> encode_session(const model::Model& m, const SessionData& d);
// Parses a whole session file's bytes for model m (the entry point for fuzzing). max_image: most
// tokens of one image the restored state takes (kv::MultiStateOptions::max_image), the engine's.
Result<SessionData> decode_session_bytes(const model::Model& m, std::span<const uint8_t> bytes,
                                         int max_image = 0);

// Writes to PATH.tmp, then renames it over PATH: a crash never leaves half a file at PATH.
// With `sync` (the default) the file and the rename are forced to disk before returning.
// Returns the file's size in bytes.
Result<uint64_t> save_session(const std::string& path, const model::Model& m,
                              const SessionData& d, bool sync = true);
// The error names the file; nothing is changed on error.
// `file_bytes`, if given, receives the file's size.
Result<SessionData> load_session(const std::string& path, const model::Model& m,
                                 uint64_t* file_bytes = nullptr, int max_image = 0);

}  // namespace tova::runtime
