//===- Run.cpp - weft-reshard run: a plan executed and checked ------------===//
//
// Checks what a run needs before anything starts (a cluster of CPU
// processes, a dtype the check knows, tags for every message, exact
// partial sums, memory for every rank), prints the plans' summaries, then
// launches weft-reshard-rank (installed beside weft-reshard) once per
// device of either side through lib/Launch, which finds mpirun, adds the
// flags that root and more ranks than cores need, applies the timeout and
// maps a failed rank to exit 4. The ranks print the per-rank table and the
// verdict (weft-reshard-rank.cpp).
//
//===----------------------------------------------------------------------===//

#include "Run.h"
#include "RankData.h"
#include "Request.h"

#include "weft/Launch/Launch.h"
#include "weft/Plan/ReshardText.h"
#include "weft/Plan/Sharding.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <set>

using namespace llvm;
using namespace weft::plan;
using namespace weft::reshard;

/// A message's tag is its index in the plan: the runtime takes tags below
/// this.
static constexpr int64_t kMaxMessages = int64_t(1) << 20;

/// Memory a rank needs besides its data (MPI, the runtime's libraries).
static constexpr double kRankOverheadBytes = 64.0 * (1 << 20);

static int fail(const Twine &message, int code = weft::run::kExitBadInput) {
  WithColor::error(errs(), "weft-reshard") << message << "\n";
  return code;
}

/// The devices of either side, increasing: world rank i runs world[i].
static std::vector<int> worldDevices(const ReshardProblem &problem) {
  std::set<int> devices(problem.source.mesh.devices.begin(),
                        problem.source.mesh.devices.end());
  devices.insert(problem.destination.mesh.devices.begin(),
                 problem.destination.mesh.devices.end());
  return {devices.begin(), devices.end()};
}

/// An error when some device of the cluster is not a CPU process.
static std::optional<std::string> nonCpuCluster(const Cluster &cluster,
                                                StringRef spec) {
  std::set<std::string> kinds;
  for (const Device &device : cluster.devices) {
    const DeviceKind &kind = cluster.kinds[device.kind];
    if (!kind.isCpu())
      kinds.insert(kind.name + " (" + kind.backend + ")");
  }
  if (kinds.empty())
    return std::nullopt;
  return "--cluster '" + spec.str() + "' has " +
         join(kinds.begin(), kinds.end(), ", ") +
         " devices: it is planning-only for runs (weft-reshard run executes "
         "a plan with one CPU process per device); run it on --cluster cpu:" +
         std::to_string(cluster.devices.size()) +
         " with the same mesh shapes and device indices";
}

/// An error when the contributions of a partial sum (-3 to 3 each) may sum
/// to a value the dtype does not hold exactly.
static std::optional<std::string>
inexactPartialSum(const PlanRequest &request) {
  const ReshardSide &source = request.problem.source;
  int64_t members = groupSize(source.mesh.shape, source.sharding.partial);
  int64_t exactUpTo = request.dtype == DType::BF16  ? 256
                      : request.dtype == DType::F16 ? 2048
                                                    : INT64_MAX;
  if (source.sharding.partial.empty() || 3 * members <= exactUpTo)
    return std::nullopt;
  return "--from: the partial sum over " + std::to_string(members) +
         " devices is not exact in " + dtypeName(request.dtype).str() +
         " (each contributes -3 to 3); run it with --dtype f32";
}

/// About the bytes every rank together holds for `plan`: blocks, the
/// buffers kept for forwarding, a message in flight.
static double memoryNeeded(const PlanRequest &request, const ReshardPlan &plan,
                           ArrayRef<int> world) {
  const ReshardProblem &problem = request.problem;
  double total = 0;
  int64_t largestMessage = 0;
  for (const ReshardMessage &message : plan.messages)
    largestMessage = std::max(largestMessage, message.bytes);
  auto blockBytes = [&](const ReshardSide &side, int device) -> double {
    auto it = llvm::find(side.mesh.devices, device);
    if (it == side.mesh.devices.end())
      return 0;
    Box box = blockBox(problem.shape, side.sharding, side.mesh.shape,
                       it - side.mesh.devices.begin());
    return static_cast<double>(box.elements() * problem.elementBytes);
  };
  double tensor = static_cast<double>(tensorBytes(problem));
  for (int device : world) {
    double source = blockBytes(problem.source, device);
    double destination = blockBytes(problem.destination, device);
    double rank = kRankOverheadBytes + 2 * source +
                  destination * (1 + 1.0 / problem.elementBytes) +
                  static_cast<double>(plan.bytesReceived[device]) +
                  2 * static_cast<double>(largestMessage);
    // In-mesh steps hold a gathered block for a moment.
    if (plan.inMesh)
      rank += std::min(tensor, 4 * std::max(source, destination));
    total += rank;
  }
  return total;
}

