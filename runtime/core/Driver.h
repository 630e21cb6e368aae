//===- Driver.h - The command-line driver's pieces --------------*- C++ -*-===//
//
// weft_rt_driver_main is split by idea: options, loading tensors, reporting
// outputs. This header is what those files share; private to the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CORE_DRIVER_H
#define WEFT_RUNTIME_CORE_DRIVER_H

#include "ClockSync.h"
#include "Compare.h"
#include "Signature.h"
#include "TensorIO.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace weft::rt {

/// Exit codes of Weft's command-line contract.
enum ExitCode {
  kExitOk = 0,
  kExitBadInput = 1,
  kExitMismatch = 2,
  /// No device to run on (WEFT_RT_DEVICE_UNAVAILABLE), or mpirun could not
  /// start a mesh's ranks.
  kExitDeviceUnavailable = 3,
  /// Another device of the mesh failed (or communication with it).
  kExitPeerFailed = 4,
  kExitInternal = 70,
};

/// Everything the command line says.
struct DriverOptions {
  std::string weightsPath;
  std::string inputsDir;
  /// --input NAME=FILE, unsplit (the split needs the model's input names).
  std::vector<std::string> inputSpecs;
  std::string outputDir;
  TensorFormat outputFormat = TensorFormat::OnnxPb;
  bool outputFormatGiven = false;
  std::string checkDir;
  Tolerance tolerance;
  int64_t benchRuns = 0;
  /// --stream N: N requests with the pipeline full; 0 without.
  int64_t streamRequests = 0;
  int64_t warmupRuns = -1; // -1: min(benchRuns, 5).
  int32_t threads = 0;     // 0: the context's default.
  /// Run every run on `threads` threads, not fewer when fewer are faster.
  bool fixedThreads = false;
  std::string profilePath;
  bool quiet = false;
  bool help = false;
  bool version = false;
};

/// Parses argv[1..]. False with `error` on unknown options or bad values.
bool parseDriverOptions(int argc, char **argv, DriverOptions &out,
                        std::string &error);

/// Prints --help; lists the model's inputs and outputs when `signature` is
/// given.
void printDriverUsage(FILE *out, const std::string &exeName,
                      const ProgramSignature *signature);

/// One tensor file and where it came from.
struct LoadedTensor {
  std::string path;
  Tensor tensor;
};

/// Reads the tensors of the model's inputs, in the model's order, from
/// --inputs or --input options, and checks their dtypes and shapes.
/// `notes` collects warnings (a name that matched nothing, used by
/// position).
bool loadInputs(const DriverOptions &options, const ProgramSignature &signature,
                std::vector<LoadedTensor> &out, std::vector<std::string> &notes,
                std::string &error);

/// Reads the expected tensors of --check DIR, in the model's output order
/// (matched by name, else by position). Dtypes and shapes are compared
/// later, as part of the check.
bool loadExpectedOutputs(const std::string &dir,
                         const ProgramSignature &signature,
                         std::vector<LoadedTensor> &out,
                         std::vector<std::string> &notes, std::string &error);

/// Prints each output's name, type, first values and statistics.
void printOutputs(FILE *out, const ProgramSignature &signature,
                  const std::vector<const void *> &outputs);

/// Writes output_<i>.pb or .npy files into `dir` (created if missing).
bool writeOutputs(const std::string &dir, TensorFormat format,
                  const ProgramSignature &signature,
                  const std::vector<const void *> &outputs, std::string &error);

/// Compares each output with its expected tensor and prints one line per
/// output (and the first mismatches). True when all match.
bool checkOutputs(FILE *out, const ProgramSignature &signature,
                  const std::vector<const void *> &outputs,
                  const std::vector<LoadedTensor> &expected,
                  const Tolerance &tolerance);

//===- Streams (DriverStream.cpp): --stream N -----------------------------===//

/// The folders DIR/request_0, DIR/request_1, ... in order; none when DIR
/// has no request folder. Fails on a gap in the numbering.
bool listRequestFolders(const std::string &dir, std::vector<std::string> &out,
                        std::string &error);

