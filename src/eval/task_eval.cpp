#include "eval/task_eval.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "core/timer.h"
#include "eval/tasks.h"
#include "runtime/sampler.h"
#include "runtime/sequence.h"

namespace tova::eval {

std::string clean_answer(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  const size_t a = out.find_first_not_of(' ');
  if (a == std::string::npos) return {};
  return out.substr(a, out.find_last_not_of(' ') - a + 1);
}

namespace {

constexpr int kAutoSeqs = 32;

// One configuration on one sample.
struct Seq {
  const TaskSample* sample = nullptr;
  int cfg = 0;
  std::unique_ptr<kv::MultiState> state;
  int leader = -1;        // while following: the sequence it rides along with
  int64_t fed = 0;        // prompt tokens fed
  std::vector<float> logits;  // after the last token fed
  std::vector<int32_t> generated;
  bool done = false;
  EvalRecord record;
};

class Runner {
 public:
  Runner(const model::Model& m, const tok::Tokenizer& tk, ThreadPool& pool, const EvalOptions& o)
      : m_(m), tk_(tk), pool_(pool), o_(o), n_vocab_(m.config().n_vocab) {}

  // The configurations cfgs of the samples of group, in shared forward passes.
  Status run_group(std::span<const TaskSample> group, std::span<const int> cfgs,
                   std::vector<EvalRecord>& out) {
    seqs_.clear();
    const int n_cfg = static_cast<int>(cfgs.size());
    for (const TaskSample& s : group) {
      const int first = static_cast<int>(seqs_.size());
      for (int c : cfgs) {
        const CacheOptions co{
            .policy = o_.configs[c],
            .kv_type = o_.kv_type,
            .prefill = o_.prefill,
            .reserve = static_cast<int64_t>(s.prompt.size()) + s.max_new,
            .positions = o_.positions};
        TOVA_ASSIGN_OR_RETURN(auto st,
                              runtime::make_state(m_, co, static_cast<int64_t>(s.prompt.size())));
        Seq q;
        q.sample = &s;
        q.cfg = c;
        q.state = std::move(st);
        q.logits.resize(n_vocab_);
        seqs_.push_back(std::move(q));
      }
      if (o_.batched && o_.share_prefix && o_.prefill.exact()) choose_leader(first, first + n_cfg);
    }
    TOVA_RETURN_IF_ERROR(prefill());
    TOVA_RETURN_IF_ERROR(decode());
    for (Seq& q : seqs_) out.push_back(std::move(q.record));
    return ok_status();
  }

  int64_t n_forward = 0, token_steps = 0, shared_steps = 0;
  EvalProgress progress;

 private:
  // The prompt's configuration that holds everything longest leads; the others follow it until
  // they would first evict (model::Follower): their states equal its state until then.
  void choose_leader(int first, int last) {
    int lead = first;
    for (int s = first; s < last; ++s) {
      if (seqs_[s].state->holds_all_until() > seqs_[lead].state->holds_all_until()) lead = s;
    }
    for (int s = first; s < last; ++s) {
      if (s != lead) seqs_[s].leader = lead;
    }
  }

  // s may ride along with its leader through a call that brings both to n_after tokens.
  bool can_follow(const Seq& q, int64_t n_after) const {
    if (q.leader < 0) return false;
    const Seq& l = seqs_[q.leader];
    return l.leader < 0 && !l.done && n_after <= q.state->holds_all_until() &&
           n_after <= l.state->holds_all_until();
  }

  void report() {
    if (!o_.on_progress) return;
    progress.seconds = timer.seconds();
    o_.on_progress(progress);
  }

  Status prefill() {
    std::vector<model::BatchToken> batch;
    std::vector<model::Follower> followers;
    std::vector<int> with_logits;  // sequences whose last prompt token is in this call
    for (;;) {
      batch.clear();
      followers.clear();
      with_logits.clear();
      for (int s = 0; s < static_cast<int>(seqs_.size()); ++s) {
        Seq& q = seqs_[s];
        const int64_t n = static_cast<int64_t>(q.sample->prompt.size());
        if (q.fed >= n) continue;
        const int step = q.state->max_new() > 1 ? q.state->max_new() : std::max(1, o_.n_batch);
        const int64_t end = std::min<int64_t>(n, q.fed + step);
        if (can_follow(q, end)) {
          followers.push_back({.leader = seqs_[q.leader].state.get(), .state = q.state.get()});
          shared_steps += end - q.fed;
        } else {
          q.leader = -1;  // on its own from here
          for (int64_t i = q.fed; i < end; ++i) {
            batch.push_back({.token = q.sample->prompt[i],
                             .state = q.state.get(),
                             .logits = i + 1 == n});
          }
          if (end == n) with_logits.push_back(s);
          token_steps += end - q.fed;
        }
        progress.steps_done += end - q.fed;
        q.fed = end;
      }
      if (batch.empty()) break;
      TOVA_RETURN_IF_ERROR(forward(batch, followers, with_logits));
      report();
    }
    return ok_status();
  }

  Status forward(const std::vector<model::BatchToken>& batch,
                 const std::vector<model::Follower>& followers, const std::vector<int>& rows) {
    logits_.resize(rows.size() * n_vocab_);
    TOVA_RETURN_IF_ERROR(m_.forward(batch, pool_, scratch_, logits_.data(), followers));
    ++n_forward;
    for (size_t r = 0; r < rows.size(); ++r) {
      std::memcpy(seqs_[rows[r]].logits.data(), &logits_[r * n_vocab_], sizeof(float) * n_vocab_);
    }
    // Followers' logits are their leader's.
    for (Seq& q : seqs_) {
      if (q.leader >= 0) q.logits = seqs_[q.leader].logits;
    }
    return ok_status();
  }

