// The listening socket and the connections behind requests, for cpp-httplib 0.11 (Debian 12):
// binding that fails when another process listens on the port (httplib's default sets
// SO_REUSEPORT, so a second server bound the same port and took half the connections), a listen
// backlog for bursts (httplib's is 5), and whether a request's client is still connected (httplib
// 0.11 does not say; a non-streaming request whose client left must stop generating).
#pragma once

#include <httplib.h>

#include <string>

#include "tova/result.h"

namespace tova::server {

class Listener : public httplib::Server {
 public:
  Listener();
  // Binds host:port (0: any free port) with SO_REUSEADDR only and a backlog of `backlog`;
  // returns the port bound, or an error naming the address and the reason (in use, ...).
  Result<int> bind(const std::string& host, int port, int backlog);
  int port() const { return port_; }

 private:
  int port_ = -1;
};

// How long and how much a lingering close reads and drops (nginx's lingering_close, with
// shorter times: a worker thread is held meanwhile).
struct LingerLimits {
  double seconds = 5;       // the whole wait (nginx: lingering_time 30 s)
  double idle_seconds = 1;  // the longest silence from the client (nginx: lingering_timeout 5 s)
  size_t max_bytes = size_t{64} << 20;
};

// For an answer written before the request's body was read (413, 401, a bad Content-Length):
// ends our side of connection `fd` (FIN after the answer), reads and drops what the client still
// sends until it closes its side or a limit is reached, then stops reading. Closing with unread
// bytes instead would send a reset, which takes the answer from a client that sends its whole
// body before it reads (Python's urllib, curl, the openai client). httplib closes the socket
// after. fd < 0: nothing.
void linger_close(int fd, const LingerLimits& limits = {});

// The socket of the connection a request arrived on (its peer address and port and our port
// identify it among this process's sockets), or -1. Valid while the request's handler runs.
int connection_socket(const httplib::Request& req);

// The peer of socket `fd` has closed its side (or reset it): no answer will be read.
bool peer_closed(int fd);

// Shuts down every connection this process accepted on `port`: at shutdown, httplib 0.11 keeps
// an idle keep-alive connection's thread waiting up to its keep-alive timeout, and a stopping
// server would wait for it.
void shutdown_connections(int port);

}  // namespace tova::server
