//===- weft-reshard.cpp - Plan a tensor's move between meshes -------------===//
//
// weft-reshard SUBCOMMAND [options]
//
// The command line of lib/Plan's cross-mesh resharding planner: `plan`
// reads a cluster, the tensor and its two sides and prints the plan of one
// or every method (a table, or JSON); `run` (Run.cpp) executes the plan on
// CPU processes and checks it. Flags are read by Request.cpp; the syntax of
// a side is ReshardText's and the planning is Reshard's.
//
//===----------------------------------------------------------------------===//

#include "Request.h"
#include "Run.h"

#include "weft/Plan/Cluster.h"
#include "weft/Plan/Reshard.h"
#include "weft/Plan/ReshardText.h"
#include "weft/Version.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

using namespace llvm;
using namespace weft::plan;
using namespace weft::reshard;

/// The exit codes every Weft tool shares.
enum ExitCode { kExitSuccess = 0, kExitBadInput = 1, kExitInternal = 70 };

static int fail(const Twine &message, int code = kExitBadInput) {
  WithColor::error(errs(), "weft-reshard") << message << "\n";
  return code;
}

static void printHelp() {
  outs() << R"(usage: weft-reshard SUBCOMMAND [options]

Plans how a tensor moves from one mesh of a cluster's devices and sharding
to another (disjoint, overlapping or the same devices), as the ordered
point-to-point messages the runtime would send (a broadcast chain as one
runtime call that sends them), and predicts their time against the
physical lower bound. docs/Resharding.md explains the methods and the cost
model.

Subcommands:
  plan      print the plan of one method, or compare all four
  run       execute a plan on CPU processes under mpirun and check every
            destination block bit for bit

weft-reshard plan --cluster SPEC --from SIDE --to SIDE --shape SHAPE
                  [--dtype DTYPE] [--method METHOD] [--json]
                  [--max-broadcast-groups N]
  --cluster SPEC   a preset (cpu:N, dgx-h100x8, dgx-h100x8:K, p3.16xlarge:K,
                   p3.8xlarge:K, hetero-a100-v100) or a cluster spec file
                   (docs/ClusterSpec.md)
  --from SIDE      where the tensor is now, as SHAPE@DEVICES:SHARDING
  --to SIDE        where it must be (no partial sums)
  --shape SHAPE    the tensor's shape: 1024x1024x512, or 4096
  --dtype DTYPE    f32 (default), f16, bf16, f64, i8, i32, i64 or bool
  --method METHOD  send-recv, send-recv-allgather, broadcast, balanced, or
                   all (default: one summary line per method)
  --json           one JSON object ({"plans": [...]} for all methods)
  --max-broadcast-groups N
                   the most sub-communicators (broadcast groups, one per
                   device set) a run creates for its broadcast calls, 0 to
                   1024 (default 16); calls over other sets run over the
                   world

A side is MESH@DEVICES:SHARDING[+p[AXES]]:
  2x4@0-7:[[0],[],[]]      a 2x4 mesh on cluster devices 0..7 (row-major);
                           tensor dim 0 split over mesh axis 0, dims 1 and
                           2 whole
  2x2@4,5,8,9:[[],[0,1]]   a device list; dim 1 split over both mesh axes
                           (major first)
  1x4@0-3:[[1],[]]+p[0]    a pending partial sum over mesh axis 0 (reduced
                           on the source mesh first)
  1x1@0:[[]]               one device holding all of it
DEVICES mixes ranges and single devices: 0-3,8,10-11.

Examples:
  weft-reshard plan --cluster p3.8xlarge:5 --from '2x4@0-7:[[0],[],[]]' \
      --to '2x4@8-15:[[0],[],[]]' --shape 1024x1024x512
  weft-reshard plan --cluster cpu:8 --from '1x4@0-3:[[1],[]]' \
      --to '1x4@4-7:[[],[1]]' --shape 4096x4096 --method balanced
  weft-reshard plan --cluster p3.16xlarge:2 --from '8@0-7:[[0]]' \
      --to '8@8-15:[[]]' --shape 65536 --dtype f16 --method broadcast --json

With one method, plan prints its transfers (kind, tile, source,
destinations, bytes, predicted start and end, and for a broadcast call its
group or "world") and each device's bytes sent and received; then the
broadcast groups. In JSON, "source" and "depends_on" are null where there
is none (an all-gather's slices have their own senders; a message whose
sender holds its box from the start); a transfer's "broadcast_call" says
whether it runs as one call, "group" which broadcast group (null: the world
or no call), and "broadcast_groups" lists each group's devices.

weft-reshard run --cluster SPEC --from SIDE --to SIDE --shape SHAPE
                 [--dtype DTYPE] [--method METHOD] [--timeout SECONDS]
                 [--max-broadcast-groups N]
  Executes the plan through Weft's runtime: one MPI process (rank) per
  device of either side, world rank i running the i-th smallest device,
  launched with mpirun as weft-run launches a mesh (weft-reshard-rank,
  installed beside weft-reshard). Each source device fills its block from
  the elements' global indices (with a pending partial sum: small integers,
  so that the sum is exact) and the source mesh does the plan's reduction;
  then every rank performs its messages in plan order (a broadcast call
  as one runtime broadcast over its group, created once at start-up, or
  over the world; or the in-mesh collectives), and every destination
  checks its block bit for bit and
  counts its bytes against the plan. Prints one line per rank (bytes sent
  and received against the plan, mismatched elements, the transfer's wall
  time), then "check passed: ..." or "check FAILED: ...".
  --cluster SPEC       CPU processes only: cpu:N, or a spec file whose
                       devices are all cpu; plan for GPUs, run on cpu:N with
                       the same mesh shapes and device indices
  --dtype DTYPE        f32 (default), f16, bf16, f64, i8, i32 or i64
  --method METHOD      as for plan (default balanced); all runs the four in
                       turn
  --timeout SECONDS    stop every rank after that long, exit 4 (default
                       120; 0: never)
  Wall times of more ranks than cores measure the scheduler, not the plan.
  Testing: --inject-error makes the first destination rank flip a bit of its
  block before the check, which then fails (exit 2).

  weft-reshard run --cluster cpu:8 --from '2x2@0-3:[[0],[1]]' \
      --to '1x4@4-7:[[],[0]]' --shape 64x64 --method all

