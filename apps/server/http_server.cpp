#include "http_server.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include "listener.h"
#include "plan.h"
#include "turn.h"
#include "web_assets.h"
#include "worker_pool.h"
#include "tova/field_names.h"
#include "tova/policy_spec.h"
#include "tova/position_mode.h"

namespace tova::server {

using nlohmann::json;
using httplib::Request;
using httplib::Response;

namespace {

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string new_request_id() {
  static std::atomic<uint64_t> counter{0};
  return fmt::format("{:x}{:06x}", unix_now(), counter.fetch_add(1) & 0xffffff);
}

// One request while it is served. The handler, a stream's content provider and httplib's
// logger all run on the worker thread that owns the connection, one request after the other,
// so a thread-local record follows each request from arrival to its log line.
struct Exchange {
  AccessRecord rec;
  std::chrono::steady_clock::time_point start;
  bool open = false;
  bool client_left = false;
  // Answered before its body was read: the connection ends with a lingering close.
  bool linger = false;
};
thread_local Exchange t_ex;

void send_json(Response& res, const json& j, int status = 200) {
  res.status = status;
  res.set_content(to_json_text(j), "application/json");
}

// An answer given before the request's body was read: the connection cannot carry another
// request, and it closes only after the client stops sending (linger_close).
void answer_early(Response& res) {
  res.set_header("Connection", "close");
  t_ex.linger = true;
}

// The library's option names as a request spells them (core/field_names.h).
constexpr FieldSpelling kJsonFields[] = {
    {field::kTemperature, "temperature"},    {field::kTopP, "top_p"},
    {field::kMinP, "min_p"},                 {field::kRepeatPenalty, "repeat_penalty"},
    {field::kRepeatLastN, "repeat_last_n"},  {field::kKvBudget, "kv_budget"},
    {field::kKvRotate, "kv_type"},           {field::kTokenIds, "tokens"},
};

// The error object, its message naming options as requests spell them.
json api_error_json(ApiError e) {
  e.message = spell_field(e.message, kJsonFields);
  return error_json(e);
}

void send_error(Response& res, const ApiError& e) {
  if (e.status == 503) res.set_header("Retry-After", "1");
  send_json(res, api_error_json(e), e.status);
  t_ex.rec.error = e.message;
}

const char* default_message(int status) {
  switch (status) {
    case 400:
      return "bad request";
    case 401:
      return "invalid API key";
    case 404:
      return "not found";
    case 405:
      return "method not allowed";
    case 413:
      return "the request body is too large";
    case 414:
      return "the request URI is too long";
    case 499:
      return "the client closed the connection";
    case 503:
      return "the server is overloaded; retry later";
    default:
      return "request failed";
  }
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// `Authorization: Bearer KEY`: the scheme is case-insensitive (RFC 9110 11.1), the key is not;
// compared in time that does not depend on where they differ.
bool bearer_matches(std::string_view header, const std::string& key) {
  const size_t sp = header.find(' ');
  if (sp == std::string_view::npos || !iequals(header.substr(0, sp), "bearer")) return false;
  std::string_view given = header.substr(sp + 1);
  while (!given.empty() && given.front() == ' ') given.remove_prefix(1);
  while (!given.empty() && (given.back() == ' ' || given.back() == '\t')) given.remove_suffix(1);
  if (given.size() != key.size()) return false;
  unsigned diff = 0;
  for (size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned>(given[i] ^ key[i]);
  return diff == 0;
}

// Checked before the body is read: httplib 0.11 would otherwise wait for (and skip) as many
// bytes as a hostile Content-Length claims, answering nothing until the client gives up.
std::optional<ApiError> check_content_length(const Request& req, size_t max_body) {
  const size_t n = req.get_header_value_count("Content-Length");
  if (n == 0) return std::nullopt;
  if (req.has_header("Transfer-Encoding")) {
    return ApiError{.message = "a request may not have both Content-Length and "
                               "Transfer-Encoding"};
  }
  std::string first;
  for (size_t i = 0; i < n; ++i) {
    const std::string v = req.get_header_value("Content-Length", i);
    const bool digits = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || (i > 0 && v != first)) {
      return ApiError{.message = fmt::format("invalid Content-Length '{}' (a byte count)",
                                             shown(v))};
    }
    first = v;
  }
  const size_t nz = std::min(first.find_first_not_of('0'), first.size());
  const std::string_view length(first.data() + nz, first.size() - nz);
  if (length.size() > 19 || (!length.empty() && std::stoull(std::string(length)) > max_body)) {
    return ApiError{.status = 413,
                    .message = fmt::format("the request body ({} bytes) is larger than the "
                                           "server's limit (--max-body {} bytes)",
                                           shown(length), max_body),
                    .code = "request_too_large"};
  }
  return std::nullopt;
}

// The routes the page and the probes need without the API key (the page asks for the key and
// sends it with its API calls).
bool public_path(const std::string& path) {
  if (path == "/health" || path == "/") return true;
  for (const WebAsset& a : web_assets()) {
    if (a.path == path) return true;
  }
  return false;
}

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::create(const Engine& engine,
                                                       const ServerOptions& o) {
  if (!o.chat_template.empty()) {
    auto r = engine.chat_template(o.chat_template);  // a family's name or a .jinja file
    // "chat template: ...": the front-end spells the field (--chat-template).
    if (!r.ok()) return make_error("{}: {}", field::kChatTemplate, r.message());
  }
  if (ReasoningFormat f; o.reasoning_format != "auto" && !parse_reasoning_format(o.reasoning_format, f)) {
    return make_error("--reasoning-format '{}': expected auto, none, think or harmony",
                      o.reasoning_format);
  }
  // The smallest request: one prompt token under the default multi-state.
  const uint64_t need = engine.reserve_bytes(o.api.cache, 1, o.loop.ctx, o.api.speculative);
  if (need > o.loop.kv_memory) {
    return make_error(
        "--kv-memory {} bytes cannot hold one sequence of the default multi-state ({}{}, "
        "which needs {} bytes); raise --kv-memory or lower --kv-budget{}",
        o.loop.kv_memory, o.api.cache.label(),
        o.api.cache.policy.bounded() ? "" : fmt::format(", -c {}", o.loop.ctx), need,
        o.api.cache.policy.bounded() ? "" : " / -c");
  }
  return std::unique_ptr<HttpServer>(new HttpServer(engine, o));
}

HttpServer::HttpServer(const Engine& engine, const ServerOptions& o)
    : engine_(engine), o_(o), http_(std::make_unique<Listener>()), created_(unix_now()) {
  const std::string model_template = engine_.chat_template_text();
  std::string name = o_.chat_template;
  if (name.empty() && model_template.empty()) {
    // As llama-server does: a model without a template chats in ChatML.
    name = "chatml";
    notes_.push_back("the model has no chat template: chat requests use chatml "
                     "(--chat-template NAME to choose another)");
  }
  auto r = engine_.chat_template(name);
  if (r.ok()) {
    chat_template_ = *r;
    if (o_.reasoning_format == "auto") {
      o_.api.reasoning = chat_template_->reasoning_format();
    } else {
      parse_reasoning_format(o_.reasoning_format, o_.api.reasoning);  // checked by create()
    }
  } else {
    chat_error_ = r.message();
    notes_.push_back("chat disabled: " + chat_error_);
  }
  if (o_.api.model_id.empty()) {
    o_.api.model_id = std::filesystem::path(engine_.path()).stem().string();
  }
  if (o_.loop.hostile_output_seed != 0) {
    notes_.push_back(
        fmt::format("--debug-hostile-output {}: every generated piece of text is "
                    "replaced by hostile bytes (a test of the parsers, not a model's "
                    "answer)",
                    o_.loop.hostile_output_seed));
  }
  o_.api.ctx = o_.loop.ctx;
  o_.api.kv_memory = o_.loop.kv_memory;
  loop_ = std::make_unique<ServingLoop>(engine_, o_.loop, metrics_);
  install_hooks();
}

HttpServer::~HttpServer() {
  if (loop_) loop_->stop();
}

Result<int> HttpServer::bind() { return http_->bind(o_.host, o_.port, o_.backlog); }

void HttpServer::serve() { http_->listen_after_bind(); }

void HttpServer::shutdown(double grace_seconds) {
  loop_->drain();
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<int64_t>(grace_seconds * 1000));
  while (!loop_->idle() && !stopping_now_ && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  loop_->stop();
  stop_http();
}

void HttpServer::stop_http() {
  std::call_once(http_stopped_, [this] {
    // Streams write their last events (the final chunk, or the error of a stopped loop) within
    // a step of the loop's end: give them that moment, then close every connection (idle
    // keep-alive ones would hold httplib's threads for its keep-alive timeout).
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    while (in_handlers_ > 0 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the last write
    http_->stop();
    shutdown_connections(http_->port());
  });
}

int HttpServer::stop_now() {
  stopping_now_ = true;
  const int cut = static_cast<int>(loop_->in_flight());
  loop_->drain();
  loop_->stop();  // whoever waits gets a 503 error
  stop_http();
  return cut;
}

namespace {

// What the access log reports once an answer is complete.
void note_final(const Event& ev) {
  if (t_ex.rec.cached_tokens < 0) t_ex.rec.cached_tokens = ev.kv.reused_prompt_tokens;
  t_ex.rec.generated_tokens = std::max<int64_t>(0, t_ex.rec.generated_tokens) + ev.completion_tokens;
  if (ev.ttft_seconds >= 0 &&
      (t_ex.rec.ttft_seconds < 0 || ev.ttft_seconds < t_ex.rec.ttft_seconds)) {
    t_ex.rec.ttft_seconds = ev.ttft_seconds;
  }
}

// A chat choice answered with tools offered: its calls taken out of its content.
void take_calls_apart(Choice& c, const ToolsRequest& tools, ToolCallFormat format) {
  AssistantTurn turn = take_apart(format, tools, c.text);
  c.text = std::move(turn.content);
  c.tool_calls = std::move(turn.calls);
  if (!c.tool_calls.empty() && c.finish_reason == "stop") c.finish_reason = "tool_calls";
}

// A non-streamed answer: every choice's events gathered, then one response object. A client
// that leaves in the meantime stops the generation.
void answer_whole(const ResponseHead& head, Job& job, int fd, Response& res,
                  const ToolsRequest* tools, ToolCallFormat format) {
  const int n = job.request.n;
  std::vector<Choice> choices(static_cast<size_t>(n));
  std::vector<TurnSplitter> turns;  // chat: each choice's text split into reasoning and content
  for (int i = 0; i < n; ++i) {
    choices[i].index = i;
    choices[i].with_logprobs = job.request.logprobs >= 0;
    if (head.chat) turns.emplace_back(job.request);
  }
  int64_t completion = 0;
  int64_t prompt = 0;
  int64_t reused = 0;
  int64_t draft_n = 0, draft_n_accepted = 0;
  std::optional<KvReport> kv;
  for (int finals = 0; finals < n;) {
    for (Event& ev : job.take(std::chrono::milliseconds(100))) {
      if (ev.error) {
        send_error(res, *ev.error);
        return;
      }
      Choice& c = choices[static_cast<size_t>(ev.index)];
      if (head.chat) {
        TurnText t = turns[static_cast<size_t>(ev.index)].push(ev.text);
        if (ev.final) {
          TurnText rest = turns[static_cast<size_t>(ev.index)].finish();
          t.reasoning += rest.reasoning;
          t.content += rest.content;
        }
        c.reasoning += t.reasoning;
        c.text += t.content;
      } else {
        c.text += ev.text;
      }
      for (auto& lp : ev.logprobs) c.logprobs.push_back(std::move(lp));
      if (!ev.final) continue;
      ++finals;
      note_final(ev);
      c.finish_reason = ev.finish_reason;
      if (tools != nullptr) take_calls_apart(c, *tools, format);
      completion += ev.completion_tokens;
      draft_n += ev.draft_n;
      draft_n_accepted += ev.draft_n_accepted;
      prompt = ev.prompt_tokens;
      reused = ev.kv.reused_prompt_tokens;
      if (ev.index == 0) kv = std::move(ev.kv);
    }
    if (finals < n && peer_closed(fd)) {
      job.cancel();
      t_ex.client_left = true;
      res.status = 499;
      return;
    }
  }
  json out = completion_json(head, choices, usage_json(prompt, completion, reused), *kv);
  out["timings"] = timings_json(prompt, completion, reused, draft_n, draft_n_accepted);
  send_json(res, out);
}

using Handler = httplib::Server::Handler;

// A route answers its methods (HEAD with GET), OPTIONS, and 405 with Allow for the others.
void add_route(Listener& s, const std::string& pattern,
               const std::vector<std::pair<std::string, Handler>>& methods) {
  std::string allow;
  for (const auto& [m, h] : methods) allow += (allow.empty() ? "" : ", ") + m;
  for (const auto& [m, h] : methods) {
    if (m == "GET") allow += ", HEAD";
  }
  allow += ", OPTIONS";
  auto not_allowed = [allow](const Request& req, Response& res) {
    res.set_header("Allow", allow);
    send_error(res, {.status = 405,
                     .message = fmt::format("{} is not allowed on {} (allowed: {})",
                                            shown(req.method), shown(req.path), allow),
                     .code = "method_not_allowed"});
  };
  auto handler_for = [&](const std::string& method) -> Handler {
    for (const auto& [m, h] : methods) {
      if (m == method) return h;
    }
    return not_allowed;
  };
  s.Get(pattern, handler_for("GET"));
  s.Post(pattern, handler_for("POST"));
  s.Put(pattern, handler_for("PUT"));
  s.Patch(pattern, handler_for("PATCH"));
  s.Delete(pattern, handler_for("DELETE"));
  s.Options(pattern, [allow](const Request&, Response& res) {
    res.status = 204;
    res.set_header("Allow", allow);
  });
}

// The web page's files: compiled into the binary; no request leaves this server.
void serve_file(const WebAsset& a, Response& res) {
  res.set_content(std::string(a.body), std::string(a.content_type));
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Content-Security-Policy",
                 "default-src 'none'; script-src 'self'; style-src 'self'; "
                 "connect-src 'self'; img-src 'self' data:; base-uri 'none'; "
                 "form-action 'none'; frame-ancestors 'none'");
}

void not_found(const Request& req, Response& res) {
  send_error(res, {.status = 404,
                   .message = fmt::format("no route {} {}", shown(req.method), shown(req.path)),
                   .code = "not_found"});
}

// A streamed answer (httplib's content provider, called until it returns false or the sink is
// done): server-sent events, one chunk per piece of a choice's text; each choice ends with a
// chunk that has its finish reason (and the multi-state's report), then the usage if asked for,
// then [DONE]. Copies share one state.
class StreamedAnswer {
 public:
  StreamedAnswer(ResponseHead head, std::shared_ptr<Job> job, int fd, bool include_usage,
                 std::shared_ptr<void> in_handler, const ToolsRequest* tools,
                 ToolCallFormat format)
      : s_(std::make_shared<State>(State{.head = std::move(head),
                                         .job = std::move(job),
                                         .fd = fd,
                                         .include_usage = include_usage,
                                         .in_handler = std::move(in_handler)})) {
    s_->offset.assign(static_cast<size_t>(s_->job->request.n), 0);
    if (s_->head.chat) {
      for (int i = 0; i < s_->job->request.n; ++i) s_->turns.emplace_back(s_->job->request);
    }
    if (tools != nullptr) {
      s_->tools = std::make_unique<ToolsRequest>(*tools);
      s_->tool_streams.assign(static_cast<size_t>(s_->job->request.n),
                              ToolStream(format, s_->tools.get()));
    }
  }

  bool operator()(size_t, httplib::DataSink& sink) {
    State& st = *s_;
    try {
      if (st.head.chat && !st.started) {
        st.started = true;
        std::string out;
        for (int i = 0; i < st.job->request.n; ++i) {
          out += sse_event(chunk_json(st.head, i, "", nullptr, "", /*role_only=*/true));
        }
        if (!write(sink, out)) return false;
      }
      const auto events = st.job->take(std::chrono::milliseconds(50));
      if (events.empty() && peer_closed(st.fd)) return leave();
      for (const Event& ev : events) {
        if (!write(sink, encode(ev))) return false;
        if (ev.error || st.finals == st.job->request.n) {
          sink.done();
          return true;
        }
      }
      return true;
    } catch (const std::exception& e) {
      // Nothing thrown leaves a connection's thread: the stream ends, the request stops.
      t_ex.rec.error = e.what();
      st.job->cancel();
      return false;
    }
  }

 private:
  struct State {
    ResponseHead head;
    std::shared_ptr<Job> job;
    int fd = -1;
    bool include_usage = false;
    std::shared_ptr<void> in_handler;  // until the last byte: what a stop waits for
    bool started = false;
    int finals = 0;
    int64_t completion = 0;
    std::vector<int64_t> offset;  // bytes of each choice's text sent (completions' logprobs)
    std::vector<TurnSplitter> turns;  // chat: each choice's reasoning and content
    std::unique_ptr<ToolsRequest> tools;  // chat with tools offered: calls are taken apart
    std::vector<ToolStream> tool_streams;  // per choice
  };

  // The client went away: the request stops.
  bool leave() {
    s_->job->cancel();
    t_ex.client_left = true;
    return false;
  }

  bool write(httplib::DataSink& sink, const std::string& out) {
    return out.empty() || sink.write(out.data(), out.size()) || leave();
  }

  // A chat event's chunks: its text split into reasoning (delta.reasoning_content) and content
  // (delta.content, with the tokens' log-probabilities); a final event flushes what the split
  // held back. With tools, content is sent once it cannot be the start of a call (the calls
  // themselves go out at the choice's end: encode_calls).
  std::string turn_chunks(const Event& ev, const std::vector<TokenLogprob>* lps) {
    State& st = *s_;
    TurnSplitter& turn = st.turns[static_cast<size_t>(ev.index)];
    TurnText t = turn.push(ev.text);
    if (ev.final) {
      TurnText rest = turn.finish();
      t.reasoning += rest.reasoning;
      t.content += rest.content;
    }
    if (st.tools) t.content = st.tool_streams[static_cast<size_t>(ev.index)].feed(t.content);
    std::string out;
    if (!t.reasoning.empty()) {
      out += sse_event(reasoning_chunk_json(st.head, ev.index, t.reasoning));
    }
    if (!t.content.empty() || (lps != nullptr && !lps->empty())) {
      out += sse_event(chunk_json(st.head, ev.index, t.content, lps, ""));
    }
    return out;
  }

  // The chunks of one event.
  std::string encode(const Event& ev) {
    State& st = *s_;
    if (ev.error) {
      t_ex.rec.error = ev.error->message;
      return sse_event(api_error_json(*ev.error)) + "data: [DONE]\n\n";
    }
    std::string out;
    const auto* lps = st.job->request.logprobs >= 0 ? &ev.logprobs : nullptr;
    if (st.head.chat) {
      out += turn_chunks(ev, lps);
    } else {
      int64_t& offset = st.offset[static_cast<size_t>(ev.index)];
      if (!ev.text.empty() || (lps != nullptr && !lps->empty())) {
        out += sse_event(chunk_json(st.head, ev.index, ev.text, lps, "", false, offset));
        offset += static_cast<int64_t>(ev.text.size());
      }
    }
    if (!ev.final) return out;
    note_final(ev);
    std::string finish_reason = ev.finish_reason;
    if (st.tools) out += encode_calls(ev.index, finish_reason);
    json last = chunk_json(st.head, ev.index, "", nullptr, finish_reason);
    last["tova"] = kv_json(ev.kv);
    last["timings"] = timings_json(ev.prompt_tokens, ev.completion_tokens,
                                   ev.kv.reused_prompt_tokens, ev.draft_n, ev.draft_n_accepted);
    out += sse_event(last);
    st.completion += ev.completion_tokens;
    if (++st.finals < st.job->request.n) return out;
    if (st.include_usage) {
      out += sse_event(usage_chunk_json(
          st.head, usage_json(ev.prompt_tokens, st.completion, ev.kv.reused_prompt_tokens)));
    }
    return out + "data: [DONE]\n\n";
  }

  // The end of a choice with tools: the rest of its content, then its calls.
  std::string encode_calls(int index, std::string& finish_reason) {
    State& st = *s_;
    AssistantTurn turn = st.tool_streams[static_cast<size_t>(index)].finish();
    std::string out;
    if (!turn.content.empty()) {
      out += sse_event(chunk_json(st.head, index, turn.content, nullptr, ""));
    }
    out += tool_call_events(turn.calls, [&](const json& delta) {
      json c = chunk_json(st.head, index, "", nullptr, "");
      c["choices"][0]["delta"] = delta;
      return sse_event(c);
    });
    if (!turn.calls.empty() && finish_reason == "stop") finish_reason = "tool_calls";
    return out;
  }

  std::shared_ptr<State> s_;
};

}  // namespace

void HttpServer::generate(bool chat, const Request& req, Response& res) {
  // Until the answer's last byte (a stream's provider holds a copy): what a stop waits for.
  ++in_handlers_;
  auto in_handler = std::shared_ptr<void>(nullptr, [this](void*) { --in_handlers_; });
  t_ex.rec.n = 1;
  auto decoded = decode_completion_request(req.body, chat, o_.api);
  if (auto* e = std::get_if<ApiError>(&decoded)) return send_error(res, *e);
  const CompletionRequest& r = std::get<CompletionRequest>(decoded);
  t_ex.rec.policy = r.cache.policy.label();
  t_ex.rec.budget = r.cache.policy.bounded() ? r.cache.policy.budget : -1;
  t_ex.rec.stream = r.stream;
  t_ex.rec.n = r.n;
  t_ex.rec.user = r.user;
  auto planned = plan_generation(r, t_ex.rec.id, engine_,
                                 chat_template_ ? &*chat_template_ : nullptr, chat_error_, o_.api);
  if (auto* e = std::get_if<ApiError>(&planned)) return send_error(res, *e);
  auto job = std::make_shared<Job>(std::move(std::get<GenerationRequest>(planned)));
  t_ex.rec.prompt_tokens = static_cast<int64_t>(job->request.prompt.size());
  if (auto e = loop_->submit(job)) return send_error(res, *e);
  const ResponseHead head{.chat = chat,
                          .id = (chat ? "chatcmpl-" : "cmpl-") + t_ex.rec.id,
                          .created = unix_now(),
                          .model = o_.api.model_id};
  // The client's connection: a request whose client has gone stops generating.
  const int fd = connection_socket(req);
  const ToolsRequest* tools = chat && r.tools.active() ? &r.tools : nullptr;
  const ToolCallFormat format = chat_template_ ? chat_template_->tool_call_format()
                                               : ToolCallFormat::kNone;
  if (!r.stream) return answer_whole(head, *job, fd, res, tools, format);

  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      StreamedAnswer(head, job, fd, r.include_usage, in_handler, tools, format),
      [job](bool success) {
        if (!success) job->cancel();
      });
}

namespace {

// Every answer: CORS headers for an allowed origin.
void add_cors_headers(const std::vector<std::string>& origins, const Request& req, Response& res) {
  if (origins.empty()) return;
  const std::string origin = req.get_header_value("Origin");
  const bool any = std::find(origins.begin(), origins.end(), "*") != origins.end();
  const bool listed =
      !origin.empty() && std::find(origins.begin(), origins.end(), origin) != origins.end();
  if (!any && !listed) return;
  static const std::string kAny = "*";
  const std::string& allow = any ? kAny : origin;
  res.set_header("Access-Control-Allow-Origin", allow);
  if (allow != "*") res.set_header("Vary", "Origin");
  res.set_header("Access-Control-Expose-Headers", "X-Request-Id, Retry-After");
  if (req.method == "OPTIONS") {
    const std::string asked = req.get_header_value("Access-Control-Request-Headers");
    res.set_header("Access-Control-Allow-Methods", res.get_header_value("Allow"));
    res.set_header("Access-Control-Allow-Headers",
                   asked.empty() ? std::string("Authorization, Content-Type") : asked);
    res.set_header("Access-Control-Max-Age", "600");
  }
}

// Errors as error objects, whoever makes them.
void install_error_answers(Listener& s) {
  // Every error httplib produces itself (400 parse, 413 body, ...) gets an error object. A 413
  // (a chunked body over --max-body) leaves the rest of the body unread. (A request line or
  // header httplib cannot parse gets its 400 before the connection's address is known: httplib
  // then reads on, taking what follows as the next request, so the client is not cut off.)
  s.set_error_handler(httplib::Server::HandlerWithResponse([](const Request& req, Response& res) {
    if (res.body.empty()) {
      if (res.status == 413 && req.remote_port > 0) answer_early(res);
      ApiError e{.status = res.status, .message = default_message(res.status)};
      if (res.status == 404) e.code = "not_found";
      if (res.status >= 500) e.type = "server_error";
      send_error(res, e);
    }
    return httplib::Server::HandlerResponse::Handled;
  }));
  // Never an uncaught exception: a request that throws gets a 500 error object.
  s.set_exception_handler([](const Request&, Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_error(res, {.status = 500,
                     .message = fmt::format("internal error: {}", what),
                     .type = "server_error"});
  });
}

}  // namespace

void HttpServer::install_hooks() {
  Listener& s = *http_;
  const int n_http = o_.http_threads > 0 ? o_.http_threads : o_.loop.parallel + o_.loop.queue + 8;
  s.new_task_queue = [n_http] { return new WorkerPool(n_http); };
  s.set_payload_max_length(o_.max_body_bytes);
  s.set_keep_alive_max_count(1000);

  install_pre_routing();
  s.set_post_routing_handler(
      [this](const Request& req, Response& res) { add_cors_headers(o_.cors_origins, req, res); });
  install_error_answers(s);
  install_access_log();
  routes();
}

void HttpServer::install_pre_routing() {
  Listener& s = *http_;
  // Before the body is read: the request's record, a Content-Length that cannot be served, the
  // API key.
  s.set_pre_routing_handler([this](const Request& req, Response& res) {
    t_ex = Exchange{.rec = {.time = std::chrono::system_clock::now(),
                            .id = new_request_id(),
                            .method = req.method,
                            .path = req.path,
                            .remote = req.remote_addr},
                    .start = std::chrono::steady_clock::now(),
                    .open = true};
    res.set_header("X-Request-Id", t_ex.rec.id);
    if (auto e = check_content_length(req, o_.max_body_bytes)) {
      answer_early(res);
      send_error(res, *e);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (o_.api_key.empty() || req.method == "OPTIONS" || public_path(req.path)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    if (!bearer_matches(req.get_header_value("Authorization"), o_.api_key)) {
      if (req.has_header("Content-Length") || req.has_header("Transfer-Encoding")) {
        answer_early(res);
      }
      send_error(res, {.status = 401,
                       .message = "invalid or missing API key (Authorization: Bearer KEY)",
                       .type = "authentication_error",
                       .code = "invalid_api_key"});
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
}

void HttpServer::install_access_log() {
  Listener& s = *http_;
  // After the last byte (a stream's too): the access-log line, the status counted.
  s.set_logger([this](const Request& req, const Response& res) {
    if (!t_ex.open) {
      t_ex.rec = {.time = std::chrono::system_clock::now(),
                  .id = new_request_id(),
                  .method = req.method,
                  .path = req.path,
                  .remote = req.remote_addr};
      t_ex.start = std::chrono::steady_clock::now();
    }
    AccessRecord& r = t_ex.rec;
    r.status = t_ex.client_left ? 499 : res.status;
    r.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t_ex.start).count();
    metrics_.request_done(r.status);
    if (o_.log_format != LogFormat::kNone) {
      const std::string line = format_access(r, o_.log_format) + "\n";
      static std::mutex log_mu;
      std::lock_guard<std::mutex> l(log_mu);
      std::fwrite(line.data(), 1, line.size(), stderr);
    }
    const bool linger = t_ex.linger;
    t_ex = Exchange{};
    if (linger) linger_close(connection_socket(req));
  });
}

json HttpServer::model_json() const {
  // The model, and what a request may choose (the policy registry, the defaults): the page and
  // the tests read it.
  json policies = json::array();
  for (const kv::PolicyDescription& p : kv::describe_policies()) {
    policies.push_back({{"name", p.name},
                        {"arg", p.arg_name.empty() ? json(nullptr) : json(p.arg_name)},
                        {"bounded", p.bounded},
                        {"help", p.help},
                        // How to spell it, every form worth running ("sink:4", "adakv:tova").
                        {"examples", p.examples}});
  }
  const CacheOptions& c = o_.api.cache;
  return {{"id", o_.api.model_id},
          {"object", "model"},
          {"created", created_},
          {"owned_by", "tova"},
          {"tova",
           {{"policies", policies},
            {"policy", c.policy.label()},
            {"budget", c.policy.bounded() ? json(c.policy.budget) : json(nullptr)},
            {"prefill", c.prefill.label()},
            {"positions", std::string(kv::position_mode_name(c.positions))},
            {"n_layer", engine_.n_layer()},
            {"n_head_kv", engine_.n_head_kv()},
            {"ctx", o_.loop.ctx},
            {"kv_memory", o_.loop.kv_memory},
            {"chat", chat_error_.empty()}}}};
}

void HttpServer::show_session(const Request& req, Response& res) {
  const std::string id = req.matches[1];
  auto v = loop_->inspect(id);
  if (!v) {
    return send_error(res, {.status = 404,
                            .message = fmt::format("no state of request '{}' is in memory",
                                                   shown(id)),
                            .code = "not_found"});
  }
  std::vector<std::string> pieces;
  pieces.reserve(v->tokens.size());
  for (size_t i = 0; i < v->tokens.size(); ++i) {
    pieces.push_back(engine_.token_piece(v->tokens[i], i > 0 ? v->tokens[i - 1] : -1));
  }
  send_json(res, state_view_json(*v, pieces));
}

void HttpServer::routes() {
  Listener& s = *http_;
  for (const WebAsset& a : web_assets()) {
    auto file = [a](const Request&, Response& res) { serve_file(a, res); };
    add_route(s, std::string(a.path), {{"GET", file}});
    if (a.path == "/index.html") add_route(s, "/", {{"GET", file}});
  }
  add_route(s, "/health", {{"GET", [this](const Request&, Response& res) {
                              if (!loop_->draining()) return send_json(res, {{"status", "ok"}});
                              res.set_header("Retry-After", "1");
                              send_json(res, {{"status", "draining"}}, 503);
                            }}});
  add_route(s, "/metrics", {{"GET", [this](const Request&, Response& res) {
                               res.set_content(metrics_.render(), "text/plain; version=0.0.4");
                             }}});
  add_route(s, "/v1/models", {{"GET", [this](const Request&, Response& res) {
                                 send_json(res, {{"object", "list"},
                                                 {"data", json::array({model_json()})}});
                               }}});
  add_route(s, R"(/v1/models/(.+))", {{"GET", [this](const Request& req, Response& res) {
              if (req.matches[1] == o_.api.model_id) return send_json(res, model_json());
              send_error(res, model_not_found(std::string(req.matches[1]), o_.api.model_id));
            }}});
  add_route(s, "/tokenize", {{"POST", [this](const Request& req, Response& res) {
              auto r = decode_tokenize_request(req.body);
              if (auto* e = std::get_if<ApiError>(&r)) return send_error(res, *e);
              const auto& t = std::get<TokenizeRequest>(r);
              send_json(res, {{"tokens", engine_.tokenize(t.content, t.add_special)}});
            }}});
  add_route(s, "/detokenize", {{"POST", [this](const Request& req, Response& res) {
              auto r = decode_detokenize_request(req.body);
              if (auto* e = std::get_if<ApiError>(&r)) return send_error(res, *e);
              auto text = engine_.detokenize(std::get<std::vector<int32_t>>(r));
              if (!text.ok()) return send_error(res, bad_request("tokens", text.message()));
              send_json(res, {{"content", *text}});
            }}});
  // What a conversation's state holds: ID is the X-Request-Id of the request that last extended
  // it (while it generates, and afterwards while the state is held).
  add_route(s, R"(/v1/sessions/([^/]+))",
            {{"GET", [this](const Request& req, Response& res) { show_session(req, res); }}});
  add_route(s, "/v1/chat/completions",
            {{"POST", [this](const Request& req, Response& res) { generate(true, req, res); }}});
  add_route(s, "/v1/completions",
            {{"POST", [this](const Request& req, Response& res) { generate(false, req, res); }}});
  // No route: a 404 error object for every method.
  s.Get(".*", not_found);
  s.Post(".*", not_found);
  s.Put(".*", not_found);
  s.Delete(".*", not_found);
  s.Patch(".*", not_found);
  s.Options(".*", not_found);
}

}  // namespace tova::server
