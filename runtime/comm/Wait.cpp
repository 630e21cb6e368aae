//===- Wait.cpp - Waiting for MPI without holding a core ------------------===//

#include "comm/Wait.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <optional>
#include <chrono>
#include <cstdlib>
#include <thread>

#include <sched.h>
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

/// The cores this process may run on.
static int availableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

/// The ranks of the job on this host: Open MPI's (or PMIx's) local size,
/// else `fallback`.
static int localRanks(int fallback) {
  for (const char *name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_LOCAL_SIZE"}) {
    const char *text = std::getenv(name);
    if (!text || !*text)
      continue;
    char *end = nullptr;
    long value = std::strtol(text, &end, 10);
    if (*end == '\0' && value >= 1 && value <= (1 << 24))
      return static_cast<int>(value);
  }
  return std::max(1, fallback);
}

static WaitPolicy makePolicy(int threadsPerRank, int ranksFallback) {
  WaitPolicy p;
  // Every rank on this host with cores of its own: spinning takes a core
  // nobody else needs, and a sleep would add its wake-up to every transfer
  // of a pipeline.
  int64_t needed = static_cast<int64_t>(localRanks(ranksFallback)) *
                   std::max(1, threadsPerRank);
  if (needed <= availableCores())
    p.spinMicroseconds = WaitPolicy::kDedicatedSpinMicroseconds;
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
}

namespace {
/// The process's policy, set once (MPI calls come from one thread).
std::optional<WaitPolicy> processPolicy;
} // namespace

void weft::rt::configureWaitPolicy(int threadsPerRank, int worldSize) {
  if (!processPolicy)
    processPolicy = makePolicy(threadsPerRank, worldSize);
}

const WaitPolicy &weft::rt::waitPolicy() {
  if (!processPolicy)
    processPolicy = makePolicy(1, INT32_MAX);
  return *processPolicy;
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
  // A tight loop first; past WaitPolicy::kTightSpinMicroseconds each test
  // yields the core: it costs nothing when the core is this rank's alone,
  // and lets another thread run when it is not (a busy host that the
  // policy could not see, or this process's failure detector).
  Clock::time_point start = Clock::now();
  Clock::time_point spinUntil =
      start + std::chrono::microseconds(policy.spinMicroseconds);
  Clock::time_point tightUntil =
      start + std::chrono::microseconds(std::min<int64_t>(
                  policy.spinMicroseconds, WaitPolicy::kTightSpinMicroseconds));
  for (Clock::time_point now = start; now < spinUntil; now = Clock::now()) {
    if (now >= tightUntil)
      std::this_thread::yield();
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
