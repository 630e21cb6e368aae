//===- Heartbeats.h - The launcher's end of the failure detector *- C++ -*-===//
//
// weft-run listens on a socket of its own; every device program it starts
// connects to it (runtime/core/FailureDetector.cpp), says who it is, and
// then sends a heartbeat with what it is doing about every
// WEFT_HEARTBEAT_MS. A program that has said nothing for the detection
// bound (--detect-after) is dead or stopped: weft-run names it (rank, host,
// pid, its last activity) and stops the job. A program that hears weft-run
// close the socket ends itself, so no rank outlives a killed weft-run.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_LAUNCH_HEARTBEATS_H
#define WEFT_LAUNCH_HEARTBEATS_H

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace weft::run {

/// What became of a rank, as its heartbeats tell.
struct RankFailure {
  int rank = -1;
  std::string host;
  long pid = 0;
  /// Its last "beat" activity ("in run 3, op 12 (matmul fc1)").
  std::string lastActivity;
  /// Seconds since its last heartbeat; for a failed health check, 0.
  double silentSeconds = 0;
  /// Set when the rank reported a failure itself (a health check).
  std::string reportedFailure;
};

class HeartbeatListener {
public:
  using Clock = std::chrono::steady_clock;

  HeartbeatListener() = default;
  ~HeartbeatListener();
  HeartbeatListener(const HeartbeatListener &) = delete;
  HeartbeatListener &operator=(const HeartbeatListener &) = delete;

  /// Listens on a fresh socket: an abstract Unix socket for programs on
  /// this machine, or TCP on all interfaces when `tcp` (ranks on other
  /// hosts), and sets `address` to what WEFT_HEARTBEAT should say. False
  /// with `error` when no socket can be made.
  bool listen(bool tcp, std::string &address, std::string &error);

  /// The descriptors to poll for reading (the listener and every rank).
  std::vector<int> descriptors() const;
  /// Accepts connections and reads lines that arrived; call when one of
  /// descriptors() is readable (or at any time: nothing blocks).
  void poll(Clock::time_point now);

  /// A rank that reported a failure, or whose last word is older than
  /// `bound`; nullopt while all are well.
  std::optional<RankFailure> check(Clock::time_point now,
                                   std::chrono::duration<double> bound) const;

  /// Ranks that have said hello so far.
  size_t ranksHeard() const;
  /// The smallest rank below `expected` that has not said hello; -1 if
  /// none.
  int firstRankNotHeard(size_t expected) const;

private:
  struct Peer {
    int fd = -1;
    std::string partial;
    bool hello = false;
    bool closed = false;
    int rank = -1;
    long pid = 0;
    std::string host;
    std::string activity = "starting";
    std::string failure;
    Clock::time_point lastHeard;
  };
  void line(Peer &peer, const std::string &text, Clock::time_point now);

  int listener = -1;
  std::vector<Peer> peers;
};

} // namespace weft::run

#endif // WEFT_LAUNCH_HEARTBEATS_H
