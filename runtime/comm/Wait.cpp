//===- Wait.cpp - Waiting for MPI without holding a core ------------------===//

#include "comm/Wait.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include <sys/prctl.h>

using namespace weft::rt;

/// A non-negative integer environment variable, or `fallback`.
static int64_t microsecondsFromEnvironment(const char *name,
                                           int64_t fallback) {
  const char *text = std::getenv(name);
  if (!text || !*text)
    return fallback;
  char *end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  return *end == '\0' && value >= 0 && value <= 1000000 ? value : fallback;
}

const WaitPolicy &weft::rt::waitPolicy() {
  static const WaitPolicy policy = [] {
    WaitPolicy p;
    p.spinMicroseconds =
        microsecondsFromEnvironment("WEFT_MPI_SPIN_US", p.spinMicroseconds);
    p.maxSleepMicroseconds = microsecondsFromEnvironment(
        "WEFT_MPI_MAX_SLEEP_US", p.maxSleepMicroseconds);
    if (p.firstSleepMicroseconds > p.maxSleepMicroseconds)
      p.firstSleepMicroseconds = p.maxSleepMicroseconds;
    // Linux rounds sleeps up by the thread's timer slack (50 us by
    // default), which would make the first, short sleeps long.
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    return p;
  }();
  return policy;
}

/// Calls `test(&done)` (an MPI status) until it reports done or fails:
/// in a tight loop for the policy's spin time, then with growing sleeps.
template <typename Test>
static int pollUntilDone(const WaitPolicy &policy, Test test) {
  using Clock = std::chrono::steady_clock;
  int done = 0;
  int status = test(&done);
  if (status != MPI_SUCCESS || done)
    return status;
  Clock::time_point spinUntil =
      Clock::now() + std::chrono::microseconds(policy.spinMicroseconds);
  while (Clock::now() < spinUntil) {
    status = test(&done);
    if (status != MPI_SUCCESS || done)
      return status;
  }
  int64_t sleep = policy.firstSleepMicroseconds;
  while (true) {
    if (sleep > 0)
      std::this_thread::sleep_for(std::chrono::microseconds(sleep));
    else
      std::this_thread::yield();
    status = test(&done);
    if (status != MPI_SUCCESS || done)
      return status;
    sleep = sleep * 2 > policy.maxSleepMicroseconds
                ? policy.maxSleepMicroseconds
                : std::max<int64_t>(sleep * 2, 1);
  }
}

int weft::rt::waitFor(MPI_Request *request, const WaitPolicy &policy) {
  return waitFor(request, MPI_STATUS_IGNORE, policy);
}

int weft::rt::waitFor(MPI_Request *request, MPI_Status *status,
                      const WaitPolicy &policy) {
  return pollUntilDone(
      policy, [&](int *done) { return MPI_Test(request, done, status); });
}

int weft::rt::probeFor(int source, int tag, MPI_Comm comm, MPI_Message *message,
                       MPI_Status *status, const WaitPolicy &policy) {
  return pollUntilDone(policy, [&](int *done) {
    return MPI_Improbe(source, tag, comm, done, message, status);
  });
}
