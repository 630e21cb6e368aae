//===- Transfers.cpp - SEND and RECV over MPI ------------------------------===//
//
// SEND is MPI_Isend, waited for. RECV probes the message first (so that a
// message of another size is reported as such), then receives it with
// MPI_Imrecv. A RECV with a staging buffer then posts MPI_Irecv for the
// pair's next message into that buffer; the next RECV of the buffer waits
// for it and copies it out. Between the two, weft_rt_op_begin tests the
// posted receives at every op, which is what lets Open MPI move a large
// message (a rendezvous: the receiver pulls the data) while the receiver
// computes. Messages are cut in pieces of kTransferPieceBytes on both sides.
//
//===----------------------------------------------------------------------===//

#include "comm/Transfers.h"
#include "comm/Comm.h"
#include "comm/Wait.h"
#include "core/Context.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

using namespace weft::rt;

/// Transfers go in messages of at most this many bytes (a multiple of every
/// element size), so that MPI's int counts never overflow; both sides cut
/// the same count alike, and MPI keeps the pieces of a pair and tag in order.
static constexpr int64_t kTransferPieceBytes = int64_t(1) << 30;

/// The number of pieces of a transfer of `bytes` (a count of 0 still sends
/// one, empty, message: the receiver waits for it).
static int64_t pieceCount(int64_t bytes) {
  return bytes == 0 ? 1
                    : (bytes + kTransferPieceBytes - 1) / kTransferPieceBytes;
}

/// WEFT_STAGED_RECEIVES=0 receives directly even where the program gave a
/// staging buffer: the same package measured both ways (bench/pipeline.py).
static bool stagingEnabled() {
  static const bool enabled = [] {
    const char *value = std::getenv("WEFT_STAGED_RECEIVES");
    return !(value && std::strcmp(value, "0") == 0);
  }();
  return enabled;
}

static int pieceBytes(int64_t bytes, int64_t piece) {
  return static_cast<int>(
      std::min(bytes - piece * kTransferPieceBytes, kTransferPieceBytes));
}

/// The failure of a RECV whose sender sent `sent` bytes (or more, when
/// `atLeast`) where `expected` were due.
static weft_rt_status countMismatch(weft_rt_context *ctx, const Collective &c,
                                    int peer, int tag, int64_t sent,
                                    bool atLeast) {
  int64_t expected = c.count * static_cast<int64_t>(c.elemBytes);
  return weft_rt_fail(
      ctx, WEFT_RT_INVALID_ARGUMENT,
      "weft_rt_collective recv: world rank %d sent %s%lld bytes with tag "
      "%d, but this receive expects %lld bytes (%lld elements of %s): "
      "the two sides of a transfer must give the same count",
      peer, atLeast ? "at least " : "", static_cast<long long>(sent), tag,
      static_cast<long long>(expected), static_cast<long long>(c.count),
      weft_rt_dtype_name(c.dtype));
}

static weft_rt_status send(weft_rt_context *ctx, weft_rt_comm &comm,
                           const Collective &c, const void *in) {
  int64_t bytes = c.count * static_cast<int64_t>(c.elemBytes);
  const auto *src = static_cast<const uint8_t *>(in);
  for (int64_t piece = 0, pieces = pieceCount(bytes); piece < pieces;
       ++piece) {
    int n = pieceBytes(bytes, piece);
    MPI_Request request;
    WEFT_MPI_CHECK(ctx,
                   MPI_Isend(n ? src + piece * kTransferPieceBytes : nullptr,
                             n, MPI_BYTE, static_cast<int>(c.peer),
                             static_cast<int>(c.tag), comm.world, &request));
    WEFT_MPI_CHECK(ctx, waitFor(&request));
  }
  return WEFT_RT_OK;
}

