//===- weft-reshard.cpp - Plan a tensor's move between meshes -------------===//
//
// weft-reshard SUBCOMMAND [options]
//
// The command line of lib/Plan's cross-mesh resharding planner: `plan`
// reads a cluster, the tensor and its two sides and prints the plan of one
// or every method (a table, or JSON). Flags are parsed here; the syntax of
// a side is ReshardText's and the planning is Reshard's.
//
//===----------------------------------------------------------------------===//

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

#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace llvm;
using namespace weft::plan;

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
point-to-point messages the runtime would send, and predicts their time
against the physical lower bound. docs/Resharding.md explains the methods
and the cost model.

Subcommands:
  plan      print the plan of one method, or compare all four

weft-reshard plan --cluster SPEC --from SIDE --to SIDE --shape SHAPE
                  [--dtype DTYPE] [--method METHOD] [--json]
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
destinations, bytes, predicted start and end) and each device's bytes sent
and received. In JSON, "source" and "depends_on" are null where there is
none (an all-gather's slices have their own senders; a message whose sender
holds its box from the start).

Exit codes: 0 success, 1 wrong options or a resharding the planner refuses
(the message names the flag), 70 internal error.
)";
}

//===----------------------------------------------------------------------===//
// Readable units
//===----------------------------------------------------------------------===//

/// "1.5 s", "12.3 ms", "456 us", "0 s".
static std::string formatSeconds(double seconds) {
  static const struct {
    double scale;
    const char *unit;
  } units[] = {{1, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}};
  const auto *chosen = &units[0];
  if (seconds != 0)
    for (const auto &unit : units) {
      chosen = &unit;
      if (std::fabs(seconds) >= unit.scale * 0.9995)
        break;
    }
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "%.4g %s", seconds / chosen->scale,
                chosen->unit);
  return buffer;
}

/// "0 B", "512 B", "1.5 KiB", "256 MiB", "2 GiB".
static std::string formatBytes(double bytes) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  size_t unit = 0;
  while (unit + 1 < std::size(units) && std::fabs(bytes) >= 1024 * 0.99995) {
    bytes /= 1024;
    ++unit;
  }
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "%.4g %s", bytes, units[unit]);
  return buffer;
}

/// predicted / bound, or nullopt when the bound is zero.
static std::optional<double> boundRatio(const ReshardPlan &plan) {
  if (plan.bound.seconds > 0)
    return plan.predictedSeconds / plan.bound.seconds;
  if (plan.predictedSeconds == 0)
    return 1.0;
  return std::nullopt;
}

static std::string formatAxes(ArrayRef<int> axes) {
  return "[" +
         join(map_range(axes, [](int a) { return std::to_string(a); }), ",") +
         "]";
}

//===----------------------------------------------------------------------===//
// plan: human output
//===----------------------------------------------------------------------===//

/// What `plan` was asked.
struct PlanRequest {
  Cluster cluster;
  ReshardProblem problem;
  DType dtype = DType::F32;
  std::vector<ReshardMethod> methods;
  bool json = false;
};

static int64_t tensorBytes(const ReshardProblem &problem) {
  int64_t elements = 1;
  for (int64_t dim : problem.shape)
    elements *= dim;
  return elements * problem.elementBytes;
}

static void printHeader(raw_ostream &os, const PlanRequest &request) {
  const ReshardProblem &problem = request.problem;
  os << "tensor " << formatTensorShape(problem.shape) << " "
     << dtypeName(request.dtype) << " ("
     << formatBytes(static_cast<double>(tensorBytes(problem))) << ") from "
     << formatReshardSide(problem.source) << " to "
     << formatReshardSide(problem.destination) << " on " << request.cluster.name
     << " (" << request.cluster.devices.size() << " devices, "
     << request.cluster.nodes.size() << " node"
     << (request.cluster.nodes.size() == 1 ? "" : "s") << ")\n";
  if (!request.cluster.note.empty())
    os << "  " << request.cluster.note << "\n";
}

static void printSummaryHeader(raw_ostream &os) {
  os << formatv("{0,-20} {1,10} {2,10} {3,6} {4,10} {5,9} {6,8}\n", "method",
                "predicted", "bound", "ratio", "bytes", "transfers",
                "messages");
}

static void printSummary(raw_ostream &os, const ReshardPlan &plan) {
  std::optional<double> ratio = boundRatio(plan);
  char ratioText[32] = "-";
  if (ratio)
    std::snprintf(ratioText, sizeof(ratioText), "%.2f", *ratio);
  os << formatv("{0,-20} {1,10} {2,10} {3,6} {4,10} {5,9} {6,8}\n",
                reshardMethodName(plan.method),
                formatSeconds(plan.predictedSeconds),
                formatSeconds(plan.bound.seconds), ratioText,
                formatBytes(static_cast<double>(plan.bytesMoved)),
                plan.transfers.size(), plan.messages.size());
  if (!plan.bound.reason.empty())
    os << "  bound: " << plan.bound.reason << "\n";
  if (plan.reduction)
    os << "  reduction: " << reshardKindName(plan.reduction->kind)
       << " over mesh axes " << formatAxes(plan.reduction->axes)
       << (plan.reduction->dim >= 0
               ? " of dim " + std::to_string(plan.reduction->dim)
               : std::string())
       << " on the source mesh, " << formatSeconds(plan.reduction->seconds)
       << "\n";
  if (plan.inMesh) {
    os << "  in-mesh:";
    if (plan.inMeshSteps.empty())
      os << " nothing to do";
    for (size_t i = 0; i < plan.inMeshSteps.size(); ++i) {
      const ReshardStep &step = plan.inMeshSteps[i];
      os << (i ? ", " : " ") << reshardKindName(step.kind) << " "
         << formatAxes(step.axes);
      if (step.dim >= 0)
        os << " dim " << step.dim;
    }
    os << "\n";
  }
  if (!plan.note.empty())
    os << "  note: " << plan.note << "\n";
}

