#include "eval/task_eval.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "core/timer.h"
#include "eval/invariant_forward.h"
#include "eval/nll.h"
#include "eval/tasks.h"
#include "runtime/continuation.h"
#include "runtime/forward_batch.h"
#include "runtime/kvzip_pass.h"
#include "runtime/sequence.h"
#include "runtime/session_impl.h"
#include "tova/text_stream.h"
#include "model/token_ids.h"

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

// One configuration on one sample: a conversation of one or more turns.
struct Seq {
  const TaskSample* sample = nullptr;
  int cfg = 0;
  std::unique_ptr<Session> session;  // driven: the runner feeds it (runtime::driven_session)
  std::unique_ptr<TextStream> stream;  // the current turn's answer
  std::string text;                    // that answer's text so far
  int turn = 0;                        // 0-based
  bool scored = false;                 // the current turn's answer NLL is computed
  int leader = -1;  // while following: the sequence it rides along with
  bool done = false;
  int64_t turn_prompt = 0;  // tokens in the history when the turn's prompt was fed
  bool cuts = false;        // its policy is cut by a scoring pass (kvzip)
  int64_t pass_tokens = 0;  // tokens the passes processed for the current turn
  double nll_sum = 0;
  int nll_tokens = 0;
  // Chat prompts: the conversation so far and its text up to the end of the last answer.
  std::vector<ChatMessage> messages;
  std::string rendered;
  std::vector<EvalRecord> records;
};

int n_turns(const TaskSample& s) { return 1 + static_cast<int>(s.more.size()); }

const std::vector<std::string>& expected_of(const TaskSample& s, int turn) {
  return turn == 0 ? s.expected : s.more[turn - 1].expected;
}
const std::vector<int32_t>& answer_ids_of(const TaskSample& s, int turn) {
  return turn == 0 ? s.answer_ids : s.more[turn - 1].answer_ids;
}

class Runner {
 public:
  Runner(const model::Model& m, const tok::Tokenizer& tk, ThreadPool& pool, const EvalOptions& o,
         InvariantForward fwd)
      : m_(m), tk_(tk), pool_(pool), o_(o), n_vocab_(m.config().n_vocab), fwd_(std::move(fwd)) {}

  // The configurations cfgs of the samples of group, in shared forward passes.
  Status run_group(std::span<const TaskSample> group, std::span<const int> cfgs,
                   std::vector<EvalRecord>& out) {
    seqs_.clear();
    const int n_cfg = static_cast<int>(cfgs.size());
    for (const TaskSample& s : group) {
      const int first = static_cast<int>(seqs_.size());
      for (int c : cfgs) {
        // What the conversation may hold: the prompt, every later question (chat: rendered
        // after each answer, about as long), every answer.
        int64_t reserve = static_cast<int64_t>(s.prompt.size());
        for (const SampleTurn& t : s.more) {
          reserve += t.ids.empty() ? static_cast<int64_t>(t.question.size()) + 64 : t.ids.size();
        }
        reserve += static_cast<int64_t>(n_turns(s)) * (s.max_new + 1);
        const CacheOptions co{.policy = o_.configs[c],
                              .kv_type = o_.kv_type,
                              .prefill = o_.prefill,
                              .reserve = reserve,
                              .positions = o_.positions};
        TOVA_ASSIGN_OR_RETURN(
            auto st, runtime::make_state(m_, co, static_cast<int64_t>(s.prompt.size()), true));
        Seq q;
        q.cuts = runtime::cuts_by_caller(*st);
        q.sample = &s;
        q.cfg = c;
        q.session = runtime::driven_session(tk_, n_vocab_, std::move(st), SamplerParams{.temp = 0});
        if (o_.chat) {
          q.messages = {{.role = "user", .content = s.user}};
          TOVA_ASSIGN_OR_RETURN(q.rendered, o_.chat->render(q.messages, true));
          q.rendered += s.answer_prefix;
        }
        begin_turn(q, s.prompt);
        seqs_.push_back(std::move(q));
      }
      if (o_.batched && o_.share_prefix && o_.prefill.exact()) choose_leader(first, first + n_cfg);
    }
    TOVA_RETURN_IF_ERROR(run());
    for (Seq& q : seqs_) {
      for (EvalRecord& r : q.records) out.push_back(std::move(r));
    }
    return ok_status();
  }

