//===- Transfers.h - SEND and RECV over MPI ---------------------*- C++ -*-===//
//
// Point-to-point transfers between the world's ranks (a pipeline's stages).
// A RECV given a staging buffer posts the receive of its pair's next message
// into it as soon as it ends, so that the next run's message arrives while
// that run computes (double buffering): the sender's wait ends at the
// receiver's next op instead of at its next RECV. Private to the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_COMM_TRANSFERS_H
#define WEFT_RUNTIME_COMM_TRANSFERS_H

#include "comm/CollectiveParams.h"

namespace weft::rt {

/// Runs a parsed SEND or RECV over ctx's communicator (attached). A RECV's
/// `in` is its staging buffer unless it is null or `out` itself.
weft_rt_status runTransfer(weft_rt_context *ctx, const Collective &c,
                           const void *in, void *out);

/// Tests the receives posted into staging buffers, so that MPI moves their
/// messages while the program computes (MPI progresses only inside its
/// calls); weft_rt_op_begin calls it through the context while any is
/// pending.
void progressStagedReceives(weft_rt_context *ctx);

/// Cancels the receives still posted (the last run's RECVs posted one for a
/// run that never came); before the world communicator is freed.
void cancelStagedReceives(weft_rt_comm &comm);

} // namespace weft::rt

#endif // WEFT_RUNTIME_COMM_TRANSFERS_H
