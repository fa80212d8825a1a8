#include "http_server.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include "listener.h"
#include "web_assets.h"
#include "worker_pool.h"
#include "kv/policy_registry.h"
#include "kv/positions.h"
#include "runtime/cache_options.h"
#include "tokenizer/tokenizer.h"

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
};
thread_local Exchange t_ex;

void send_json(Response& res, const json& j, int status = 200) {
  res.status = status;
  res.set_content(to_json_text(j), "application/json");
}

void send_error(Response& res, const ApiError& e) {
  if (e.status == 503) res.set_header("Retry-After", "1");
  send_json(res, error_json(e), e.status);
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
    auto r = tok::ChatTemplate::resolve(o.chat_template, "");
    if (!r.ok()) return make_error("--chat-template: {}", r.message());
  }
  // The smallest request: one prompt token under the default multi-state.
  const uint64_t need = runtime::reserve_bytes(engine.model(), o.api.cache, 1, o.loop.ctx);
  if (need > o.loop.kv_memory) {
    return make_error(
        "--kv-memory {} bytes cannot hold one sequence of the default multi-state ({}{}, "
        "which needs {} bytes); raise --kv-memory or lower --kv-budget{}",
        o.loop.kv_memory, o.api.cache.label(),
        o.api.cache.policy.bounded() ? "" : fmt::format(", --ctx {}", o.loop.ctx), need,
        o.api.cache.policy.bounded() ? "" : " / --ctx");
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
  auto r = tok::ChatTemplate::resolve(name, model_template);
  if (r.ok()) {
    renderer_ = *r;
  } else {
    chat_error_ = r.message();
    notes_.push_back("chat disabled: " + chat_error_);
  }
  if (o_.api.model_id.empty()) {
    o_.api.model_id = std::filesystem::path(engine_.path()).stem().string();
  }
  o_.api.ctx = o_.loop.ctx;
  o_.api.kv_memory = o_.loop.kv_memory;
  loop_ = std::make_unique<ServingLoop>(engine_, o_.loop, metrics_);
  routes();
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

void HttpServer::generate(bool chat, const Request& req, Response& res) {
  // Until the answer's last byte (a stream's provider holds a copy): what a stop waits for.
  ++in_handlers_;
  auto in_handler = std::shared_ptr<void>(nullptr, [this](void*) { --in_handlers_; });
  auto parsed =
      parse_generation_request(req.body, chat, engine_, o_.api, renderer_ ? &*renderer_ : nullptr, chat_error_);
  t_ex.rec.n = 1;
  if (auto* e = std::get_if<ApiError>(&parsed)) {
    send_error(res, *e);
    return;
  }
  ParsedRequest p = std::move(std::get<ParsedRequest>(parsed));
  t_ex.rec.policy = p.gen.cache.policy.label();
  t_ex.rec.budget = p.gen.cache.policy.bounded() ? p.gen.cache.policy.budget : -1;
  t_ex.rec.stream = p.stream;
  t_ex.rec.prompt_tokens = static_cast<int64_t>(p.gen.prompt.size());
  p.gen.id = t_ex.rec.id;
  auto job = std::make_shared<Job>(std::move(p.gen));
  if (auto e = loop_->submit(job)) {
    send_error(res, *e);
    return;
  }
  // What the access log reports once the answer is complete.
  auto note_final = [](const Event& ev) {
    t_ex.rec.cached_tokens = ev.kv.reused_prompt_tokens;
    t_ex.rec.generated_tokens = ev.completion_tokens;
    t_ex.rec.ttft_seconds = ev.ttft_seconds;
  };
  const std::string id = (chat ? "chatcmpl-" : "cmpl-") + t_ex.rec.id;
  const int64_t created = unix_now();
  const std::string object = chat ? "chat.completion" : "text_completion";
  // The client's connection: a request whose client has gone stops generating.
  const int fd = connection_socket(req);
  if (!p.stream) {
    std::string text;
    for (;;) {
      for (Event& ev : job->take(std::chrono::milliseconds(100))) {
        text += ev.text;
        if (!ev.final) continue;
        note_final(ev);
        if (ev.error) {
          send_error(res, *ev.error);
          return;
        }
        json choice = {{"index", 0}, {"finish_reason", ev.finish_reason}};
        if (chat) {
          choice["message"] = {{"role", "assistant"}, {"content", text}};
        } else {
          choice["text"] = text;
          choice["logprobs"] = nullptr;
        }
        send_json(res, {{"id", id},
                        {"object", object},
                        {"created", created},
                        {"model", p.model},
                        {"choices", json::array({choice})},
                        {"usage", usage_json(ev.prompt_tokens, ev.completion_tokens,
                                             ev.kv.reused_prompt_tokens)},
                        {"tova", kv_json(ev.kv)}});
        return;
      }
      if (peer_closed(fd)) {
        job->cancel();
        t_ex.client_left = true;
        res.status = 499;
        return;
      }
    }
  }
  // Streaming: server-sent events, one chunk per piece of text.
  const std::string chunk_object = chat ? "chat.completion.chunk" : "text_completion";
  auto chunk = [=](const json& choice) {
    json c = {{"id", id},
              {"object", chunk_object},
              {"created", created},
              {"model", p.model},
              {"choices", json::array({choice})}};
    return c;
  };
  auto sse = [](const json& j) { return "data: " + to_json_text(j) + "\n\n"; };
  auto started = std::make_shared<bool>(false);
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [=](size_t, httplib::DataSink& sink) {
        (void)in_handler;
        auto write = [&](const std::string& out) {
          if (sink.write(out.data(), out.size())) return true;
          job->cancel();
          t_ex.client_left = true;
          return false;
        };
        if (chat && !*started) {
          *started = true;
          json c = chunk({{"index", 0},
                          {"delta", {{"role", "assistant"}, {"content", ""}}},
                          {"finish_reason", nullptr}});
          if (!write(sse(c))) return false;
        }
        const auto events = job->take(std::chrono::milliseconds(50));
        if (events.empty() && peer_closed(fd)) {
          job->cancel();
          t_ex.client_left = true;
          return false;
        }
        for (const Event& ev : events) {
          std::string out;
          if (ev.error) {
            out = sse(error_json(*ev.error));
            t_ex.rec.error = ev.error->message;
          } else if (!ev.final) {
            if (ev.text.empty()) continue;
            json choice = {{"index", 0}, {"finish_reason", nullptr}};
            if (chat) {
              choice["delta"] = {{"content", ev.text}};
            } else {
              choice["text"] = ev.text;
              choice["logprobs"] = nullptr;
            }
            out = sse(chunk(choice));
          } else {
            json choice = {{"index", 0}, {"finish_reason", ev.finish_reason}};
            if (chat) {
              choice["delta"] = json::object();
            } else {
              choice["text"] = "";
              choice["logprobs"] = nullptr;
            }
            json c = chunk(choice);
            c["tova"] = kv_json(ev.kv);
            out = sse(c);
            if (p.include_usage) {
              json u = chunk(nullptr);
              u["choices"] = json::array();
              u["usage"] =
                  usage_json(ev.prompt_tokens, ev.completion_tokens, ev.kv.reused_prompt_tokens);
              out += sse(u);
            }
          }
          if (ev.final) {
            note_final(ev);
            out += "data: [DONE]\n\n";
          }
          if (!write(out)) return false;
          if (ev.final) {
            sink.done();
            return true;
          }
        }
        return true;
      },
      [job](bool success) {
        if (!success) job->cancel();
      });
}

