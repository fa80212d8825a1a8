#include "tova/text_stream.h"

#include <algorithm>
#include <unordered_set>

#include "core/check.h"
#include "core/timer.h"
#include "runtime/utf8_stream.h"
#include "tokenizer/tokenizer.h"
#include "runtime/session_impl.h"
#include "tova/session.h"

namespace tova {

std::string_view finish_name(Finish f) {
  switch (f) {
    case Finish::kNone:
      return "";
    case Finish::kStop:
      return "stop";
    case Finish::kLength:
      return "length";
    case Finish::kCancelled:
      return "cancelled";
  }
  return "";
}

namespace {

// Bytes at the end of `text` that could be the start of a stop string (held back while
// streaming, so a stop string is never half handed out).
size_t stop_overlap(const std::string& text, const std::vector<std::string>& stops) {
  size_t keep = 0;
  for (const auto& s : stops) {
    for (size_t n = std::min(s.size() - 1, text.size()); n > keep; --n) {
      if (text.compare(text.size() - n, n, s, 0, n) == 0) {
        keep = n;
        break;
      }
    }
  }
  return keep;
}

}  // namespace

struct TextStream::Impl {
  Session* session = nullptr;
  const tok::Tokenizer* tk = nullptr;
  GenerateOptions o;
  int32_t prev = -1;  // the token the next piece follows (SentencePiece's leading space)
  runtime::Utf8Stream utf8;
  // Whole UTF-8 not handed out yet: the text that may be the beginning of a stop string. A stop
  // string cannot begin before it (what was handed out never ended with such a beginning).
  std::string pending;
  Finish finish = Finish::kNone;
  int32_t unfed = -1;
  bool prompt_fed = false;
  StreamStats st;
  std::unordered_set<int32_t> rendered;  // GenerateOptions::render_special, as token ids

  // Ends the generation; returns `text` and everything held back.
  Piece end(std::string text, Finish f) {
    finish = f;
    text += pending;
    text += utf8.flush();
    pending.clear();
    return {std::move(text), f};
  }

  bool context_full() const {
    return o.max_context > 0 && !session->cache().policy.bounded() &&
           session->n_seen() + 1 >= o.max_context;
  }
};

TextStream::TextStream(Session& session, const GenerateOptions& o)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.session = &session;
  s.tk = runtime::SessionAccess::impl(session).tokenizer;
  TOVA_CHECK(s.tk != nullptr);  // an engine loaded without its tokenizer cannot generate text
  s.o = o;
  s.o.stop.erase(std::remove(s.o.stop.begin(), s.o.stop.end(), std::string()), s.o.stop.end());
  s.prev = session.history().empty() ? -1 : session.history().back();
  s.st.n_prompt = session.n_pending();
  for (const std::string& text : s.o.render_special) {
    const std::vector<int32_t> ids = s.tk->encode(text, /*add_special=*/false, /*parse_special=*/true);
    if (ids.size() == 1 && s.tk->token_text(ids[0]) == text) s.rendered.insert(ids[0]);
  }
}

TextStream::~TextStream() = default;
TextStream::TextStream(TextStream&&) noexcept = default;
TextStream& TextStream::operator=(TextStream&&) noexcept = default;

Result<Piece> TextStream::next() {
  Impl& s = *impl_;
  if (s.finish != Finish::kNone) return Piece{.finish = s.finish};
  Session& session = *s.session;
  Timer t;
  const int64_t n = session.n_pending();
  if (n > 0) {
    TOVA_RETURN_IF_ERROR(session.feed({}));
  } else if (!session.has_logits()) {
    return make_error("nothing to generate from: the session has no tokens queued and no logits");
  }
  if (!s.prompt_fed) {
    s.prompt_fed = true;
    s.st.prompt_seconds = t.seconds();
    t.reset();
  } else {
    s.st.n_decoded += n;
  }
  Piece p = advance();
  s.st.decode_seconds += t.seconds();
  if (p.finish == Finish::kStop && !session.grammar_error().empty()) {
    return make_error("{}", session.grammar_error());
  }
  return p;
}

Piece TextStream::advance() {
  Impl& s = *impl_;
  if (s.finish != Finish::kNone) return Piece{.finish = s.finish};
  if (s.o.max_tokens == 0) return s.end("", Finish::kLength);
  Session& session = *s.session;
  const int32_t id = session.sample();
  if (!s.o.ignore_eos && s.tk->is_eog(id)) {
    s.unfed = id;
    return s.end("", Finish::kStop);
  }
  ++s.st.n_generated;
  s.pending += s.utf8.push(s.rendered.contains(id) ? s.tk->token_text(id)
                                                    : s.tk->token_to_piece(id, s.prev));
  s.prev = id;
  // A stop string ends the text where it begins (and is not handed out).
  size_t cut = std::string::npos;
  for (const std::string& stop : s.o.stop) cut = std::min(cut, s.pending.find(stop));
  if (cut != std::string::npos) {
    s.pending.resize(cut);
    s.utf8.flush();  // bytes after the stop string
    s.unfed = id;
    return s.end("", Finish::kStop);
  }
  const size_t ready = s.pending.size() - stop_overlap(s.pending, s.o.stop);
  std::string text = s.pending.substr(0, ready);
  s.pending.erase(0, ready);
  if ((s.o.max_tokens > 0 && s.st.n_generated >= s.o.max_tokens) || s.context_full()) {
    if (s.o.keep_length_token) {
      session.queue(id);
    } else {
      s.unfed = id;
    }
    return s.end(std::move(text), Finish::kLength);
  }
  session.queue(id);
  return {std::move(text), Finish::kNone};
}

Piece TextStream::cancel() {
  Impl& s = *impl_;
  if (s.finish != Finish::kNone) return Piece{.finish = s.finish};
  return s.end("", Finish::kCancelled);
}

bool TextStream::done() const { return impl_->finish != Finish::kNone; }
Finish TextStream::finish() const { return impl_->finish; }
int32_t TextStream::unfed() const { return impl_->unfed; }
const StreamStats& TextStream::stats() const { return impl_->st; }

}  // namespace tova