/// The data sets of a stream: request i reads inputs[i % inputs.size()]
/// and is checked against expected[i % expected.size()].
struct RequestData {
  std::vector<std::vector<LoadedTensor>> inputs;
  /// Empty without --check (and on ranks that do not check).
  std::vector<std::vector<LoadedTensor>> expected;
};

/// Reads --inputs (its request_<i>/ folders, else the folder or --input
/// options as one set) and, with `loadExpected`, --check the same way.
bool loadRequests(const DriverOptions &options,
                  const ProgramSignature &signature, bool loadExpected,
                  RequestData &out, std::vector<std::string> &notes,
                  std::string &error);

/// Every request's outputs (each output of each request in its own
/// 64-byte-aligned slot), copied out of the arena after its run.
class RequestOutputs {
public:
  RequestOutputs() = default;
  RequestOutputs(const ProgramSignature &signature, int64_t requests);
  /// Where request `request`'s outputs go, one pointer per output.
  std::vector<void *> slots(int64_t request);
  std::vector<const void *> of(int64_t request) const;

private:
  std::vector<size_t> offsets, sizes;
  size_t bytesPerRequest = 0;
  std::vector<uint8_t> data;
};

/// What a stream measured.
struct StreamSummary {
  int64_t requests = 0;
  double seconds = 0;
  double requestsPerSecond = 0;
  /// Of each request's latency: from when its first rank started it to when
  /// its last rank finished it.
  double p50Ms = 0, p99Ms = 0;
};
StreamSummary summarizeStream(const std::vector<double> &startMs,
                              const std::vector<double> &endMs);
/// "throughput: X requests/s (N requests, p50 A ms, p99 B ms)".
std::string formatThroughputLine(const StreamSummary &summary);

/// Writes DIR/request_<i>/output_<j>.pb (or .npy) for every request.
bool writeRequestOutputs(const std::string &dir, TensorFormat format,
                         const ProgramSignature &signature,
                         const RequestOutputs &outputs, int64_t requests,
                         std::string &error);

/// Checks every request against its expected outputs; prints the failing
/// ones (the first few) and one summary line. True when all match.
bool checkRequestOutputs(FILE *out, const ProgramSignature &signature,
                         const RequestOutputs &outputs, int64_t requests,
                         const RequestData &data, const Tolerance &tolerance);

/// Median and minimum of run times in milliseconds; sorts `times`.
std::pair<double, double> medianAndMin(std::vector<double> &times);

//===- Meshes (DriverMesh.cpp): the driver as one rank of an MPI job ------===//

/// How a launcher (mpirun, srun) started this process, read from its
/// environment before MPI is touched.
struct LaunchInfo {
  /// Some MPI launcher started it.
  bool launched = false;
  /// The job's process count and this process's rank; -1 when unknown.
  int64_t worldSize = -1;
  int64_t rank = -1;
  /// The world ranks of this process's mpirun app context (the processes
  /// of one `-np N PROGRAM` between colons, which run one executable), as
  /// Open MPI's environment gives them (OMPI_MCA_orte_app_num and
  /// OMPI_APP_CTX_NUM_PROCS: contexts numbered in order, ranks given out
  /// context by context); empty when unknown or when they would not
  /// include `rank` (a mapping that numbers ranks otherwise).
  std::vector<int64_t> appContextRanks;
};
LaunchInfo readLaunchInfo();
/// As readLaunchInfo, from `environment` (getenv's signature) instead.
LaunchInfo readLaunchInfo(const char *(*environment)(const char *));

/// Starts this executable again with GOMP_SPINCOUNT=weft::kOpenMpSpinCount
/// (weft/Support/WaitPolicy.h) when
/// neither it nor OMP_WAIT_POLICY is set; returns when it cannot (or need
/// not). Call first thing in main, before any OpenMP or MPI call.
void applyOpenMpWaitPolicy(char **argv);

/// "[rank 1/4]", "[ranks 0-3/4]", "[ranks 1,3/4]".
std::string formatRanks(const std::vector<int> &ranks, int worldSize);

/// The exit code every rank agrees on: the largest `code` of any rank (a
/// collective over the world). Rank 0 prints each distinct `message`
/// ("error: ...", lines) once, as "<exe> [ranks]: <line>". An MPI failure
/// here stops the job (abortMesh with kExitPeerFailed).
int agreeOnExit(weft_rt_comm *comm, int code, const std::string &exeName,
                const std::string &message);

