//===- Broadcast.cpp - BROADCAST over MPI ---------------------------------===//
//
// The broadcast groups of a job, created once at start-up
// (weft_rt_comm_create_broadcast_groups), and BROADCAST on them: a chunked
// chain of MPI_Isend and MPI_Irecv in the caller's order. The root posts
// every chunk's send at once; a relay posts every receive, and forwards
// each chunk as soon as it has arrived, so that it receives the next chunk
// while the last one leaves; the last rank receives. That is the algorithm
// whose time the resharding planner's chain formula gives (chainSeconds,
// docs/Resharding.md), not one MPI would choose at run time, as MPI_Bcast's
// would be. Open MPI has no progress thread: the waits here test the
// requests, and MPI moves every posted request whenever it is tested.
//
//===----------------------------------------------------------------------===//

#include "comm/Broadcast.h"
#include "comm/Comm.h"
#include "comm/Wait.h"
#include "core/Context.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

using namespace weft::rt;

/// A chunk goes in messages of at most this many bytes (MPI's counts are
/// ints), as SEND and RECV cut theirs; both sides cut alike.
static constexpr int64_t kBroadcastPieceBytes = int64_t(1) << 30;

namespace {
/// One message of the chain: a piece of a chunk.
struct Piece {
  int64_t offset = 0; // bytes
  int bytes = 0;
  int64_t chunk = 0;
};

/// The requests of one call. Those still active when the call returns
/// early (a failure) are cancelled (receives) or released (sends), so that
/// nothing is left to write into the caller's buffer.
class Requests {
public:
  explicit Requests(size_t n) : requests(n, MPI_REQUEST_NULL) {}
  ~Requests() {
    for (MPI_Request &request : requests) {
      if (request == MPI_REQUEST_NULL)
        continue;
      MPI_Cancel(&request);
      MPI_Wait(&request, MPI_STATUS_IGNORE);
    }
  }
  MPI_Request &operator[](size_t i) { return requests[i]; }

private:
  std::vector<MPI_Request> requests;
};
} // namespace

/// The chain's messages: each chunk, in pieces; an empty chunk is one
/// empty message (the receiver still waits for it).
static std::vector<Piece> piecesOf(const Collective &c) {
  std::vector<Piece> pieces;
  int64_t eb = static_cast<int64_t>(c.elemBytes);
  for (int64_t i = 0; i < c.chunks; ++i) {
    auto [first, elements] = broadcastChunk(c, i);
    int64_t offset = first * eb, bytes = elements * eb;
    do {
      int64_t n = std::min(bytes, kBroadcastPieceBytes);
      pieces.push_back({offset, static_cast<int>(n), i});
      offset += n;
      bytes -= n;
    } while (bytes > 0);
  }
  return pieces;
}

/// "{0,2,5}".
static std::string chainText(const Collective &c) {
  std::vector<int32_t> ranks(c.chain, c.chain + c.chainLength);
  return formatRankList(ranks);
}

/// The communicator and the ranks in it of this rank's neighbours in the
/// chain (-1: none): the group's or the world's.
static weft_rt_status channelOf(weft_rt_context *ctx, const Collective &c,
                                MPI_Comm &channel, int &previous, int &next) {
  weft_rt_comm &comm = *ctx->comm;
  int64_t p = c.chainPosition;
  int64_t worldPrevious = p > 0 ? c.chain[p - 1] : -1;
  int64_t worldNext = p + 1 < c.chainLength ? c.chain[p + 1] : -1;
  if (c.tag > comm.tagUpperBound)
    return weft_rt_fail(ctx, WEFT_RT_UNSUPPORTED,
                        "weft_rt_collective broadcast: tag %lld is above this "
                        "MPI's largest tag (MPI_TAG_UB is %d)",
                        static_cast<long long>(c.tag), comm.tagUpperBound);
  if (c.group < 0) {
    channel = comm.world;
    previous = static_cast<int>(worldPrevious);
    next = static_cast<int>(worldNext);
    return WEFT_RT_OK;
  }
  if (c.group >= static_cast<int64_t>(comm.broadcastGroups.size()))
    return weft_rt_fail(
        ctx, WEFT_RT_INVALID_ARGUMENT,
        "weft_rt_collective broadcast: group %lld, but the communicator has "
        "%zu broadcast groups (weft_rt_comm_create_broadcast_groups; the "
        "driver creates those the program's signature lists)",
        static_cast<long long>(c.group), comm.broadcastGroups.size());
  const std::vector<int32_t> &members = comm.broadcastGroups[c.group];
  std::vector<int32_t> sorted(c.chain, c.chain + c.chainLength);
  std::sort(sorted.begin(), sorted.end());
  if (sorted != members)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "weft_rt_collective broadcast: group %lld is world "
                        "ranks %s, but the chain is %s: a broadcast over a "
                        "group runs over exactly its ranks",
                        static_cast<long long>(c.group),
                        formatRankList(members).c_str(), chainText(c).c_str());
  channel = comm.broadcastComms[c.group];
  if (channel == MPI_COMM_NULL)
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "broadcast group %lld has no communicator on a member",
                        static_cast<long long>(c.group));
  auto rankInGroup = [&](int64_t world) {
    return world < 0 ? -1
                     : static_cast<int>(std::lower_bound(members.begin(),
                                                         members.end(), world) -
                                        members.begin());
  };
  previous = rankInGroup(worldPrevious);
  next = rankInGroup(worldNext);
  return WEFT_RT_OK;
}