  int64_t n_forward = 0, token_steps = 0, shared_steps = 0, nll_steps = 0, pass_steps = 0;
  EvalProgress progress;

 private:
  // The prompt's configuration that holds everything longest leads; the others follow it until
  // they would first evict (model::Follower): their states equal its state until then.
  void choose_leader(int first, int last) {
    int lead = first;
    for (int s = first; s < last; ++s) {
      if (state(seqs_[s]).holds_all_until() > state(seqs_[lead]).holds_all_until()) lead = s;
    }
    for (int s = first; s < last; ++s) {
      if (s != lead) seqs_[s].leader = lead;
    }
  }

  static kv::MultiState& state(Seq& q) { return runtime::state_of(*q.session); }
  static const kv::MultiState& state(const Seq& q) { return runtime::state_of(*q.session); }

  // s may ride along with its leader through a call that brings both to n_after tokens.
  bool can_follow(const Seq& q, int64_t n_after) const {
    if (q.leader < 0) return false;
    const Seq& l = seqs_[q.leader];
    return l.leader < 0 && !l.done && n_after <= state(q).holds_all_until() &&
           n_after <= state(l).holds_all_until();
  }

  void report() {
    if (!o_.on_progress) return;
    progress.seconds = timer.seconds();
    o_.on_progress(progress);
  }

  // Queues a turn's prompt and starts the stream that writes its answer.
  void begin_turn(Seq& q, std::span<const int32_t> tokens) {
    q.session->queue(tokens);
    // A turn of a conversation: the token that hits the length limit joins the history (the
    // stream queues it; an end of generation does not: the next turn's text, or the
    // template's end of turn, follows).
    q.stream = std::make_unique<TextStream>(
        *q.session, GenerateOptions{.max_tokens = q.sample->max_new,
                                    .ignore_eos = false,
                                    .keep_length_token = true});
    q.text.clear();
    q.scored = false;
  }

  const std::string& answer_prefix_of(const Seq& q) const {
    return q.turn == 0 ? q.sample->answer_prefix : q.sample->more[q.turn - 1].answer_prefix;
  }

  // Chat prompts: the conversation with the current answer closed and `next` as the next user
  // turn, rendered with the assistant's header and `answer_prefix` after it; returns what it
  // adds to the text fed so far. An error when the template does not render the conversation
  // as it was fed (it rewrites the answer: trims it, drops parts), which `what` names.
  Result<std::string> render_next(const Seq& q, const std::string& next,
                                  const std::string& answer_prefix, std::string_view what,
                                  std::string* rendered) const {
    std::vector<ChatMessage> msgs = q.messages;
    msgs.push_back({.role = "assistant", .content = answer_prefix_of(q) + q.text});
    msgs.push_back({.role = "user", .content = next});
    const std::string before = q.rendered + q.text;
    auto now = o_.chat->render(msgs, true);
    if (!now.ok() || now->compare(0, before.size(), before) != 0) {
      return make_error("chat template '{}' cannot render {} after the conversation as it was fed "
                        "(task '{}' sample {}, turn {}){}",
                        o_.chat->name(), what, q.sample->task, q.sample->index, q.turn + 1,
                        now.ok() ? ": it rewrites the answer" : ": " + now.message());
    }
    *now += answer_prefix;
    if (rendered != nullptr) *rendered = *now;
    return now->substr(before.size());
  }