/// Receives the pair's next message into `out` now (no staging).
static weft_rt_status receiveNow(weft_rt_context *ctx, weft_rt_comm &comm,
                                 const Collective &c, void *out) {
  int peer = static_cast<int>(c.peer);
  int tag = static_cast<int>(c.tag);
  int64_t bytes = c.count * static_cast<int64_t>(c.elemBytes);
  auto *dst = static_cast<uint8_t *>(out);
  for (int64_t piece = 0, pieces = pieceCount(bytes); piece < pieces;
       ++piece) {
    int n = pieceBytes(bytes, piece);
    int64_t done = piece * kTransferPieceBytes;
    MPI_Message message;
    MPI_Status status;
    WEFT_MPI_CHECK(ctx, probeFor(peer, tag, comm.world, &message, &status));
    int arrived = 0;
    WEFT_MPI_CHECK(ctx, MPI_Get_count(&status, MPI_BYTE, &arrived));
    if (arrived != n) {
      // Take the message all the same (MPI truncates it to nothing): a
      // matched message must be received.
      MPI_Request dropped;
      if (MPI_Imrecv(nullptr, 0, MPI_BYTE, &message, &dropped) == MPI_SUCCESS)
        waitFor(&dropped);
      // A full piece may have more behind it; a shorter one was the last.
      return countMismatch(ctx, c, peer, tag, done + arrived,
                           arrived == kTransferPieceBytes);
    }
    MPI_Request request;
    WEFT_MPI_CHECK(ctx, MPI_Imrecv(n ? dst + done : nullptr, n, MPI_BYTE,
                                   &message, &request));
    WEFT_MPI_CHECK(ctx, waitFor(&request));
  }
  return WEFT_RT_OK;
}

/// Records that piece `i` of `staged` completed with `code` and `status`.
static void recordPiece(StagedReceive &staged, size_t i, int code,
                        const MPI_Status &status) {
  staged.requests[i] = MPI_REQUEST_NULL;
  staged.codes[i] = code;
  int arrived = 0;
  if (code == MPI_SUCCESS &&
      MPI_Get_count(&status, MPI_BYTE, &arrived) != MPI_SUCCESS)
    staged.codes[i] = MPI_ERR_OTHER;
  staged.arrived[i] = arrived;
}

/// Posts the receive of the pair's next message into `staged`'s buffer.
static weft_rt_status postStaged(weft_rt_context *ctx, weft_rt_comm &comm,
                                 StagedReceive &staged) {
  int64_t pieces = pieceCount(staged.bytes);
  staged.requests.assign(pieces, MPI_REQUEST_NULL);
  staged.arrived.assign(pieces, 0);
  staged.codes.assign(pieces, MPI_SUCCESS);
  for (int64_t piece = 0; piece < pieces; ++piece)
    WEFT_MPI_CHECK(
        ctx, MPI_Irecv(staged.staging + piece * kTransferPieceBytes,
                       pieceBytes(staged.bytes, piece), MPI_BYTE, staged.peer,
                       staged.tag, comm.world, &staged.requests[piece]));
  staged.posted = true;
  ctx->progressTransfers = progressStagedReceives;
  return WEFT_RT_OK;
}

/// Waits for the message posted into `staged` and checks its size.
static weft_rt_status completeStaged(weft_rt_context *ctx, const Collective &c,
                                     StagedReceive &staged) {
  staged.posted = false;
  int64_t sent = 0;
  for (size_t i = 0; i < staged.requests.size(); ++i) {
    if (staged.requests[i] != MPI_REQUEST_NULL) {
      MPI_Status status;
      int code = waitFor(&staged.requests[i], &status);
      recordPiece(staged, i, code, status);
    }
    int n = pieceBytes(staged.bytes, static_cast<int64_t>(i));
    int code = staged.codes[i];
    int errorClass = MPI_SUCCESS;
    if (code != MPI_SUCCESS)
      MPI_Error_class(code, &errorClass);
    // A longer message is truncated: MPI says so, not how long it was.
    if (errorClass == MPI_ERR_TRUNCATE)
      return countMismatch(ctx, c, staged.peer, staged.tag, sent + n + 1,
                           /*atLeast=*/true);
    if (code != MPI_SUCCESS)
      return mpiFail(ctx, code, "MPI_Irecv (a staged receive)", __FILE__,
                     __LINE__);
    sent += staged.arrived[i];
    if (staged.arrived[i] != n)
      return countMismatch(ctx, c, staged.peer, staged.tag, sent,
                           /*atLeast=*/false);
  }
  return WEFT_RT_OK;
}

