//===- StagedTransferTest.cpp - Double-buffered receives, under mpirun ---===//
//
// Run by ctest under `mpirun -np 2`, through weft_rt.h: rank 0 (stage 0)
// sends, rank 1 (stage 1) receives with a staging buffer, as a pipeline's
// generated code does. Checks that:
// - every round's values arrive in order, in out, with staging and out
//   apart, for a message small enough for MPI's eager path and one large
//   enough for its rendezvous;
// - the overlap is real: after a RECV, the sender's next send completes
//   while the receiver only begins ops (weft_rt_op_begin) and calls no
//   other MPI; without a staging buffer it waits for the receiver's RECV;
// - a staged message of another size fails with both sizes, and a staging
//   buffer given to another transfer fails naming both;
// - a receive still posted when the communicator is destroyed is cancelled
//   (the program ends, and a fresh communicator transfers again).
//
//===----------------------------------------------------------------------===//

#include "weft_rt.h"

#include "MpiChecks.h"

#include <chrono>
#include <csignal>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

using namespace weft::test;

namespace {

/// A hang ends the rank with a message instead of the test's time-out.
void onAlarm(int) {
  static const char text[] =
      "StagedTransferTest: timed out: a rank waits for the other\n";
  ssize_t ignored = write(2, text, sizeof(text) - 1);
  (void)ignored;
  _exit(3);
}

bool errorMentions(weft_rt_context *ctx, const std::string &text) {
  return std::strstr(weft_rt_context_error(ctx), text.c_str()) != nullptr;
}

weft_rt_status send(weft_rt_context *ctx, int64_t tag,
                    std::vector<float> &data) {
  int64_t params[] = {WEFT_RT_SEND, WEFT_RT_F32, 0, 1, tag,
                      static_cast<int64_t>(data.size())};
  return weft_rt_collective(ctx, params, data.data(), data.data());
}

weft_rt_status receive(weft_rt_context *ctx, int64_t tag, int64_t count,
                       void *staging, std::vector<float> &out) {
  int64_t params[] = {WEFT_RT_RECV, WEFT_RT_F32, 0, 0, tag, count};
  return weft_rt_collective(ctx, params, staging, out.data());
}

float roundValue(int round, size_t i) {
  return static_cast<float>(round * 1000 + static_cast<int>(i % 997));
}

/// Rounds of one transfer: the receiver checks each against the values the
/// sender put in, element by element.
void testRounds(weft_rt_context *ctx, int64_t tag,
                std::vector<float> &staging) {
  constexpr int kRounds = 12;
  size_t count = staging.size();
  for (int round = 0; round < kRounds; ++round) {
    std::vector<float> data(count);
    for (size_t i = 0; i < count; ++i)
      data[i] = roundValue(round, i);
    if (worldRank == 0) {
      EXPECT(send(ctx, tag, data) == WEFT_RT_OK, "send round %d: %s", round,
             weft_rt_context_error(ctx));
      continue;
    }
    std::vector<float> out(count, -1.0f);
    weft_rt_status status =
        receive(ctx, tag, static_cast<int64_t>(count), staging.data(), out);
    EXPECT(status == WEFT_RT_OK, "recv round %d of %zu: %s", round, count,
           weft_rt_context_error(ctx));
    EXPECT(status != WEFT_RT_OK || out == data,
           "recv round %d of %zu elements: wrong values", round, count);
    // Ops between the receives move the next message (when it came).
    weft_rt_op_begin(ctx, round);
  }
}

/// Two rounds of a rendezvous-sized message. After the first RECV the
/// receiver "computes" for kComputeSeconds (only weft_rt_op_begin, no other
/// MPI call) before its second RECV, while the sender sends the second
/// round. With a staging buffer that send completes while the receiver
/// computes; without one it waits for the RECV. The margins are seconds
/// against milliseconds.
void testOverlap(weft_rt_context *ctx, int64_t tag,
                 std::vector<float> *staging) {
  constexpr double kComputeSeconds = 2.0;
  const size_t count = staging ? staging->size() : 1 << 18;
  const char *what = staging ? "staged" : "unstaged";
  for (int round = 0; round < 2; ++round) {
    std::vector<float> data(count);
    for (size_t i = 0; i < count; ++i)
      data[i] = roundValue(round, i);
    if (worldRank == 0) {
      auto start = std::chrono::steady_clock::now();
      EXPECT(send(ctx, tag, data) == WEFT_RT_OK, "%s overlap send: %s", what,
             weft_rt_context_error(ctx));
      double seconds = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      if (round == 1)
        EXPECT(staging ? seconds < kComputeSeconds / 2
                       : seconds > kComputeSeconds / 2,
               "%s: the second send took %.3f s while the receiver computed "
               "for %.1f s",
               what, seconds, kComputeSeconds);
      continue;
    }
    if (round == 1) {
      auto start = std::chrono::steady_clock::now();
      while (std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                           start)
                 .count() < kComputeSeconds) {
        weft_rt_op_begin(ctx, 0);
        usleep(1000);
      }
    }
    std::vector<float> out(count, -1.0f);
    weft_rt_status status =
        receive(ctx, tag, static_cast<int64_t>(count),
                staging ? staging->data() : nullptr, out);
    EXPECT(status == WEFT_RT_OK && out == data, "%s overlap round %d: %s",
           what, round, weft_rt_context_error(ctx));
  }
}

