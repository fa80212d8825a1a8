// `tova serve`'s HTTP front: OpenAI-compatible routes on cpp-httplib, handing generation to the
// ServingLoop (the only thread that runs the model). Every route answers its own methods, a
// 405 with Allow the others, OPTIONS (CORS preflight) for all; every request gets one
// access-log line on stderr.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "access_log.h"
#include "codec.h"
#include "tova/result.h"
#include "metrics.h"
#include "serving_loop.h"
#include "tova/chat.h"
#include "tova/engine.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace tova::server {

class Listener;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;            // 0: any free port (see bind())
  int backlog = 1024;         // pending connections the kernel queues
  std::string api_key;        // empty: no auth
  std::string chat_template;  // empty: from the model (chatml when it has none)
  // --reasoning-format: how answers carry reasoning (reasoning_content): auto (the chat
  // template's way), none (all content), think, harmony.
  std::string reasoning_format = "auto";
  // --cors: origins allowed to call the API from a browser ("*": any); empty: no CORS headers.
  std::vector<std::string> cors_origins;
  size_t max_body_bytes = 1 << 20;
  int http_threads = 0;  // 0: parallel + queue + 8
  LogFormat log_format = LogFormat::kText;
  LoopOptions loop;
  ApiDefaults api;
};

class HttpServer {
 public:
  // Errors for settings that leave the server useless: an unknown --chat-template, a
  // --kv-memory that cannot hold one sequence of the default multi-state.
  static Result<std::unique_ptr<HttpServer>> create(const Engine& engine, const ServerOptions& o);
  ~HttpServer();

  // Binds the socket; returns the port bound (an error if the port is taken).
  Result<int> bind();
  // Serves until shutdown() or stop_now(); blocks.
  void serve();
  // Stops admitting (new requests get 503, /health says "draining"), lets in-flight ones
  // finish (up to `grace_seconds`, or until stop_now()), then stops the HTTP server.
  void shutdown(double grace_seconds = 60);
  // Stops at once: in-flight requests end with a 503 error. Returns how many were cut.
  int stop_now();
  // Notes for the operator at start (which chat template, why chat is unavailable).
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  HttpServer(const Engine& engine, const ServerOptions& o);
  void install_hooks();  // every request: its record, limits, auth, CORS, errors, its log line
  void install_pre_routing();  // before the body: the record, Content-Length, the API key
  void install_access_log();   // after the last byte: the log line, the status counted
  void routes();
  void stop_http();
  nlohmann::json model_json() const;  // GET /v1/models: the model and what requests may choose
  void show_session(const httplib::Request& req, httplib::Response& res);
  void generate(bool chat, const httplib::Request& req, httplib::Response& res);

  const Engine& engine_;
  ServerOptions o_;
  Metrics metrics_;
  std::unique_ptr<ServingLoop> loop_;
  std::optional<ChatTemplate> chat_template_;  // none: chat_error_ says why
  std::string chat_error_;
  std::vector<std::string> notes_;
  std::unique_ptr<Listener> http_;
  std::atomic<bool> stopping_now_{false};
  std::once_flag http_stopped_;  // httplib's stop() must run once
  std::atomic<int> in_handlers_{0};  // generation requests not answered to the end yet
  int64_t created_ = 0;
};

}  // namespace tova::server
