//===- PipelineTest.cpp - Several meshes in one MPI world, under mpirun ---===//
//
// Run by ctest under `mpirun -np 5`, through weft_rt.h alone: every rank
// joins one mesh of a pipeline (weft_rt_comm_create_mpi_pipeline) in three
// layouts ([2] on {0,1} with [3] on {2,3,4}; [2] on {0,2} with [3] on
// {4,1,3}; [1] on {0} with [2,2] on {4,3,2,1}), checks that collectives
// stay inside its mesh (an all-reduce and an all-gather give the mesh's
// values, in mesh-position order), and sends to and receives from every rank
// of the other mesh with distinct tags, uneven counts and empty ones. Then
// the failures: set-ups the ranks disagree on fail on every rank with a
// message and none hangs (an alarm ends a rank that waits too long), a
// receive of another count than the sender's names both sizes, and bad
// parameter blocks fail before any communication. Failures are counted over
// all ranks; the exit code is 1 if any failed.
//
//===----------------------------------------------------------------------===//

#include "weft_rt.h"

#include "MpiChecks.h"

#include <algorithm>
#include <csignal>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

using namespace weft::test;

namespace {

/// A layout of the world: which meshes there are, each the shape and the
/// world ranks of its row-major positions.
struct MeshSpec {
  std::vector<int64_t> dims;
  std::vector<int32_t> ranks;
};
using Layout = std::vector<MeshSpec>;

/// The mesh of world rank `rank` in `layout`.
const MeshSpec &meshOf(const Layout &layout, int rank) {
  for (const MeshSpec &mesh : layout)
    if (std::find(mesh.ranks.begin(), mesh.ranks.end(), rank) !=
        mesh.ranks.end())
      return mesh;
  std::fprintf(stderr, "[rank %d] the test's layout misses this rank\n", rank);
  MPI_Abort(MPI_COMM_WORLD, 1);
  return layout[0];
}

int positionIn(const MeshSpec &mesh, int rank) {
  return static_cast<int>(
      std::find(mesh.ranks.begin(), mesh.ranks.end(), rank) -
      mesh.ranks.begin());
}

bool errorMentions(weft_rt_context *ctx, const std::string &text) {
  return std::strstr(weft_rt_context_error(ctx), text.c_str()) != nullptr;
}

std::string describe(const MeshSpec &mesh) {
  std::string text = "[";
  for (size_t i = 0; i < mesh.dims.size(); ++i)
    text += (i ? "," : "") + std::to_string(mesh.dims[i]);
  text += "] on {";
  for (size_t i = 0; i < mesh.ranks.size(); ++i)
    text += (i ? "," : "") + std::to_string(mesh.ranks[i]);
  return text + "}";
}

weft_rt_status createPipeline(weft_rt_context *ctx, const MeshSpec &mesh,
                              int32_t worldSizeArg, weft_rt_comm **comm) {
  return weft_rt_comm_create_mpi_pipeline(
      ctx, static_cast<int32_t>(mesh.dims.size()), mesh.dims.data(),
      mesh.ranks.data(), worldSizeArg, comm);
}

/// A hang ends the rank with a message instead of the test's time-out.
void onAlarm(int) {
  static const char text[] =
      "PipelineTest: timed out: a rank waits for the others (a set-up "
      "mismatch hangs?)\n";
  ssize_t ignored = write(2, text, sizeof(text) - 1);
  (void)ignored;
  _exit(3);
}

/// The value element i of the transfer from `from` to `to` carries.
double transferValue(int from, int to, int64_t i) {
  return from * 1000 + to * 100 + static_cast<double>(i % 97);
}

/// The dtype of the transfer from `from` to `to`: a mix, so that element
/// sizes differ.
weft_rt_dtype transferType(int from, int to) {
  static const weft_rt_dtype types[] = {WEFT_RT_F32, WEFT_RT_I64, WEFT_RT_F64,
                                        WEFT_RT_I32};
  return types[(from + 2 * to) % 4];
}

/// Elements of the transfer: uneven, some empty, one large (past Open MPI's
/// eager limit, so that the receive's probe meets a rendezvous).
int64_t transferCount(int from, int to) {
  if (from == 1 && to == 3)
    return 100000;
  if ((from + to) % 4 == 0)
    return 0;
  return (from * 3 + to * 2) % 7 + 1;
}

void storeValue(weft_rt_dtype dtype, std::vector<uint8_t> &buffer, int64_t i,
                double value) {
  uint8_t *at = buffer.data() + i * weft_rt_dtype_size(dtype);
  if (dtype == WEFT_RT_F32) {
    float v = static_cast<float>(value);
    std::memcpy(at, &v, 4);
  } else if (dtype == WEFT_RT_F64) {
    std::memcpy(at, &value, 8);
  } else if (dtype == WEFT_RT_I32) {
    int32_t v = static_cast<int32_t>(value);
    std::memcpy(at, &v, 4);
  } else {
    int64_t v = static_cast<int64_t>(value);
    std::memcpy(at, &v, 8);
  }
}

double loadValue(weft_rt_dtype dtype, const std::vector<uint8_t> &buffer,
                 int64_t i) {
  const uint8_t *at = buffer.data() + i * weft_rt_dtype_size(dtype);
  if (dtype == WEFT_RT_F32) {
    float v;
    std::memcpy(&v, at, 4);
    return v;
  }
  if (dtype == WEFT_RT_F64) {
    double v;
    std::memcpy(&v, at, 8);
    return v;
  }
  if (dtype == WEFT_RT_I32) {
    int32_t v;
    std::memcpy(&v, at, 4);
    return v;
  }
  int64_t v;
  std::memcpy(&v, at, 8);
  return static_cast<double>(v);
}

/// An all-reduce and an all-gather over every axis of the mesh: the values
/// of the mesh's ranks alone, gathered in mesh-position order.
void testCollectives(weft_rt_context *ctx, const MeshSpec &mesh) {
  std::string what = "mesh " + describe(mesh);
  int64_t numAxes = static_cast<int64_t>(mesh.dims.size());
  std::vector<int64_t> header = {WEFT_RT_ALL_REDUCE_SUM, WEFT_RT_F32, numAxes};
  for (int64_t a = 0; a < numAxes; ++a)
    header.push_back(a);

  std::vector<int64_t> reduce = header;
  reduce.push_back(3);
  float in[3], out[3] = {-1, -1, -1};
  for (int i = 0; i < 3; ++i)
    in[i] = static_cast<float>((worldRank + 1) * (i + 1));
  weft_rt_status status = weft_rt_collective(ctx, reduce.data(), in, out);
  EXPECT(status == WEFT_RT_OK, "%s all_reduce: %s", what.c_str(),
         weft_rt_context_error(ctx));
  float sum = 0;
  for (int32_t r : mesh.ranks)
    sum += static_cast<float>(r + 1);
  for (int i = 0; i < 3 && status == WEFT_RT_OK; ++i)
    EXPECT(out[i] == sum * (i + 1), "%s all_reduce: element %d is %g, not %g",
           what.c_str(), i, out[i], sum * (i + 1));

  // Every member gives 2 elements: [world rank * 10, world rank * 10 + 1].
  std::vector<int64_t> gather = header;
  gather[0] = WEFT_RT_ALL_GATHER;
  int64_t p = static_cast<int64_t>(mesh.ranks.size());
  gather.insert(gather.end(), {1, 1, p});
  for (int64_t h = 0; h < p; ++h)
    gather.push_back(2);
  float block[2] = {static_cast<float>(worldRank * 10),
                    static_cast<float>(worldRank * 10 + 1)};
  std::vector<float> all(static_cast<size_t>(2 * p), -1.0f);
  status = weft_rt_collective(ctx, gather.data(), block, all.data());
  EXPECT(status == WEFT_RT_OK, "%s all_gather: %s", what.c_str(),
         weft_rt_context_error(ctx));
  for (int64_t h = 0; h < p && status == WEFT_RT_OK; ++h)
    EXPECT(all[2 * h] == mesh.ranks[h] * 10.0f &&
               all[2 * h + 1] == mesh.ranks[h] * 10.0f + 1,
           "%s all_gather: block %lld is %g,%g, not world rank %d's",
           what.c_str(), static_cast<long long>(h), all[2 * h], all[2 * h + 1],
           mesh.ranks[h]);
}

/// Every rank sends to every rank of the other meshes and receives from
/// each, one transfer after the other in one order that every rank follows
/// (so that blocking waits cannot deadlock), each with its own tag.
void testTransfers(weft_rt_context *ctx, const Layout &layout) {
  int transfers = 0, empty = 0;
  for (int from = 0; from < worldSize; ++from)
    for (int to = 0; to < worldSize; ++to) {
      if (&meshOf(layout, from) == &meshOf(layout, to))
        continue;
      ++transfers;
      weft_rt_dtype dtype = transferType(from, to);
      int64_t count = transferCount(from, to);
      empty += count == 0;
      int64_t tag = from * 64 + to;
      if (worldRank == from) {
        std::vector<uint8_t> data(count * weft_rt_dtype_size(dtype) + 1);
        for (int64_t i = 0; i < count; ++i)
          storeValue(dtype, data, i, transferValue(from, to, i));
        int64_t params[] = {WEFT_RT_SEND, dtype, 0, to, tag, count};
        // The compiler passes one buffer as both.
        weft_rt_status status =
            weft_rt_collective(ctx, params, data.data(), data.data());
        EXPECT(status == WEFT_RT_OK, "send %d -> %d (%lld elements): %s", from,
               to, static_cast<long long>(count), weft_rt_context_error(ctx));
      }
      if (worldRank == to) {
        std::vector<uint8_t> data(count * weft_rt_dtype_size(dtype) + 1, 0xee);
        int64_t params[] = {WEFT_RT_RECV, dtype, 0, from, tag, count};
        weft_rt_status status =
            weft_rt_collective(ctx, params, nullptr, data.data());
        EXPECT(status == WEFT_RT_OK, "recv %d -> %d (%lld elements): %s", from,
               to, static_cast<long long>(count), weft_rt_context_error(ctx));
        for (int64_t i = 0; i < count && status == WEFT_RT_OK; ++i)
          if (loadValue(dtype, data, i) != transferValue(from, to, i)) {
            EXPECT(false, "recv %d -> %d: element %lld is %g, not %g", from, to,
                   static_cast<long long>(i), loadValue(dtype, data, i),
                   transferValue(from, to, i));
            break;
          }
        EXPECT(data.back() == 0xee, "recv %d -> %d wrote past its count", from,
               to);
      }
    }
  EXPECT(transfers > 0 && empty > 0,
         "%d transfers, %d empty: the layout "
         "should give some of each",
         transfers, empty);
}

/// A receive of another count than the sender's fails, naming the peer, the
/// tag and both sizes; the sender's side succeeds (the message is taken).
void testCountMismatch(weft_rt_context *ctx, const Layout &layout) {
  struct Case {
    int from, to;
    int64_t sent, expected;
  };
  // Fewer than expected, and more (the receiver's buffer stays untouched).
  for (Case c : {Case{0, 2, 5, 7}, Case{3, 1, 9, 4}}) {
    if (&meshOf(layout, c.from) == &meshOf(layout, c.to))
      continue;
    int64_t tag = 999;
    if (worldRank == c.from) {
      std::vector<float> data(static_cast<size_t>(c.sent), 1.0f);
      int64_t params[] = {WEFT_RT_SEND, WEFT_RT_F32, 0, c.to, tag, c.sent};
      EXPECT(weft_rt_collective(ctx, params, data.data(), nullptr) ==
                 WEFT_RT_OK,
             "mismatch send %d -> %d: %s", c.from, c.to,
             weft_rt_context_error(ctx));
    }
    if (worldRank == c.to) {
      std::vector<float> data(static_cast<size_t>(c.expected), -1.0f);
      int64_t params[] = {WEFT_RT_RECV, WEFT_RT_F32, 0,
                          c.from,       tag,         c.expected};
      weft_rt_status status =
          weft_rt_collective(ctx, params, nullptr, data.data());
      std::string sent = std::to_string(c.sent * 4) + " bytes";
      std::string expected = std::to_string(c.expected * 4) + " bytes";
      EXPECT(status == WEFT_RT_INVALID_ARGUMENT &&
                 errorMentions(ctx, "world rank " + std::to_string(c.from)) &&
                 errorMentions(ctx, "tag 999") && errorMentions(ctx, sent) &&
                 errorMentions(ctx, "expects " + expected),
             "mismatch recv %d -> %d: status %d, '%s'", c.from, c.to, status,
             weft_rt_context_error(ctx));
      EXPECT(data[0] == -1.0f, "a failed receive wrote into out");
    }
    // The next case starts clean on every rank.
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

/// Bad transfer blocks fail before any communication (no peer waits).
void testBadTransfers(weft_rt_context *ctx) {
  float data[4] = {};
  int other = (worldRank + 1) % worldSize;
  struct Case {
    std::vector<int64_t> params;
    std::string message;
  };
  std::vector<Case> cases = {
      {{WEFT_RT_SEND, WEFT_RT_F32, 0, worldRank, 1, 4}, "is this rank itself"},
      {{WEFT_RT_RECV, WEFT_RT_F32, 0, worldSize, 1, 4},
       "peer " + std::to_string(worldSize) + " is not a world rank (0 to " +
           std::to_string(worldSize - 1) + ")"},
      {{WEFT_RT_SEND, WEFT_RT_F32, 0, -7, 1, 4},
       "peer -7 names peer table slot 6, but tag 1 does not"},
      {{WEFT_RT_RECV, WEFT_RT_F32, 0, -1, -1, 4},
       "peer table slot 0, but the program's table has 0 slots"},
      {{WEFT_RT_SEND, WEFT_RT_F32, 0, other, 1, -2}, "count -2 is negative"},
      {{WEFT_RT_RECV, WEFT_RT_F32, 0, other, -1, 4},
       "tag -1 is not from 0 to 1048575"},
      {{WEFT_RT_SEND, WEFT_RT_F32, 0, other, 1 << 20, 4},
       "tag 1048576 is not from 0 to 1048575"},
      {{WEFT_RT_SEND, WEFT_RT_F32, 1, 0, other, 1, 4},
       "a transfer takes no mesh axes"},
      {{WEFT_RT_SEND, 5, 0, other, 1, 4}, "unknown dtype 5"},
      {{WEFT_RT_SEND, WEFT_RT_F32, 0, other, 1, INT64_MAX / 2},
       "more bytes than fit in 64 bits"},
  };
  for (const Case &c : cases) {
    weft_rt_status status =
        weft_rt_collective(ctx, c.params.data(), data, data);
    EXPECT(status == WEFT_RT_INVALID_ARGUMENT && errorMentions(ctx, c.message),
           "bad transfer: status %d, '%s', expected '%s'", status,
           weft_rt_context_error(ctx), c.message.c_str());
  }
  int64_t noData[] = {WEFT_RT_SEND, WEFT_RT_F32, 0, other, 1, 4};
  EXPECT(weft_rt_collective(ctx, noData, nullptr, data) ==
                 WEFT_RT_INVALID_ARGUMENT &&
             errorMentions(ctx, "in is NULL"),
         "send without data: %s", weft_rt_context_error(ctx));
}

int32_t runNothing(weft_rt_context *, weft_rt_byte_buffer *,
                   weft_rt_byte_buffer *) {
  return WEFT_RT_OK;
}

/// The signature of a stage program of `mesh`'s shape at world ranks
/// `ranks`, with `weightsBytes` of weights (no inputs or outputs).
std::string stageSignature(const MeshSpec &mesh,
                           const std::vector<int32_t> &ranks,
                           int64_t weightsBytes) {
  std::string signature = "weft-program 1\narena 0\nweights " +
                          std::to_string(weightsBytes) + "\nmesh";
  for (int64_t d : mesh.dims)
    signature += " " + std::to_string(d);
  signature += "\npipeline " + std::to_string(worldSize);
  for (int32_t r : ranks)
    signature += " " + std::to_string(r);
  return signature + "\n";
}

/// weft_rt_model_run accepts a program of this rank's stage and refuses
/// one of another stage or of no pipeline at all.
void testModelChecksThePipeline(weft_rt_context *ctx, weft_rt_comm *comm,
                                const MeshSpec &mesh) {
  std::string signature = stageSignature(mesh, mesh.ranks, 0);
  weft_rt_program program = {signature.c_str(), runNothing};
  weft_rt_model *model = nullptr;
  EXPECT(weft_rt_model_create(ctx, &program, nullptr, &model) == WEFT_RT_OK,
         "create: %s", weft_rt_context_error(ctx));
  weft_rt_context_set_comm(ctx, comm);
  EXPECT(weft_rt_model_run(model) == WEFT_RT_OK, "own stage: %s",
         weft_rt_context_error(ctx));
  weft_rt_context_set_comm(ctx, nullptr);
  EXPECT(weft_rt_model_run(model) == WEFT_RT_INVALID_ARGUMENT &&
             errorMentions(ctx, "needs a communicator"),
         "no comm: %s", weft_rt_context_error(ctx));
  weft_rt_model_destroy(model);
  // The same shape at other world ranks: the ranks reversed.
  std::vector<int32_t> reversed(mesh.ranks.rbegin(), mesh.ranks.rend());
  bool same = reversed == mesh.ranks;
  std::string other = stageSignature(mesh, reversed, 0);
  if (same)
    return;
  weft_rt_program elsewhere = {other.c_str(), runNothing};
  EXPECT(weft_rt_model_create(ctx, &elsewhere, nullptr, &model) == WEFT_RT_OK,
         "create: %s", weft_rt_context_error(ctx));
  weft_rt_context_set_comm(ctx, comm);
  EXPECT(weft_rt_model_run(model) == WEFT_RT_INVALID_ARGUMENT &&
             errorMentions(ctx, "but the context's communicator has it at "
                                "world ranks"),
         "other ranks: %s", weft_rt_context_error(ctx));
  weft_rt_context_set_comm(ctx, nullptr);
  weft_rt_model_destroy(model);
}

/// The program of testPeerTable: every rank runs the same code, sending to
/// slot 0 and receiving from slot 1 of its own peer table (even ranks send
/// first, so that the ring cannot wait on itself).
int gPeerTableRank = 0;
float gPeerTableOut[4], gPeerTableIn[4];
int32_t runRingThroughPeerTable(weft_rt_context *ctx, weft_rt_byte_buffer *,
                                weft_rt_byte_buffer *) {
  int64_t send[] = {WEFT_RT_SEND, WEFT_RT_F32, 0, -1, -1, 4};
  int64_t recv[] = {WEFT_RT_RECV, WEFT_RT_F32, 0, -2, -2, 4};
  for (int step = 0; step < 2; ++step) {
    bool sending = (step == 0) == (gPeerTableRank % 2 == 0);
    weft_rt_status status =
        sending ? weft_rt_collective(ctx, send, gPeerTableOut, gPeerTableOut)
                : weft_rt_collective(ctx, recv, nullptr, gPeerTableIn);
    if (status != WEFT_RT_OK)
      return status;
  }
  return WEFT_RT_OK;
}

/// A program whose transfers name peer table slots (weftc's peer tables):
/// the model finds the rank's table in its weights file through the
/// signature's "peers" record, and each rank's transfers reach the peers
/// of its own table.
void testPeerTable(weft_rt_context *ctx, weft_rt_comm *comm,
                   const MeshSpec &mesh) {
  // An odd ring would put two even ranks side by side: the ring is the
  // even prefix of the world.
  int ringSize = worldSize - worldSize % 2;
  if (worldRank >= ringSize || ringSize < 2)
    return;
  int next = (worldRank + 1) % ringSize, prev = (worldRank + ringSize - 1) %
                                                  ringSize;
  // 64 bytes of weights: 16 bytes of something else, then the table.
  int64_t weights[8] = {11, 12, next, 100 + worldRank, prev, 100 + prev, 0, 0};
  char path[] = "/tmp/weft-peer-table-XXXXXX";
  int fd = mkstemp(path);
  EXPECT(fd >= 0 && write(fd, weights, sizeof(weights)) ==
                        static_cast<ssize_t>(sizeof(weights)),
         "cannot write %s", path);
  close(fd);
  std::string signature =
      stageSignature(mesh, mesh.ranks, sizeof(weights)) + "peers 16 2\n";
  weft_rt_program program = {signature.c_str(), runRingThroughPeerTable};
  weft_rt_model *model = nullptr;
  EXPECT(weft_rt_model_create(ctx, &program, path, &model) == WEFT_RT_OK,
         "create with a peer table: %s", weft_rt_context_error(ctx));
  unlink(path);
  if (!model)
    return;
  gPeerTableRank = worldRank;
  for (int i = 0; i < 4; ++i) {
    gPeerTableOut[i] = static_cast<float>(worldRank * 10 + i);
    gPeerTableIn[i] = -1;
  }
  weft_rt_context_set_comm(ctx, comm);
  EXPECT(weft_rt_model_run(model) == WEFT_RT_OK, "run through the table: %s",
         weft_rt_context_error(ctx));
  for (int i = 0; i < 4; ++i)
    EXPECT(gPeerTableIn[i] == static_cast<float>(prev * 10 + i),
           "peer table ring: element %d is %g, not %d", i, gPeerTableIn[i],
           prev * 10 + i);
  weft_rt_context_set_comm(ctx, nullptr);
  weft_rt_model_destroy(model);
  // The table went with its model.
  float data[4] = {};
  int64_t send[] = {WEFT_RT_SEND, WEFT_RT_F32, 0, -1, -1, 4};
  weft_rt_context_set_comm(ctx, comm);
  EXPECT(weft_rt_collective(ctx, send, data, data) ==
                 WEFT_RT_INVALID_ARGUMENT &&
             errorMentions(ctx, "the program's table has 0 slots"),
         "after the model: %s", weft_rt_context_error(ctx));
  weft_rt_context_set_comm(ctx, nullptr);
}

void runLayout(weft_rt_context *ctx, const Layout &layout) {
  const MeshSpec &mesh = meshOf(layout, worldRank);
  weft_rt_comm *comm = nullptr;
  alarm(60);
  weft_rt_status status = createPipeline(ctx, mesh, worldSize, &comm);
  EXPECT(status == WEFT_RT_OK && comm, "create %s: %s", describe(mesh).c_str(),
         weft_rt_context_error(ctx));
  if (status != WEFT_RT_OK) {
    // The others may have failed too (the set-up is collective).
    alarm(0);
    return;
  }
  EXPECT(weft_rt_comm_rank(comm) == worldRank, "rank %d",
         weft_rt_comm_rank(comm));
  EXPECT(weft_rt_comm_size(comm) == worldSize, "size %d",
         weft_rt_comm_size(comm));
  EXPECT(weft_rt_comm_mesh_position(comm) == positionIn(mesh, worldRank),
         "mesh position %d in %s", weft_rt_comm_mesh_position(comm),
         describe(mesh).c_str());
  EXPECT(weft_rt_comm_mesh_size(comm) ==
             static_cast<int32_t>(mesh.ranks.size()),
         "mesh size %d", weft_rt_comm_mesh_size(comm));
  weft_rt_context_set_comm(ctx, comm);
  testCollectives(ctx, mesh);
  testTransfers(ctx, layout);
  testCountMismatch(ctx, layout);
  testBadTransfers(ctx);
  // Collectives still pair up after all the transfers.
  testCollectives(ctx, mesh);
  weft_rt_context_set_comm(ctx, nullptr);
  testModelChecksThePipeline(ctx, comm, mesh);
  testPeerTable(ctx, comm, mesh);
  weft_rt_comm_destroy(comm);
  alarm(0);
}

/// Set-ups the ranks disagree on: every rank fails with `message` (or its
/// own `ownMessage` on the ranks in `culprits`), and none hangs.
void expectSetUpFails(weft_rt_context *ctx, const char *what,
                      const MeshSpec &mine, int32_t worldSizeArg,
                      const std::string &message,
                      const std::vector<int> &culprits = {},
                      const std::string &ownMessage = "") {
  weft_rt_comm *comm = nullptr;
  alarm(30);
  weft_rt_status status = createPipeline(ctx, mine, worldSizeArg, &comm);
  alarm(0);
  bool culprit =
      std::find(culprits.begin(), culprits.end(), worldRank) != culprits.end();
  const std::string &want = culprit ? ownMessage : message;
  EXPECT(status == WEFT_RT_INVALID_ARGUMENT && !comm &&
             errorMentions(ctx, want),
         "%s: status %d, '%s', expected '%s'", what, status,
         weft_rt_context_error(ctx), want.c_str());
  if (comm)
    weft_rt_comm_destroy(comm);
}

void testSetUpMismatches(weft_rt_context *ctx) {
  // World rank 1 claimed by two meshes: ranks 0 and 1 say [2] on {0,1}, the
  // others [3] on {1,2,3} ... and rank 4 [1] on {4}.
  MeshSpec a = {{2}, {0, 1}}, b = {{3}, {1, 2, 3}}, c = {{1}, {4}};
  expectSetUpFails(ctx, "claimed twice",
                   worldRank <= 1   ? a
                   : worldRank <= 3 ? b
                                    : c,
                   worldSize,
                   "world rank 1 belongs to two meshes: rank 2 puts it in the "
                   "mesh [3] on world ranks {1,2,3}, but rank 1 in the mesh "
                   "[2] on world ranks {0,1}");
  // The same ranks, another shape: [2] against [2,1].
  MeshSpec flat = {{2}, {0, 1}}, tall = {{2, 1}, {0, 1}},
           rest = {{3}, {2, 3, 4}};
  expectSetUpFails(ctx, "shapes differ",
                   worldRank == 0   ? flat
                   : worldRank == 1 ? tall
                                    : rest,
                   worldSize,
                   "world rank 1 belongs to two meshes: rank 0 puts it in the "
                   "mesh [2] on world ranks {0,1}, but rank 1 in the mesh "
                   "[2,1] on world ranks {0,1}");
  // Rank 3 believes in a world of 4.
  MeshSpec first = {{2}, {0, 1}}, second = {{3}, {2, 3, 4}};
  expectSetUpFails(ctx, "world size", worldRank <= 1 ? first : second,
                   worldRank == 3 ? worldSize - 1 : worldSize,
                   "world rank 3 passes world_size " +
                       std::to_string(worldSize - 1) +
                       ", but MPI_COMM_WORLD has " + std::to_string(worldSize),
                   {3},
                   "world_size is " + std::to_string(worldSize - 1) +
                       ", but MPI_COMM_WORLD has " + std::to_string(worldSize) +
                       " processes");
  // Rank 4 passes a mesh without itself.
  MeshSpec own = {{2}, {0, 1}}, three = {{3}, {2, 3, 4}}, without = {{1}, {3}};
  expectSetUpFails(ctx, "not listed",
                   worldRank <= 1   ? own
                   : worldRank <= 3 ? three
                                    : without,
                   worldSize,
                   "world rank 4 is not among the world ranks of its own mesh",
                   {4},
                   "this process is world rank 4, which is not among the "
                   "world ranks of its own mesh [1] {3}");
  // Rank 2 passes a dim of 0, ranks 0 and 3 a rank twice or out of the
  // world: all fail with them.
  MeshSpec zero = {{0}, {2}}, twice = {{2}, {0, 0}}, outside = {{2}, {3, 9}};
  const MeshSpec &bad = worldRank == 2   ? zero
                        : worldRank == 0 ? twice
                        : worldRank == 3 ? outside
                        : worldRank == 1 ? first
                                         : second;
  std::string badOwn = worldRank == 2   ? "dims must be >= 1"
                       : worldRank == 0 ? "world rank 0 is given twice"
                                        : "mesh_world_ranks[1] is 9, not a "
                                          "world rank (0 to 4)";
  expectSetUpFails(ctx, "bad arguments", bad, worldSize,
                   "world rank 0 passed invalid arguments (and 2 other ranks)",
                   {0, 2, 3}, badOwn);
}

/// Without a communicator there is no peer to send to.
void testWithoutComm(weft_rt_context *ctx) {
  float data[2] = {};
  int64_t send[] = {WEFT_RT_SEND, WEFT_RT_F32, 0, 1, 0, 2};
  EXPECT(weft_rt_collective(ctx, send, data, data) ==
                 WEFT_RT_INVALID_ARGUMENT &&
             errorMentions(ctx, "send: no communicator is attached"),
         "send without comm: %s", weft_rt_context_error(ctx));
  int64_t recv[] = {WEFT_RT_RECV, WEFT_RT_F32, 0, 1, 0, 2};
  EXPECT(weft_rt_collective(ctx, recv, data, data) ==
                 WEFT_RT_INVALID_ARGUMENT &&
             errorMentions(ctx, "recv: no communicator is attached"),
         "recv without comm: %s", weft_rt_context_error(ctx));
}

} // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  if (worldSize != 5) {
    if (worldRank == 0)
      std::fprintf(stderr,
                   "PipelineTest runs on 5 ranks (mpirun -np 5), not "
                   "%d\n",
                   worldSize);
    MPI_Finalize();
    return 1;
  }
  std::signal(SIGALRM, onAlarm);
  weft_rt_context *ctx = nullptr;
  if (weft_rt_context_create(&ctx) != WEFT_RT_OK) {
    std::fprintf(stderr, "cannot create a context\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  testWithoutComm(ctx);
  runLayout(ctx, {{{2}, {0, 1}}, {{3}, {2, 3, 4}}});
  // Non-contiguous ranks, and a mesh whose positions are not in rank order.
  runLayout(ctx, {{{2}, {0, 2}}, {{3}, {4, 1, 3}}});
  // A stage of one device and a 2-D one.
  runLayout(ctx, {{{1}, {0}}, {{2, 2}, {4, 3, 2, 1}}});
  testSetUpMismatches(ctx);
  // Nothing was left behind by the failures: a set-up works again.
  runLayout(ctx, {{{2}, {0, 1}}, {{3}, {2, 3, 4}}});

  int code = finishMpiChecks(MPI_COMM_WORLD);
  weft_rt_context_destroy(ctx);
  MPI_Finalize();
  return code;
}
