//===- Driver.cpp - The command-line driver of bin/dev<k> -----------------===//
//
// weft_rt_driver_main: loads the weights and input files, runs the program
// (once, or timed with --bench), then prints, writes or checks the outputs.
// Every failure becomes an exit code of Weft's command-line contract. A mesh
// program, or a stage of a pipeline, runs as one rank of an MPI job
// (DriverMesh.cpp): world rank 0 reports, and every rank exits with the same
// code.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"
#include "Context.h"
#include "FailureDetector.h"
#include "ThreadAdapter.h"
#include "Model.h"
#include "comm/Comm.h"

#include "weft/Version.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <map>
#include <memory>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

using namespace weft::rt;

namespace {

/// One invocation of the driver.
class Driver {
public:
  Driver(const weft_rt_program *program, std::string exeName,
         const MeshSupport *mesh)
      : program(program), exeName(std::move(exeName)), mesh(mesh) {}
  ~Driver() {
    // The launcher keeps hearing from this rank until MPI is finalized: a
    // peer that dies now still leaves this one waiting in a collective.
    weft_rt_context_set_comm(ctx, nullptr);
    // Finalizes MPI: every rank gets here, with the same exit code. Before
    // the model goes: the last run's RECVs posted receives into staging
    // buffers in its arena, which this cancels.
    if (comm)
      mesh->destroyComm(comm);
    weft_rt_model_destroy(model);
    if (detector)
      detector->stop();
    detector.reset();
    weft_rt_context_destroy(ctx);
  }