  // The tokens of the next turn after the current answer: the sample's (raw prompts), or the
  // conversation rendered again past what was fed (chat).
  Result<std::vector<int32_t>> next_turn_tokens(Seq& q) {
    const SampleTurn& t = q.sample->more[q.turn];
    if (!o_.chat) return t.ids;
    std::string rendered;
    TOVA_ASSIGN_OR_RETURN(const std::string added,
                          render_next(q, t.question, t.answer_prefix, "the next question", &rendered));
    q.messages.push_back({.role = "assistant", .content = answer_prefix_of(q) + q.text});
    q.messages.push_back({.role = "user", .content = t.question});
    q.rendered = std::move(rendered);
    return runtime::continuation_ids(tk_, added, /*parse_special=*/true);
  }

  // The answer of q's turn is settled: its record, then the next turn's question (or the end).
  Status end_turn(Seq& q) {
    const TaskSample& s = *q.sample;
    const kv::PolicySpec& p = o_.configs[q.cfg];
    const std::string answer = clean_answer(q.text);
    EvalRecord r;
    r.task = s.task;
    r.length = s.length;
    r.prompt_tokens = static_cast<int>(q.turn_prompt);
    r.depth = s.depth;
    r.sample = s.index;
    r.prompt_hash = s.prompt_hash;
    r.needle_token = q.turn == 0 ? s.needle_token : -1;
    r.policy = p.label();
    r.budget = p.bounded() ? p.budget : -1;
    r.prefill = o_.prefill.label();
    r.positions = std::string(kv::position_mode_name(o_.positions));
    r.answer = answer;
    r.expected = expected_of(s, q.turn);
    r.score = string_match_all(answer, r.expected);
    r.correct = r.score == 1.0;
    r.n_generated = q.stream->stats().n_generated;
    r.turn = q.turn + 1;
    r.n_turns = n_turns(s);
    r.answer_nll = q.nll_tokens > 0 ? q.nll_sum / q.nll_tokens : 0.0;
    r.answer_tokens = q.nll_tokens;
    r.pass_tokens = q.pass_tokens;
    q.pass_tokens = 0;
    progress.steps_done += s.max_new - r.n_generated;  // the bound counted them
    q.records.push_back(std::move(r));
    if (q.turn + 1 >= n_turns(s)) {
      q.done = true;
      return ok_status();
    }
    if (q.cuts) TOVA_RETURN_IF_ERROR(cut(q));  // at the turn's end, before the next question
    TOVA_ASSIGN_OR_RETURN(const std::vector<int32_t> ids, next_turn_tokens(q));
    ++q.turn;
    begin_turn(q, ids);
    return ok_status();
  }

  // kvzip: the scoring pass over the conversation fed so far, then the cut to the budget. The
  // sequence stays on its own from here (nothing it holds may differ from a leader's unseen).
  Status cut(Seq& q) {
    // At a turn's end the context is the whole history; a token queued and not fed yet (the
    // answer's last) goes first, so the copy reads the conversation whole. Within the first
    // prompt (a chunk's end under chunk:C) it is what was fed so far: the prompt's unread rest
    // is not read ahead.
    const std::vector<int32_t>& all = q.session->history();
    const bool in_prompt = q.turn == 0 && !q.scored;
    const std::span<const int32_t> history(all.data(),
                                           in_prompt ? static_cast<size_t>(q.session->n_fed())
                                                     : all.size());
    std::string head(runtime::kKvzipRawHead);
    if (o_.chat) {
      TOVA_ASSIGN_OR_RETURN(head, render_next(q, std::string(runtime::kKvzipInstruction), "",
                                              "kvzip's reconstruction prompt", nullptr));
    }
    std::vector<int32_t> recon(history.begin() + q.session->n_fed(), history.end());
    const std::vector<int32_t> rest =
        runtime::kvzip_reconstruction(tk_, head, o_.chat.has_value(), history);
    recon.insert(recon.end(), rest.begin(), rest.end());
    TOVA_ASSIGN_OR_RETURN(const int64_t n, runtime::kvzip_cut(m_, pool_, scratch_, state(q), recon));
    q.pass_tokens += n;
    pass_steps += n;
    q.leader = -1;
    for (Seq& f : seqs_) {
      if (f.leader >= 0 && &seqs_[f.leader] == &q) f.leader = -1;
    }
    return ok_status();
  }