/// A RECV through `staging`: takes the message posted there by the RECV
/// before (else receives it now), then posts the next.
static weft_rt_status receiveStaged(weft_rt_context *ctx, weft_rt_comm &comm,
                                    const Collective &c, uint8_t *staging,
                                    void *out) {
  int peer = static_cast<int>(c.peer);
  int tag = static_cast<int>(c.tag);
  int64_t bytes = c.count * static_cast<int64_t>(c.elemBytes);
  auto start = reinterpret_cast<uintptr_t>(staging);
  auto outStart = reinterpret_cast<uintptr_t>(out);
  if (start < outStart + bytes && outStart < start + bytes)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "weft_rt_collective recv: the staging buffer (in, "
                        "%lld bytes) overlaps out without being out",
                        static_cast<long long>(bytes));
  auto it = std::find_if(
      comm.stagedReceives.begin(), comm.stagedReceives.end(),
      [&](const StagedReceive &s) { return s.staging == staging; });
  if (it != comm.stagedReceives.end() && it->posted) {
    if (it->peer != peer || it->tag != tag || it->bytes != bytes)
      return weft_rt_fail(
          ctx, WEFT_RT_INVALID_ARGUMENT,
          "weft_rt_collective recv: the staging buffer (in) holds the "
          "receive of %lld bytes from world rank %d with tag %d that an "
          "earlier recv posted, and this one is of %lld bytes from world "
          "rank %d with tag %d: a staging buffer belongs to one transfer",
          static_cast<long long>(it->bytes), it->peer, it->tag,
          static_cast<long long>(bytes), peer, tag);
    if (weft_rt_status status = completeStaged(ctx, c, *it))
      return status;
    std::memcpy(out, staging, static_cast<size_t>(bytes));
  } else {
    if (weft_rt_status status = receiveNow(ctx, comm, c, out))
      return status;
    if (it == comm.stagedReceives.end()) {
      StagedReceive fresh;
      fresh.staging = staging;
      fresh.peer = peer;
      fresh.tag = tag;
      fresh.bytes = bytes;
      comm.stagedReceives.push_back(std::move(fresh));
      it = std::prev(comm.stagedReceives.end());
    }
  }
  return postStaged(ctx, comm, *it);
}

weft_rt_status weft::rt::runTransfer(weft_rt_context *ctx, const Collective &c,
                                     const void *in, void *out) {
  weft_rt_comm &comm = *ctx->comm;
  if (c.tag > comm.tagUpperBound)
    return weft_rt_fail(ctx, WEFT_RT_UNSUPPORTED,
                        "weft_rt_collective %s: tag %lld is above this MPI's "
                        "largest tag (MPI_TAG_UB is %d)",
                        collectiveKindName(c.kind),
                        static_cast<long long>(c.tag), comm.tagUpperBound);
  if (c.kind == WEFT_RT_SEND)
    return send(ctx, comm, c, in);
  // An empty message has nothing to stage.
  auto *staging = const_cast<uint8_t *>(static_cast<const uint8_t *>(in));
  if (!staging || in == out || c.count == 0 || !stagingEnabled())
    return receiveNow(ctx, comm, c, out);
  return receiveStaged(ctx, comm, c, staging, out);
}

void weft::rt::progressStagedReceives(weft_rt_context *ctx) {
  weft_rt_comm *comm = ctx->comm;
  bool pending = false;
  if (comm)
    for (StagedReceive &staged : comm->stagedReceives)
      for (size_t i = 0; i < staged.requests.size(); ++i) {
        if (staged.requests[i] == MPI_REQUEST_NULL)
          continue;
        int done = 0;
        MPI_Status status;
        int code = MPI_Test(&staged.requests[i], &done, &status);
        if (code != MPI_SUCCESS || done)
          recordPiece(staged, i, code, status);
        else
          pending = true;
      }
  if (!pending)
    ctx->progressTransfers = nullptr;
}

void weft::rt::cancelStagedReceives(weft_rt_comm &comm) {
  for (StagedReceive &staged : comm.stagedReceives)
    for (MPI_Request &request : staged.requests) {
      if (request == MPI_REQUEST_NULL)
        continue;
      // A receive no message matched completes as cancelled at once.
      MPI_Cancel(&request);
      MPI_Wait(&request, MPI_STATUS_IGNORE);
    }
  comm.stagedReceives.clear();
}