static void printTransfers(raw_ostream &os, const ReshardPlan &plan) {
  if (plan.transfers.empty())
    return;
  os << "\ntransfers:\n";
  os << formatv("{0,5} {1,-9} {2,-32} {3,6} {4,-16} {5,10} {6,10} {7,10}\n",
                "#", "kind", "tile", "source", "destinations", "bytes", "start",
                "end");
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
    os << formatv("{0,5} {1,-9} {2,-32} {3,6} {4,-16} {5,10} {6,10} {7,10}\n",
                  i, transferKindName(transfer.kind), tile, source,
                  destinations,
                  formatBytes(static_cast<double>(transfer.bytes)),
                  formatSeconds(transfer.start), formatSeconds(transfer.end));
  }
}

static void printDevices(raw_ostream &os, const ReshardPlan &plan) {
  bool any = false;
  for (size_t d = 0; d < plan.bytesSent.size() || d < plan.bytesReceived.size();
       ++d) {
    int64_t sent = d < plan.bytesSent.size() ? plan.bytesSent[d] : 0;
    int64_t received =
        d < plan.bytesReceived.size() ? plan.bytesReceived[d] : 0;
    if (sent == 0 && received == 0)
      continue;
    if (!any)
      os << "\n"
         << formatv("{0,6} {1,12} {2,12}\n", "device", "sent", "received");
    any = true;
    os << formatv("{0,6} {1,12} {2,12}\n", d,
                  formatBytes(static_cast<double>(sent)),
                  formatBytes(static_cast<double>(received)));
  }
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

static json::Value planJson(const PlanRequest &request,
                            const ReshardPlan &plan) {
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
  for (const ReshardTransfer &transfer : plan.transfers) {
    json::Value tile = nullptr;
    if (transfer.tile >= 0 &&
        transfer.tile < static_cast<int>(plan.tiles.size()))
      tile = boxJson(plan.tiles[transfer.tile].box);
    transfers.push_back(
        json::Object{{"kind", transferKindName(transfer.kind)},
                     {"tile", std::move(tile)},
                     {"source", indexOrNull(transfer.source)},
                     {"destinations", toJson(transfer.destinations)},
                     {"chunks", transfer.chunks},
                     {"bytes", transfer.bytes},
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
  for (size_t d = 0; d < plan.bytesSent.size() || d < plan.bytesReceived.size();
       ++d) {
    int64_t sent = d < plan.bytesSent.size() ? plan.bytesSent[d] : 0;
    int64_t received =
        d < plan.bytesReceived.size() ? plan.bytesReceived[d] : 0;
    if (sent == 0 && received == 0)
      continue;
    devices.push_back(json::Object{{"device", static_cast<int64_t>(d)},
                                   {"bytes_sent", sent},
                                   {"bytes_received", received}});
  }
  object["devices"] = std::move(devices);
  return object;
}

//===----------------------------------------------------------------------===//
// plan: flags
//===----------------------------------------------------------------------===//

/// The flags of `plan` that take a value, as given.
struct PlanFlags {
  std::map<std::string, std::string> values;
  bool json = false;
};

static const char *const kPlanValueFlags[] = {
    "--cluster", "--from", "--to", "--shape", "--dtype", "--method"};

/// Reads `plan`'s flags; prints the error and returns false when they are
/// wrong.
static bool parsePlanFlags(ArrayRef<StringRef> args, PlanFlags &flags) {
  for (size_t i = 0; i < args.size(); ++i) {
    StringRef arg = args[i];
    if (arg == "--json") {
      flags.json = true;
      continue;
    }
    StringRef name = arg, value;
    bool inlineValue = false;
    if (arg.starts_with("--") && arg.contains('=')) {
      std::tie(name, value) = arg.split('=');
      inlineValue = true;
    }
    if (!is_contained(kPlanValueFlags, name)) {
      if (arg.starts_with("-"))
        fail("plan: unknown option '" + arg +
             "' (options: --cluster, --from, --to, --shape, --dtype, "
             "--method, --json; see --help)");
      else
        fail("plan: unexpected argument '" + arg +
             "' (every value follows its flag, e.g. --shape 1024x1024; see "
             "--help)");
      return false;
    }
    if (!inlineValue) {
      if (i + 1 >= args.size()) {
        fail(name + " needs a value (see --help)");
        return false;
      }
      value = args[++i];
    }
    if (flags.values.count(name.str())) {
      fail(name + " is given twice");
      return false;
    }
    flags.values[name.str()] = value.str();
  }
  return true;
}

/// Turns the flags into a request; prints the error and returns false when
/// a value is wrong.
static bool buildPlanRequest(const PlanFlags &flags, PlanRequest &request) {
  for (const char *required : {"--cluster", "--from", "--to", "--shape"})
    if (!flags.values.count(required)) {
      fail(Twine("plan: ") + required +
           " is missing (usage: weft-reshard plan --cluster SPEC --from "
           "SIDE --to SIDE --shape SHAPE; see --help)");
      return false;
    }
  auto value = [&](StringRef name) -> StringRef {
    auto it = flags.values.find(name.str());
    return it == flags.values.end() ? StringRef() : StringRef(it->second);
  };

  Expected<Cluster> cluster = loadCluster(value("--cluster"));
  if (!cluster) {
    fail("--cluster: " + toString(cluster.takeError()));
    return false;
  }
  request.cluster = std::move(*cluster);

  Expected<std::vector<int64_t>> shape = parseTensorShape(value("--shape"));
  if (!shape) {
    fail("--shape: " + toString(shape.takeError()));
    return false;
  }
  request.problem.shape = std::move(*shape);

  if (flags.values.count("--dtype")) {
    std::optional<DType> dtype = parseDType(value("--dtype"));
    if (!dtype) {
      fail("--dtype '" + value("--dtype") +
           "' is not a dtype (f32, f16, bf16, f64, i8, i32, i64 or bool)");
      return false;
    }
    request.dtype = *dtype;
  }
  request.problem.elementBytes = dtypeBytes(request.dtype);

  StringRef method =
      flags.values.count("--method") ? value("--method") : StringRef("all");
  if (method == "all") {
    request.methods = {ReshardMethod::SendRecv,
                       ReshardMethod::SendRecvAllGather,
                       ReshardMethod::Broadcast, ReshardMethod::Balanced};
  } else if (std::optional<ReshardMethod> one = parseReshardMethod(method)) {
    request.methods = {*one};
  } else {
    fail("--method '" + method +
         "' is not a method (send-recv, send-recv-allgather, broadcast, "
         "balanced or all)");
    return false;
  }

  unsigned rank = static_cast<unsigned>(request.problem.shape.size());
  Expected<ReshardSide> from =
      parseReshardSide(value("--from"), request.cluster, rank, "--from");
  if (!from) {
    fail(toString(from.takeError()));
    return false;
  }
  request.problem.source = std::move(*from);
  Expected<ReshardSide> to =
      parseReshardSide(value("--to"), request.cluster, rank, "--to");
  if (!to) {
    fail(toString(to.takeError()));
    return false;
  }
  request.problem.destination = std::move(*to);
  if (!request.problem.destination.sharding.partial.empty()) {
    fail("--to '" + value("--to") +
         "': a resharding delivers whole values; a pending partial sum "
         "(+p) is only for --from");
    return false;
  }
  request.json = flags.json;
  return true;
}

static int runPlan(ArrayRef<StringRef> args) {
  for (StringRef arg : args)
    if (arg == "--help" || arg == "-h") {
      printHelp();
      return kExitSuccess;
    }
  PlanFlags flags;
  if (!parsePlanFlags(args, flags))
    return kExitBadInput;
  PlanRequest request;
  if (!buildPlanRequest(flags, request))
    return kExitBadInput;

  std::vector<ReshardPlan> plans;
  for (ReshardMethod method : request.methods) {
    Expected<ReshardPlan> plan =
        planResharding(request.cluster, request.problem, method);
    if (!plan) {
      std::string message = toString(plan.takeError());
      // The planner names its own broken invariants "internal: ...".
      if (StringRef(message).starts_with("internal"))
        return fail(message, kExitInternal);
      return fail("cannot plan " + reshardMethodName(method) + ": " + message);
    }
    plans.push_back(std::move(*plan));
  }

  raw_ostream &os = outs();
  if (request.json) {
    if (plans.size() == 1) {
      os << formatv("{0:2}", planJson(request, plans.front())) << "\n";
      return kExitSuccess;
    }
    json::Array array;
    for (const ReshardPlan &plan : plans)
      array.push_back(planJson(request, plan));
    os << formatv("{0:2}",
                  json::Value(json::Object{{"plans", std::move(array)}}))
       << "\n";
    return kExitSuccess;
  }
  printHeader(os, request);
  os << "\n";
  printSummaryHeader(os);
  for (const ReshardPlan &plan : plans)
    printSummary(os, plan);
  if (plans.size() == 1) {
    printTransfers(os, plans.front());
    printDevices(os, plans.front());
  }
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
  for (const Subcommand &sub : kSubcommands)
    if (sub.name == first)
      return sub.run(rest);
  if (first.starts_with("-"))
    return fail("unknown option '" + first + "': a subcommand comes first (" +
                subcommandNames() + "; see --help)");
  return fail("unknown subcommand '" + first +
              "' (subcommands: " + subcommandNames() + "; see --help)");
}
