// The Engine's parts for the library's own layers (the batch scheduler, evaluations, drafters,
// session files): its model, draft model, tokenizer, thread pool, the grammars' vocabulary and
// the run lock. Not part of the public face (tova/engine.h), as SessionAccess is for sessions.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <utility>

#include "tova/engine.h"

namespace tova {

class EngineAccess {
 public:
  static const model::Model& model(const Engine& e) { return *e.model_; }
  // The draft model (EngineOptions::draft_model_path), or null.
  static const model::Model* draft_model(const Engine& e) { return e.draft_.get(); }
  static const tok::Tokenizer& tokenizer(const Engine& e) { return e.tokenizer(); }
  static ThreadPool& pool(const Engine& e) { return *e.pool_; }
  // The vocabulary as grammars see it (token texts and their trie), made on first use and
  // shared by every session; null without a tokenizer.
  static std::shared_ptr<const grammar::TokenTrie> grammar_vocab(const Engine& e) {
    return e.grammar_vocab();
  }
  // The mmproj's markers around an image's tokens, as token ids (empty without an mmproj).
  static std::pair<std::span<const int32_t>, std::span<const int32_t>> image_markers(
      const Engine& e) {
    return {e.image_begin_, e.image_end_};
  }
  // Held by whoever runs forward passes on pool() (tova/engine.h).
  static std::unique_lock<std::mutex> exclusive(const Engine& e) {
    return std::unique_lock<std::mutex>(e.run_mu_);
  }
};

}  // namespace tova