/// Completes the receive of `piece` and checks its size.
static weft_rt_status finishReceive(weft_rt_context *ctx, const Collective &c,
                                    MPI_Request &request, const Piece &piece) {
  MPI_Status status;
  int code = waitFor(&request, &status);
  int arrived = 0;
  int errorClass = MPI_SUCCESS;
  if (code != MPI_SUCCESS)
    MPI_Error_class(code, &errorClass);
  else
    code = MPI_Get_count(&status, MPI_BYTE, &arrived);
  if (errorClass == MPI_ERR_TRUNCATE ||
      (code == MPI_SUCCESS && arrived != piece.bytes))
    return weft_rt_fail(
        ctx, WEFT_RT_INVALID_ARGUMENT,
        "weft_rt_collective broadcast: world rank %lld sent %s%d bytes of "
        "chunk %lld with tag %lld, but this rank expects %d: every rank of "
        "the chain %s must pass the same rows, row_elements, chunks and "
        "dtype",
        static_cast<long long>(c.chain[c.chainPosition - 1]),
        errorClass == MPI_ERR_TRUNCATE ? "more than " : "",
        errorClass == MPI_ERR_TRUNCATE ? piece.bytes : arrived,
        static_cast<long long>(piece.chunk), static_cast<long long>(c.tag),
        piece.bytes, chainText(c).c_str());
  if (code != MPI_SUCCESS)
    return mpiFail(ctx, code, "MPI_Irecv (a broadcast chunk)", __FILE__,
                   __LINE__);
  return WEFT_RT_OK;
}

weft_rt_status weft::rt::runBroadcast(weft_rt_context *ctx, const Collective &c,
                                      const void *in, void *out) {
  MPI_Comm channel = MPI_COMM_NULL;
  int previous = -1, next = -1;
  if (weft_rt_status status = channelOf(ctx, c, channel, previous, next))
    return status;
  int tag = static_cast<int>(c.tag);
  std::vector<Piece> pieces = piecesOf(c);
  size_t n = pieces.size();
  Requests receives(n), sends(n);
  if (previous < 0) {
    // The root: every chunk leaves in order, as fast as the next rank
    // takes them.
    const auto *src = static_cast<const uint8_t *>(in);
    for (size_t i = 0; i < n; ++i)
      WEFT_MPI_CHECK(
          ctx,
          MPI_Isend(pieces[i].bytes ? src + pieces[i].offset : nullptr,
                    pieces[i].bytes, MPI_BYTE, next, tag, channel, &sends[i]));
    for (size_t i = 0; i < n; ++i)
      WEFT_MPI_CHECK(ctx, waitFor(&sends[i]));
    return WEFT_RT_OK;
  }
  auto *dst = static_cast<uint8_t *>(out);
  for (size_t i = 0; i < n; ++i)
    WEFT_MPI_CHECK(ctx,
                   MPI_Irecv(pieces[i].bytes ? dst + pieces[i].offset : nullptr,
                             pieces[i].bytes, MPI_BYTE, previous, tag, channel,
                             &receives[i]));
  // MPI keeps the order of one sender's messages with one tag, so the
  // pieces arrive in order; each is forwarded once it is complete, while
  // the later ones arrive.
  for (size_t i = 0; i < n; ++i) {
    if (weft_rt_status status = finishReceive(ctx, c, receives[i], pieces[i]))
      return status;
    if (next >= 0)
      WEFT_MPI_CHECK(
          ctx,
          MPI_Isend(pieces[i].bytes ? dst + pieces[i].offset : nullptr,
                    pieces[i].bytes, MPI_BYTE, next, tag, channel, &sends[i]));
  }
  if (next >= 0)
    for (size_t i = 0; i < n; ++i)
      WEFT_MPI_CHECK(ctx, waitFor(&sends[i]));
  return WEFT_RT_OK;
}

