//===- PlanReport.cpp - plan.json and weftc --report ----------------------===//
//
// Reads a sharding plan once (the planned ops, device 0's collectives, the
// per-device figures, the ILP's statistics) and writes it as JSON or as a
// table for people.
//
//===----------------------------------------------------------------------===//

#include "PlanReport.h"
#include "PipelineReport.h"
#include "weft/ModelFunction.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InterleavedRange.h"
#include "llvm/Support/JSON.h"

#include <cmath>

using namespace mlir;
using namespace mlir::weft;

/// The ONNX name an op carries in its location ("" when none).
static std::string nameOf(Operation *op) {
  std::string name;
  op->getLoc()->walk([&](Location loc) {
    if (auto named = dyn_cast<NameLoc>(loc)) {
      name = named.getName().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return name;
}

static std::string toText(Attribute attr) {
  std::string s;
  llvm::raw_string_ostream os(s);
  attr.print(os);
  return s;
}

/// "7x64xf32": a tensor type without "tensor<>".
static std::string shapeText(RankedTensorType type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  for (int64_t d : type.getShape())
    os << d << "x";
  os << type.getElementType();
  return s;
}

/// Bytes of a ranked tensor value.
static double valueBytes(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  unsigned bits = type.getElementTypeBitWidth();
  return static_cast<double>(type.getNumElements()) *
         (bits == 1 ? 1 : bits / 8);
}

static bool isCollective(Operation *op) {
  return isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp,
             LocalSliceOp>(op);
}

std::string mlir::weft::shortSharding(ShardingAttr sharding) {
  auto axes = [](ArrayRef<int16_t> list) {
    return llvm::formatv("({0})", llvm::interleaved(list, ",")).str();
  };
  std::string s;
  for (auto [d, dim] : llvm::enumerate(sharding.getDims())) {
    if (d)
      s += "x";
    s += dim.empty() ? "R" : "S" + axes(dim.asArrayRef());
  }
  if (s.empty())
    s = "R"; // A scalar.
  if (!sharding.getPartial().empty())
    s += "+P" + axes(sharding.getPartial().asArrayRef());
  return s;
}

/// The collectives of a device's partitioned program, each with the index
/// in `ops` (the planned ops in order) of the op it brings operands to.
static std::vector<PlannedCollective>
collectivesOf(ModuleOp device, const std::vector<Operation *> &ops) {
  func::FuncOp func = lookupModelFunction(device);
  std::vector<PlannedCollective> collectives;
  if (!func)
    return collectives;
  // The partitioner brings each op's operands into shape right before the
  // op's local copy, and the outputs whole right before the return, so a
  // collective belongs to the next planned op at its location; a cursor
  // over the planned ops (moved past each local copy) keeps ops that share a
  // location apart.
  Block &body = func.getBody().front();
  Operation *terminator = body.getTerminator();
  llvm::SmallPtrSet<Operation *, 8> forOutputs;
  for (Operation *op = terminator->getPrevNode();
       op && isCollective(op) && op->getLoc() == terminator->getLoc();
       op = op->getPrevNode())
    forOutputs.insert(op);
  size_t cursor = 0;
  auto find = [&](Operation *op, size_t from, bool sameKind) -> int {
    for (size_t j = from; j < ops.size(); ++j)
      if (ops[j]->getLoc() == op->getLoc() &&
          (!sameKind || ops[j]->getName() == op->getName()))
        return j;
    return -1;
  };
  for (Operation &op : body.without_terminator()) {
    if (!isCollective(&op)) {
      if (int j = find(&op, cursor, /*sameKind=*/true); j >= 0)
        cursor = j + 1;
      continue;
    }
    PlannedCollective c;
    c.kind = op.getName().stripDialect().str();
    c.forName = nameOf(&op);
    if (auto axes = op.getAttrOfType<DenseI16ArrayAttr>("axes"))
      c.axes.assign(axes.asArrayRef().begin(), axes.asArrayRef().end());
    c.inputBytes = valueBytes(op.getOperand(0));
    c.outputBytes = valueBytes(op.getResult(0));
    if (!forOutputs.contains(&op)) {
      c.op = find(&op, cursor, /*sameKind=*/false);
      if (c.op < 0)
        c.op = find(&op, 0, /*sameKind=*/false);
    }
    collectives.push_back(std::move(c));
  }
  return collectives;
}

PlanSummary mlir::weft::summarizePlan(ModuleOp planned, ModuleOp device0,
                                      const AutoShardOptions &options,
                                      const AutoShardReport &report,
                                      std::vector<DeviceSummary> devices,
                                      bool compiled, StringRef modelName) {
  PlanSummary plan;
  plan.modelName = modelName.str();
  plan.clusterName = options.cluster.name;
  plan.mesh = options.cluster.meshes[options.mesh].shape;
  for (int device : options.cluster.meshes[options.mesh].devices)
    plan.meshDevices.push_back(device);
  plan.mode = options.mode;
  plan.objective = options.objective;
  plan.report = report;
  plan.devices = std::move(devices);
  plan.compiled = compiled;

  std::vector<Operation *> ops;
  if (func::FuncOp func = lookupModelFunction(planned))
    func.walk([&](Operation *op) {
      auto shardings = op->getAttrOfType<ArrayAttr>(kShardingAttr);
      if (!shardings)
        return;
      PlannedOp p;
      p.name = nameOf(op);
      p.kind = op->getName().getStringRef().str();
      for (Type t : op->getResultTypes())
        p.types.push_back(dyn_cast<RankedTensorType>(t));
      for (Attribute a : shardings)
        p.shardings.push_back(dyn_cast<ShardingAttr>(a));
      if (auto t = op->getAttrOfType<FloatAttr>(kPredictedSecondsAttr))
        p.seconds = t.getValueAsDouble();
      plan.totalSeconds += p.seconds;
      plan.ops.push_back(std::move(p));
      ops.push_back(op);
    });

  plan.collectives = collectivesOf(device0, ops);
  plan.plannedOps = ops;
  return plan;
}

std::string mlir::weft::planJson(const PlanSummary &plan) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream json(os, 2);
  const AutoShardReport &report = plan.report;
  const plan::Solution &sol = report.solution;
  json.object([&] {
    json.attribute("format", "weft-plan");
    // Version 2 adds "stages" and "transfers" (a one-mesh plan is one stage
    // and no transfers; docs/Pipelines.md).
    json.attribute("version", 2);
    json.attribute("cluster", plan.clusterName);
    json.attributeArray("mesh", [&] {
      for (int64_t d : plan.mesh)
        json.value(d);
    });
    json.attribute("sharding", shardingModeName(plan.mode));
    json.attribute("objective", plan.objective == Objective::Throughput
                                    ? "throughput"
                                    : "latency");
    json.attribute("memory_budget_bytes", report.memoryBudgetBytes);
    json.attributeObject("ilp", [&] {
      json.attribute("nodes", report.graphNodes);
      json.attribute("edges", report.graphEdges);
      json.attribute("strategies", report.strategies);
      json.attribute("live_sets", report.liveSets);
      json.attribute("variables", sol.numVariables);
      json.attribute("constraints", sol.numConstraints);
      json.attribute("nodes_after_reduction", sol.nodesAfterReduction);
      json.attribute("optimal", sol.optimal);
      json.attribute("gap", sol.gap);
      json.attribute("hit_node_limit", sol.hitNodeLimit);
      json.attribute("hit_time_limit", sol.hitTimeLimit);
    });
    json.attributeArray("ops", [&] {
      for (const PlannedOp &op : plan.ops)
        json.object([&] {
          json.attribute("name", op.name);
          json.attribute("op", op.kind);
          json.attributeArray("results", [&] {
            for (ShardingAttr a : op.shardings)
              json.value(a ? toText(a) : std::string("?"));
          });
          json.attributeArray("types", [&] {
            for (RankedTensorType t : op.types)
              json.value(t ? toText(TypeAttr::get(t)) : std::string("?"));
          });
          json.attribute("predicted_seconds", op.seconds);
        });
    });
    auto writeCollectives = [&](const std::vector<PlannedCollective> &list) {
      json.attributeArray("collectives", [&] {
        for (const PlannedCollective &c : list)
          json.object([&] {
            json.attribute("kind", c.kind);
            json.attribute("for", c.forName);
            if (c.op >= 0)
              json.attribute("op", c.op);
            else
              json.attribute("op", nullptr);
            json.attributeArray("axes", [&] {
              for (int16_t a : c.axes)
                json.value(a);
            });
            json.attribute("input_bytes", c.inputBytes);
            json.attribute("output_bytes", c.outputBytes);
          });
      });
    };
    writeCollectives(plan.collectives);
    // Each distinct program's collectives (devices with equal blocks share
    // a program; "collectives" above are device 0's).
    json.attributeArray("programs", [&] {
      for (const ProgramSummary &p : plan.programs)
        json.object([&] {
          json.attribute("id", p.id);
          json.attributeArray("devices", [&] {
            for (int64_t d : p.devices)
              json.value(d);
          });
          writeCollectives(p.collectives);
        });
    });
    json.attributeArray("devices", [&] {
      for (auto [k, d] : llvm::enumerate(plan.devices))
        json.object([&] {
          json.attribute("id", static_cast<int64_t>(k));
          json.attribute("program", d.program);
          json.attribute("weight_bytes", d.weightBytes);
          json.attribute("arena_bytes", d.arenaBytes);
          json.attribute("memory_bytes", d.weightBytes + d.arenaBytes);
          json.attribute("flops", d.flops);
        });
    });
    json.attributeArray("stages", [&] {
      json.object([&] {
        json.attributeArray("devices", [&] {
          for (int64_t d : plan.meshDevices)
            json.value(d);
        });
        json.attributeArray("mesh_shape", [&] {
          for (int64_t d : plan.mesh)
            json.value(d);
        });
        json.attribute("sharding", shardingModeName(plan.mode));
        json.attribute("first_node",
                       plan.ops.empty() ? "" : plan.ops.front().name);
        json.attribute("last_node", plan.ops.empty() ? "" : plan.ops.back().name);
        json.attribute("ops", static_cast<int64_t>(plan.ops.size()));
        int64_t weights = 0, peak = 0;
        for (const DeviceSummary &d : plan.devices) {
          weights = std::max(weights, d.weightBytes);
          peak = std::max(peak, d.weightBytes + d.arenaBytes);
        }
        if (!plan.compiled)
          peak = static_cast<int64_t>(report.memory.peakBytes);
        json.attribute("weights_bytes_per_device", weights);
        json.attribute("peak_memory_bytes_per_device", peak);
        json.attribute("predicted_seconds", plan.totalSeconds);
      });
    });
    json.attributeArray("transfers", [&] {});
    ::weft::plan::PipelineTimes times;
    times.stageSeconds = {plan.totalSeconds};
    writeScheduleJson(json,
                      ::weft::plan::estimateGPipe(times, plan.microbatches));
    writeSimulatedJson(json, plan.simulated);
    json.attributeObject("totals", [&] {
      json.attribute("predicted_seconds", plan.totalSeconds);
      json.attribute("objective_seconds", sol.objective);
      // With resharding buffers and the whole outputs; the ILP's own
      // figure counts op results only.
      json.attribute("peak_memory_bytes", report.memory.peakBytes);
      json.attribute("ilp_peak_memory_bytes", sol.peakMemoryBytes);
      json.attribute("budget_tightenings", report.budgetTightenings);
    });
  });
  os << "\n";
  return text;
}

namespace {
/// Rows of cells printed in aligned columns; numeric columns align right.
class Table {
public:
  explicit Table(std::vector<std::string> head, std::vector<bool> right)
      : right(std::move(right)) {
    rows.push_back(std::move(head));
  }
  void add(std::vector<std::string> row) { rows.push_back(std::move(row)); }
  void print(llvm::raw_ostream &os, StringRef indent) const {
    std::vector<size_t> widths(rows[0].size(), 0);
    for (const auto &row : rows)
      for (auto [i, cell] : llvm::enumerate(row))
        widths[i] = std::max(widths[i], cell.size());
    for (const auto &row : rows) {
      std::string line = indent.str();
      for (auto [i, cell] : llvm::enumerate(row)) {
        std::string pad(widths[i] - cell.size(), ' ');
        line += right[i] ? pad + cell : cell + pad;
        line += "  ";
      }
      os << StringRef(line).rtrim() << "\n";
    }
  }

private:
  std::vector<bool> right;
  std::vector<std::vector<std::string>> rows;
};
} // namespace

static std::string bytesText(double bytes) {
  return llvm::formatv("{0:f0}", bytes).str();
}

static std::string collectiveText(const PlannedCollective &c) {
  return llvm::formatv("{0} over [{1}]: {2} -> {3} B", c.kind,
                       llvm::interleaved(c.axes, ","), bytesText(c.inputBytes),
                       bytesText(c.outputBytes))
      .str();
}

/// A duration for people: 850 ns, 12.3 us, 4.56 ms, 1.20 s.
static std::string humanSeconds(double seconds) {
  if (seconds < 1e-6)
    return llvm::formatv("{0:f0} ns", seconds * 1e9).str();
  if (seconds < 1e-3)
    return llvm::formatv("{0:f2} us", seconds * 1e6).str();
  if (seconds < 1)
    return llvm::formatv("{0:f2} ms", seconds * 1e3).str();
  return llvm::formatv("{0:f2} s", seconds).str();
}

void mlir::weft::printPlanReport(const PlanSummary &plan,
                                 llvm::raw_ostream &os) {
  os << "plan of " << plan.modelName << " for " << plan.clusterName << ", mesh "
     << llvm::interleaved(plan.mesh, "x")
     << ", --sharding=" << shardingModeName(plan.mode) << ", --objective="
     << (plan.objective == Objective::Throughput ? "throughput" : "latency")
     << "\n"
     << "  sharding: per dimension S(a,..) split over mesh axes a,.. or R "
        "whole; +P(a) partial sums over a\n\n";

  // Which collectives each op causes; -1 (the outputs) last.
  std::vector<std::vector<const PlannedCollective *>> byOp(plan.ops.size());
  std::vector<const PlannedCollective *> forOutputs;
  for (const PlannedCollective &c : plan.collectives)
    (c.op >= 0 ? byOp[c.op] : forOutputs).push_back(&c);

  Table ops({"#", "op", "kind", "result", "sharding", "collectives (device 0)",
             "time us"},
            {true, false, false, false, false, false, true});
  auto addRows = [&](std::vector<std::string> row,
                     ArrayRef<const PlannedCollective *> collectives) {
    row.insert(row.begin() + 5,
               collectives.empty() ? "-" : collectiveText(*collectives[0]));
    ops.add(std::move(row));
    for (const PlannedCollective *c :
         collectives.drop_front(std::min<size_t>(1, collectives.size())))
      ops.add({"", "", "", "", "", collectiveText(*c), ""});
  };
  for (auto [i, op] : llvm::enumerate(plan.ops)) {
    std::string shapes, shardings;
    for (auto [k, t] : llvm::enumerate(op.types))
      shapes += (k ? ", " : "") + (t ? shapeText(t) : std::string("?"));
    for (auto [k, s] : llvm::enumerate(op.shardings))
      shardings += (k ? ", " : "") + (s ? shortSharding(s) : std::string("?"));
    StringRef kind = StringRef(op.kind).split('.').second;
    addRows({std::to_string(i), op.name.empty() ? "?" : op.name,
             kind.empty() ? op.kind : kind.str(), shapes, shardings,
             llvm::formatv("{0:f3}", op.seconds * 1e6).str()},
            byOp[i]);
  }
  addRows({"", "(outputs)", "return", "", "R", ""}, forOutputs);
  ops.print(os, "  ");

  os << "\n";
  Table devices(
      {"device", "program", "weights B", "arena B", "memory B", "FLOPs"},
      {true, true, true, true, true, true});
  double weights = 0, flops = 0;
  for (auto [k, d] : llvm::enumerate(plan.devices)) {
    weights += d.weightBytes;
    flops += d.flops;
    devices.add(
        {std::to_string(k), std::to_string(d.program),
         std::to_string(d.weightBytes),
         plan.compiled ? std::to_string(d.arenaBytes) : "-",
         plan.compiled ? std::to_string(d.weightBytes + d.arenaBytes) : "-",
         llvm::formatv("{0:e2}", d.flops).str()});
  }
  devices.add({"all", "", bytesText(weights), "", "",
               llvm::formatv("{0:e2}", flops).str()});
  devices.print(os, "  ");
  if (!plan.compiled)
    os << "  (arenas are planned when the programs are compiled; "
          "--emit=plan stops before)\n";

  const AutoShardReport &report = plan.report;
  const plan::Solution &sol = report.solution;
  size_t moved = plan.collectives.size();
  os << "\n"
     << llvm::formatv("totals: predicted {0} per run (the ops' times; the "
                      "ILP objective, which also prices gathering the "
                      "outputs, is {1}), {2} collective(s) on device 0\n",
                      humanSeconds(plan.totalSeconds),
                      humanSeconds(sol.objective), moved)
     << "  planned peak memory " << plan::formatBytes(report.memory.peakBytes)
     << " per device, budget " << plan::formatBytes(report.memoryBudgetBytes)
     << "\n";
  std::string outcome;
  if (sol.optimal) {
    outcome = "optimal";
  } else {
    outcome =
        std::isfinite(sol.gap)
            ? llvm::formatv("not proven optimal, gap {0:f2}%", sol.gap * 100)
                  .str()
            : "not proven optimal, no bound";
    if (sol.hitNodeLimit)
      outcome += ", hit the node limit";
    if (sol.hitTimeLimit)
      outcome += ", hit the time limit";
  }
  os << llvm::formatv("ilp: {0} nodes, {1} edges, {2} strategies, {3} live "
                      "sets; {4} variables, {5} constraints ({6} nodes after "
                      "reduction); built in {7:f3} s, solved in {8:f3} s; "
                      "{9}\n",
                      report.graphNodes, report.graphEdges, report.strategies,
                      report.liveSets, sol.numVariables, sol.numConstraints,
                      sol.nodesAfterReduction, report.buildSeconds,
                      sol.solveSeconds, outcome);
}

void mlir::weft::addProgram(PlanSummary &plan, ModuleOp device,
                            std::vector<int64_t> devices) {
  ProgramSummary program;
  program.id = static_cast<int>(plan.programs.size());
  program.devices = std::move(devices);
  program.collectives = collectivesOf(device, plan.plannedOps);
  plan.programs.push_back(std::move(program));
}

void mlir::weft::writeSimulatedJson(llvm::json::OStream &json,
                                    const SimulatedSummary &sim) {
  if (!sim.ran)
    return;
  json.attributeObject("simulated", [&] {
    json.attribute("latency_seconds", sim.latencySeconds);
    json.attribute("throughput_per_s", sim.throughputPerSecond);
    json.attribute("stream_requests", sim.streamRequests);
    json.attribute("bubble_fraction", sim.bubbleFraction);
    json.attribute("bottleneck", sim.bottleneck);
    json.attribute("compute_intervals", sim.computeIntervals);
  });
}

void mlir::weft::printSimulatedLines(const SimulatedSummary &simulated,
                                     llvm::raw_ostream &os) {
  StringRef lines = simulated.lines;
  while (!lines.empty()) {
    auto [line, rest] = lines.split('\n');
    os << "  " << line << "\n";
    lines = rest;
  }
}
