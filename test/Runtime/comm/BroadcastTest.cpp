//===- BroadcastTest.cpp - BROADCAST and its groups, under mpirun ---------===//
//
// Run by ctest under `mpirun -np 5`, through weft_rt.h: every rank is a
// one-device mesh of a pipeline world, as a pipeline's stages are. Checks
// that:
// - broadcast groups are created once from the same list on every rank; a
//   rank that passes another list, or a bad one, fails every rank, naming
//   it, and a second creation is refused;
// - BROADCAST delivers the root's buffer bit for bit to every rank of the
//   chain, over a group's communicator and over the world (beyond a cap),
//   chunked evenly and unevenly (whole rows), for a buffer small enough
//   for MPI's eager path and one that needs its rendezvous, and empty;
// - two broadcasts over one group with different roots, back to back;
// - bad blocks fail before any communication: a chain that is not the
//   group's ranks, a rank outside the chain, more chunks than rows;
// - a receiver whose rows differ from its sender's fails naming both sizes.
//
//===----------------------------------------------------------------------===//

#include "weft_rt.h"

#include "MpiChecks.h"

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
      "BroadcastTest: timed out: a rank waits for another\n";
  ssize_t ignored = write(2, text, sizeof(text) - 1);
  (void)ignored;
  _exit(3);
}

bool errorMentions(weft_rt_context *ctx, const std::string &text) {
  return std::strstr(weft_rt_context_error(ctx), text.c_str()) != nullptr;
}

/// BROADCAST of rows x rowElements f32 along `chain` (world ranks, the root
/// first): the root sends `data`, the others receive into it.
weft_rt_status broadcast(weft_rt_context *ctx, int64_t group, int64_t tag,
                         int64_t rows, int64_t rowElements, int64_t chunks,
                         const std::vector<int64_t> &chain,
                         std::vector<float> &data) {
  std::vector<int64_t> params = {WEFT_RT_BROADCAST,
                                 WEFT_RT_F32,
                                 0,
                                 group,
                                 tag,
                                 rows,
                                 rowElements,
                                 chunks,
                                 static_cast<int64_t>(chain.size())};
  params.insert(params.end(), chain.begin(), chain.end());
  return weft_rt_collective(ctx, params.data(), data.data(), data.data());
}

bool inChain(const std::vector<int64_t> &chain) {
  for (int64_t r : chain)
    if (r == worldRank)
      return true;
  return false;
}

float value(int64_t tag, size_t i) {
  return static_cast<float>(tag * 100000 + static_cast<int64_t>(i % 99991));
}

/// One broadcast, checked bit for bit on every receiver.
void testDelivery(weft_rt_context *ctx, int64_t group, int64_t tag,
                  int64_t rows, int64_t rowElements, int64_t chunks,
                  const std::vector<int64_t> &chain) {
  if (!inChain(chain))
    return;
  size_t count = static_cast<size_t>(rows * rowElements);
  bool root = chain.front() == worldRank;
  std::vector<float> data(count, -1.0f);
  if (root)
    for (size_t i = 0; i < count; ++i)
      data[i] = value(tag, i);
  weft_rt_status status =
      broadcast(ctx, group, tag, rows, rowElements, chunks, chain, data);
  EXPECT(status == WEFT_RT_OK, "broadcast tag %lld: %s",
         static_cast<long long>(tag), weft_rt_context_error(ctx));
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i)
    if (data[i] != value(tag, i))
      ++wrong;
  EXPECT(wrong == 0, "broadcast tag %lld: %zu of %zu elements differ",
         static_cast<long long>(tag), wrong, count);
}

/// Group 0 is {0, 3, 4}, group 1 {1, 2}.
void testGroupCreation(weft_rt_context *ctx, weft_rt_comm *comm) {
  int32_t sizes[] = {3, 2};
  int32_t ranks[] = {0, 3, 4, 1, 2};
  // Rank 4 lists group 1 as {1, 3}: every rank fails, naming it.
  int32_t other[] = {0, 3, 4, 1, 3};
  weft_rt_status status = weft_rt_comm_create_broadcast_groups(
      ctx, comm, 2, sizes, worldRank == 4 ? other : ranks);
  EXPECT(status == WEFT_RT_INVALID_ARGUMENT &&
             errorMentions(ctx, "world rank 4 lists other broadcast groups"),
         "disagreement: status %d, '%s'", status, weft_rt_context_error(ctx));
  // Rank 2 passes a group that is not increasing.
  int32_t unsorted[] = {0, 4, 3, 1, 2};
  status = weft_rt_comm_create_broadcast_groups(
      ctx, comm, 2, sizes, worldRank == 2 ? unsorted : ranks);
  EXPECT(status == WEFT_RT_INVALID_ARGUMENT &&
             errorMentions(ctx, worldRank == 2 ? "is not increasing"
                                               : "world rank 2 passed"),
         "bad list: status %d, '%s'", status, weft_rt_context_error(ctx));
  status = weft_rt_comm_create_broadcast_groups(ctx, comm, 2, sizes, ranks);
  EXPECT(status == WEFT_RT_OK, "create: %s", weft_rt_context_error(ctx));
  status = weft_rt_comm_create_broadcast_groups(ctx, comm, 2, sizes, ranks);
  EXPECT(status == WEFT_RT_INVALID_ARGUMENT &&
             errorMentions(ctx, "created once"),
         "again: status %d, '%s'", status, weft_rt_context_error(ctx));
}