//===----------------------------------------------------------------------===//
// The groups
//===----------------------------------------------------------------------===//

/// Checks the list one rank passed: "" when fine, else what is wrong.
static std::string readGroups(const weft_rt_comm &comm, int32_t numGroups,
                              const int32_t *sizes, const int32_t *ranks,
                              std::vector<std::vector<int32_t>> &out) {
  if (comm.broadcastGroupsCreated)
    return "the communicator has its broadcast groups already (they are "
           "created once)";
  if (numGroups < 0 || numGroups > kMaxBroadcastGroups)
    return "num_groups is " + std::to_string(numGroups) + ", not 0 to " +
           std::to_string(kMaxBroadcastGroups);
  if (numGroups > 0 && (!sizes || !ranks))
    return std::string(!sizes ? "group_sizes" : "group_ranks") + " is NULL";
  const int32_t *at = ranks;
  for (int32_t g = 0; g < numGroups; ++g) {
    int32_t size = sizes[g];
    if (size < 2 || size > comm.size)
      return "group " + std::to_string(g) + " has " + std::to_string(size) +
             " ranks, not 2 to " + std::to_string(comm.size) +
             " (the world's size)";
    std::vector<int32_t> group(at, at + size);
    at += size;
    for (int32_t i = 0; i < size; ++i) {
      if (group[i] < 0 || group[i] >= comm.size)
        return "group " + std::to_string(g) + " lists " +
               std::to_string(group[i]) + ", not a world rank (0 to " +
               std::to_string(comm.size - 1) + ")";
      if (i > 0 && group[i] <= group[i - 1])
        return "group " + std::to_string(g) + " " + formatRankList(group) +
               " is not increasing";
    }
    out.push_back(std::move(group));
  }
  return "";
}

/// FNV-1a over the groups, so that the ranks can compare their lists in
/// one gather.
static uint64_t fingerprint(const std::vector<std::vector<int32_t>> &groups) {
  uint64_t hash = 1469598103934665603ull;
  auto mix = [&](int64_t value) {
    for (int byte = 0; byte < 8; ++byte) {
      hash ^= static_cast<uint64_t>(value >> (8 * byte)) & 0xff;
      hash *= 1099511628211ull;
    }
  };
  mix(static_cast<int64_t>(groups.size()));
  for (const std::vector<int32_t> &group : groups) {
    mix(-static_cast<int64_t>(group.size()));
    for (int32_t rank : group)
      mix(rank);
  }
  return hash;
}

/// Every rank's verdict (0 or 1) and fingerprint; fails on every rank alike
/// when one rank's list is bad or differs from rank 0's.
static weft_rt_status agreeOnGroups(weft_rt_context *ctx, weft_rt_comm &comm,
                                    const std::string &localError,
                                    uint64_t print) {
  static const char *fn = "weft_rt_comm_create_broadcast_groups";
  int64_t mine[2] = {localError.empty() ? 0 : 1, static_cast<int64_t>(print)};
  std::vector<int64_t> all(static_cast<size_t>(comm.size) * 2);
  MPI_Request request;
  WEFT_MPI_CHECK(ctx, MPI_Iallgather(mine, 2, MPI_INT64_T, all.data(), 2,
                                     MPI_INT64_T, comm.world, &request));
  WEFT_MPI_CHECK(ctx, waitFor(&request));
  if (!localError.empty())
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT, "%s: %s", fn,
                        localError.c_str());
  for (int r = 0; r < comm.size; ++r) {
    if (all[2 * r] != 0)
      return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                          "%s: world rank %d passed invalid broadcast groups; "
                          "every rank fails (that rank's own error says more)",
                          fn, r);
    if (all[2 * r + 1] != all[1])
      return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                          "%s: world rank %d lists other broadcast groups than "
                          "world rank 0: every rank of a job must pass the "
                          "same groups in the same order",
                          fn, r);
  }
  return WEFT_RT_OK;
}

