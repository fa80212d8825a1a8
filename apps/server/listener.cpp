#include "listener.h"

#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace tova::server {

namespace {

// The numeric host and port of a socket address, as httplib reports remote_addr/remote_port.
bool numeric_address(const sockaddr_storage& a, socklen_t len, std::string& host, int& port) {
  char h[NI_MAXHOST];
  char p[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&a), len, h, sizeof(h), p, sizeof(p),
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return false;
  }
  host = h;
  port = std::atoi(p);
  return true;
}

}  // namespace

Listener::Listener() {
  // SO_REUSEADDR alone: a restarted server binds past TIME_WAIT connections, but binding a port
  // another socket listens on fails (EADDRINUSE), which SO_REUSEPORT would allow.
  set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
}

Result<int> Listener::bind(const std::string& host, int port, int backlog) {
  errno = 0;
  int bound = port;
  if (port == 0) {
    bound = bind_to_any_port(host);
  } else if (!bind_to_port(host, port)) {
    bound = -1;
  }
  if (bound < 0) {
    const int err = errno;
    if (err == EADDRINUSE) {
      return make_error("cannot listen on {}:{}: the address is already in use (another server "
                        "on this port?)",
                        host, port);
    }
    return make_error("cannot listen on {}:{}{}", host, port,
                      err != 0 ? std::string(": ") + std::strerror(err) : std::string());
  }
  // Linux takes a second listen() on a listening socket as a new backlog.
  if (::listen(svr_sock_, backlog) != 0) {
    return make_error("cannot listen on {}:{}: listen(): {}", host, bound, std::strerror(errno));
  }
  port_ = bound;
  return bound;
}

void linger_close(int fd, const LingerLimits& limits) {
  if (fd < 0) return;
  ::shutdown(fd, SHUT_WR);
  using Clock = std::chrono::steady_clock;
  const auto until =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(limits.seconds * 1000));
  char buf[64 * 1024];
  size_t dropped = 0;
  while (dropped < limits.max_bytes) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) break;
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    const int wait =
        static_cast<int>(std::min<int64_t>(left, static_cast<int64_t>(limits.idle_seconds * 1000)));
    const int ready = poll(&p, 1, wait);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;  // silence (or an error): stop waiting
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the client closed its side (or reset it)
    dropped += static_cast<size_t>(n);
  }
  // Whatever comes later is not a request: httplib's next read sees the end.
  ::shutdown(fd, SHUT_RD);
}

namespace {

// Calls f(fd, local host, local port, peer host, peer port) for every connected socket of this
// process until it returns true.
template <typename F>
void for_each_connection(F&& f) {
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(d)) continue;
    struct stat st;
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage local{};
    sockaddr_storage peer{};
    socklen_t local_len = sizeof(local);
    socklen_t peer_len = sizeof(peer);
    std::string local_host;
    std::string peer_host;
    int local_port = 0;
    int peer_port = 0;
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &local_len) != 0 ||
        !numeric_address(local, local_len, local_host, local_port) ||
        getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0 ||
        !numeric_address(peer, peer_len, peer_host, peer_port)) {
      continue;
    }
    if (f(static_cast<int>(fd), local_port, peer_host, peer_port)) break;
  }
  closedir(d);
}

}  // namespace

int connection_socket(const httplib::Request& req) {
  int found = -1;
  for_each_connection([&](int fd, int local_port, const std::string& peer_host, int peer_port) {
    if (local_port != req.local_port || peer_port != req.remote_port ||
        peer_host != req.remote_addr) {
      return false;
    }
    found = fd;
    return true;
  });
  return found;
}

void shutdown_connections(int port) {
  for_each_connection([&](int fd, int local_port, const std::string&, int) {
    if (local_port == port) ::shutdown(fd, SHUT_RDWR);
    return false;
  });
}

bool peer_closed(int fd) {
  if (fd < 0) return false;
  pollfd p{.fd = fd, .events = POLLRDHUP, .revents = 0};
  if (poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace tova::server