/// Prints `message` with this rank and stops every rank: MPI_Abort with
/// `code`, which mpirun returns. For failures the other ranks cannot learn
/// of, because they wait for this one inside a collective.
[[noreturn]] void abortMesh(weft_rt_comm *comm, int code,
                            const std::string &exeName,
                            const std::string &message);

/// MPI_Barrier over the world; stops the job if it fails.
void meshBarrier(weft_rt_comm *comm, const std::string &exeName);

/// How reduceTimes combines the ranks' times of one run or request.
enum class TimeReduction {
  /// The slowest rank's (a run lasts until its last rank ends).
  Latest,
  /// The first rank's (a request starts when its first rank starts it).
  Earliest,
};

/// On `root`, replaces each time with its maximum (Latest) or minimum
/// (Earliest) over the ranks; stops the job on failure.
void reduceTimes(weft_rt_comm *comm, const std::string &exeName,
                 std::vector<double> &times, TimeReduction how, int root);

/// On `root`, every rank's `value` in rank order (empty elsewhere); stops
/// the job on failure.
std::vector<int> gatherFromRanks(weft_rt_comm *comm, const std::string &exeName,
                                 int value, int root);

/// The MPI side of the driver, reached through this table so that an
/// executable of one device (a GPU package) links no MPI. DriverMesh.cpp
/// defines kMpiMeshSupport, which weft_rt_driver_main passes.
struct MeshSupport {
  weft_rt_status (*createComm)(weft_rt_context *ctx, int32_t meshRank,
                               const int64_t *meshDims, weft_rt_comm **out);
  /// A stage of a pipeline (weft_rt_comm_create_mpi_pipeline).
  weft_rt_status (*createPipelineComm)(weft_rt_context *ctx, int32_t meshRank,
                                       const int64_t *meshDims,
                                       const int32_t *meshWorldRanks,
                                       int32_t worldSize, weft_rt_comm **out);
  /// The signature's broadcast groups
  /// (weft_rt_comm_create_broadcast_groups).
  weft_rt_status (*createBroadcastGroups)(weft_rt_context *ctx,
                                          weft_rt_comm *comm,
                                          int32_t numGroups,
                                          const int32_t *groupSizes,
                                          const int32_t *groupRanks);
  void (*destroyComm)(weft_rt_comm *comm);
  int (*agreeOnExit)(weft_rt_comm *comm, int code, const std::string &exeName,
                     const std::string &message);
  void (*abortMesh)(weft_rt_comm *comm, int code, const std::string &exeName,
                    const std::string &message);
  void (*barrier)(weft_rt_comm *comm, const std::string &exeName);
  void (*reduceTimes)(weft_rt_comm *comm, const std::string &exeName,
                      std::vector<double> &times, TimeReduction how, int root);
  std::vector<int> (*gatherFromRanks)(weft_rt_comm *comm,
                                      const std::string &exeName, int value,
                                      int root);
  /// Rank 0's clock against this rank's (syncClockWithRankZero); every rank
  /// of the world calls it at once.
  ClockSyncPoint (*syncClock)(weft_rt_comm *comm, const std::string &exeName);
};
extern const MeshSupport kMpiMeshSupport;

/// MPI's syncClock: every rank other than 0 plays kClockSyncRounds rounds
/// of ping-pong with rank 0, in rank order, and returns its best estimate
/// (ClockSync.h); rank 0 returns an offset of 0.
ClockSyncPoint syncClockWithRankZero(weft_rt_comm *comm,
                                     const std::string &exeName);

/// The driver (weft_rt_driver_main) with `mesh` for programs of several
/// ranks (a mesh of several devices, or a stage of a pipeline); with null,
/// such a program is refused with a clear message.
int runDriver(const weft_rt_program *program, int argc, char **argv,
              const MeshSupport *mesh);

/// `path` with ".rank<k>" before its extension: trace.json ->
/// trace.rank1.json, trace -> trace.rank1.
std::string rankedPath(const std::string &path, int rank);

} // namespace weft::rt

#endif // WEFT_RUNTIME_CORE_DRIVER_H