Exit codes: 0 success, 1 wrong options or a resharding the planner refuses
(the message names the flag) or a cluster that cannot run, 2 (run) a
mismatch of data or bytes, 4 (run) a rank failed or timed out, 70 internal
error.
)";
}

//===----------------------------------------------------------------------===//
// plan: human output
//===----------------------------------------------------------------------===//

/// "group 0", "world" (a call beyond the cap) or "-" (no call).
static std::string callText(const ReshardTransfer &transfer, int64_t group) {
  if (!transfer.broadcastCall)
    return "-";
  return group >= 0 ? "group " + std::to_string(group) : "world";
}

static void printTransfers(raw_ostream &os, const ReshardPlan &plan,
                           ArrayRef<int64_t> groupOf) {
  if (plan.transfers.empty())
    return;
  // The call column only where the plan has broadcast calls.
  bool calls = llvm::any_of(
      plan.transfers, [](const ReshardTransfer &t) { return t.broadcastCall; });
  os << "\ntransfers:\n";
  os << formatv("{0,5} {1,-9} {2,-32} {3,6} {4,-16} {5,10} {6,10} {7,10}", "#",
                "kind", "tile", "source", "destinations", "bytes", "start",
                "end")
     << (calls ? " call\n" : "\n");
  for (size_t i = 0; i < plan.transfers.size(); ++i) {
    const ReshardTransfer &transfer = plan.transfers[i];
    std::string tile =
        transfer.tile >= 0 &&
                transfer.tile < static_cast<int>(plan.tiles.size())
            ? plan.tiles[transfer.tile].box.str()
            : "?";
    std::string source =
        transfer.source < 0 ? "-" : std::to_string(transfer.source);
    std::string destinations = formatDeviceList(transfer.destinations);
    if (transfer.chunks > 1)
      destinations += " (" + std::to_string(transfer.chunks) + " chunks)";
    os << formatv("{0,5} {1,-9} {2,-32} {3,6} {4,-16} {5,10} {6,10} {7,10}", i,
                  transferKindName(transfer.kind), tile, source, destinations,
                  formatBytes(static_cast<double>(transfer.bytes)),
                  formatSeconds(transfer.start), formatSeconds(transfer.end))
       << (calls ? " " + callText(transfer, groupOf[i]) + "\n" : "\n");
  }
}

/// "broadcast groups (cap 16): 0 {4,5,6}, 1 {0,1}", when there are calls.
static void printGroups(raw_ostream &os, const PlanGroups &groups,
                        int64_t cap) {
  bool calls = llvm::any_of(groups.groupOf, [](ArrayRef<int64_t> plan) {
    return llvm::any_of(plan, [](int64_t g) { return g >= 0; });
  });
  if (!calls && groups.sets.empty())
    return;
  os << "\nbroadcast groups (sub-communicators created once, at most " << cap
     << "):";
  for (auto [g, set] : llvm::enumerate(groups.sets))
    os << (g ? ", " : " ") << g << " {" << formatDeviceList(set) << "}";
  os << "\n";
}