  // Takes the greedy token from q's logits; finishes q when its answer is settled.
  void take_token(Seq& q) {
    const int32_t id = runtime::argmax(q.logits.data(), n_vocab_);
    const bool eog = tk_.is_eog(id);
    if (!eog) q.generated.push_back(id);
    const std::string answer = clean_answer(tk_.decode(q.generated));
    const double score = string_match_all(answer, q.sample->expected);
    // String match only grows with the answer: once everything is found it cannot change.
    if (eog || score == 1.0 || static_cast<int>(q.generated.size()) >= q.sample->max_new) {
      finish(q, answer, score);
    }
  }

  void finish(Seq& q, const std::string& answer, double score) {
    q.done = true;
    const TaskSample& s = *q.sample;
    const kv::PolicySpec& p = o_.configs[q.cfg];
    EvalRecord& r = q.record;
    r.task = s.task;
    r.length = s.length;
    r.prompt_tokens = static_cast<int>(s.prompt.size());
    r.depth = s.depth;
    r.sample = s.index;
    r.prompt_hash = s.prompt_hash;
    r.needle_token = s.needle_token;
    r.policy = p.label();
    r.budget = p.bounded() ? p.budget : -1;
    r.prefill = o_.prefill.label();
    r.positions = std::string(kv::position_mode_name(o_.positions));
    r.answer = answer;
    r.expected = s.expected;
    r.score = score;
    r.correct = score == 1.0;
    r.n_generated = static_cast<int>(q.generated.size());
    progress.steps_done += s.max_new - r.n_generated;  // the bound counted them
  }

  Status decode() {
    std::vector<model::BatchToken> batch;
    std::vector<model::Follower> followers;
    std::vector<int> rows;
    for (;;) {
      // Every sequence that has logits takes its next token (followers take their leader's).
      for (Seq& q : seqs_) {
        if (!q.done) take_token(q);
      }
      batch.clear();
      followers.clear();
      rows.clear();
      for (int s = 0; s < static_cast<int>(seqs_.size()); ++s) {
        Seq& q = seqs_[s];
        if (q.done) continue;
        if (can_follow(q, q.state->n_seen() + 1)) {
          followers.push_back({.leader = seqs_[q.leader].state.get(), .state = q.state.get()});
          ++shared_steps;
        } else {
          q.leader = -1;
          batch.push_back({.token = q.generated.back(), .state = q.state.get(), .logits = true});
          rows.push_back(s);
          ++token_steps;
        }
        ++progress.steps_done;
      }
      if (batch.empty()) break;
      TOVA_RETURN_IF_ERROR(forward(batch, followers, rows));
      report();
    }
    return ok_status();
  }

  const model::Model& m_;
  const tok::Tokenizer& tk_;
  ThreadPool& pool_;
  const EvalOptions& o_;
  int n_vocab_;
  Timer timer;
  std::vector<Seq> seqs_;
  model::ForwardScratch scratch_;
  std::vector<float> logits_;
};

}  // namespace

Result<EvalResult> run_eval(const model::Model& m, const tok::Tokenizer& tk, ThreadPool& pool,
                            std::span<const TaskSample> samples, const EvalOptions& o) {
  if (o.configs.empty()) return make_error("no configurations to run");
  int n_full = 0;
  for (const kv::PolicySpec& s : o.configs) {
    if (s.info == nullptr) return make_error("a configuration has no policy");
    n_full += !s.bounded();
  }
  if (n_full > 1) return make_error("the unbounded policy is listed {} times", n_full);
  for (const TaskSample& s : samples) {
    if (s.prompt.empty()) return make_error("sample {} of task '{}' has no prompt", s.index, s.task);
    if (s.max_new < 1) return make_error("sample {} of task '{}' generates nothing", s.index, s.task);
    for (int32_t id : s.prompt) {
      if (id < 0 || id >= m.config().n_vocab) {
        return make_error("task '{}': token id {} is outside the vocabulary", s.task, id);
      }
    }
  }
  Timer t;
  Runner runner(m, tk, pool, o);
  const int n_cfg = static_cast<int>(o.configs.size());
  for (const TaskSample& s : samples) {
    runner.progress.steps_total += (static_cast<int64_t>(s.prompt.size()) + s.max_new) * n_cfg;
  }
  EvalResult r;
  std::vector<int> all(n_cfg);
  for (int c = 0; c < n_cfg; ++c) all[c] = c;
  if (o.batched) {
    const int per_group = std::max(1, (o.max_seqs > 0 ? o.max_seqs : kAutoSeqs) / n_cfg);
    for (size_t g = 0; g < samples.size(); g += per_group) {
      const size_t n = std::min<size_t>(per_group, samples.size() - g);
      TOVA_RETURN_IF_ERROR(runner.run_group(samples.subspan(g, n), all, r.records));
    }
  } else {
    for (size_t i = 0; i < samples.size(); ++i) {
      for (int c = 0; c < n_cfg; ++c) {
        TOVA_RETURN_IF_ERROR(runner.run_group(samples.subspan(i, 1), {&c, 1}, r.records));
      }
    }
  }
  r.n_forward_calls += runner.n_forward;
  r.token_steps += runner.token_steps;
  r.shared_steps = runner.shared_steps;
  r.seconds = t.seconds();
  return r;
}

}  // namespace tova::eval