  // One generated token for q (it has logits): the stream samples it; the answer ends at the
  // stream's end or once its score is settled (string match only grows with the answer).
  Status take_token(Seq& q) {
    Piece piece = q.stream->advance();
    q.text += piece.text;
    if (!q.stream->done() &&
        string_match_all(clean_answer(q.text), expected_of(*q.sample, q.turn)) == 1.0) {
      q.text += q.stream->cancel().text;
    }
    if (q.stream->done()) return end_turn(q);
    return ok_status();
  }

  // The teacher-forced NLL of each listed sequence's expected answer after its turn's prompt:
  // the first token from the prompt's logits, the others fed on a copy of the state (one token
  // per pass under chunked prefill, as generation would feed them; all at once under exact
  // prefill, which evicts exactly as one at a time).
  Status score_answers(const std::vector<int>& which) {
    struct Copy {
      Seq* q;
      std::unique_ptr<kv::MultiState> state;
      std::span<const int32_t> ids;
      size_t fed = 0;  // answer tokens fed (the next one is predicted by the last logits)
    };
    std::vector<Copy> copies;
    std::vector<double> logp(n_vocab_);
    for (int i : which) {
      Seq& q = seqs_[i];
      q.scored = true;
      q.turn_prompt = q.session->n_fed();
      const std::vector<int32_t>& ids = answer_ids_of(*q.sample, q.turn);
      q.nll_sum = 0;
      q.nll_tokens = 0;
      if (ids.empty()) continue;
      log_softmax(q.session->logits(), logp);
      q.nll_sum = nll(logp, ids[0]);
      q.nll_tokens = 1;
      if (ids.size() > 1) copies.push_back({&q, state(q).clone(), ids, 0});
    }
    runtime::ForwardBatch batch;
    std::vector<std::pair<Copy*, size_t>> rows;  // the copy and the answer token predicted
    for (;;) {
      batch.clear();
      rows.clear();
      for (Copy& c : copies) {
        const size_t last = c.ids.size() - 1;  // tokens to feed: ids[0 .. last)
        if (c.fed >= last) continue;
        // Answer tokens are decoding steps: a chunked sequence takes them one by one.
        const size_t end = c.state->max_new() > 1 ? c.fed + 1 : last;
        batch.add(*c.state, std::span(c.ids).subspan(c.fed, end - c.fed), runtime::LogitsAt::kEach);
        for (size_t j = c.fed; j < end; ++j) rows.push_back({&c, j + 1});
        nll_steps += static_cast<int64_t>(end - c.fed);
        c.fed = end;
      }
      if (batch.empty()) break;
      TOVA_RETURN_IF_ERROR(fwd_.run(batch, pool_, scratch_, logits_));
      ++n_forward;
      for (size_t r = 0; r < rows.size(); ++r) {
        log_softmax(std::span<const float>(&logits_[r * n_vocab_], n_vocab_), logp);
        Copy& c = *rows[r].first;
        c.q->nll_sum += nll(logp, c.ids[rows[r].second]);
        ++c.q->nll_tokens;
      }
    }
    return ok_status();
  }

