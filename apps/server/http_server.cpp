#include "http_server.h"

#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <thread>

namespace tova::server {

using nlohmann::json;

namespace {

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string new_id(const char* prefix) {
  static std::atomic<uint64_t> counter{0};
  return fmt::format("{}-{:x}{:06x}", prefix, unix_now(), counter.fetch_add(1));
}

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  if (e.status == 503) res.set_header("Retry-After", "1");
  res.set_content(to_json_text(error_json(e)), "application/json");
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
    case 503:
      return "the server is overloaded; retry later";
    default:
      return "request failed";
  }
}

}  // namespace

HttpServer::HttpServer(const Engine& engine, const ServerOptions& o)
    : engine_(engine), o_(o), http_(std::make_unique<httplib::Server>()), created_(unix_now()) {
  std::string model_template;
  if (auto t = engine_.model().file().get_string("tokenizer.chat_template"); t.ok()) {
    model_template = *t;
  }
  auto r = make_chat_renderer(o_.chat_template, model_template);
  if (r.ok()) {
    renderer_ = std::move(*r);
  } else {
    chat_error_ = r.message();
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

Result<int> HttpServer::bind() {
  int port = o_.port;
  if (port == 0) {
    port = http_->bind_to_any_port(o_.host);
  } else if (!http_->bind_to_port(o_.host, port)) {
    port = -1;
  }
  if (port < 0) return make_error("cannot listen on {}:{}", o_.host, o_.port);
  return port;
}

void HttpServer::serve() { http_->listen_after_bind(); }

void HttpServer::shutdown(double grace_seconds) {
  loop_->drain();
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<int64_t>(grace_seconds * 1000));
  while (!loop_->idle() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Streams write their last events right after the loop goes idle: give them a moment.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  http_->stop();
  loop_->stop();
}

void HttpServer::routes() {
  httplib::Server& s = *http_;
  const int n_http = o_.http_threads > 0 ? o_.http_threads : o_.loop.parallel + o_.loop.queue + 8;
  s.new_task_queue = [n_http] { return new httplib::ThreadPool(n_http); };
  s.set_payload_max_length(o_.max_body_bytes);
  s.set_keep_alive_max_count(1000);

  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (o_.api_key.empty() || req.path == "/health")
      return httplib::Server::HandlerResponse::Unhandled;
    const std::string auth = req.get_header_value("Authorization");
    if (auth != "Bearer " + o_.api_key) {
      send_error(res, {.status = 401,
                       .message = "invalid or missing API key (Authorization: Bearer KEY)",
                       .type = "authentication_error",
                       .code = "invalid_api_key"});
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Every error httplib produces itself (404 route, 413 body, 400 parse) gets an error object;
  // every status >= 400 is counted here (handlers count their 200s).
  s.set_error_handler(
      httplib::Server::HandlerWithResponse([this](const httplib::Request&, httplib::Response& res) {
        if (res.body.empty()) {
          ApiError e{.status = res.status, .message = default_message(res.status)};
          if (res.status == 404) e.code = "not_found";
          if (res.status >= 500) e.type = "server_error";
          send_error(res, e);
        }
        metrics_.request_done(res.status);
        return httplib::Server::HandlerResponse::Handled;
      }));

  s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(to_json_text(json{{"status", "ok"}}), "application/json");
    metrics_.request_done(200);
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.render(), "text/plain; version=0.0.4");
    metrics_.request_done(200);
  });
  s.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    json m = {
        {"id", o_.api.model_id}, {"object", "model"}, {"created", created_}, {"owned_by", "tova"}};
    res.set_content(to_json_text(json{{"object", "list"}, {"data", json::array({m})}}),
                    "application/json");
    metrics_.request_done(200);
  });
  s.Get(R"(/v1/models/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1] != o_.api.model_id) {
      send_error(res, model_not_found(std::string(req.matches[1]), o_.api.model_id));
      return;
    }
    res.set_content(to_json_text(json{{"id", o_.api.model_id},
                                      {"object", "model"},
                                      {"created", created_},
                                      {"owned_by", "tova"}}),
                    "application/json");
    metrics_.request_done(200);
  });
  s.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
    auto r = parse_tokenize_request(req.body);
    if (auto* e = std::get_if<ApiError>(&r)) {
      send_error(res, *e);
      return;
    }
    const auto& t = std::get<TokenizeRequest>(r);
    const auto ids = engine_.tokenizer()->encode(t.content, t.add_special);
    res.set_content(to_json_text(json{{"tokens", ids}}), "application/json");
    metrics_.request_done(200);
  });
  s.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
    auto r = parse_detokenize_request(req.body, engine_.tokenizer()->n_vocab());
    if (auto* e = std::get_if<ApiError>(&r)) {
      send_error(res, *e);
      return;
    }
    const auto& ids = std::get<std::vector<int32_t>>(r);
    res.set_content(to_json_text(json{{"content", engine_.tokenizer()->decode(ids)}}),
                    "application/json");
    metrics_.request_done(200);
  });

  auto generate = [this](bool chat) {
    return [this, chat](const httplib::Request& req, httplib::Response& res) {
      auto parsed =
          parse_generation_request(req.body, chat, engine_, o_.api, renderer_.get(), chat_error_);
      if (auto* e = std::get_if<ApiError>(&parsed)) {
        send_error(res, *e);
        return;
      }
      ParsedRequest p = std::move(std::get<ParsedRequest>(parsed));
      auto job = std::make_shared<Job>(std::move(p.gen));
      if (auto e = loop_->submit(job)) {
        send_error(res, *e);
        return;
      }
      const std::string id = new_id(chat ? "chatcmpl" : "cmpl");
      const int64_t created = unix_now();
      const std::string object = chat ? "chat.completion" : "text_completion";
      if (!p.stream) {
        std::string text;
        for (;;) {
          bool final = false;
          for (Event& ev : job->take(std::chrono::milliseconds(100))) {
            text += ev.text;
            if (!ev.final) continue;
            final = true;
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
            json out = {{"id", id},
                        {"object", object},
                        {"created", created},
                        {"model", p.model},
                        {"choices", json::array({choice})},
                        {"usage", usage_json(ev.prompt_tokens, ev.completion_tokens,
                                             ev.kv.reused_prompt_tokens)},
                        {"tova", kv_json(ev.kv)}};
            res.set_content(to_json_text(out), "application/json");
            metrics_.request_done(200);
          }
          if (final) return;
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
      metrics_.request_done(200);
      res.set_header("Cache-Control", "no-cache");
      res.set_chunked_content_provider(
          "text/event-stream",
          [=](size_t, httplib::DataSink& sink) {
            if (chat && !*started) {
              *started = true;
              json c = chunk({{"index", 0},
                              {"delta", {{"role", "assistant"}, {"content", ""}}},
                              {"finish_reason", nullptr}});
              if (!sink.write(sse(c).data(), sse(c).size())) return false;
            }
            for (Event& ev : job->take(std::chrono::milliseconds(50))) {
              std::string out;
              if (ev.error) {
                out = sse(error_json(*ev.error));
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
                  u["usage"] = usage_json(ev.prompt_tokens, ev.completion_tokens,
                                          ev.kv.reused_prompt_tokens);
                  out += sse(u);
                }
              }
              if (ev.final) out += "data: [DONE]\n\n";
              if (!sink.write(out.data(), out.size())) {
                job->cancel();
                return false;
              }
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
    };
  };
  s.Post("/v1/chat/completions", generate(true));
  s.Post("/v1/completions", generate(false));
  // No route: a 404 error object for every method.
  auto not_found = [this](const httplib::Request& req, httplib::Response& res) {
    send_error(res, {.status = 404,
                     .message = fmt::format("no route {} {}", req.method, req.path),
                     .code = "not_found"});
  };
  s.Get(".*", not_found);
  s.Post(".*", not_found);
  s.Put(".*", not_found);
  s.Delete(".*", not_found);
  s.Patch(".*", not_found);
}

}  // namespace tova::server
