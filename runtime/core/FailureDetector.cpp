//===- FailureDetector.cpp - Heartbeats to the launcher -------------------===//

#include "FailureDetector.h"
#include "Context.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

using namespace weft::rt;

bool weft::rt::readHeartbeatConfig(HeartbeatConfig &out, std::string &error) {
  out = HeartbeatConfig();
  const char *address = std::getenv("WEFT_HEARTBEAT");
  if (address && *address) {
    std::string text = address;
    if (text.rfind("unix:", 0) != 0 && text.rfind("tcp:", 0) != 0) {
      error = "WEFT_HEARTBEAT='" + text +
              "' is not unix:PATH, unix:@NAME or tcp:HOST:PORT";
      return false;
    }
    out.address = text;
  }
  if (const char *ms = std::getenv("WEFT_HEARTBEAT_MS"); ms && *ms) {
    char *end = nullptr;
    long long value = std::strtoll(ms, &end, 10);
    if (*end != '\0' || value < 10 || value > 600000) {
      error = std::string("WEFT_HEARTBEAT_MS='") + ms +
              "' is not a number of milliseconds from 10 to 600000";
      return false;
    }
    out.interval = std::chrono::milliseconds(value);
  }
  return true;
}

/// Connects to unix:PATH or unix:@NAME (Linux's abstract namespace, which
/// leaves no file behind when the launcher is killed).
static int connectUnix(const std::string &where, std::string &error) {
  sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  if (where.empty() || where.size() >= sizeof(address.sun_path)) {
    error = "the socket name '" + where + "' is empty or too long";
    return -1;
  }
  std::memcpy(address.sun_path, where.data(), where.size());
  socklen_t length =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + where.size());
  if (where[0] == '@')
    address.sun_path[0] = '\0';
  else
    length = sizeof(address);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  if (connect(fd, reinterpret_cast<sockaddr *>(&address), length) != 0) {
    error = "cannot connect to unix:" + where + ": " + std::strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

static int connectTcp(const std::string &where, std::string &error) {
  size_t colon = where.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == where.size()) {
    error = "tcp:" + where + " is not tcp:HOST:PORT";
    return -1;
  }
  std::string host = where.substr(0, colon), port = where.substr(colon + 1);
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo *found = nullptr;
  if (int code = getaddrinfo(host.c_str(), port.c_str(), &hints, &found)) {
    error = "cannot resolve tcp:" + where + ": " + gai_strerror(code);
    return -1;
  }
  int fd = -1;
  std::string why = "no address";
  for (addrinfo *a = found; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      why = std::strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0)
    error = "cannot connect to tcp:" + where + ": " + why;
  return fd;
}

int weft::rt::connectHeartbeatSocket(const std::string &address,
                                     std::string &error) {
  if (address.rfind("unix:", 0) == 0)
    return connectUnix(address.substr(5), error);
  if (address.rfind("tcp:", 0) == 0)
    return connectTcp(address.substr(4), error);
  error = "'" + address + "' is not unix:PATH, unix:@NAME or tcp:HOST:PORT";
  return -1;
}

FailureDetector::FailureDetector(weft_rt_context *ctx, DescribeFn describe,
                                 FailFn onLauncherGone, FailFn onCheckFailed)
    : ctx(ctx), describe(std::move(describe)),
      onLauncherGone(std::move(onLauncherGone)),
      onCheckFailed(std::move(onCheckFailed)) {}

FailureDetector::~FailureDetector() { stop(); }

bool FailureDetector::start(const HeartbeatConfig &config, int rank,
                            std::string &error) {
  interval = config.interval;
  if (!config.address.empty()) {
    fd = connectHeartbeatSocket(config.address, error);
    if (fd < 0) {
      error = "the failure detector (WEFT_HEARTBEAT) cannot reach weft-run: " +
              error;
      return false;
    }
    char host[256] = "?";
    gethostname(host, sizeof(host) - 1);
    if (!send("hello " + std::to_string(rank) + " " +
              std::to_string(getpid()) + " " + host)) {
      error = "the failure detector cannot write to weft-run: " +
              std::string(std::strerror(errno));
      close(fd);
      fd = -1;
      return false;
    }
  }
  thread = std::thread([this] { loop(); });
  return true;
}

void FailureDetector::beatNow() {
  std::lock_guard<std::mutex> lock(mutex);
  beatRequested = true;
  wake.notify_one();
}

void FailureDetector::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
    wake.notify_one();
  }
  if (thread.joinable())
    thread.join();
  if (fd >= 0)
    close(fd);
  fd = -1;
}

bool FailureDetector::send(const std::string &line) {
  std::lock_guard<std::mutex> lock(sendMutex);
  std::string text = line;
  for (char &c : text)
    if (c == '\n' || c == '\r')
      c = ' ';
  text += '\n';
  size_t sent = 0;
  while (sent < text.size()) {
    // MSG_NOSIGNAL: a launcher that is gone is an error here, not SIGPIPE.
    ssize_t n = ::send(fd, text.data() + sent, text.size() - sent,
                       MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

/// The launcher never writes: a readable socket means it closed (EOF) or
/// failed, i.e. weft-run is gone.
bool FailureDetector::launcherGone() {
  pollfd poller = {fd, POLLIN, 0};
  int ready = poll(&poller, 1, 0);
  if (ready <= 0)
    return false;
  char byte;
  ssize_t n = recv(fd, &byte, 1, MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
}

void FailureDetector::runHealthChecks() {
  std::lock_guard<std::mutex> lock(ctx->healthChecksMutex);
  for (const HealthCheck &health : ctx->healthChecks) {
    char message[512] = {0};
    if (health.check(health.user, message, sizeof(message)) == 0)
      continue;
    message[sizeof(message) - 1] = '\0';
    std::string reason = message[0] ? message : "a health check failed";
    if (fd >= 0)
      send("failed " + reason);
    // Unblock the waits of the main thread before it is told to stop.
    if (health.abort)
      health.abort(health.user);
    onCheckFailed(reason);
    return;
  }
}

void FailureDetector::loop() {
  std::unique_lock<std::mutex> lock(mutex);
  while (!stopping) {
    wake.wait_for(lock, interval,
                  [&] { return stopping || beatRequested; });
    if (stopping)
      break;
    beatRequested = false;
    lock.unlock();
    if (fd >= 0) {
      if (launcherGone() || !send("beat " + describe())) {
        onLauncherGone("weft-run, which launched this program, is gone; "
                       "stopping");
        lock.lock();
        break;
      }
    }
    runHealthChecks();
    lock.lock();
  }
}
