//===- DriverMesh.cpp - The driver as one rank of a device mesh -----------===//
//
// A mesh program runs as one MPI process per device (a pipeline's stages
// are meshes of one world, and everything here spans the world). Failures
// that every rank can wait for are agreed on (one exit code for all,
// messages printed once by rank 0); a failure inside a run stops the whole
// job with MPI_Abort, because the other ranks wait for the failed one inside
// a collective or a transfer and would never learn of it otherwise.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"
#include "Context.h"
#include "comm/Comm.h"
#include "comm/Wait.h"

#include <cstdlib>
#include <cstring>

using namespace weft::rt;

/// Prints each line of `message` as "<exe> <ranks>: <line>".
static void printLines(FILE *out, const std::string &exeName,
                       const std::string &ranks, const std::string &message) {
  size_t start = 0;
  while (start < message.size()) {
    size_t end = message.find('\n', start);
    if (end == std::string::npos)
      end = message.size();
    std::fprintf(out, "%s %s: %.*s\n", exeName.c_str(), ranks.c_str(),
                 static_cast<int>(end - start), message.data() + start);
    start = end + 1;
  }
}

[[noreturn]] void weft::rt::abortMesh(weft_rt_comm *comm, int code,
                                      const std::string &exeName,
                                      const std::string &message) {
  std::string ranks = formatRanks({comm->rank}, comm->size);
  std::fflush(stdout);
  printLines(stderr, exeName, ranks, message);
  // weft-run recognizes this line when mpirun's own report is lost.
  std::fprintf(stderr,
               "%s %s: note: stopping every rank (MPI_Abort with exit code "
               "%d)\n",
               exeName.c_str(), ranks.c_str(), code);
  std::fflush(stderr);
  // The world's name reads best in mpirun's report; both stop every rank.
  MPI_Abort(MPI_COMM_WORLD, code);
  // MPI_Abort does not return; should it ever, leave anyway.
  std::_Exit(code);
}

/// Stops the job after a failed MPI call of the driver itself.
[[noreturn]] static void abortOnMpiError(weft_rt_comm *comm,
                                         const std::string &exeName, int status,
                                         const char *call) {
  char text[MPI_MAX_ERROR_STRING + 1] = {0};
  int length = 0;
  MPI_Error_string(status, text, &length);
  abortMesh(comm, kExitPeerFailed, exeName,
            std::string("error: ") + call + " failed: " + text +
                " (another rank died?)");
}

int weft::rt::agreeOnExit(weft_rt_comm *comm, int code,
                          const std::string &exeName,
                          const std::string &message) {
  int agreed = 0;
  MPI_Request request;
  int status =
      MPI_Iallreduce(&code, &agreed, 1, MPI_INT, MPI_MAX, comm->world, &request);
  if (status == MPI_SUCCESS)
    status = waitFor(&request);
  if (status != MPI_SUCCESS)
    abortOnMpiError(comm, exeName, status, "MPI_Iallreduce");
  if (agreed == 0)
    return 0;

  // Rank 0 collects every rank's "exe\nmessage" and prints each distinct
  // message once, naming the ranks that gave it.
  std::string mine =
      code && !message.empty() ? exeName + "\n" + message : std::string();
  int length = static_cast<int>(mine.size());
  bool root = comm->rank == 0;
  std::vector<int> lengths(root ? comm->size : 0);
  status = MPI_Igather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0,
                       comm->world, &request);
  if (status == MPI_SUCCESS)
    status = waitFor(&request);
  if (status != MPI_SUCCESS)
    abortOnMpiError(comm, exeName, status, "MPI_Igather");
  std::vector<int> displs(lengths.size());
  int total = 0;
  for (size_t r = 0; r < lengths.size(); ++r) {
    displs[r] = total;
    total += lengths[r];
  }
  std::string all(static_cast<size_t>(total), '\0');
  status = MPI_Igatherv(mine.data(), length, MPI_CHAR, all.data(),
                        lengths.data(), displs.data(), MPI_CHAR, 0, comm->world,
                        &request);
  if (status == MPI_SUCCESS)
    status = waitFor(&request);
  if (status != MPI_SUCCESS)
    abortOnMpiError(comm, exeName, status, "MPI_Igatherv");
  if (!root)
    return agreed;

  struct Report {
    std::string exe, text;
    std::vector<int> ranks;
  };
  std::vector<Report> reports;
  for (int r = 0; r < comm->size; ++r) {
    if (lengths[r] == 0)
      continue;
    std::string entry = all.substr(displs[r], lengths[r]);
    size_t newline = entry.find('\n');
    std::string exe = entry.substr(0, newline);
    std::string text = entry.substr(newline + 1);
    bool merged = false;
    for (Report &report : reports)
      if (report.text == text) {
        report.ranks.push_back(r);
        merged = true;
        break;
      }
    if (!merged)
      reports.push_back({exe, text, {r}});
  }
  std::fflush(stdout);
  for (const Report &report : reports)
    printLines(stderr, report.exe, formatRanks(report.ranks, comm->size),
               report.text);
  std::fflush(stderr);
  return agreed;
}

