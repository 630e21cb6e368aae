//===- NcclId.cpp - Sharing an NCCL unique id over MPI --------------------===//
//
// One broadcast carries the root's outcome with the id, so that a root that
// cannot create one stops every rank instead of leaving them in MPI_Bcast.
//
//===----------------------------------------------------------------------===//

#include "cuda/NcclId.h"
#include "comm/Comm.h"
#include "cuda/CudaStatus.h"

#include <cstring>

using namespace weft::rt::cuda;

weft_rt_status weft::rt::cuda::getNcclUniqueId(weft_rt_context *ctx,
                                               ncclUniqueId *out_id) {
  WEFT_NCCL_CHECK(ctx, ncclGetUniqueId(out_id));
  return WEFT_RT_OK;
}

namespace {
/// What the root broadcasts: its producer's status, then the id.
struct IdMessage {
  int32_t status;
  char id[NCCL_UNIQUE_ID_BYTES];
};
} // namespace

weft_rt_status weft::rt::cuda::exchangeNcclId(weft_rt_context *ctx,
                                              MPI_Comm comm, int root,
                                              const NcclIdProducer &produce,
                                              ncclUniqueId *out_id) {
  if (!out_id)
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "NCCL id exchange: out_id is null");
  int rank = 0, size = 0;
  WEFT_MPI_CHECK(ctx, MPI_Comm_rank(comm, &rank));
  WEFT_MPI_CHECK(ctx, MPI_Comm_size(comm, &size));
  // Every rank sees the same root and size, so all return here alike.
  if (root < 0 || root >= size)
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "NCCL id exchange: root %d is not a rank of a "
                        "communicator of %d",
                        root, size);

  static_assert(sizeof(ncclUniqueId) == NCCL_UNIQUE_ID_BYTES,
                "ncclUniqueId is its 128 bytes");
  IdMessage message;
  std::memset(&message, 0, sizeof(message));
  weft_rt_status produced = WEFT_RT_OK;
  if (rank == root) {
    ncclUniqueId id;
    std::memset(&id, 0, sizeof(id));
    produced = produce ? produce(ctx, &id)
                       : weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                                      "NCCL id exchange: no id producer");
    message.status = produced;
    std::memcpy(message.id, &id, sizeof(id));
  }
  // Broadcast even after a failure: the other ranks are already waiting.
  WEFT_MPI_CHECK(ctx,
                 MPI_Bcast(&message, sizeof(message), MPI_BYTE, root, comm));
  if (rank == root) {
    if (produced != WEFT_RT_OK)
      return produced;
  } else if (message.status != WEFT_RT_OK) {
    return weft_rt_fail(ctx, WEFT_RT_COMM_ERROR,
                        "rank %d could not create the NCCL unique id "
                        "(status %d); its own error says why",
                        root, message.status);
  }
  std::memcpy(out_id, message.id, sizeof(*out_id));
  return WEFT_RT_OK;
}

// Here rather than in CudaStatus.cpp: only executables of a GPU mesh use
// NCCL, and only they should need libnccl.
weft_rt_status weft::rt::cuda::ncclFail(weft_rt_context *ctx,
                                        ncclResult_t error, const char *call,
                                        const char *file, int line) {
  // The last error's detail is per thread and says more than the code's
  // text ("no socket interface found", ...).
  const char *detail = ncclGetLastError(nullptr);
  bool hasDetail = detail && *detail;
  return weft_rt_fail(
      ctx, WEFT_RT_COMM_ERROR, "%s failed at %s:%d: %s%s%s", call,
      std::strrchr(file, '/') ? std::strrchr(file, '/') + 1 : file, line,
      ncclGetErrorString(error), hasDetail ? ": " : "",
      hasDetail ? detail : "");
}
