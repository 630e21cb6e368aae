//===- weft-reshard-rank.cpp - One MPI rank of weft-reshard run -----------===//
//
// weft-reshard-rank --cluster SPEC --from SIDE --to SIDE --shape SHAPE
//                   --dtype DTYPE --method METHOD
//                   [--max-broadcast-groups N] [--inject-error]
//
// What `weft-reshard run` starts under mpirun, one process per device of
// either side: world rank i runs the i-th smallest cluster device. Every
// rank plans the resharding itself from the same flags (the planner is
// deterministic), creates its communicator (the source mesh for its
// members, a mesh of its own for the others) and the broadcast groups of
// every method's calls, once, then for each method: fills
// its source block, carries out its part of the plan (RankTransfer.cpp),
// checks its destination block bit for bit and counts its bytes. World
// rank 0 gathers every rank's counts and prints them in rank order, then
// the verdict, which every rank returns as its exit code.
//
//===----------------------------------------------------------------------===//

#include "RankData.h"
#include "RankTransfer.h"
#include "Request.h"

#include "weft/Plan/Sharding.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include "weft_rt.h"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <sched.h>

using namespace llvm;
using namespace weft::plan;
using namespace weft::reshard;

namespace {

/// This process's place in the world, for messages.
struct Process {
  int rank = 0, size = 1;

  raw_ostream &error() const {
    return errs() << "weft-reshard-rank [rank " << rank << "/" << size
                  << "]: error: ";
  }
  /// Says why and stops every rank with `code` (the launcher reads the
  /// note line, see lib/Launch/MpirunReport.h).
  [[noreturn]] void abort(const Twine &message, int code) const {
    error() << message << "\n";
    errs() << "weft-reshard-rank [rank " << rank << "/" << size
           << "]: note: stopping every rank (MPI_Abort with exit code " << code
           << ")\n";
    outs().flush();
    errs().flush();
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }
};

/// One rank's counts for one plan, as world rank 0 gathers them.
struct RankReport {
  int64_t device = 0;
  /// 1: source, 2: destination, 3: both.
  int64_t role = 0;
  int64_t sent = 0, received = 0;
  int64_t checked = 0, mismatched = 0;
  int64_t firstIndex = -1;
  int64_t got = 0, expected = 0;
  int64_t nanoseconds = 0;
};
constexpr int kReportFields = sizeof(RankReport) / sizeof(int64_t);

} // namespace

/// The first world rank whose destination block has elements: the one that
/// --inject-error spoils.
static int injectedRank(const RankSetup &setup) {
  const ReshardProblem &problem = setup.request->problem;
  const Mesh &mesh = problem.destination.mesh;
  for (size_t r = 0; r < setup.world.size(); ++r) {
    auto it = llvm::find(mesh.devices, setup.world[r]);
    if (it == mesh.devices.end())
      continue;
    Box box = blockBox(problem.shape, problem.destination.sharding, mesh.shape,
                       it - mesh.devices.begin());
    if (box.elements() > 0)
      return static_cast<int>(r);
  }
  return -1;
}

/// "source", "dest" or "both" for RankReport::role.
static const char *roleName(int64_t role) {
  if (role == 3)
    return "both";
  return role == 1 ? "source" : "dest";
}

/// The bits as hex digits of the element's width.
static std::string hexBits(int64_t bits, int64_t elementBytes) {
  return "0x" + utohexstr(static_cast<uint64_t>(bits), /*LowerCase=*/true,
                          static_cast<unsigned>(elementBytes * 2));
}

static int availableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

