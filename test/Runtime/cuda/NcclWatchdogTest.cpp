//===- NcclWatchdogTest.cpp - NCCL's health check without a GPU -----------===//
//
// The watchdog talks to NCCL through NcclApi: these tests stand in for NCCL
// with communicators that fail on demand, and run the watchdog as the
// failure detector does, through a context's health checks.
//
//===----------------------------------------------------------------------===//

#include "core/Context.h"
#include "core/FailureDetector.h"
#include "cuda/NcclWatchdog.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <mutex>
#include <thread>

using namespace weft::rt;
using namespace weft::rt::cuda;

namespace {

/// What the fake NCCL answers, per communicator.
struct FakeNccl {
  std::mutex mutex;
  std::map<ncclComm_t, ncclResult_t> state;
  std::map<ncclComm_t, int> aborts;
  ncclResult_t askResult = ncclSuccess;
};
FakeNccl *fake = nullptr;

ncclResult_t fakeGetAsyncError(ncclComm_t comm, ncclResult_t *result) {
  std::lock_guard<std::mutex> lock(fake->mutex);
  *result = fake->state[comm];
  return fake->askResult;
}
ncclResult_t fakeAbort(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(fake->mutex);
  ++fake->aborts[comm];
  return ncclSuccess;
}
const char *fakeErrorString(ncclResult_t result) {
  return result == ncclRemoteError ? "ncclRemoteError" : "another error";
}
const char *fakeLastError(ncclComm_t) { return "peer 1 closed the socket"; }

ncclComm_t comm(uintptr_t n) { return reinterpret_cast<ncclComm_t>(n); }

class NcclWatchdogTest : public ::testing::Test {
protected:
  void SetUp() override { fake = &nccl; }
  void TearDown() override { fake = nullptr; }
  NcclWatchdog make() {
    return NcclWatchdog(
        {{comm(1), "the world"}, {comm(2), "mesh axes [0]"}},
        {fakeGetAsyncError, fakeAbort, fakeErrorString, fakeLastError});
  }
  FakeNccl nccl;
};

} // namespace

TEST_F(NcclWatchdogTest, HealthyAndInitializingCommunicatorsPass) {
  NcclWatchdog watchdog = make();
  char message[256] = "";
  EXPECT_EQ(NcclWatchdog::check(&watchdog, message, sizeof(message)), 0);
  nccl.state[comm(2)] = ncclInProgress;
  EXPECT_EQ(NcclWatchdog::check(&watchdog, message, sizeof(message)), 0);
  EXPECT_STREQ(message, "");
}

TEST_F(NcclWatchdogTest, AsyncErrorNamesTheCommunicatorAndTheCause) {
  NcclWatchdog watchdog = make();
  nccl.state[comm(2)] = ncclRemoteError;
  char message[256] = "";
  EXPECT_NE(NcclWatchdog::check(&watchdog, message, sizeof(message)), 0);
  EXPECT_STREQ(message, "NCCL reports ncclRemoteError on mesh axes [0]: peer "
                        "1 closed the socket");
}

TEST_F(NcclWatchdogTest, AFailedQueryIsAFailure) {
  NcclWatchdog watchdog = make();
  nccl.askResult = ncclInvalidArgument;
  char message[256] = "";
  EXPECT_NE(NcclWatchdog::check(&watchdog, message, sizeof(message)), 0);
  EXPECT_NE(std::string(message).find("on the world"), std::string::npos);
}

TEST_F(NcclWatchdogTest, AbortAbortsEveryCommunicatorOnce) {
  NcclWatchdog watchdog = make();
  NcclWatchdog::abort(&watchdog);
  NcclWatchdog::abort(&watchdog);
  EXPECT_TRUE(watchdog.aborted());
  EXPECT_EQ(nccl.aborts[comm(1)], 1);
  EXPECT_EQ(nccl.aborts[comm(2)], 1);
  // Aborted communicators are not asked again.
  nccl.state[comm(1)] = ncclRemoteError;
  char message[64] = "";
  EXPECT_EQ(NcclWatchdog::check(&watchdog, message, sizeof(message)), 0);
}

// The detector's thread runs the watchdog as a health check of the
// context: an asynchronous error aborts the communicators and reaches the
// driver's failure hook with NCCL's words.
TEST_F(NcclWatchdogTest, FailureDetectorAbortsAndReports) {
  NcclWatchdog watchdog = make();
  weft_rt_context *ctx = nullptr;
  ASSERT_EQ(weft_rt_context_create(&ctx), WEFT_RT_OK);
  ASSERT_EQ(weft_rt_context_add_health_check(ctx, NcclWatchdog::check,
                                             NcclWatchdog::abort, &watchdog),
            WEFT_RT_OK);
  std::mutex mutex;
  std::string reported;
  FailureDetector detector(
      ctx, [] { return std::string("in run 0"); },
      [](const std::string &) {},
      [&](const std::string &why) {
        std::lock_guard<std::mutex> lock(mutex);
        reported = why;
      });
  HeartbeatConfig config; // No launcher: health checks only.
  config.interval = std::chrono::milliseconds(10);
  std::string error;
  ASSERT_TRUE(detector.start(config, 0, error)) << error;
  {
    std::lock_guard<std::mutex> lock(nccl.mutex);
    nccl.state[comm(1)] = ncclRemoteError;
  }
  for (int i = 0; i < 500 && !watchdog.aborted(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  detector.stop();
  weft_rt_context_remove_health_checks(ctx, &watchdog);
  weft_rt_context_destroy(ctx);
  EXPECT_TRUE(watchdog.aborted());
  EXPECT_EQ(nccl.aborts[comm(1)], 1);
  EXPECT_EQ(reported, "NCCL reports ncclRemoteError on the world: peer 1 "
                      "closed the socket");
}
