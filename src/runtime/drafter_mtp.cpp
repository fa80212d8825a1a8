// draft-mtp: the file's own multi-token prediction block drafts (Qwen3.5/3.6, llama.cpp's
// `--spec-type draft-mtp`, common/speculative.cpp's draft-mtp driver, single-block mode). The
// block (model/nextn_forward.cpp) keeps its own K/V: its position p holds the pair (x_p,
// h_{p-1}), the token at p and the target's final-normed hidden state at p - 1 (zeros before
// position 0, as llama.cpp starts it). To draft after a history x_0..x_{L-1} whose last token
// the target has not fed yet:
//   sync   the block takes the pairs of the positions it has not seen up to L - 2, from the
//          hidden rows the feeding loop handed over (observe), in one pass;
//   chain  from a checkpoint of its state: (x_{L-1}, h_{L-2}) at L - 1 gives logits whose top
//          token is d1; (d1, the block's own output row h') at L gives d2; and so on, stopping
//          where the top token's probability (among the 10 most probable, as llama.cpp's
//          top-10 draft sampler computes it) is below p_min or n_max are drafted;
//   undo   the state goes back to the checkpoint: drafts never stay in the block's K/V.
// Hidden rows of a verify step's drafts arrive too; a row counts only while its token is the
// history's at its position, so a rejected draft's row is never used, and the accepted drafts'
// rows (exact: a verify step computes them as single steps would) let the block draft right
// after a rejection, when the re-fed tokens are still pending. A history the block cannot
// continue (a reset session) starts it again; where the rows of the earliest positions are
// gone (a session resumed from a file or the server's state store), it starts at the first
// position it has rows for (set_n_seen): its K/V then lacks the earlier pairs, which lowers
// acceptance, never correctness.
#include <algorithm>
#include <cstring>

#include "kv/multi_state.h"
#include "model/model.h"
#include "runtime/cache_options.h"
#include "runtime/drafter.h"
#include "runtime/engine_access.h"
#include "tova/engine.h"

namespace tova::runtime {
namespace {

constexpr int64_t kSyncTokens = 512;  // most pairs one sync pass takes

class MtpDrafter : public Drafter {
 public:
  MtpDrafter(const Engine& e, const model::Model& m, const CacheOptions& cache, float p_min)
      : e_(&e), m_(&m), cache_(cache), p_min_(p_min), d_(m.config().n_embd) {}

  MtpDrafter(const MtpDrafter& o)
      : e_(o.e_),
        m_(o.m_),
        cache_(o.cache_),
        p_min_(o.p_min_),
        d_(o.d_),
        state_(o.state_ ? o.state_->clone() : nullptr),
        fed_(o.fed_),
        rec_pos_(o.rec_pos_),
        rec_tok_(o.rec_tok_),
        rec_h_(o.rec_h_),
        logits_(o.logits_) {}

  bool wants_hidden() const override { return true; }

  void observe(int64_t pos, std::span<const int32_t> tokens, const float* hidden) override {
    const int64_t end = rec_pos_ + static_cast<int64_t>(rec_tok_.size());
    if (pos < rec_pos_ || pos > end) {  // before what is kept, or a gap: start afresh
      rec_pos_ = pos;
      rec_tok_.clear();
      rec_h_.clear();
    } else {
      rec_tok_.resize(static_cast<size_t>(pos - rec_pos_));
      rec_h_.resize(rec_tok_.size() * d_);
    }
    rec_tok_.insert(rec_tok_.end(), tokens.begin(), tokens.end());
    rec_h_.insert(rec_h_.end(), hidden, hidden + tokens.size() * d_);
  }

