//===- NcclWatchdog.cpp - NCCL's part in the failure detector -------------===//

#include "cuda/NcclWatchdog.h"

#include <cstdio>

using namespace weft::rt::cuda;

NcclApi weft::rt::cuda::realNcclApi() {
  return {ncclCommGetAsyncError, ncclCommAbort, ncclGetErrorString,
          ncclGetLastError};
}

int32_t NcclWatchdog::check(void *self, char *message, size_t size) {
  auto &watchdog = *static_cast<NcclWatchdog *>(self);
  if (watchdog.aborted())
    return 0;
  for (const Watched &watched : watchdog.comms) {
    ncclResult_t state = ncclSuccess;
    ncclResult_t asked = watchdog.api.getAsyncError(watched.comm, &state);
    if (asked == ncclSuccess &&
        (state == ncclSuccess || state == ncclInProgress))
      continue;
    ncclResult_t failure = asked != ncclSuccess ? asked : state;
    const char *detail =
        watchdog.api.lastError ? watchdog.api.lastError(watched.comm) : "";
    std::snprintf(message, size, "NCCL reports %s on %s%s%s",
                  watchdog.api.errorString(failure), watched.name.c_str(),
                  detail && *detail ? ": " : "", detail ? detail : "");
    return 1;
  }
  return 0;
}

void NcclWatchdog::abort(void *self) {
  auto &watchdog = *static_cast<NcclWatchdog *>(self);
  if (watchdog.abortedAll.exchange(true))
    return;
  // Children before their parent, as NcclMesh destroys them.
  for (auto it = watchdog.comms.rbegin(); it != watchdog.comms.rend(); ++it)
    watchdog.api.abort(it->comm);
}
