//===- Broadcast.h - BROADCAST over MPI -------------------------*- C++ -*-===//
//
// A broadcast as the resharding planner prices it: a pipelined chain of
// chunks through the ranks in the caller's order, over a broadcast group's
// communicator (created once at start-up) or over the world. Private to the
// runtime.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_COMM_BROADCAST_H
#define WEFT_RUNTIME_COMM_BROADCAST_H

#include "comm/CollectiveParams.h"
#include "core/Signature.h" // kMaxBroadcastGroups

namespace weft::rt {

/// Runs a parsed BROADCAST over ctx's communicator (attached): this rank's
/// part of the chain, returning once it is done.
weft_rt_status runBroadcast(weft_rt_context *ctx, const Collective &c,
                            const void *in, void *out);

} // namespace weft::rt

#endif // WEFT_RUNTIME_COMM_BROADCAST_H