/// Creates the communicators of the groups this rank belongs to, in order.
static weft_rt_status createGroupComms(weft_rt_context *ctx,
                                       weft_rt_comm &comm) {
  MPI_Group world;
  WEFT_MPI_CHECK(ctx, MPI_Comm_group(comm.world, &world));
  weft_rt_status status = WEFT_RT_OK;
  for (size_t g = 0; g < comm.broadcastGroups.size() && !status; ++g) {
    const std::vector<int32_t> &members = comm.broadcastGroups[g];
    auto at = std::find(members.begin(), members.end(), comm.rank);
    if (at == members.end())
      continue;
    MPI_Group group;
    int code = MPI_Group_incl(world, static_cast<int>(members.size()),
                              members.data(), &group);
    if (code == MPI_SUCCESS) {
      // The tag keeps the creations of different groups apart.
      code = MPI_Comm_create_group(comm.world, group, static_cast<int>(g),
                                   &comm.broadcastComms[g]);
      MPI_Group_free(&group);
    }
    if (code == MPI_SUCCESS)
      code = MPI_Comm_set_errhandler(comm.broadcastComms[g], MPI_ERRORS_RETURN);
    int rank = -1;
    if (code == MPI_SUCCESS)
      code = MPI_Comm_rank(comm.broadcastComms[g], &rank);
    if (code != MPI_SUCCESS)
      status = mpiFail(ctx, code, "MPI_Comm_create_group", __FILE__, __LINE__);
    else if (rank != at - members.begin())
      status = weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                            "broadcast group %zu ranks world rank %d at %d, "
                            "not %td",
                            g, comm.rank, rank, at - members.begin());
  }
  MPI_Group_free(&world);
  return status;
}

weft_rt_status weft_rt_comm_create_broadcast_groups(
    weft_rt_context *ctx, weft_rt_comm *comm, int32_t num_groups,
    const int32_t *group_sizes, const int32_t *group_ranks) {
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  if (!comm)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "weft_rt_comm_create_broadcast_groups: comm is NULL");
  std::vector<std::vector<int32_t>> groups;
  std::string localError =
      readGroups(*comm, num_groups, group_sizes, group_ranks, groups);
  if (!localError.empty())
    groups.clear();
  if (weft_rt_status status =
          agreeOnGroups(ctx, *comm, localError, fingerprint(groups)))
    return status;
  comm->broadcastGroupsCreated = true;
  comm->broadcastGroups = std::move(groups);
  comm->broadcastComms.assign(comm->broadcastGroups.size(), MPI_COMM_NULL);
  if (comm->broadcastGroups.empty())
    return WEFT_RT_OK;
  // Creating a group blocks until its members arrive: wait for every rank
  // first without holding the core, so that the creations are quick.
  MPI_Request arrived;
  WEFT_MPI_CHECK(ctx, MPI_Ibarrier(comm->world, &arrived));
  WEFT_MPI_CHECK(ctx, waitFor(&arrived));
  weft_rt_status local = createGroupComms(ctx, *comm);
  // Every rank learns whether any failed, so that all fail alike.
  int failed = local != WEFT_RT_OK, anyFailed = 0;
  MPI_Request request;
  WEFT_MPI_CHECK(ctx, MPI_Iallreduce(&failed, &anyFailed, 1, MPI_INT, MPI_MAX,
                                     comm->world, &request));
  WEFT_MPI_CHECK(ctx, waitFor(&request));
  if (local != WEFT_RT_OK)
    return local;
  if (anyFailed)
    return weft_rt_fail(ctx, WEFT_RT_COMM_ERROR,
                        "weft_rt_comm_create_broadcast_groups: another rank "
                        "failed to create a broadcast group's communicator");
  return WEFT_RT_OK;
}