/// The round after a staged RECV brings `sent` elements where `expected`
/// are due: the RECV fails with both sizes in bytes.
void testStagedMismatch(weft_rt_context *ctx, int64_t tag, int64_t sent,
                        std::vector<float> &staging,
                        const std::string &sentText) {
  int64_t expected = static_cast<int64_t>(staging.size());
  for (int round = 0; round < 2; ++round) {
    if (worldRank == 0) {
      std::vector<float> data(round == 0 ? expected : sent, 1.0f);
      EXPECT(send(ctx, tag, data) == WEFT_RT_OK, "mismatch send: %s",
             weft_rt_context_error(ctx));
      continue;
    }
    std::vector<float> out(expected, -1.0f);
    weft_rt_status status = receive(ctx, tag, expected, staging.data(), out);
    if (round == 0) {
      EXPECT(status == WEFT_RT_OK, "mismatch round 0: %s",
             weft_rt_context_error(ctx));
      continue;
    }
    std::string expects = std::to_string(expected * 4) + " bytes";
    EXPECT(status == WEFT_RT_INVALID_ARGUMENT &&
               errorMentions(ctx, "world rank 0 sent " + sentText) &&
               errorMentions(ctx, "expects " + expects),
           "staged mismatch of %lld for %lld: status %d, '%s'",
           static_cast<long long>(sent), static_cast<long long>(expected),
           status, weft_rt_context_error(ctx));
  }
}

/// A staging buffer is one transfer's: given to another, the RECV fails
/// before taking anything, naming both.
void testStagingReused(weft_rt_context *ctx, std::vector<float> &staging) {
  std::vector<float> data(4, 2.0f);
  if (worldRank == 0) {
    EXPECT(send(ctx, 40, data) == WEFT_RT_OK, "reuse send: %s",
           weft_rt_context_error(ctx));
    return;
  }
  std::vector<float> out(4);
  EXPECT(receive(ctx, 40, 4, staging.data(), out) == WEFT_RT_OK,
         "reuse first recv: %s", weft_rt_context_error(ctx));
  weft_rt_status status = receive(ctx, 41, 4, staging.data(), out);
  EXPECT(status == WEFT_RT_INVALID_ARGUMENT &&
             errorMentions(ctx, "with tag 40") &&
             errorMentions(ctx, "with tag 41") &&
             errorMentions(ctx, "belongs to one transfer"),
         "reused staging: status %d, '%s'", status,
         weft_rt_context_error(ctx));
}

weft_rt_comm *createComm(weft_rt_context *ctx) {
  int64_t dims[] = {1};
  int32_t ranks[] = {worldRank};
  weft_rt_comm *comm = nullptr;
  weft_rt_status status = weft_rt_comm_create_mpi_pipeline(
      ctx, 1, dims, ranks, worldSize, &comm);
  EXPECT(status == WEFT_RT_OK, "create: %s", weft_rt_context_error(ctx));
  if (status != WEFT_RT_OK) {
    std::fprintf(stderr, "cannot create a communicator\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  weft_rt_context_set_comm(ctx, comm);
  return comm;
}

} // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  if (worldSize != 2) {
    if (worldRank == 0)
      std::fprintf(stderr, "StagedTransferTest runs on 2 ranks, not %d\n",
                   worldSize);
    MPI_Finalize();
    return 1;
  }
  std::signal(SIGALRM, onAlarm);
  alarm(90);
  weft_rt_context *ctx = nullptr;
  if (weft_rt_context_create(&ctx) != WEFT_RT_OK) {
    std::fprintf(stderr, "cannot create a context\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  // Staging buffers outlive the communicator that may have receives
  // posted into them (weft_rt.h).
  std::vector<std::vector<float>> staging = {
      std::vector<float>(5), std::vector<float>(300000),
      std::vector<float>(1 << 18), std::vector<float>(4),
      std::vector<float>(4), std::vector<float>(4), std::vector<float>(64)};
  weft_rt_comm *comm = createComm(ctx);
  testRounds(ctx, 1, staging[0]);
  testRounds(ctx, 2, staging[1]);
  testOverlap(ctx, 3, &staging[2]);
  testOverlap(ctx, 4, nullptr);
  testStagedMismatch(ctx, 5, 9, staging[3], "at least 17 bytes");
  testStagedMismatch(ctx, 6, 2, staging[4], "8 bytes");
  testStagingReused(ctx, staging[5]);
  // Tags 1, 2, 3 and 40 still have receives posted; no message comes for
  // them, and destroying the communicator cancels them.
  weft_rt_context_set_comm(ctx, nullptr);
  weft_rt_comm_destroy(comm);
  MPI_Barrier(MPI_COMM_WORLD);
  comm = createComm(ctx);
  testRounds(ctx, 1, staging[6]);
  weft_rt_context_set_comm(ctx, nullptr);
  weft_rt_comm_destroy(comm);

  int code = finishMpiChecks(MPI_COMM_WORLD);
  weft_rt_context_destroy(ctx);
  MPI_Finalize();
  return code;
}