  Result<std::vector<int32_t>> draft(std::span<const int32_t> history, int n_max) override {
    std::vector<int32_t> out;
    logits_.clear();
    const int64_t len = static_cast<int64_t>(history.size());
    if (len == 0 || n_max <= 0) return out;
    // The rows that still hold: their tokens are the history's.
    int64_t valid_end = rec_pos_;
    while (valid_end < len && valid_end - rec_pos_ < static_cast<int64_t>(rec_tok_.size()) &&
           rec_tok_[valid_end - rec_pos_] == history[valid_end]) {
      ++valid_end;
    }
    // Drafting after x_{L-1} needs h_{L-2} (none before position 0).
    if (len >= 2 && !(rec_pos_ <= len - 2 && len - 2 < valid_end)) return out;

    const auto lock = EngineAccess::exclusive(*e_);
    size_t common = 0;
    while (common < fed_.size() && common < history.size() && fed_[common] == history[common]) {
      ++common;
    }
    const int64_t m0 = static_cast<int64_t>(fed_.size());
    // Syncing from m0 needs the rows from m0 - 1 on (none for position 0).
    const bool rows_gone = m0 < len - 1 && (m0 == 0 ? rec_pos_ > 0 : m0 - 1 < rec_pos_);
    if (!state_ || common < fed_.size() || m0 > len - 1 || rows_gone) {
      // Start again: at 0 where the rows reach back there, else past the first kept row.
      const int64_t start = rec_pos_ == 0 ? 0 : std::min(rec_pos_ + 1, len - 1);
      TOVA_ASSIGN_OR_RETURN(state_, make_block_state());
      state_->set_n_seen(start);
      fed_.assign(history.begin(), history.begin() + start);
    }
    // Sync: the pairs (x_p, h_{p-1}) for p = fed .. L - 2.
    const int64_t m = static_cast<int64_t>(fed_.size());
    // In passes of at most kSyncTokens (a long prompt's first draft), as prompts are fed.
    for (int64_t a = m; a < len - 1; a += kSyncTokens) {
      const int64_t b = std::min(len - 1, a + kSyncTokens);
      batch_.clear();
      h_.assign(static_cast<size_t>(b - a) * d_, 0.f);
      for (int64_t p = a; p < b; ++p) {
        batch_.push_back({.token = history[p], .state = state_.get(), .logits = false});
        if (p > 0) std::memcpy(&h_[(p - a) * d_], row(p - 1), sizeof(float) * d_);
      }
      TOVA_RETURN_IF_ERROR(
          m_->forward_nextn(0, batch_, h_.data(), EngineAccess::pool(*e_), scratch_, nullptr, nullptr));
      fed_.assign(history.begin(), history.begin() + b);
    }
    // Rows before h_{L-2} are no longer needed (the block holds their pairs).
    if (len >= 2) trim_before(len - 2);

    // Chain from a checkpoint.
    std::unique_ptr<kv::MultiState> checkpoint = state_->clone();
    const int n_vocab = m_->config().n_vocab;
    std::vector<float> cur(n_vocab);
    std::vector<float> h(d_, 0.f), h_next(d_);
    if (len >= 2) std::memcpy(h.data(), row(len - 2), sizeof(float) * d_);
    int32_t tok = history[len - 1];
    for (int i = 0; i < n_max; ++i) {
      const model::BatchToken bt{.token = tok, .state = state_.get(), .logits = true};
      const Status st = m_->forward_nextn(0, std::span(&bt, 1), h.data(), EngineAccess::pool(*e_), scratch_,
                                          cur.data(), h_next.data());
      if (!st.ok()) {
        state_ = std::move(checkpoint);
        return st.error();
      }
      const DraftChoice c = draft_choice(cur.data(), n_vocab);
      if (c.p < p_min_) break;
      out.push_back(c.token);
      logits_.insert(logits_.end(), cur.begin(), cur.end());
      if (i + 1 == n_max) break;
      tok = c.token;
      std::swap(h, h_next);
    }
    state_ = std::move(checkpoint);
    return out;
  }

  std::unique_ptr<Drafter> clone() const override { return std::make_unique<MtpDrafter>(*this); }
  std::span<const float> last_logits() const override { return logits_; }

 private:
  const float* row(int64_t p) const { return &rec_h_[static_cast<size_t>(p - rec_pos_) * d_]; }

  void trim_before(int64_t p) {
    if (p <= rec_pos_) return;
    const size_t k = static_cast<size_t>(p - rec_pos_);
    rec_tok_.erase(rec_tok_.begin(), rec_tok_.begin() + k);
    rec_h_.erase(rec_h_.begin(), rec_h_.begin() + k * d_);
    rec_pos_ = p;
  }

  uint64_t state_bytes() const override { return state_ ? state_->bytes() : 0; }

  Result<std::unique_ptr<kv::MultiState>> make_block_state() const {
    kv::MultiStateOptions so = m_->nextn_state_options(cache_.policy, cache_.kv_type);
    so.positions = cache_.positions;
    so.memory_limit = cache_.memory_limit;
    return kv::MultiState::create(so);
  }

  const Engine* e_;
  const model::Model* m_;
  CacheOptions cache_;
  float p_min_;
  size_t d_;                               // n_embd
  std::unique_ptr<kv::MultiState> state_;  // the block's K/V, one layer
  std::vector<int32_t> fed_;               // x_0.. whose pairs the block has seen (or skipped)
  int64_t rec_pos_ = 0;                    // position of the first kept hidden row
  std::vector<int32_t> rec_tok_;           // [kept] the token at each kept row's position
  std::vector<float> rec_h_;               // [kept][n_embd] the target's final-normed rows
  std::vector<float> logits_;              // [drafted][n_vocab] of the last draft
  std::vector<model::BatchToken> batch_;   // sync pass
  std::vector<float> h_;                   // [sync tokens][n_embd]
  model::ForwardScratch scratch_;
};

}  // namespace

Result<std::unique_ptr<Drafter>> make_mtp_drafter(const Engine& e, const SpeculativeOptions& o,
                                                  const CacheOptions& cache) {
  const model::Model& m = EngineAccess::model(e);
  if (m.config().n_nextn == 0) {
    return make_error(
        "--spec-type draft-mtp: model '{}' has no multi-token prediction block "
        "({}.nextn_predict_layers is 0 or absent)",
        m.file().path(), m.config().arch_name);
  }
  return std::unique_ptr<Drafter>(std::make_unique<MtpDrafter>(e, m, cache, o.p_min));
}

uint64_t mtp_drafter_reserve_bytes(const Engine& e, const CacheOptions& cache, int64_t n_prompt,
                                   int64_t n_ctx) {
  const model::Model& m = EngineAccess::model(e);
  if (m.config().n_nextn == 0) return 0;
  return reserve_bytes(m.nextn_state_options(cache.policy, cache.kv_type), cache, n_prompt,
                       n_ctx);
}

}  // namespace tova::runtime