/// World rank 0's table and verdict for one plan; returns 0 or 2.
static int printReports(const RankSetup &setup, const ReshardPlan &plan,
                        ArrayRef<RankReport> reports) {
  const ReshardProblem &problem = setup.request->problem;
  raw_ostream &os = outs();
  os << "\nrun " << reshardMethodName(plan.method) << ": "
     << plan.messages.size() << " messages, "
     << formatBytes(static_cast<double>(plan.bytesMoved)) << " moved"
     << (plan.inMesh ? " (in-mesh collectives, no messages)" : "")
     << ", predicted " << formatSeconds(plan.predictedSeconds) << "\n";
  os << formatv("{0,5} {1,6} {2,-6} {3,12} {4,12} {5,12} {6,12} {7,10} "
                "{8,10} {9,11}\n",
                "rank", "device", "role", "sent", "planned", "received",
                "planned", "checked", "mismatched", "transfer");
  int64_t checked = 0, mismatched = 0;
  int firstBad = -1, slowest = 0;
  std::vector<int> byteRanks;
  for (size_t r = 0; r < reports.size(); ++r) {
    const RankReport &report = reports[r];
    int64_t planSent = plan.bytesSent[report.device];
    int64_t planReceived = plan.bytesReceived[report.device];
    os << formatv("{0,5} {1,6} {2,-6} {3,12} {4,12} {5,12} {6,12} {7,10} "
                  "{8,10} {9,11}\n",
                  r, report.device, roleName(report.role), report.sent,
                  planSent, report.received, planReceived, report.checked,
                  report.mismatched, formatSeconds(report.nanoseconds * 1e-9));
    checked += report.checked;
    mismatched += report.mismatched;
    if (report.mismatched && firstBad < 0)
      firstBad = static_cast<int>(r);
    if (report.sent != planSent || report.received != planReceived)
      byteRanks.push_back(static_cast<int>(r));
    if (report.nanoseconds > reports[slowest].nanoseconds)
      slowest = static_cast<int>(r);
  }
  std::vector<std::string> failures;
  if (mismatched) {
    const RankReport &bad = reports[firstBad];
    failures.push_back(std::to_string(mismatched) + " mismatched element" +
                       (mismatched == 1 ? "" : "s") + " of " +
                       std::to_string(checked) + " (first: rank " +
                       std::to_string(firstBad) + ", device " +
                       std::to_string(bad.device) + ", element " +
                       formatIndex(problem.shape, bad.firstIndex) + ": bits " +
                       hexBits(bad.got, problem.elementBytes) + ", expected " +
                       hexBits(bad.expected, problem.elementBytes) + ")");
  }
  if (!byteRanks.empty())
    failures.push_back(
        "bytes differ from the plan on " + std::to_string(byteRanks.size()) +
        " rank" + (byteRanks.size() == 1 ? "" : "s") + " (" +
        join(map_range(byteRanks, [](int r) { return std::to_string(r); }),
             ", ") +
        ")");
  if (failures.empty())
    os << "check passed: " << reports.size() << " ranks, " << checked
       << " elements bit-exact, bytes as planned\n";
  else
    os << "check FAILED: " << join(failures, "; ") << "\n";
  os << "transfer wall time: max "
     << formatSeconds(reports[slowest].nanoseconds * 1e-9) << " (rank "
     << slowest << ", device " << reports[slowest].device << "); predicted "
     << formatSeconds(plan.predictedSeconds) << " on "
     << setup.request->cluster.name << "\n";
  os.flush();
  return failures.empty() ? 0 : 2;
}

/// Creates this rank's communicator: the source mesh for its members, a
/// mesh of one for the others (meshes share no member).
static weft_rt_comm *createComm(const Process &process,
                                const RankSetup &setup) {
  const Mesh &source = setup.request->problem.source.mesh;
  std::vector<int64_t> dims = {1};
  std::vector<int32_t> ranks = {process.rank};
  if (setup.sourcePosition >= 0) {
    dims = source.shape;
    ranks.clear();
    for (int device : source.devices)
      ranks.push_back(setup.worldRankOf(device));
  }
  weft_rt_comm *comm = nullptr;
  weft_rt_status status = weft_rt_comm_create_mpi_pipeline(
      setup.ctx, static_cast<int32_t>(dims.size()), dims.data(), ranks.data(),
      process.size, &comm);
  if (status != WEFT_RT_OK)
    process.abort(Twine("cannot create the communicator: ") +
                      weft_rt_context_error(setup.ctx),
                  status == WEFT_RT_COMM_ERROR ? 4 : 70);
  return comm;
}

