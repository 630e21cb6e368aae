//===- Request.cpp - weft-reshard's flags and what they ask ---------------===//
//
// Flags into a PlanRequest for weft-reshard's subcommands and its rank
// program (the messages name the flag and say what is wrong), readable
// units, and the summary lines `plan` and `run` print.
//
//===----------------------------------------------------------------------===//

#include "Request.h"

#include "weft/Plan/ReshardText.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>

using namespace llvm;
using namespace weft::plan;
using namespace weft::reshard;

static Error failure(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

StringRef Flags::value(StringRef name) const {
  auto it = values.find(name.str());
  return it == values.end() ? StringRef() : StringRef(it->second);
}

Expected<Flags> weft::reshard::parseFlags(ArrayRef<StringRef> args,
                                          const FlagSpec &spec) {
  Flags flags;
  auto listed = [&] {
    std::vector<std::string> names;
    for (StringRef name : spec.valueFlags)
      names.push_back(name.str());
    for (StringRef name : spec.switchFlags)
      names.push_back(name.str());
    return join(names, ", ");
  };
  for (size_t i = 0; i < args.size(); ++i) {
    StringRef arg = args[i];
    if (is_contained(spec.switchFlags, arg) ||
        is_contained(spec.hiddenSwitches, arg)) {
      flags.switches.insert(arg.str());
      continue;
    }
    StringRef name = arg, value;
    bool inlineValue = false;
    if (arg.starts_with("--") && arg.contains('=')) {
      std::tie(name, value) = arg.split('=');
      inlineValue = true;
    }
    if (!is_contained(spec.valueFlags, name)) {
      if (arg.starts_with("-"))
        return failure(spec.subcommand + ": unknown option '" + arg +
                       "' (options: " + listed() + "; see --help)");
      return failure(spec.subcommand + ": unexpected argument '" + arg +
                     "' (every value follows its flag, e.g. --shape "
                     "1024x1024; see --help)");
    }
    if (!inlineValue) {
      if (i + 1 >= args.size())
        return failure(name + " needs a value (see --help)");
      value = args[++i];
    }
    if (flags.values.count(name.str()))
      return failure(name + " is given twice");
    flags.values[name.str()] = value.str();
  }
  return flags;
}

Expected<PlanRequest> weft::reshard::buildPlanRequest(const Flags &flags,
                                                      StringRef subcommand,
                                                      StringRef defaultMethod) {
  for (const char *required : {"--cluster", "--from", "--to", "--shape"})
    if (!flags.values.count(required))
      return failure(subcommand + ": " + required +
                     " is missing (usage: weft-reshard " + subcommand +
                     " --cluster SPEC --from SIDE --to SIDE --shape SHAPE; "
                     "see --help)");
  PlanRequest request;
  Expected<Cluster> cluster = loadCluster(flags.value("--cluster"));
  if (!cluster)
    return failure("--cluster: " + toString(cluster.takeError()));
  request.cluster = std::move(*cluster);

  Expected<std::vector<int64_t>> shape =
      parseTensorShape(flags.value("--shape"));
  if (!shape)
    return failure("--shape: " + toString(shape.takeError()));
  request.problem.shape = std::move(*shape);

  if (flags.values.count("--dtype")) {
    std::optional<DType> dtype = parseDType(flags.value("--dtype"));
    if (!dtype)
      return failure("--dtype '" + flags.value("--dtype") +
                     "' is not a dtype (f32, f16, bf16, f64, i8, i32, i64 or "
                     "bool)");
    request.dtype = *dtype;
  }
  request.problem.elementBytes = dtypeBytes(request.dtype);

  if (flags.values.count("--max-broadcast-groups")) {
    StringRef value = flags.value("--max-broadcast-groups");
    if (value.getAsInteger(10, request.maxBroadcastGroups) ||
        request.maxBroadcastGroups < 0 || request.maxBroadcastGroups > 1024)
      return failure("--max-broadcast-groups must be from 0 to 1024, not '" +
                     value + "'");
  }

  StringRef method =
      flags.values.count("--method") ? flags.value("--method") : defaultMethod;
  if (method == "all") {
    request.methods = {ReshardMethod::SendRecv,
                       ReshardMethod::SendRecvAllGather,
                       ReshardMethod::Broadcast, ReshardMethod::Balanced};
  } else if (std::optional<ReshardMethod> one = parseReshardMethod(method)) {
    request.methods = {*one};
  } else {
    return failure("--method '" + method +
                   "' is not a method (send-recv, send-recv-allgather, "
                   "broadcast, balanced or all)");
  }

  unsigned rank = static_cast<unsigned>(request.problem.shape.size());
  Expected<ReshardSide> from =
      parseReshardSide(flags.value("--from"), request.cluster, rank, "--from");
  if (!from)
    return from.takeError();
  request.problem.source = std::move(*from);
  Expected<ReshardSide> to =
      parseReshardSide(flags.value("--to"), request.cluster, rank, "--to");
  if (!to)
    return to.takeError();
  request.problem.destination = std::move(*to);
  if (!request.problem.destination.sharding.partial.empty())
    return failure("--to '" + flags.value("--to") +
                   "': a resharding delivers whole values; a pending partial "
                   "sum (+p) is only for --from");
  return request;
}

Expected<std::vector<ReshardPlan>>
weft::reshard::planAll(const PlanRequest &request) {
  std::vector<ReshardPlan> plans;
  for (ReshardMethod method : request.methods) {
    Expected<ReshardPlan> plan =
        planResharding(request.cluster, request.problem, method);
    if (!plan) {
      std::string message = toString(plan.takeError());
      // The planner names its own broken invariants "internal: ...".
      if (StringRef(message).starts_with("internal"))
        return failure(message);
      return failure("cannot plan " + reshardMethodName(method) + ": " +
                     message);
    }
    plans.push_back(std::move(*plan));
  }
  return plans;
}

PlanGroups weft::reshard::assignBroadcastGroups(ArrayRef<ReshardPlan> plans,
                                                int64_t cap) {
  BroadcastGroups groups(cap);
  PlanGroups out;
  for (const ReshardPlan &plan : plans) {
    std::vector<int64_t> &ofPlan = out.groupOf.emplace_back();
    for (const ReshardTransfer &transfer : plan.transfers) {
      std::vector<int> chain = broadcastChain(transfer);
      ofPlan.push_back(chain.empty() ? -1 : groups.groupOf(chain));
    }
  }
  out.sets = groups.sets();
  return out;
}

int64_t weft::reshard::tensorBytes(const ReshardProblem &problem) {
  int64_t elements = 1;
  for (int64_t dim : problem.shape)
    elements *= dim;
  return elements * problem.elementBytes;
}

std::string weft::reshard::formatSeconds(double seconds) {
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

std::string weft::reshard::formatBytes(double bytes) {
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

//===----------------------------------------------------------------------===//
// Summaries
//===----------------------------------------------------------------------===//

std::optional<double> weft::reshard::boundRatio(const ReshardPlan &plan) {
  if (plan.bound.seconds > 0)
    return plan.predictedSeconds / plan.bound.seconds;
  if (plan.predictedSeconds == 0)
    return 1.0;
  return std::nullopt;
}

std::string weft::reshard::formatAxes(ArrayRef<int> axes) {
  return "[" +
         join(map_range(axes, [](int a) { return std::to_string(a); }), ",") +
         "]";
}

void weft::reshard::printHeader(raw_ostream &os, const PlanRequest &request) {
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

void weft::reshard::printSummaryHeader(raw_ostream &os) {
  os << formatv("{0,-20} {1,10} {2,10} {3,6} {4,10} {5,9} {6,8}\n", "method",
                "predicted", "bound", "ratio", "bytes", "transfers",
                "messages");
}

void weft::reshard::printSummary(raw_ostream &os, const ReshardPlan &plan) {
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
  int64_t calls = llvm::count_if(
      plan.transfers, [](const ReshardTransfer &t) { return t.broadcastCall; });
  if (calls)
    os << "  broadcast calls: " << calls
       << " (each chain runs as one runtime call, chunked)\n";
  if (!plan.note.empty())
    os << "  note: " << plan.note << "\n";
}