void weft::rt::meshBarrier(weft_rt_comm *comm, const std::string &exeName) {
  MPI_Request request;
  int status = MPI_Ibarrier(comm->world, &request);
  if (status == MPI_SUCCESS)
    status = waitFor(&request);
  if (status != MPI_SUCCESS)
    abortOnMpiError(comm, exeName, status, "MPI_Ibarrier");
}

void weft::rt::reduceTimes(weft_rt_comm *comm, const std::string &exeName,
                           std::vector<double> &times, TimeReduction how,
                           int root) {
  std::vector<double> reduced(times.size());
  MPI_Request request;
  int status = MPI_Ireduce(times.data(), reduced.data(),
                           static_cast<int>(times.size()), MPI_DOUBLE,
                           how == TimeReduction::Latest ? MPI_MAX : MPI_MIN,
                           root, comm->world, &request);
  if (status == MPI_SUCCESS)
    status = waitFor(&request);
  if (status != MPI_SUCCESS)
    abortOnMpiError(comm, exeName, status, "MPI_Ireduce");
  if (comm->rank == root)
    times = std::move(reduced);
}

std::vector<int> weft::rt::gatherFromRanks(weft_rt_comm *comm,
                                           const std::string &exeName,
                                           int value, int root) {
  std::vector<int> all(comm->rank == root ? comm->size : 0);
  MPI_Request request;
  int status = MPI_Igather(&value, 1, MPI_INT, all.data(), 1, MPI_INT, root,
                           comm->world, &request);
  if (status == MPI_SUCCESS)
    status = waitFor(&request);
  if (status != MPI_SUCCESS)
    abortOnMpiError(comm, exeName, status, "MPI_Igather");
  return all;
}

/// The tag of the clock ping-pong; the driver plays it between runs, when
/// no program message is in flight.
static constexpr int kClockSyncTag = 0x7c10c;

/// Sends (or, with `receive`, receives) one double of the clock ping-pong.
static void clockMessage(weft_rt_comm *comm, const std::string &exeName,
                         double *value, int peer, bool receive) {
  MPI_Request request;
  int status = receive ? MPI_Irecv(value, 1, MPI_DOUBLE, peer, kClockSyncTag,
                                   comm->world, &request)
                       : MPI_Isend(value, 1, MPI_DOUBLE, peer, kClockSyncTag,
                                   comm->world, &request);
  if (status == MPI_SUCCESS)
    status = waitFor(&request);
  if (status != MPI_SUCCESS)
    abortOnMpiError(comm, exeName, status, "the clock ping-pong");
}

ClockSyncPoint weft::rt::syncClockWithRankZero(weft_rt_comm *comm,
                                               const std::string &exeName) {
  // Rank 0 answers every other rank in turn, kClockSyncRounds times each,
  // with its clock's reading taken as late as it can; each asker keeps its
  // best round. Rank 0's own estimate is 0 by definition.
  if (comm->rank == 0) {
    for (int peer = 1; peer < comm->size; ++peer)
      for (int round = 0; round < kClockSyncRounds; ++round) {
        double request = 0;
        clockMessage(comm, exeName, &request, peer, /*receive=*/true);
        double reading = nowMicroseconds();
        clockMessage(comm, exeName, &reading, peer, /*receive=*/false);
      }
    ClockSyncPoint self;
    self.atUs = nowMicroseconds();
    return self;
  }
  std::vector<ClockRound> rounds(kClockSyncRounds);
  for (ClockRound &round : rounds) {
    double request = 0;
    round.sentUs = nowMicroseconds();
    clockMessage(comm, exeName, &request, 0, /*receive=*/false);
    clockMessage(comm, exeName, &round.peerUs, 0, /*receive=*/true);
    round.receivedUs = nowMicroseconds();
  }
  return bestClockEstimate(rounds);
}

const MeshSupport weft::rt::kMpiMeshSupport = {
    weft_rt_comm_create_mpi,
    weft_rt_comm_create_mpi_pipeline,
    weft_rt_comm_create_broadcast_groups,
    weft_rt_comm_destroy,
    agreeOnExit,
    abortMesh,
    meshBarrier,
    reduceTimes,
    gatherFromRanks,
    syncClockWithRankZero,
};

int weft_rt_driver_main(const weft_rt_program *program, int argc, char **argv) {
  return runDriver(program, argc, argv, &kMpiMeshSupport);
}