/// The checks before a launch; an error message, or nothing.
static std::optional<std::string> checkRunnable(const PlanRequest &request,
                                                StringRef clusterSpec,
                                                ArrayRef<ReshardPlan> plans,
                                                ArrayRef<int> world) {
  if (std::optional<std::string> error =
          nonCpuCluster(request.cluster, clusterSpec))
    return error;
  if (!runSupportsDType(request.dtype))
    return "--dtype " + dtypeName(request.dtype).str() +
           " cannot be run: the check supports " + runDTypeNames();
  if (std::optional<std::string> error = inexactPartialSum(request))
    return error;
  double needed = 0;
  for (const ReshardPlan &plan : plans) {
    if (static_cast<int64_t>(plan.messages.size()) > kMaxMessages)
      return "run: the " + reshardMethodName(plan.method).str() + " plan has " +
             std::to_string(plan.messages.size()) +
             " messages, more than the " + std::to_string(kMaxMessages) +
             " a run can tag (a message's tag is its index, below 2^20); "
             "run a smaller tensor or another method";
    for (const ReshardMessage &message : plan.messages)
      if (!llvm::is_contained(world, message.from) ||
          !llvm::is_contained(world, message.to))
        return "internal: the " + reshardMethodName(plan.method).str() +
               " plan sends between devices " + std::to_string(message.from) +
               " and " + std::to_string(message.to) +
               ", which are not both in the two meshes";
    needed = std::max(needed, memoryNeeded(request, plan, world));
  }
  double available = hostMemoryBytes();
  if (available > 0 && needed > 0.8 * available)
    return "run: " + std::to_string(world.size()) + " ranks need about " +
           formatBytes(needed) +
           " of memory, more than 80% of this "
           "machine's " +
           formatBytes(available) + "; run a smaller --shape";
  return std::nullopt;
}

int weft::reshard::runRun(ArrayRef<StringRef> args) {
  FlagSpec spec{"run",
                {"--cluster", "--from", "--to", "--shape", "--dtype",
                 "--method", "--timeout", "--max-broadcast-groups"},
                {},
                {"--inject-error"}};
  Expected<Flags> flags = parseFlags(args, spec);
  if (!flags)
    return fail(toString(flags.takeError()));
  Expected<PlanRequest> request = buildPlanRequest(*flags, "run", "balanced");
  if (!request)
    return fail(toString(request.takeError()));
  weft::run::LaunchOptions launch;
  launch.timeoutSeconds = 120;
  if (flags->values.count("--timeout")) {
    StringRef value = flags->value("--timeout");
    if (value.getAsInteger(10, launch.timeoutSeconds) ||
        launch.timeoutSeconds < 0 || launch.timeoutSeconds > 100000000)
      return fail("--timeout must be a number of seconds >= 0 (0: never), "
                  "not '" +
                  value + "'");
  }
  launch.timeoutGiven = true;
  // weft-reshard-rank sends no heartbeats: the timeout bounds a hang.
  launch.detectAfterSeconds = 0;
  launch.toolName = "weft-reshard";

  Expected<std::vector<ReshardPlan>> plans = planAll(*request);
  if (!plans) {
    std::string message = toString(plans.takeError());
    return fail(message, StringRef(message).starts_with("internal")
                             ? weft::run::kExitInternal
                             : weft::run::kExitBadInput);
  }
  std::vector<int> world = worldDevices(request->problem);
  StringRef clusterSpec = flags->value("--cluster");
  if (std::optional<std::string> error =
          checkRunnable(*request, clusterSpec, *plans, world))
    return fail(*error, StringRef(*error).starts_with("internal")
                            ? weft::run::kExitInternal
                            : weft::run::kExitBadInput);
  std::string rankProgram = weft::run::findSiblingProgram("weft-reshard-rank");
  if (rankProgram.empty())
    return fail("run: weft-reshard-rank is not installed beside "
                "weft-reshard (it is built with the runtime: "
                "WEFT_BUILD_RUNTIME=ON)");

  raw_ostream &os = outs();
  printHeader(os, *request);
  os << "run: " << world.size()
     << " ranks under mpirun, one per device of either side (world rank i "
        "runs the i-th of devices "
     << formatDeviceList(world) << ")\n\n";
  printSummaryHeader(os);
  for (const ReshardPlan &plan : *plans)
    printSummary(os, plan);
  PlanGroups groups =
      assignBroadcastGroups(*plans, request->maxBroadcastGroups);
  if (!groups.sets.empty()) {
    os << "broadcast groups, created once at start-up (at most "
       << request->maxBroadcastGroups << "):";
    for (auto [g, set] : llvm::enumerate(groups.sets))
      os << (g ? ", " : " ") << g << " {" << formatDeviceList(set) << "}";
    os << "\n";
  }
  os.flush();

  // Every rank plans from the same flags; a spec file by its full path.
  SmallString<256> cluster(clusterSpec);
  if (std::optional<Expected<Cluster>> preset = loadPreset(clusterSpec))
    consumeError(preset->takeError());
  else
    sys::fs::make_absolute(cluster);
  std::vector<std::string> rankArgs = {
      rankProgram,
      "--cluster",
      cluster.str().str(),
      "--from",
      formatReshardSide(request->problem.source),
      "--to",
      formatReshardSide(request->problem.destination),
      "--shape",
      formatTensorShape(request->problem.shape),
      "--dtype",
      dtypeName(request->dtype).str(),
      "--method",
      flags->values.count("--method") ? flags->value("--method").str()
                                      : std::string("balanced")};
  rankArgs.push_back("--max-broadcast-groups");
  rankArgs.push_back(std::to_string(request->maxBroadcastGroups));
  if (flags->has("--inject-error"))
    rankArgs.push_back("--inject-error");
  weft::run::MpiJob job;
  job.ranks.assign(world.size(), rankArgs);
  job.threads = "1";
  job.purpose = "weft-reshard run starts one MPI process per device (" +
                std::to_string(world.size()) + " here)";
  return weft::run::runMpiJob(job, launch);
}
