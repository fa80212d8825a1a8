// `tova serve`'s HTTP front: OpenAI-compatible routes on cpp-httplib, handing generation to the
// ServingLoop (the only thread that runs the model).
#pragma once

#include <memory>
#include <string>

#include "api.h"
#include "core/result.h"
#include "metrics.h"
#include "serving_loop.h"
#include "tova/engine.h"

namespace httplib {
class Server;
}

namespace tova::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;            // 0: any free port (see port())
  std::string api_key;        // empty: no auth
  std::string chat_template;  // empty: from the model
  size_t max_body_bytes = 1 << 20;
  int http_threads = 0;  // 0: parallel + queue + 8
  LoopOptions loop;
  ApiDefaults api;
};

class HttpServer {
 public:
  HttpServer(const Engine& engine, const ServerOptions& o);
  ~HttpServer();

  // Binds the socket; returns the port bound.
  Result<int> bind();
  // Serves until shutdown(); blocks.
  void serve();
  // Stops admitting (new requests get 503), lets in-flight ones finish (up to `grace_seconds`),
  // then stops the HTTP server so serve() returns.
  void shutdown(double grace_seconds = 60);
  // Notes for the operator (e.g. why chat is unavailable).
  const std::string& chat_status() const { return chat_error_; }

 private:
  void routes();
  const Engine& engine_;
  ServerOptions o_;
  Metrics metrics_;
  std::unique_ptr<ServingLoop> loop_;
  std::unique_ptr<ChatRenderer> renderer_;
  std::string chat_error_;
  std::unique_ptr<httplib::Server> http_;
  int64_t created_ = 0;
};

}  // namespace tova::server