/// Blocks refused on every rank of the chain before any communication.
void testBadBlocks(weft_rt_context *ctx) {
  std::vector<float> data(12, 1.0f);
  if (inChain({0, 3})) {
    weft_rt_status status = broadcast(ctx, 0, 50, 4, 3, 2, {0, 3}, data);
    EXPECT(status == WEFT_RT_INVALID_ARGUMENT &&
               errorMentions(ctx, "group 0 is world ranks {0,3,4}, but the "
                                  "chain is {0,3}"),
           "wrong group: status %d, '%s'", status, weft_rt_context_error(ctx));
  }
  weft_rt_status status = broadcast(ctx, -1, 51, 4, 3, 5, {0, 1}, data);
  EXPECT(status == WEFT_RT_INVALID_ARGUMENT &&
             errorMentions(ctx, "5 chunks of 4 rows"),
         "chunks: status %d, '%s'", status, weft_rt_context_error(ctx));
  if (!inChain({0, 1})) {
    status = broadcast(ctx, -1, 52, 4, 3, 1, {0, 1}, data);
    EXPECT(status == WEFT_RT_INVALID_ARGUMENT &&
               errorMentions(ctx, "which is not in the chain"),
           "outside: status %d, '%s'", status, weft_rt_context_error(ctx));
  }
  status = broadcast(ctx, 7, 53, 4, 3, 1, {0, 1}, data);
  if (inChain({0, 1}))
    EXPECT(status == WEFT_RT_INVALID_ARGUMENT &&
               errorMentions(ctx, "the communicator has 2 broadcast groups"),
           "no group 7: status %d, '%s'", status, weft_rt_context_error(ctx));
}

/// World rank 1 sends 4 rows of 3, world rank 2 expects 3 rows.
void testSizeMismatch(weft_rt_context *ctx) {
  if (!inChain({1, 2}))
    return;
  std::vector<float> data(12, 2.0f);
  int64_t rows = worldRank == 1 ? 4 : 3;
  weft_rt_status status = broadcast(ctx, 1, 60, rows, 3, 1, {1, 2}, data);
  if (worldRank == 1)
    EXPECT(status == WEFT_RT_OK, "sender: %s", weft_rt_context_error(ctx));
  else
    EXPECT(status == WEFT_RT_INVALID_ARGUMENT &&
               errorMentions(ctx, "sent more than 36 bytes of chunk 0") &&
               errorMentions(ctx, "this rank expects 36"),
           "mismatch: status %d, '%s'", status, weft_rt_context_error(ctx));
}

} // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  if (worldSize != 5) {
    if (worldRank == 0)
      std::fprintf(stderr, "BroadcastTest runs on 5 ranks, not %d\n",
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
  int64_t dims[] = {1};
  int32_t meshRanks[] = {worldRank};
  weft_rt_comm *comm = nullptr;
  if (weft_rt_comm_create_mpi_pipeline(ctx, 1, dims, meshRanks, worldSize,
                                       &comm) != WEFT_RT_OK) {
    std::fprintf(stderr, "cannot create a communicator: %s\n",
                 weft_rt_context_error(ctx));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  weft_rt_context_set_comm(ctx, comm);

  testGroupCreation(ctx, comm);
  // Over group 0, the root in the middle of the group's order; 10 rows in
  // 4 chunks of 3, 3, 2 and 2 rows.
  testDelivery(ctx, 0, 1, 10, 3, 4, {3, 0, 4});
  testDelivery(ctx, 0, 2, 10, 3, 1, {4, 3, 0});
  // 1 MiB in 8 chunks: Open MPI's rendezvous path.
  testDelivery(ctx, 1, 3, 256, 1024, 8, {2, 1});
  // Over the world (a job beyond its cap), through all five ranks.
  testDelivery(ctx, -1, 4, 7, 5, 3, {1, 2, 0, 3, 4});
  testDelivery(ctx, -1, 5, 64, 4096, 16, {4, 0, 2});
  // Nothing to move still pairs up.
  testDelivery(ctx, -1, 6, 0, 7, 1, {0, 1, 2, 3, 4});
  testBadBlocks(ctx);
  testSizeMismatch(ctx);

  weft_rt_context_set_comm(ctx, nullptr);
  weft_rt_comm_destroy(comm);
  int code = finishMpiChecks(MPI_COMM_WORLD);
  weft_rt_context_destroy(ctx);
  MPI_Finalize();
  return code;
}
