//===- Heartbeats.cpp - The launcher's side of the failure detector -------===//

#include "weft/Launch/Heartbeats.h"

#include <cerrno>
#include <cstring>
#include <random>

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

using namespace weft::run;

HeartbeatListener::~HeartbeatListener() {
  for (Peer &peer : peers)
    if (peer.fd >= 0)
      close(peer.fd);
  if (listener >= 0)
    close(listener);
}

static bool fail(std::string &error, const char *call) {
  error = std::string("the failure detector's socket: ") + call + ": " +
          std::strerror(errno);
  return false;
}

bool HeartbeatListener::listen(bool tcp, std::string &address,
                               std::string &error) {
  if (tcp) {
    listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (listener < 0)
      return fail(error, "socket");
    sockaddr_in any = {};
    any.sin_family = AF_INET;
    any.sin_addr.s_addr = htonl(INADDR_ANY);
    any.sin_port = 0;
    socklen_t length = sizeof(any);
    if (bind(listener, reinterpret_cast<sockaddr *>(&any), sizeof(any)) != 0)
      return fail(error, "bind");
    if (getsockname(listener, reinterpret_cast<sockaddr *>(&any), &length))
      return fail(error, "getsockname");
    char host[256] = {0};
    if (gethostname(host, sizeof(host) - 1) != 0)
      return fail(error, "gethostname");
    address = std::string("tcp:") + host + ":" +
              std::to_string(ntohs(any.sin_port));
  } else {
    listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (listener < 0)
      return fail(error, "socket");
    // Linux's abstract namespace: no file to clean up, even after SIGKILL.
    std::random_device random;
    std::string name = "@weft-run-" + std::to_string(getpid()) + "-" +
                       std::to_string(random());
    sockaddr_un where = {};
    where.sun_family = AF_UNIX;
    std::memcpy(where.sun_path, name.data(), name.size());
    where.sun_path[0] = '\0';
    socklen_t length =
        static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
    if (bind(listener, reinterpret_cast<sockaddr *>(&where), length) != 0)
      return fail(error, "bind");
    address = "unix:" + name;
  }
  if (::listen(listener, 512) != 0)
    return fail(error, "listen");
  return true;
}

std::vector<int> HeartbeatListener::descriptors() const {
  std::vector<int> fds;
  if (listener >= 0)
    fds.push_back(listener);
  for (const Peer &peer : peers)
    if (!peer.closed)
      fds.push_back(peer.fd);
  return fds;
}

void HeartbeatListener::poll(Clock::time_point now) {
  while (listener >= 0) {
    int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
      break;
    Peer peer;
    peer.fd = fd;
    peer.lastHeard = now;
    peers.push_back(std::move(peer));
  }
  char buffer[4096];
  for (Peer &peer : peers) {
    while (!peer.closed) {
      ssize_t n = read(peer.fd, buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        break;
      if (n <= 0) {
        // The program ended (its exit, or its death, which mpirun reports).
        peer.closed = true;
        close(peer.fd);
        peer.fd = -1;
        break;
      }
      peer.partial.append(buffer, static_cast<size_t>(n));
      // A peer that sends no newline cannot make weft-run hoard memory.
      if (peer.partial.size() > 65536)
        peer.partial.erase(0, peer.partial.size() - 65536);
      size_t start = 0;
      for (size_t newline;
           (newline = peer.partial.find('\n', start)) != std::string::npos;
           start = newline + 1)
        line(peer, peer.partial.substr(start, newline - start), now);
      peer.partial.erase(0, start);
    }
  }
}

void HeartbeatListener::line(Peer &peer, const std::string &text,
                             Clock::time_point now) {
  peer.lastHeard = now;
  size_t space = text.find(' ');
  std::string word = text.substr(0, space);
  std::string rest = space == std::string::npos ? "" : text.substr(space + 1);
  if (word == "hello") {
    // hello <rank> <pid> <host>
    char host[256] = {0};
    int rank = -1;
    long pid = 0;
    if (std::sscanf(rest.c_str(), "%d %ld %255s", &rank, &pid, host) == 3) {
      peer.hello = true;
      peer.rank = rank;
      peer.pid = pid;
      peer.host = host;
    }
  } else if (word == "beat") {
    peer.activity = rest;
  } else if (word == "failed") {
    peer.failure = rest;
  }
}

std::optional<RankFailure>
HeartbeatListener::check(Clock::time_point now,
                         std::chrono::duration<double> bound) const {
  for (const Peer &peer : peers) {
    if (!peer.hello)
      continue;
    RankFailure failure;
    failure.rank = peer.rank;
    failure.host = peer.host;
    failure.pid = peer.pid;
    failure.lastActivity = peer.activity;
    if (!peer.failure.empty()) {
      failure.reportedFailure = peer.failure;
      return failure;
    }
    if (peer.closed)
      continue;
    double silent =
        std::chrono::duration<double>(now - peer.lastHeard).count();
    if (silent >= bound.count()) {
      failure.silentSeconds = silent;
      return failure;
    }
  }
  return std::nullopt;
}

size_t HeartbeatListener::ranksHeard() const {
  size_t n = 0;
  for (const Peer &peer : peers)
    n += peer.hello;
  return n;
}

int HeartbeatListener::firstRankNotHeard(size_t expected) const {
  std::vector<bool> heard(expected, false);
  for (const Peer &peer : peers)
    if (peer.hello && peer.rank >= 0 &&
        static_cast<size_t>(peer.rank) < expected)
      heard[peer.rank] = true;
  for (size_t r = 0; r < expected; ++r)
    if (!heard[r])
      return static_cast<int>(r);
  return -1;
}