  // Until every conversation is done: each pass takes every sequence's pending tokens (a
  // prompt in steps of n_batch, or of C under chunk:C; one generated token), followers riding
  // along with their leader; then the sequences that received logits take their next token.
  Status run() {
    runtime::ForwardBatch batch;
    struct Take {
      int seq;
      int64_t n;
      bool last;  // the sequence's last pending token: it receives logits
      int row;    // its logits row; -1: a follower (its leader's logits)
    };
    std::vector<Take> takes;
    std::vector<int> to_score;
    for (;;) {
      batch.clear();
      takes.clear();
      for (int s = 0; s < static_cast<int>(seqs_.size()); ++s) {
        Seq& q = seqs_[s];
        if (q.done) continue;
        const int64_t n = q.session->n_pending();
        if (n == 0) continue;
        kv::MultiState& st = state(q);
        const int64_t take = std::min<int64_t>(n, runtime::prompt_step(st, o_.n_batch));
        const bool last = take == n;
        if (can_follow(q, st.n_seen() + take)) {
          batch.follow(state(seqs_[q.leader]), st);
          shared_steps += take;
          takes.push_back({s, take, last, -1});
        } else {
          q.leader = -1;  // on its own from here
          const int row = batch.add(st, q.session->pending().first(take),
                                    last ? runtime::LogitsAt::kLast : runtime::LogitsAt::kNone);
          token_steps += take;
          takes.push_back({s, take, last, row});
        }
        progress.steps_done += take;
      }
      if (batch.empty()) break;
      TOVA_RETURN_IF_ERROR(fwd_.run(batch, pool_, scratch_, logits_));
      ++n_forward;
      // Leaders first: a follower's logits are its leader's.
      for (const Take& t : takes) {
        if (t.row >= 0 || !t.last) {
          runtime::mark_fed(*seqs_[t.seq].session, t.n,
                            t.row >= 0 ? &logits_[static_cast<size_t>(t.row) * n_vocab_] : nullptr);
        }
      }
      for (const Take& t : takes) {
        if (t.row < 0 && t.last) {
          Seq& q = seqs_[t.seq];
          runtime::mark_fed(*q.session, t.n, seqs_[q.leader].session->logits().data());
        }
      }
      // kvzip: a cut at the first prompt's end (under chunk:C, at each of its chunks' ends),
      // before its answer's tokens are scored or generated.
      for (const Take& t : takes) {
        Seq& q = seqs_[t.seq];
        if (q.cuts && q.turn == 0 && !q.scored && (t.last || state(q).max_new() > 1)) {
          TOVA_RETURN_IF_ERROR(cut(q));
        }
      }
      to_score.clear();
      for (const Take& t : takes) {
        if (t.last && !seqs_[t.seq].scored) to_score.push_back(t.seq);
      }
      TOVA_RETURN_IF_ERROR(score_answers(to_score));
      for (const Take& t : takes) {
        if (t.last) TOVA_RETURN_IF_ERROR(take_token(seqs_[t.seq]));
      }
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
  // Every call padded to the matmul's batch-invariant size: a sequence's records are the same
  // bits alone and batched, its answer NLL included.
  InvariantForward fwd_;
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
    std::vector<std::span<const int32_t>> lists = {s.prompt, s.answer_ids};
    for (const SampleTurn& t : s.more) {
      lists.push_back(t.ids);
      lists.push_back(t.answer_ids);
    }
    for (std::span<const int32_t> ids : lists) {
      TOVA_RETURN_IF_ERROR(
          model::check_token_ids(ids, m.config().n_vocab, fmt::format("task '{}'", s.task)));
    }
    if (!o.chat) {
      for (const SampleTurn& t : s.more) {
        if (t.ids.empty()) {
          return make_error("sample {} of task '{}': a later turn has no tokens", s.index, s.task);
        }
      }
    }
  }
  Timer t;
  TOVA_ASSIGN_OR_RETURN(InvariantForward fwd, InvariantForward::create(m));
  Runner runner(m, tk, pool, o, std::move(fwd));
  const int n_cfg = static_cast<int>(o.configs.size());
  for (const TaskSample& s : samples) {
    int64_t steps = static_cast<int64_t>(s.prompt.size()) + s.max_new;
    for (const SampleTurn& t : s.more) steps += static_cast<int64_t>(t.ids.size()) + s.max_new;
    runner.progress.steps_total += steps * n_cfg;
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
  r.nll_steps = runner.nll_steps;
  r.pass_steps = runner.pass_steps;
  r.seconds = t.seconds();
  return r;
}

}  // namespace tova::eval