static void printDevices(raw_ostream &os, const ReshardPlan &plan) {
  std::vector<DeviceTraffic> traffic = devicesWithTraffic(plan);
  if (traffic.empty())
    return;
  os << "\n" << formatv("{0,6} {1,12} {2,12}\n", "device", "sent", "received");
  for (const DeviceTraffic &t : traffic)
    os << formatv("{0,6} {1,12} {2,12}\n", t.device,
                  formatBytes(static_cast<double>(t.bytesSent)),
                  formatBytes(static_cast<double>(t.bytesReceived)));
}

//===----------------------------------------------------------------------===//
// plan: JSON
//===----------------------------------------------------------------------===//

static json::Array toJson(ArrayRef<int64_t> values) {
  return json::Array(values);
}

static json::Array toJson(ArrayRef<int> values) { return json::Array(values); }

static json::Object boxJson(const Box &box) {
  return json::Object{{"offsets", toJson(box.offsets)},
                      {"sizes", toJson(box.sizes)}};
}

/// -1 (none) as null.
static json::Value indexOrNull(int index) {
  if (index < 0)
    return nullptr;
  return index;
}

static json::Value planJson(const PlanRequest &request, const ReshardPlan &plan,
                            ArrayRef<int64_t> groupOf) {
  const ReshardProblem &problem = request.problem;
  std::optional<double> ratio = boundRatio(plan);
  json::Object object{
      {"method", reshardMethodName(plan.method)},
      {"cluster", request.cluster.name},
      {"predicted_seconds", plan.predictedSeconds},
      {"lower_bound_seconds", plan.bound.seconds},
      {"bound_reason", plan.bound.reason},
      {"ratio", ratio ? json::Value(*ratio) : json::Value(nullptr)},
      {"bytes", plan.bytesMoved},
      {"tensor", json::Object{{"shape", toJson(problem.shape)},
                              {"dtype", dtypeName(request.dtype)},
                              {"bytes", tensorBytes(problem)}}},
      {"from", formatReshardSide(problem.source)},
      {"to", formatReshardSide(problem.destination)},
      {"in_mesh", plan.inMesh},
      {"note", plan.note},
  };
  if (plan.reduction)
    object["reduction"] =
        json::Object{{"kind", reshardKindName(plan.reduction->kind)},
                     {"axes", toJson(plan.reduction->axes)},
                     {"dim", plan.reduction->dim},
                     {"seconds", plan.reduction->seconds}};
  else
    object["reduction"] = nullptr;

  json::Array steps;
  for (const ReshardStep &step : plan.inMeshSteps)
    steps.push_back(json::Object{{"kind", reshardKindName(step.kind)},
                                 {"axes", toJson(step.axes)},
                                 {"dim", step.dim}});
  object["in_mesh_steps"] = std::move(steps);

  json::Array transfers;
  for (auto [i, transfer] : llvm::enumerate(plan.transfers)) {
    json::Value tile = nullptr;
    if (transfer.tile >= 0 &&
        transfer.tile < static_cast<int>(plan.tiles.size()))
      tile = boxJson(plan.tiles[transfer.tile].box);
    // A broadcast call runs over its group's sub-communicator, or over the
    // world (group null) beyond the cap.
    json::Value group = nullptr;
    if (transfer.broadcastCall && groupOf[i] >= 0)
      group = groupOf[i];
    transfers.push_back(
        json::Object{{"kind", transferKindName(transfer.kind)},
                     {"tile", std::move(tile)},
                     {"source", indexOrNull(transfer.source)},
                     {"destinations", toJson(transfer.destinations)},
                     {"chunks", transfer.chunks},
                     {"bytes", transfer.bytes},
                     {"broadcast_call", transfer.broadcastCall},
                     {"group", std::move(group)},
                     {"start_seconds", transfer.start},
                     {"end_seconds", transfer.end}});
  }
  object["transfers"] = std::move(transfers);

  json::Array messages;
  for (const ReshardMessage &message : plan.messages)
    messages.push_back(
        json::Object{{"from", message.from},
                     {"to", message.to},
                     {"tile", message.tile},
                     {"box", boxJson(message.box)},
                     {"bytes", message.bytes},
                     {"depends_on", indexOrNull(message.dependsOn)},
                     {"transfer", message.transfer},
                     {"start_seconds", message.start},
                     {"end_seconds", message.end}});
  object["messages"] = std::move(messages);

  json::Array devices;
  for (const DeviceTraffic &t : devicesWithTraffic(plan))
    devices.push_back(json::Object{{"device", static_cast<int64_t>(t.device)},
                                   {"bytes_sent", t.bytesSent},
                                   {"bytes_received", t.bytesReceived}});
  object["devices"] = std::move(devices);
  return object;
}

