//===- NcclIdTest.cpp - exchangeNcclId under mpirun -----------------------===//
//
// Run by ctest under `mpirun -np 2`: made-up ids from either root reach
// every rank intact, a root that fails stops every rank (none hangs), a bad
// root fails everywhere, and ncclGetUniqueId's real id arrives identical on
// every rank. Failures are counted over all ranks; exit 1 if any.
//
//===----------------------------------------------------------------------===//

#include "cuda/NcclId.h"

#include "MpiChecks.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace weft::rt::cuda;

using namespace weft::test;

namespace {

unsigned char patternByte(int i, int seed) {
  return static_cast<unsigned char>(i * 37 + seed * 11 + 1);
}

/// A producer that writes a known pattern and counts its calls.
NcclIdProducer fakeProducer(int seed, int *calls) {
  return [seed, calls](weft_rt_context *, ncclUniqueId *id) {
    ++*calls;
    for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; ++i)
      id->internal[i] = static_cast<char>(patternByte(i, seed));
    return WEFT_RT_OK;
  };
}

void testFakeId(weft_rt_context *ctx, MPI_Comm comm, int root) {
  int calls = 0;
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  weft_rt_status status =
      exchangeNcclId(ctx, comm, root, fakeProducer(root + 3, &calls), &id);
  EXPECT(status == WEFT_RT_OK, "root %d: status %d: %s", root, status,
         weft_rt_context_error(ctx));
  bool intact = true;
  for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; ++i)
    intact &=
        static_cast<unsigned char>(id.internal[i]) == patternByte(i, root + 3);
  EXPECT(intact, "root %d: the id arrived altered", root);
  EXPECT(calls == (worldRank == root ? 1 : 0),
         "root %d: the producer ran %d times on rank %d", root, calls,
         worldRank);
}

void testRootFails(weft_rt_context *ctx, MPI_Comm comm) {
  NcclIdProducer failing = [](weft_rt_context *c, ncclUniqueId *) {
    return weft_rt_fail(c, WEFT_RT_COMM_ERROR, "made-up failure");
  };
  ncclUniqueId id;
  weft_rt_status status = exchangeNcclId(ctx, comm, 0, failing, &id);
  std::string message = weft_rt_context_error(ctx);
  EXPECT(status == WEFT_RT_COMM_ERROR, "status %d: %s", status,
         message.c_str());
  if (worldRank == 0)
    EXPECT(message == "made-up failure", "%s", message.c_str());
  else
    EXPECT(message.find("rank 0 could not create the NCCL unique id") !=
               std::string::npos,
           "%s", message.c_str());
}

void testBadRoot(weft_rt_context *ctx, MPI_Comm comm) {
  int calls = 0;
  ncclUniqueId id;
  weft_rt_status status =
      exchangeNcclId(ctx, comm, worldSize, fakeProducer(0, &calls), &id);
  EXPECT(status == WEFT_RT_INTERNAL, "status %d", status);
  EXPECT(calls == 0, "the producer ran");
}

void testRealId(weft_rt_context *ctx, MPI_Comm comm) {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  weft_rt_status status = exchangeNcclId(ctx, comm, 0, getNcclUniqueId, &id);
  EXPECT(status == WEFT_RT_OK, "ncclGetUniqueId: status %d: %s", status,
         weft_rt_context_error(ctx));
  if (status != WEFT_RT_OK)
    return;
  bool nonZero = false;
  for (char byte : id.internal)
    nonZero |= byte != 0;
  EXPECT(nonZero, "the real id is all zero");
  std::vector<char> all(NCCL_UNIQUE_ID_BYTES * worldSize);
  MPI_Allgather(id.internal, NCCL_UNIQUE_ID_BYTES, MPI_BYTE, all.data(),
                NCCL_UNIQUE_ID_BYTES, MPI_BYTE, comm);
  for (int r = 1; r < worldSize; ++r)
    EXPECT(std::memcmp(all.data(), all.data() + r * NCCL_UNIQUE_ID_BYTES,
                       NCCL_UNIQUE_ID_BYTES) == 0,
           "rank %d holds another id than rank 0", r);
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm, &worldRank);
  MPI_Comm_size(comm, &worldSize);
  weft_rt_context *ctx = nullptr;
  if (weft_rt_context_create(&ctx) != WEFT_RT_OK) {
    std::fprintf(stderr, "cannot create a context\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  for (int root = 0; root < worldSize; ++root)
    testFakeId(ctx, comm, root);
  testRootFails(ctx, comm);
  testBadRoot(ctx, comm);
  testRealId(ctx, comm);

  int code = finishMpiChecks(comm);
  weft_rt_context_destroy(ctx);
  MPI_Comm_free(&comm);
  MPI_Finalize();
  return code;
}
