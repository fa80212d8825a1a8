#include "tova/engine.h"

#include <filesystem>
#include <thread>
#include <vector>

#include "core/check.h"
#include "core/field_names.h"
#include "core/thread_pool.h"
#include "core/timer.h"
#include "grammar/gbnf.h"
#include "grammar/token_trie.h"
#include "runtime/engine_access.h"
#include "runtime/grammar_vocab.h"
#include "model/model.h"
#include "runtime/batch_scheduler.h"
#include "runtime/sequence.h"
#include "runtime/speculation.h"
#include "runtime/session_impl.h"
#include "tokenizer/tokenizer.h"
#include "model/token_ids.h"
#include "vision/mmproj.h"

namespace tova {

Engine::Engine() = default;
Engine::~Engine() = default;

Result<std::unique_ptr<Engine>> Engine::load(const EngineOptions& o) {
  auto e = std::unique_ptr<Engine>(new Engine());
  e->path_ = o.model_path.empty() ? bundled_model_path() : o.model_path;
  Timer t;
  const model::ModelOptions mo{.f32_activations = o.f32_activations,
                                .mmap = o.mmap,
                                .repack = o.repack.value_or(model::kRepackByDefault)};
  TOVA_ASSIGN_OR_RETURN(e->model_, model::Model::load(e->path_, mo));
  if (o.need_tokenizer) {
    TOVA_ASSIGN_OR_RETURN(e->tokenizer_, tok::Tokenizer::from_gguf(e->model_->file()));
  }
  if (!o.draft_model_path.empty()) {
    TOVA_ASSIGN_OR_RETURN(e->draft_, model::Model::load(o.draft_model_path, mo));
    TOVA_RETURN_IF_ERROR(runtime::check_same_vocabulary(*e->model_, *e->draft_));
  }
  if (!o.mmproj_path.empty()) TOVA_RETURN_IF_ERROR(e->open_mmproj(o.mmproj_path));
  e->load_seconds_ = t.seconds();
  const int n = o.n_threads > 0
                    ? o.n_threads
                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  e->pool_ = std::make_unique<ThreadPool>(n);
  return e;
}

int Engine::n_threads() const { return pool_->size(); }
int Engine::n_vocab() const { return model_->config().n_vocab; }
int64_t Engine::n_ctx_train() const { return model_->config().n_ctx_train; }
int Engine::n_layer() const { return model_->config().n_layer; }
int Engine::n_head_kv() const { return model_->config().n_head_kv; }
const std::string& Engine::architecture() const { return model_->config().arch_name; }
uint64_t Engine::weight_bytes() const { return model_->weights().n_bytes; }
uint64_t Engine::mtp_bytes() const { return model_->weights().n_bytes_nextn; }
int Engine::n_mtp_blocks() const { return model_->config().n_nextn; }

const tok::Tokenizer& Engine::tokenizer() const {
  TOVA_CHECK(tokenizer_ != nullptr);
  return *tokenizer_;
}

std::vector<int32_t> Engine::tokenize(std::string_view text, bool add_bos,
                                      bool parse_special) const {
  return tokenizer().encode(text, add_bos, parse_special);
}

Status Engine::check_token_ids(std::span<const int32_t> ids) const {
  return model::check_token_ids(ids, n_vocab(), field::kTokenIds);
}

Result<std::string> Engine::detokenize(std::span<const int32_t> ids) const {
  TOVA_RETURN_IF_ERROR(check_token_ids(ids));
  return tokenizer().decode(ids);
}

bool Engine::is_eog(int32_t id) const { return tokenizer().is_eog(id); }

std::shared_ptr<const grammar::TokenTrie> Engine::grammar_vocab() const {
  if (!tokenizer_) return nullptr;
  std::call_once(grammar_once_, [&] {
    grammar::VocabText v = runtime::grammar_vocab_text(*tokenizer_);
    grammar_vocab_ = std::make_shared<const grammar::TokenTrie>(std::move(v));
  });
  return grammar_vocab_;
}

namespace runtime {

Result<std::unique_ptr<Sampler>> make_sampler(const Engine& e, const SamplerParams& p) {
  if (p.grammar.empty()) return std::make_unique<Sampler>(p);
  TOVA_ASSIGN_OR_RETURN(grammar::Grammar g, grammar::parse_gbnf(p.grammar));
  auto vocab = EngineAccess::grammar_vocab(e);
  if (!vocab) return make_error("a grammar needs the model's tokenizer, which was not loaded");
  return std::make_unique<Sampler>(
      p, grammar::Constraint(std::make_shared<const grammar::Grammar>(std::move(g)), vocab));
}

}  // namespace runtime

std::string Engine::chat_template_text() const {
  auto t = model_->file().get_string("tokenizer.chat_template");
  return t.ok() ? *t : std::string();
}

Result<std::unique_ptr<Session>> Engine::new_session(const SessionOptions& o) const {
  TOVA_RETURN_IF_ERROR(validate(o.sampling));
  auto s = std::make_unique<Session::Impl>();
  s->engine = this;
  s->tokenizer = tokenizer_.get();
  s->cache = o.cache;
  s->sampling = o.sampling;
  s->n_batch = std::max(1, o.n_batch);
  TOVA_ASSIGN_OR_RETURN(s->state, runtime::make_state(*model_, o.cache, o.n_prompt_hint,
                                                      /*runs_cuts=*/false, max_image_tokens()));
  TOVA_ASSIGN_OR_RETURN(s->sampler, runtime::make_sampler(*this, o.sampling));
  TOVA_ASSIGN_OR_RETURN(s->spec, runtime::make_speculation(*this, o.speculative, o.cache));
  s->logits.assign(n_vocab(), 0.0f);
  return runtime::SessionAccess::make(std::move(s));
}

Result<LoadedSession> Engine::load_session(const std::string& path, const SessionOptions& o) const {
  LoadedSession out;
  TOVA_ASSIGN_OR_RETURN(runtime::SessionData d,
                        runtime::load_session(path, *model_, &out.file_bytes, max_image_tokens()));
  out.note = std::move(d.note);
  TOVA_ASSIGN_OR_RETURN(out.session, runtime::resume_session(*this, o, std::move(d)));
  return out;
}

std::string bundled_model_path() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> candidates;
  if (!ec) {
    candidates.push_back(exe.parent_path() / "../../assets/stories260K.gguf");
    candidates.push_back(exe.parent_path() / "../share/tova/stories260K.gguf");
  }
  candidates.push_back("assets/stories260K.gguf");
  for (const auto& c : candidates) {
    if (fs::exists(c, ec)) return fs::weakly_canonical(c, ec).string();
  }
  return "assets/stories260K.gguf";
}

}  // namespace tova