  int main(int argc, char **argv);

private:
  /// Before a rank that others speak for exits with an error: mpirun kills
  /// every rank once the first one exits so, and one that left at once
  /// could take the speaking rank down before its message is out.
  static void waitForSpeakingRanks() {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  /// Prints "<exe>: <message>" (lines) now, or, once this process is a
  /// rank of a mesh, keeps it for agreeOnExit or abortMesh.
  int report(int code, const std::string &message) {
    if (comm) {
      pending = message;
      return code;
    }
    // Before the ranks can agree, every rank of a mesh meets the same
    // failure (the same options, program and launch): rank 0 says it. The
    // stages of a pipeline are launched apart (their own executables and
    // options), so the first rank of each stage speaks for its stage.
    std::string prefix = exeName;
    if (signature.multiRank()) {
      LaunchInfo launch = readLaunchInfo();
      bool silent = false;
      if (signature.pipeline()) {
        const std::vector<int32_t> &ranks = signature.meshWorldRanks;
        silent = launch.rank >= 0 &&
                 launch.rank != *std::min_element(ranks.begin(), ranks.end());
        if (launch.rank >= 0)
          prefix += " " + formatRanks({static_cast<int>(launch.rank)},
                                      static_cast<int>(signature.worldSize));
      } else {
        silent = launch.rank > 0;
      }
      if (silent) {
        if (code != kExitOk)
          waitForSpeakingRanks();
        return code;
      }
    }
    size_t start = 0;
    while (start < message.size()) {
      size_t end = message.find('\n', start);
      if (end == std::string::npos)
        end = message.size();
      std::fprintf(stderr, "%s: %s\n", prefix.c_str(),
                   message.substr(start, end - start).c_str());
      start = end + 1;
    }
    return code;
  }
  int fail(const std::string &message) {
    return report(kExitBadInput, "error: " + message);
  }
  /// A failure before the ranks can agree that this rank may meet alone (a
  /// stage's executable started at another stage's world rank): it says so
  /// itself, naming its rank.
  int failOnThisRank(const std::string &message) {
    LaunchInfo launch = readLaunchInfo();
    std::fprintf(stderr, "%s %s: error: %s\n", exeName.c_str(),
                 formatRanks({static_cast<int>(launch.rank)},
                             static_cast<int>(signature.worldSize))
                     .c_str(),
                 message.c_str());
    return kExitBadInput;
  }
  int internalError(const std::string &message) {
    return report(kExitInternal,
                  "internal error: " + message +
                      "\nthis is a bug in Weft; please report it with the "
                      "model");
  }
  /// Maps a failed runtime status to an exit code, with ctx's message.
  int failStatus(weft_rt_status status, const std::string &what) {
    std::string message = what + weft_rt_context_error(ctx);
    if (status == WEFT_RT_COMM_ERROR)
      return report(kExitPeerFailed, "error: " + message);
    if (status == WEFT_RT_DEVICE_UNAVAILABLE)
      return report(kExitDeviceUnavailable, "error: " + message);
    if (status == WEFT_RT_INTERNAL || status < 0 ||
        status > WEFT_RT_DEVICE_UNAVAILABLE)
      return internalError(message);
    return fail(message);
  }
  void note(const std::string &message) {
    if (!options.quiet && rank == 0)
      std::fprintf(stderr, "%s: note: %s\n", exeName.c_str(), message.c_str());
  }
  /// In a mesh, every rank's `code` combined (see agreeOnExit).
  int agree(int code) {
    if (!comm)
      return code;
    code =
        mesh->agreeOnExit(comm, code, exeName, code ? pending : std::string());
    pending.clear();
    return code;
  }

  std::string defaultWeightsPath(const char *argv0) const;
  std::string describeJob() const;
  int checkLaunch();
  int createContext();
  int startDetector();
  std::string describeActivity() const;
  void enterPhase(int phase);
  int createComm();
  int createModel(const char *argv0);
  int loadTensors(std::vector<LoadedTensor> &expected);
  weft_rt_status runBatch(const std::vector<LoadedTensor> &batch,
                          const std::vector<void *> *into);
  int runAll();
  int runStream();
  int finish(const std::vector<LoadedTensor> &expected);
  int finishStream();
  void printBenchmark();
  void printProfileSummary();

  const weft_rt_program *program;
  std::string exeName;
  /// Null in executables linked without MPI (single-device GPU packages).
  const MeshSupport *mesh;
  DriverOptions options;
  ProgramSignature signature;
  weft_rt_context *ctx = nullptr;
  weft_rt_model *model = nullptr;
  std::vector<LoadedTensor> inputs;
  std::vector<double> timesMs;
  /// --stream: the data sets, each request's start and end (ms after the
  /// ranks' common start) and, on the collector, its outputs.
  RequestData requests;
  std::vector<double> streamStartMs, streamEndMs;
  RequestOutputs requestOutputs;
  /// A program of microbatches: the batch's outputs, joined on the
  /// collector.
  RequestOutputs batchOutputs;
  /// A mesh program's communicator and this process's world rank; rank 0
  /// and no communicator for a single device.
  weft_rt_comm *comm = nullptr;
  int rank = 0;
  /// The message of a failure on this rank, kept for agree().
  std::string pending;
  /// Heartbeats to weft-run and the backends' health checks.
  std::unique_ptr<FailureDetector> detector;
  /// What the main thread does, for heartbeats (Phase), and which run.
  std::atomic<int> phase{0};
  std::atomic<int64_t> runIndex{0};
  /// On rank 0 of a mesh: each rank's thread count, for --bench.
  std::vector<int> threadsByRank;
  /// Chooses each run's thread count (at most the context's).
  std::unique_ptr<ThreadAdapter> threads;
};

/// The driver's phases, as heartbeats name them.
enum Phase {
  kStarting,
  kJoiningMesh,
  kLoading,
  kAgreeing,
  kAtBarrier,
  kRunning,
  kFinishing,
};

} // namespace

/// <dir of the executable>/../weights/<executable name>.bin, the layout of a
/// weftc package; dev<world rank>.bin for a mesh or pipeline program, whose
/// devices may share one executable.
std::string Driver::defaultWeightsPath(const char *argv0) const {
  char buffer[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  std::string exe = n > 0 ? std::string(buffer, n) : std::string(argv0);
  size_t slash = exe.rfind('/');
  std::string dir = slash == std::string::npos ? "." : exe.substr(0, slash);
  std::string name = slash == std::string::npos ? exe : exe.substr(slash + 1);
  if (signature.multiRank())
    name = "dev" + std::to_string(rank);
  return dir + "/../weights/" + name + ".bin";
}

/// "the mesh [2] at world ranks {0,1} of a pipeline of 5 processes", for
/// messages about a stage.
std::string Driver::describeJob() const {
  return "the mesh " +
         formatMesh(signature.mesh.empty() ? std::vector<int64_t>{1}
                                           : signature.mesh) +
         " at world ranks " + formatRankList(signature.meshWorldRanks) +
         " of a pipeline of " + std::to_string(signature.worldSize) +
         " processes";
}

/// A mesh program must be one of exactly as many processes as the mesh has
/// devices; a stage of a pipeline one of the pipeline's processes, at one of
/// its own world ranks. Checked from the launcher's environment, before MPI
/// starts (a plain start would otherwise make MPI spawn a singleton runtime
/// first).
int Driver::checkLaunch() {
  LaunchInfo launch = readLaunchInfo();
  if (signature.pipeline()) {
    long long world = static_cast<long long>(signature.worldSize);
    if (!launch.launched)
      return fail("this program is " + describeJob() +
                  ": launch the package with `weft-run PKG ...`, or every "
                  "stage with mpirun (" +
                  std::to_string(world) +
                  " processes in all, each world rank running the stage "
                  "that lists it)");
    if (launch.worldSize >= 0 && launch.worldSize != world)
      return fail("launched as one of " + std::to_string(launch.worldSize) +
                  " processes, but this program is " + describeJob() +
                  ": launch exactly " + std::to_string(world) +
                  " (weft-run PKG, or mpirun with every stage)");
    // Only this rank may be wrong (another stage's executable runs here):
    // the others cannot agree with it yet, so it speaks for itself.
    const std::vector<int32_t> &ranks = signature.meshWorldRanks;
    if (launch.rank >= 0 &&
        std::find(ranks.begin(), ranks.end(), launch.rank) == ranks.end())
      return failOnThisRank(
          "launched as world rank " + std::to_string(launch.rank) +
          ", but this program is " + describeJob() + ": world rank " +
          std::to_string(launch.rank) +
          " runs another stage (check the order of mpirun's app contexts)");
    // Nor may another rank of this rank's app context (the same
    // executable). That rank says so too; this one must not go on to start
    // MPI, whose start-up waits for every rank: mpirun, ending the job as
    // the wrong ranks exit, could then hang on this one's half-made
    // connection (Open MPI 4.1, about one launch in ten here).
    for (int64_t other : launch.appContextRanks)
      if (std::find(ranks.begin(), ranks.end(), other) == ranks.end()) {
        int code = failOnThisRank(
            "launched in an mpirun app context of world ranks " +
            formatRankList(std::vector<int32_t>(launch.appContextRanks.begin(),
                                                launch.appContextRanks.end())) +
            ", but this program is " + describeJob() + ": world rank " +
            std::to_string(other) +
            " runs another stage (check the order of mpirun's app "
            "contexts)");
        // The misplaced rank's own message comes first.
        waitForSpeakingRanks();
        return code;
      }
    return kExitOk;
  }
  std::string mesh = formatMesh(signature.mesh);
  long long devices = static_cast<long long>(signature.meshDevices);
  if (!launch.launched)
    return fail("this program is one device of the mesh " + mesh + " (" +
                std::to_string(devices) +
                " devices): launch the package with `weft-run PKG ...`, or "
                "every device with `mpirun -np " +
                std::to_string(devices) + " ...`");
  if (launch.worldSize < 0 || launch.worldSize == devices)
    return kExitOk;
  return fail("launched as one of " + std::to_string(launch.worldSize) +
              " processes, but this program is one device of the mesh " + mesh +
              " (" + std::to_string(devices) + " devices): launch exactly " +
              std::to_string(devices) + " (weft-run PKG, or mpirun -np " +
              std::to_string(devices) + ")");
}

int Driver::createContext() {
  weft_rt_status status = weft_rt_context_create(&ctx);
  if (!ctx)
    return internalError("cannot create a runtime context (out of memory?)");
  // A bad WEFT_NUM_THREADS does not matter when --threads overrides it.
  if (status != WEFT_RT_OK && options.threads == 0)
    return failStatus(status, "");
  if (options.threads > 0) {
    status = weft_rt_context_set_num_threads(ctx, options.threads);
    if (status != WEFT_RT_OK)
      return failStatus(status, "--threads: ");
  }
  return kExitOk;
}

void Driver::enterPhase(int next) {
  phase.store(next, std::memory_order_relaxed);
  if (detector)
    detector->beatNow();
}

/// One line for the launcher: what this rank does now. Reads only atomics
/// and the signature, which the main thread no longer changes.
std::string Driver::describeActivity() const {
  std::string run = "run " + std::to_string(runIndex.load());
  switch (phase.load(std::memory_order_relaxed)) {
  case kStarting:
    return "starting";
  case kJoiningMesh:
    return "joining the mesh (MPI start-up)";
  case kLoading:
    return "loading the weights and inputs";
  case kAgreeing:
    return "agreeing with the other ranks on the outcome";
  case kAtBarrier:
    return "waiting for the other ranks before " + run;
  case kFinishing:
    return "writing the outputs";
  default:
    break;
  }
  int64_t op = ctx ? ctx->currentOp.load(std::memory_order_relaxed) : -1;
  if (op < 0 || static_cast<size_t>(op) >= signature.ops.size())
    return "in " + run;
  const OpSpec &info = signature.ops[op];
  return "in " + run + ", op " + std::to_string(op) + " (" + info.kind + " " +
         info.name + ")";
}

int Driver::startDetector() {
  HeartbeatConfig config;
  std::string error;
  if (!readHeartbeatConfig(config, error))
    return fail(error);
  LaunchInfo launch = readLaunchInfo();
  int myRank = launch.rank >= 0 ? static_cast<int>(launch.rank) : 0;
  std::string prefix =
      exeName +
      (signature.multiRank()
           ? " " + formatRanks({myRank}, static_cast<int>(signature.worldSize))
           : std::string());
  // Both failures end the process from the detector's thread, `delay`
  // after they are seen: the main thread may be blocked in a wait that will
  // never return.
  auto endAfter = [prefix](std::chrono::seconds delay) {
    return [prefix, delay](const std::string &message) {
      std::this_thread::sleep_for(delay);
      std::fprintf(stderr, "%s: error: %s\n", prefix.c_str(), message.c_str());
      std::fflush(stderr);
      std::_Exit(kExitPeerFailed);
    };
  };
  // When weft-run is gone, mpirun got SIGTERM too, and stops this rank in
  // order (removing its session folder) if it is given a moment first.
  detector = std::make_unique<FailureDetector>(
      ctx, [this] { return describeActivity(); },
      endAfter(std::chrono::seconds(2)), endAfter(std::chrono::seconds(0)));
  if (!detector->start(config, myRank, error)) {
    detector.reset();
    return report(kExitPeerFailed, "error: " + error);
  }
  return kExitOk;
}

int Driver::createComm() {
  if (!mesh)
    return fail("the program is " +
                (signature.pipeline()
                     ? describeJob()
                     : "one device of a " +
                           std::to_string(signature.meshDevices) +
                           "-device mesh") +
                ", but this executable was linked without mesh support "
                "(MPI); recompile the package with weftc");
  weft_rt_status status = WEFT_RT_OK;
  if (signature.pipeline()) {
    // A stage of one device may have no mesh record: it is the mesh [1].
    std::vector<int64_t> dims =
        signature.mesh.empty() ? std::vector<int64_t>{1} : signature.mesh;
    status = mesh->createPipelineComm(
        ctx, static_cast<int32_t>(dims.size()), dims.data(),
        signature.meshWorldRanks.data(),
        static_cast<int32_t>(signature.worldSize), &comm);
  } else {
    status = mesh->createComm(ctx, static_cast<int32_t>(signature.mesh.size()),
                              signature.mesh.data(), &comm);
  }
  // The broadcast groups are created once, here, before the first run:
  // every rank of the job lists the same ones.
  if (status == WEFT_RT_OK && !signature.broadcastGroups.empty()) {
    std::vector<int32_t> sizes, ranks;
    for (const std::vector<int32_t> &group : signature.broadcastGroups) {
      sizes.push_back(static_cast<int32_t>(group.size()));
      ranks.insert(ranks.end(), group.begin(), group.end());
    }
    status = mesh->createBroadcastGroups(ctx, comm,
                                         static_cast<int32_t>(sizes.size()),
                                         sizes.data(), ranks.data());
  }
  if (status == WEFT_RT_OK) {
    weft_rt_context_set_comm(ctx, comm);
    rank = weft_rt_comm_rank(comm);
    return kExitOk;
  }
  return failStatus(status, "");
}

int Driver::createModel(const char *argv0) {
  std::string weightsPath = options.weightsPath;
  bool explicitWeights = !weightsPath.empty();
  if (!explicitWeights) {
    weightsPath = defaultWeightsPath(argv0);
    struct stat info;
    // Programs without weights need no file; packages may still ship an
    // empty one.
    if (signature.weightsBytes == 0 && stat(weightsPath.c_str(), &info) != 0)
      weightsPath.clear();
  }
  weft_rt_status status = weft_rt_model_create(
      ctx, program, weightsPath.empty() ? nullptr : weightsPath.c_str(),
      &model);
  if (status == WEFT_RT_OK)
    return kExitOk;
  if (status == WEFT_RT_IO_ERROR && !explicitWeights)
    return fail(std::string(weft_rt_context_error(ctx)) +
                " (the default place next to the executable; pass "
                "--weights FILE)");
  return failStatus(status, "");
}

/// One batch: the program runs once per microbatch, on consecutive blocks
/// of dimension 0 of every input (contiguous, row-major). Each pass copies
/// its inputs into the arena (a program may reuse input bytes as scratch).
/// With `into`, the collector's outputs of each pass go to their block of
/// the batch's outputs there.
weft_rt_status Driver::runBatch(const std::vector<LoadedTensor> &batch,
                                const std::vector<void *> *into) {
  int64_t passes = signature.microbatches;
  int32_t numInputs = weft_rt_model_num_inputs(model);
  int32_t numOutputs = weft_rt_model_num_outputs(model);
  for (int64_t pass = 0; pass < passes; ++pass) {
    for (int32_t i = 0; i < numInputs; ++i) {
      const std::vector<uint8_t> &data = batch[i].tensor.data;
      size_t block = data.size() / static_cast<size_t>(passes);
      if (block)
        std::memcpy(weft_rt_model_input_data(model, i),
                    data.data() + static_cast<size_t>(pass) * block, block);
    }
    if (weft_rt_status status = weft_rt_model_run(model))
      return status;
    if (!into)
      continue;
    for (int32_t o = 0; o < numOutputs; ++o) {
      size_t block = signature.outputs[o].bytes / static_cast<size_t>(passes);
      std::memcpy(static_cast<uint8_t *>((*into)[o]) +
                      static_cast<size_t>(pass) * block,
                  weft_rt_model_output_data(model, o), block);
    }
  }
  return WEFT_RT_OK;
}

int Driver::runAll() {
  int64_t warmup = options.benchRuns ? options.warmupRuns : 0;
  int64_t timed = options.benchRuns ? options.benchRuns : 1;
  timesMs.reserve(static_cast<size_t>(timed));
  int current = weft_rt_context_num_threads(ctx);
  // A program of microbatches leaves only the last one's outputs in the
  // arena: the collector joins them into the batch's.
  const std::vector<void *> *into = nullptr;
  std::vector<void *> slots;
  if (signature.microbatches > 1 && rank == signature.collectorRank) {
    batchOutputs = RequestOutputs(signature, 1);
    slots = batchOutputs.slots(0);
    into = &slots;
  }
  threads = std::make_unique<ThreadAdapter>(options.fixedThreads ? 1 : current);
  // A profile of several ranks is merged on rank 0's clock: the offsets are
  // measured before and after the runs, as clocks of several hosts drift.
  bool syncClocks = comm && !options.profilePath.empty();
  if (syncClocks)
    ctx->clockSync.push_back(mesh->syncClock(comm, exeName));
  for (int64_t run = 0; run < warmup + timed; ++run) {
    // Fewer threads when fewer were faster (see ThreadAdapter.h).
    int next = options.fixedThreads ? current : threads->next();
    if (next != weft_rt_context_num_threads(ctx))
      weft_rt_context_set_num_threads(ctx, next);
    runIndex.store(run, std::memory_order_relaxed);
    // Ranks start each run together, so that a run's time is its own and
    // not another rank's late start.
    if (comm) {
      phase.store(kAtBarrier, std::memory_order_relaxed);
      mesh->barrier(comm, exeName);
    }
    phase.store(kRunning, std::memory_order_relaxed);
    // The profile covers the timed runs only: warm-up runs fault pages in.
    if (run == warmup && !options.profilePath.empty()) {
      weft_rt_model_enable_profile(model);
      // Room for every event up to a few million (~24 bytes each), so that
      // recording them does not allocate inside the timed runs.
      uint64_t events =
          static_cast<uint64_t>(timed) * (signature.ops.size() + 1);
      ctx->events.reserve(std::min<uint64_t>(events, 1u << 22));
    }
    auto start = std::chrono::steady_clock::now();
    weft_rt_status status = runBatch(inputs, into);
    auto end = std::chrono::steady_clock::now();
    if (status != WEFT_RT_OK)
      return failStatus(status, "the model failed: ");
    double ms = std::chrono::duration<double, std::milli>(end - start).count();
    if (!options.fixedThreads)
      threads->record(next, ms);
    if (run >= warmup)
      timesMs.push_back(ms);
  }
  if (syncClocks)
    ctx->clockSync.push_back(mesh->syncClock(comm, exeName));
  // The count the user asked for, for what follows (and the report).
  if (weft_rt_context_num_threads(ctx) != current)
    weft_rt_context_set_num_threads(ctx, current);
  return kExitOk;
}

/// --stream N: every rank runs --warmup requests, then (after a barrier)
/// the N requests back to back, without a barrier between them, so that a
/// pipeline's first stage starts request i + 1 while the next stage works
/// on i (each rank waits only for the data it receives). Times are taken against one start after a barrier,
/// so that they compare across the ranks of one machine.
int Driver::runStream() {
  int64_t n = options.streamRequests;
  bool collects = rank == signature.collectorRank;
  bool keep = collects && (!options.outputDir.empty() ||
                           !options.checkDir.empty());
  if (keep)
    requestOutputs = RequestOutputs(signature, n);
  streamStartMs.assign(static_cast<size_t>(n), 0);
  streamEndMs.assign(static_cast<size_t>(n), 0);
  // Warm-up requests (untimed, their outputs dropped) fault the arena and
  // weights in and fill the caches on every rank.
  phase.store(kRunning, std::memory_order_relaxed);
  for (int64_t r = 0; r < options.warmupRuns; ++r) {
    const std::vector<LoadedTensor> &data =
        requests.inputs[static_cast<size_t>(r) % requests.inputs.size()];
    if (weft_rt_status status = runBatch(data, nullptr))
      return failStatus(status, "warm-up request " + std::to_string(r) +
                                    ": the model failed: ");
  }
  if (comm) {
    phase.store(kAtBarrier, std::memory_order_relaxed);
    mesh->barrier(comm, exeName);
  }
  phase.store(kRunning, std::memory_order_relaxed);
  auto epoch = std::chrono::steady_clock::now();
  auto sinceEpoch = [&] {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - epoch)
        .count();
  };
  for (int64_t r = 0; r < n; ++r) {
    runIndex.store(r, std::memory_order_relaxed);
    streamStartMs[r] = sinceEpoch();
    std::vector<void *> slots;
    if (keep)
      slots = requestOutputs.slots(r);
    const std::vector<LoadedTensor> &data =
        requests.inputs[static_cast<size_t>(r) % requests.inputs.size()];
    if (weft_rt_status status = runBatch(data, keep ? &slots : nullptr))
      return failStatus(status, "request " + std::to_string(r) +
                                    ": the model failed: ");
    streamEndMs[r] = sinceEpoch();
  }
  return kExitOk;
}

/// After a stream, on the collector: the throughput line, then every
/// request's outputs written or checked.
int Driver::finishStream() {
  if (rank != signature.collectorRank)
    return kExitOk;
  int64_t n = options.streamRequests;
  std::printf("%s\n",
              formatThroughputLine(summarizeStream(streamStartMs, streamEndMs))
                  .c_str());
  std::string error;
  if (!options.outputDir.empty() &&
      !writeRequestOutputs(options.outputDir, options.outputFormat, signature,
                           requestOutputs, n, error))
    return fail(error);
  if (!options.checkDir.empty() &&
      !checkRequestOutputs(stdout, signature, requestOutputs, n, requests,
                           options.tolerance))
    return kExitMismatch;
  return kExitOk;
}

void Driver::printBenchmark() {
  std::vector<double> sorted = timesMs;
  double mean = 0;
  for (double t : sorted)
    mean += t;
  mean /= static_cast<double>(sorted.size());
  auto [median, min] = medianAndMin(sorted);
  std::printf("bench: %zu runs after %lld warm-up runs, ", sorted.size(),
              static_cast<long long>(options.warmupRuns));
  // Each rank's own count: a rank launched with another environment shows.
  bool same = std::all_of(threadsByRank.begin(), threadsByRank.end(),
                          [&](int n) { return n == threadsByRank[0]; });
  if (!comm)
    std::printf("%d threads", weft_rt_context_num_threads(ctx));
  else if (same)
    std::printf("%d threads per rank", threadsByRank[0]);
  else
    for (size_t r = 0; r < threadsByRank.size(); ++r)
      std::printf("%s%d", r ? "," : "threads by rank ", threadsByRank[r]);
  if (comm)
    std::printf(", %d ranks (a run lasts until the slowest rank ends)",
                weft_rt_comm_size(comm));
  if (threads && threads->runsBelowMaximum() > 0)
    std::printf("; %s%lld of %lld runs used fewer threads, which were faster "
                "then (a busy machine; --fixed-threads to forbid)",
                comm ? "rank 0: " : "",
                static_cast<long long>(threads->runsBelowMaximum()),
                static_cast<long long>(threads->runs()));
  std::printf("\n");
  std::printf("median %.4f ms  min %.4f ms\n", median, min);
  std::printf("mean %.4f ms  max %.4f ms\n", mean, sorted.back());
}

/// The ops that took longest over all profiled runs, by kind and name.
void Driver::printProfileSummary() {
  std::map<int64_t, std::pair<double, int64_t>> byOp; // id -> (us, calls)
  double total = 0;
  size_t runs = 0;
  for (const ProfileEvent &event : ctx->events) {
    if (event.opId == kRunEventId) {
      total += event.durationUs;
      ++runs;
      continue;
    }
    auto &entry = byOp[event.opId];
    entry.first += event.durationUs;
    ++entry.second;
  }
  std::vector<std::pair<double, int64_t>> ranked;
  for (const auto &[id, entry] : byOp)
    ranked.push_back({entry.first, id});
  std::sort(ranked.rbegin(), ranked.rend());
  std::printf("profile: %s (%zu runs, %zu op events)%s; slowest ops, "
              "share of run time and ms per run:\n",
              comm ? rankedPath(options.profilePath, rank).c_str()
                   : options.profilePath.c_str(),
              runs, ctx->events.size() - runs,
              comm ? " and one file per rank" : "");
  for (size_t i = 0; i < std::min<size_t>(ranked.size(), 5); ++i) {
    int64_t id = ranked[i].second;
    bool known = id >= 0 && static_cast<size_t>(id) < signature.ops.size();
    std::printf("  %5.1f%%  %10.4f ms  %s %s\n",
                total > 0 ? 100.0 * ranked[i].first / total : 0.0,
                ranked[i].first / 1000.0 / std::max<size_t>(runs, 1),
                known ? signature.ops[id].kind.c_str() : "?",
                known ? signature.ops[id].name.c_str()
                      : ("op " + std::to_string(id)).c_str());
  }
}

/// Reads the inputs (every rank) and the expected outputs (the collector,
/// which checks them).
int Driver::loadTensors(std::vector<LoadedTensor> &expected) {
  std::string error;
  std::vector<std::string> notes;
  bool collects = rank == signature.collectorRank;
  if (options.streamRequests) {
    if (!loadRequests(options, signature, collects, requests, notes, error))
      return fail(error);
  } else {
    if (!loadInputs(options, signature, inputs, notes, error))
      return fail(error);
    if (!options.checkDir.empty() && collects &&
        !loadExpectedOutputs(options.checkDir, signature, expected, notes,
                             error))
      return fail(error);
  }
  for (const std::string &text : notes)
    note(text);
  return kExitOk;
}

/// After the runs: the profile (every rank its own), then the outputs,
/// which the collector prints, writes or checks.
int Driver::finish(const std::vector<LoadedTensor> &expected) {
  if (!options.profilePath.empty()) {
    std::string path =
        comm ? rankedPath(options.profilePath, rank) : options.profilePath;
    if (weft_rt_status status =
            weft_rt_model_write_profile(model, path.c_str()))
      return failStatus(status, "");
    if (!options.quiet && rank == signature.collectorRank)
      printProfileSummary();
  }
  if (rank != signature.collectorRank)
    return kExitOk;
  std::string error;
  std::vector<const void *> outputs;
  if (signature.microbatches > 1)
    outputs = batchOutputs.of(0);
  else
    for (int32_t i = 0; i < weft_rt_model_num_outputs(model); ++i)
      outputs.push_back(weft_rt_model_output_data(model, i));
  if (!options.outputDir.empty() &&
      !writeOutputs(options.outputDir, options.outputFormat, signature, outputs,
                    error))
    return fail(error);
  if (!options.quiet && options.checkDir.empty() && options.outputDir.empty())
    printOutputs(stdout, signature, outputs);
  if (options.benchRuns)
    printBenchmark();
  if (!options.checkDir.empty() &&
      !checkOutputs(stdout, signature, outputs, expected, options.tolerance))
    return kExitMismatch;
  return kExitOk;
}

int Driver::main(int argc, char **argv) {
  // The signature first: whether this is a mesh decides who reports.
  std::string signatureError, error;
  bool signatureOk =
      program && parseSignature(program->signature, signature, signatureError);
  // From here on the signature describes a batch; runBatch cuts it into
  // the program's microbatches.
  if (signatureOk)
    signatureOk = scaleToBatch(signature, signatureError);
  if (!parseDriverOptions(argc, argv, options, error))
    return fail(error);
  // Under mpirun every rank would print the same text.
  if ((options.help || options.version) && signature.multiRank() &&
      readLaunchInfo().rank > 0)
    return kExitOk;
  if (options.help) {
    printDriverUsage(stdout, exeName, signatureOk ? &signature : nullptr);
    return kExitOk;
  }
  if (options.version) {
    std::printf("%s (Weft) %s\n  runtime ABI %d\n", exeName.c_str(),
                WEFT_VERSION_STRING, WEFT_RT_ABI_VERSION);
    return kExitOk;
  }
  if (!program)
    return internalError("no program was linked into this executable");
  if (!signatureOk)
    return internalError("the program's " + signatureError);

  // A single device never touches MPI; a stage of a pipeline does, even of
  // one device (its transfers need the world).
  bool inMesh = signature.multiRank();
  if (inMesh) {
    if (int code = checkLaunch())
      return code;
  }
  if (int code = createContext())
    return code;
  if (int code = startDetector())
    return code;
  if (inMesh) {
    enterPhase(kJoiningMesh);
    if (int code = createComm())
      return code;
  }
  enterPhase(kLoading);
  // From here on a mesh's ranks agree on every exit.
  std::vector<LoadedTensor> expected;
  int code = createModel(argc > 0 && argv[0] ? argv[0] : "");
  if (code == kExitOk)
    code = loadTensors(expected);
  enterPhase(kAgreeing);
  if (int agreed = agree(code))
    return agreed;

  if (int code = options.streamRequests ? runStream() : runAll()) {
    if (comm)
      mesh->abortMesh(comm, code, exeName, pending);
    return code;
  }
  enterPhase(kFinishing);
  int collector = signature.collectorRank;
  if (comm && options.streamRequests) {
    mesh->reduceTimes(comm, exeName, streamStartMs, TimeReduction::Earliest,
                      collector);
    mesh->reduceTimes(comm, exeName, streamEndMs, TimeReduction::Latest,
                      collector);
  } else if (comm) {
    mesh->reduceTimes(comm, exeName, timesMs, TimeReduction::Latest, collector);
    threadsByRank = mesh->gatherFromRanks(
        comm, exeName, weft_rt_context_num_threads(ctx), collector);
  }
  code = options.streamRequests ? finishStream() : finish(expected);
  enterPhase(kAgreeing);
  return agree(code);
}

int weft::rt::runDriver(const weft_rt_program *program, int argc, char **argv,
                        const MeshSupport *mesh) {
  if (argc > 0 && argv)
    applyOpenMpWaitPolicy(argv);
  std::string exeName = argc > 0 && argv[0] ? argv[0] : "weft-program";
  size_t slash = exeName.rfind('/');
  if (slash != std::string::npos)
    exeName = exeName.substr(slash + 1);
  int code = Driver(program, exeName, mesh).main(argc, argv);
  std::fflush(stdout);
  return code;
}