void HttpServer::routes() {
  Listener& s = *http_;
  const int n_http = o_.http_threads > 0 ? o_.http_threads : o_.loop.parallel + o_.loop.queue + 8;
  s.new_task_queue = [n_http] { return new WorkerPool(n_http); };
  s.set_payload_max_length(o_.max_body_bytes);
  s.set_keep_alive_max_count(1000);

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
      // The body is not read: this connection cannot carry another request.
      res.set_header("Connection", "close");
      send_error(res, *e);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (o_.api_key.empty() || req.method == "OPTIONS" || public_path(req.path)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    if (!bearer_matches(req.get_header_value("Authorization"), o_.api_key)) {
      send_error(res, {.status = 401,
                       .message = "invalid or missing API key (Authorization: Bearer KEY)",
                       .type = "authentication_error",
                       .code = "invalid_api_key"});
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Every answer: CORS headers for an allowed origin.
  s.set_post_routing_handler([this](const Request& req, Response& res) {
    if (o_.cors_origins.empty()) return;
    const std::string origin = req.get_header_value("Origin");
    std::string allow;
    for (const auto& o : o_.cors_origins) {
      if (o == "*") allow = "*";
      if (!origin.empty() && o == origin && allow.empty()) allow = origin;
    }
    if (allow.empty()) return;
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
  });
  // Every error httplib produces itself (400 parse, 413 body, ...) gets an error object.
  s.set_error_handler(
      httplib::Server::HandlerWithResponse([](const Request&, Response& res) {
        if (res.body.empty()) {
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
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_ex.start).count();
    metrics_.request_done(r.status);
    if (o_.log_format != LogFormat::kNone) {
      const std::string line = format_access(r, o_.log_format) + "\n";
      static std::mutex log_mu;
      std::lock_guard<std::mutex> l(log_mu);
      std::fwrite(line.data(), 1, line.size(), stderr);
    }
    t_ex = Exchange{};
  });

  // A route answers its methods (HEAD with GET), OPTIONS, and 405 with Allow for the others.
  using Handler = httplib::Server::Handler;
  auto route = [&s](const std::string& pattern,
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
  };

  // The web page: files compiled into the binary; no request leaves this server.
  for (const WebAsset& a : web_assets()) {
    auto serve_file = [a](const Request&, Response& res) {
      res.set_content(std::string(a.body), std::string(a.content_type));
      res.set_header("Cache-Control", "no-cache");
      res.set_header("X-Content-Type-Options", "nosniff");
      res.set_header("Content-Security-Policy",
                     "default-src 'none'; script-src 'self'; style-src 'self'; "
                     "connect-src 'self'; img-src 'self' data:; base-uri 'none'; "
                     "form-action 'none'; frame-ancestors 'none'");
    };
    route(std::string(a.path), {{"GET", serve_file}});
    if (a.path == "/index.html") route("/", {{"GET", serve_file}});
  }
  route("/health", {{"GET", [this](const Request&, Response& res) {
                       if (loop_->draining()) {
                         res.set_header("Retry-After", "1");
                         send_json(res, {{"status", "draining"}}, 503);
                       } else {
                         send_json(res, {{"status", "ok"}});
                       }
                     }}});
  route("/metrics", {{"GET", [this](const Request&, Response& res) {
                        res.set_content(metrics_.render(), "text/plain; version=0.0.4");
                      }}});
  // The model, and what a request may choose (the policy registry, the defaults): the page
  // and the tests read it.
  json policies = json::array();
  for (const kv::PolicyInfo* p : kv::all_policies()) {
    if (!p->listed) continue;
    policies.push_back({{"name", p->name},
                        {"arg", p->arg_name.empty() ? json(nullptr) : json(p->arg_name)},
                        {"bounded", p->bounded},
                        {"help", p->help},
                        // How to spell it, every form worth running ("sink:4", "adakv:tova").
                        {"examples", p->examples.empty() ? json::array({p->name})
                                                         : json(p->examples)}});
  }
  const CacheOptions& c = o_.api.cache;
  const model::ModelConfig& cfg = engine_.model().config();
  const json tova_info = {{"policies", policies},
                          {"policy", c.policy.label()},
                          {"budget", c.policy.bounded() ? json(c.policy.budget) : json(nullptr)},
                          {"prefill", c.prefill.label()},
                          {"positions", std::string(kv::position_mode_name(c.positions))},
                          {"n_layer", cfg.n_layer},
                          {"n_head_kv", cfg.n_head_kv},
                          {"ctx", o_.loop.ctx},
                          {"kv_memory", o_.loop.kv_memory},
                          {"chat", chat_error_.empty()}};
  auto model_json = [this, tova_info] {
    return json{{"id", o_.api.model_id},
                {"object", "model"},
                {"created", created_},
                {"owned_by", "tova"},
                {"tova", tova_info}};
  };
  route("/v1/models", {{"GET", [=](const Request&, Response& res) {
                          send_json(res, {{"object", "list"}, {"data", json::array({model_json()})}});
                        }}});
  route(R"(/v1/models/(.+))", {{"GET", [=, this](const Request& req, Response& res) {
                                 if (req.matches[1] != o_.api.model_id) {
                                   send_error(res, model_not_found(std::string(req.matches[1]),
                                                                   o_.api.model_id));
                                   return;
                                 }
                                 send_json(res, model_json());
                               }}});
  route("/tokenize", {{"POST", [this](const Request& req, Response& res) {
                         auto r = parse_tokenize_request(req.body);
                         if (auto* e = std::get_if<ApiError>(&r)) return send_error(res, *e);
                         const auto& t = std::get<TokenizeRequest>(r);
                         send_json(res, {{"tokens", engine_.tokenize(t.content, t.add_special)}});
                       }}});
  route("/detokenize", {{"POST", [this](const Request& req, Response& res) {
                           auto r = parse_detokenize_request(req.body, engine_.n_vocab());
                           if (auto* e = std::get_if<ApiError>(&r)) return send_error(res, *e);
                           const auto& ids = std::get<std::vector<int32_t>>(r);
                           send_json(res, {{"content", engine_.detokenize(ids)}});
                         }}});
  // What a conversation's state holds: GET /v1/sessions/ID, ID the X-Request-Id of the request
  // that last extended it (while it generates, and afterwards while the state is held).
  route(R"(/v1/sessions/([^/]+))", {{"GET", [this](const Request& req, Response& res) {
          const std::string id = req.matches[1];
          auto v = loop_->inspect(id);
          if (!v) {
            send_error(res, {.status = 404,
                             .message = fmt::format("no state of request '{}' is in memory",
                                                    shown(id)),
                             .code = "not_found"});
            return;
          }
          const tok::Tokenizer& tk = engine_.tokenizer();
          std::vector<std::string> pieces;
          pieces.reserve(v->tokens.size());
          for (size_t i = 0; i < v->tokens.size(); ++i) {
            pieces.push_back(tk.token_to_piece(v->tokens[i], i > 0 ? v->tokens[i - 1] : -1));
          }
          send_json(res, state_view_json(*v, pieces));
        }}});
  route("/v1/chat/completions",
        {{"POST", [this](const Request& req, Response& res) { generate(true, req, res); }}});
  route("/v1/completions",
        {{"POST", [this](const Request& req, Response& res) { generate(false, req, res); }}});
  // No route: a 404 error object for every method.
  auto not_found = [](const Request& req, Response& res) {
    send_error(res, {.status = 404,
                     .message = fmt::format("no route {} {}", shown(req.method), shown(req.path)),
                     .code = "not_found"});
  };
  s.Get(".*", not_found);
  s.Post(".*", not_found);
  s.Put(".*", not_found);
  s.Delete(".*", not_found);
  s.Patch(".*", not_found);
  s.Options(".*", not_found);
}

}  // namespace tova::server