static int runPlan(ArrayRef<StringRef> args) {
  FlagSpec spec{"plan",
                {"--cluster", "--from", "--to", "--shape", "--dtype",
                 "--method", "--max-broadcast-groups"},
                {"--json"},
                {}};
  Expected<Flags> flags = parseFlags(args, spec);
  if (!flags)
    return fail(toString(flags.takeError()));
  Expected<PlanRequest> request = buildPlanRequest(*flags, "plan", "all");
  if (!request)
    return fail(toString(request.takeError()));
  Expected<std::vector<ReshardPlan>> planned = planAll(*request);
  if (!planned) {
    std::string message = toString(planned.takeError());
    return fail(message, StringRef(message).starts_with("internal")
                             ? kExitInternal
                             : kExitBadInput);
  }
  std::vector<ReshardPlan> &plans = *planned;
  bool json = flags->has("--json");
  PlanGroups groups = assignBroadcastGroups(plans, request->maxBroadcastGroups);

  raw_ostream &os = outs();
  if (json) {
    json::Array sets;
    for (const std::vector<int> &set : groups.sets)
      sets.push_back(toJson(set));
    if (plans.size() == 1) {
      json::Value object =
          planJson(*request, plans.front(), groups.groupOf.front());
      (*object.getAsObject())["broadcast_groups"] = std::move(sets);
      os << formatv("{0:2}", object) << "\n";
      return kExitSuccess;
    }
    json::Array array;
    for (auto [i, plan] : llvm::enumerate(plans))
      array.push_back(planJson(*request, plan, groups.groupOf[i]));
    os << formatv("{0:2}", json::Value(json::Object{
                               {"plans", std::move(array)},
                               {"broadcast_groups", std::move(sets)}}))
       << "\n";
    return kExitSuccess;
  }
  printHeader(os, *request);
  os << "\n";
  printSummaryHeader(os);
  for (const ReshardPlan &plan : plans)
    printSummary(os, plan);
  if (plans.size() == 1) {
    printTransfers(os, plans.front(), groups.groupOf.front());
    printDevices(os, plans.front());
  }
  printGroups(os, groups, request->maxBroadcastGroups);
  return kExitSuccess;
}

//===----------------------------------------------------------------------===//
// Subcommands
//===----------------------------------------------------------------------===//

namespace {

/// A subcommand: its name and what runs it with the arguments after it.
struct Subcommand {
  StringRef name;
  int (*run)(ArrayRef<StringRef> args);
};

} // namespace

static const Subcommand kSubcommands[] = {
    {"plan", runPlan},
    {"run", runRun},
};

static std::string subcommandNames() {
  return join(map_range(kSubcommands,
                        [](const Subcommand &sub) { return sub.name.str(); }),
              ", ");
}

int main(int argc, char **argv) {
  InitLLVM initLLVM(argc, argv);
  if (argc < 2)
    return fail("no subcommand (subcommands: " + subcommandNames() +
                "; e.g. weft-reshard plan --help)");
  StringRef first = argv[1];
  if (first == "--help" || first == "-h" || first == "help") {
    printHelp();
    return kExitSuccess;
  }
  if (first == "--version") {
    outs() << "weft-reshard (Weft) " << WEFT_VERSION_STRING << "\n"
           << "  built on LLVM " << LLVM_VERSION_STRING << "\n";
    return kExitSuccess;
  }
  std::vector<StringRef> rest(argv + 2, argv + argc);
  for (const Subcommand &sub : kSubcommands) {
    if (sub.name != first)
      continue;
    if (llvm::any_of(rest, [](StringRef arg) {
          return arg == "--help" || arg == "-h";
        })) {
      printHelp();
      return kExitSuccess;
    }
    return sub.run(rest);
  }
  if (first.starts_with("-"))
    return fail("unknown option '" + first + "': a subcommand comes first (" +
                subcommandNames() + "; see --help)");
  return fail("unknown subcommand '" + first +
              "' (subcommands: " + subcommandNames() + "; see --help)");
}
