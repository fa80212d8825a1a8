// The Engine: a loaded model, its tokenizer and the thread pool that runs it. Immutable after
// load and shared by every session; the pool accepts one caller at a time (see
// core/thread_pool.h), so exactly one thread (a command's, or a server's scheduler thread)
// drives forward passes, batching every session it serves into them.
#pragma once

#include <memory>
#include <string>

#include "core/result.h"
#include "core/thread_pool.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "tova/session.h"

namespace tova {

struct EngineOptions {
  std::string model_path;  // empty: the bundled stories260K (see bundled_model_path)
  int n_threads = 0;       // 0: every core
  model::ModelOptions model;
  bool need_tokenizer = true;
};

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> load(const EngineOptions& o);

  const model::Model& model() const { return *model_; }
  // Null when loaded with need_tokenizer = false.
  const tok::Tokenizer* tokenizer() const { return tokenizer_.get(); }
  ThreadPool& pool() const { return *pool_; }
  double load_seconds() const { return load_seconds_; }
  const std::string& path() const { return path_; }

  // For tools that run the model on pools of their own (sweeps, benchmarks): take the parts.
  std::unique_ptr<model::Model> release_model() { return std::move(model_); }
  std::unique_ptr<tok::Tokenizer> release_tokenizer() { return std::move(tokenizer_); }

  Result<std::unique_ptr<Session>> new_session(const SessionOptions& o) const {
    return Session::create(*model_, o);
  }

 private:
  Engine() = default;
  std::string path_;
  std::unique_ptr<model::Model> model_;
  std::unique_ptr<tok::Tokenizer> tokenizer_;
  std::unique_ptr<ThreadPool> pool_;
  double load_seconds_ = 0;
};

// The bundled default model (assets/stories260K.gguf), found next to the executable or in the
// working folder.
std::string bundled_model_path();

}  // namespace tova