/// Creates the broadcast groups of every plan's calls once, as a
/// pipeline's driver does at start-up, in world ranks.
static void createBroadcastGroups(const Process &process,
                                  const RankSetup &setup, weft_rt_comm *comm,
                                  const PlanGroups &groups) {
  std::vector<int32_t> sizes, ranks;
  for (const std::vector<int> &set : groups.sets) {
    sizes.push_back(static_cast<int32_t>(set.size()));
    for (int device : set)
      ranks.push_back(setup.worldRankOf(device));
  }
  weft_rt_status status = weft_rt_comm_create_broadcast_groups(
      setup.ctx, comm, static_cast<int32_t>(sizes.size()), sizes.data(),
      ranks.data());
  if (status != WEFT_RT_OK)
    process.abort(Twine("cannot create the broadcast groups: ") +
                      weft_rt_context_error(setup.ctx),
                  status == WEFT_RT_COMM_ERROR ? 4 : 70);
}

/// Runs one plan on this rank and returns the verdict every rank shares.
static int runOnePlan(const Process &process, const RankSetup &setup,
                      const ReshardPlan &plan, ArrayRef<int64_t> groupOf,
                      bool injectError) {
  std::optional<Block> source = makeSourceBlock(setup);
  TransferCounts counts;
  MPI_Barrier(MPI_COMM_WORLD);
  auto start = std::chrono::steady_clock::now();
  Expected<std::optional<Block>> destination =
      executePlan(setup, plan, groupOf, std::move(source), counts);
  auto end = std::chrono::steady_clock::now();
  if (!destination) {
    int code = 70;
    std::string message;
    handleAllErrors(destination.takeError(), [&](const RankError &error) {
      message = error.message;
      code = error.exitCode;
    });
    process.abort(reshardMethodName(plan.method) + ": " + message, code);
  }
  RankReport report;
  report.device = setup.device;
  report.role = (setup.sourcePosition >= 0 ? 1 : 0) +
                (setup.destinationPosition >= 0 ? 2 : 0);
  report.sent = counts.bytesSent;
  report.received = counts.bytesReceived;
  report.nanoseconds =
      std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count();
  if (*destination) {
    Block &block = **destination;
    if (injectError && injectedRank(setup) == process.rank)
      block.data[0] ^= 1;
    CheckResult check = checkBlock(block, setup.values());
    report.checked = check.checked;
    report.mismatched = check.mismatched;
    report.firstIndex = check.firstIndex;
    report.got = static_cast<int64_t>(check.got);
    report.expected = static_cast<int64_t>(check.expected);
  }
  std::vector<RankReport> reports(process.rank == 0 ? process.size : 0);
  MPI_Gather(&report, kReportFields, MPI_INT64_T, reports.data(), kReportFields,
             MPI_INT64_T, 0, MPI_COMM_WORLD);
  int verdict = process.rank == 0 ? printReports(setup, plan, reports) : 0;
  MPI_Bcast(&verdict, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return verdict;
}

/// Everything after MPI_Init; returns the exit code.
static int runRank(const Process &process, ArrayRef<StringRef> args) {
  auto fail = [&](const Twine &message) {
    // Every rank finds the same problem in the same flags: one says it.
    if (process.rank == 0)
      process.error() << message << "\n";
    return 1;
  };
  FlagSpec spec{"weft-reshard-rank",
                {"--cluster", "--from", "--to", "--shape", "--dtype",
                 "--method", "--max-broadcast-groups"},
                {"--inject-error"},
                {}};
  Expected<Flags> flags = parseFlags(args, spec);
  if (!flags)
    return fail(toString(flags.takeError()));
  Expected<PlanRequest> request =
      buildPlanRequest(*flags, "weft-reshard-rank", "balanced");
  if (!request)
    return fail(toString(request.takeError()));
  if (!runSupportsDType(request->dtype))
    return fail("--dtype " + dtypeName(request->dtype) +
                " cannot be run (supported: " + runDTypeNames() + ")");
  Expected<std::vector<ReshardPlan>> plans = planAll(*request);
  if (!plans)
    return fail(toString(plans.takeError()));

  const ReshardProblem &problem = request->problem;
  RankSetup setup;
  setup.request = &*request;
  setup.runtimeDType = runtimeDType(request->dtype);
  setup.world = problem.source.mesh.devices;
  llvm::append_range(setup.world, problem.destination.mesh.devices);
  llvm::sort(setup.world);
  setup.world.erase(std::unique(setup.world.begin(), setup.world.end()),
                    setup.world.end());
  if (static_cast<int>(setup.world.size()) != process.size)
    return fail("launched as one of " + Twine(process.size) +
                " processes, but the two meshes have " +
                Twine(setup.world.size()) +
                " devices: weft-reshard run starts one process per device");
  setup.worldRank = process.rank;
  setup.device = setup.world[process.rank];
  auto position = [&](const Mesh &mesh) {
    auto it = llvm::find(mesh.devices, setup.device);
    return it == mesh.devices.end()
               ? -1
               : static_cast<int>(it - mesh.devices.begin());
  };
  setup.sourcePosition = position(problem.source.mesh);
  setup.destinationPosition = position(problem.destination.mesh);

  weft_rt_context *ctx = nullptr;
  if (weft_rt_context_create(&ctx) != WEFT_RT_OK)
    process.abort("cannot create a runtime context", 70);
  weft_rt_context_set_num_threads(ctx, 1);
  setup.ctx = ctx;
  weft_rt_comm *comm = createComm(process, setup);
  PlanGroups groups =
      assignBroadcastGroups(*plans, request->maxBroadcastGroups);
  createBroadcastGroups(process, setup, comm, groups);
  weft_rt_context_set_comm(ctx, comm);

  int verdict = 0;
  for (auto [i, plan] : llvm::enumerate(*plans))
    verdict =
        std::max(verdict, runOnePlan(process, setup, plan, groups.groupOf[i],
                                     flags->has("--inject-error")));
  if (process.rank == 0)
    outs() << "\nnote: transfer = a rank's wall time from a barrier to the "
              "end of its reduction, collectives and messages; "
           << process.size << " ranks share " << availableCores()
           << " cores here, so with more ranks than cores these times "
              "measure the scheduler more than the plan\n";
  outs().flush();
  weft_rt_context_set_comm(ctx, nullptr);
  weft_rt_comm_destroy(comm);
  weft_rt_context_destroy(ctx);
  return verdict;
}

int main(int argc, char **argv) {
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) !=
      MPI_SUCCESS) {
    errs() << "weft-reshard-rank: error: MPI_Init_thread failed (start it "
              "with weft-reshard run)\n";
    return 4;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  Process process;
  MPI_Comm_rank(MPI_COMM_WORLD, &process.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &process.size);
  std::vector<StringRef> args(argv + 1, argv + argc);
  int code = 0;
  if (llvm::is_contained(args, "--help")) {
    if (process.rank == 0)
      outs() << "usage: weft-reshard-rank --cluster SPEC --from SIDE --to "
                "SIDE --shape SHAPE --dtype DTYPE --method METHOD "
                "[--inject-error]\n\nOne MPI rank of `weft-reshard run`, "
                "which starts one per device of either side under mpirun; "
                "see weft-reshard --help.\n";
  } else {
    code = runRank(process, args);
  }
  MPI_Finalize();
  return code;
}
