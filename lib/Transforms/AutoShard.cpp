//===- AutoShard.cpp - Choosing a sharding for every op -------------------===//
//
// Alpa's intra-operator pass over a weft function: one node per op with the
// strategies its sharding rule allows, edges priced by the resharding
// planner, a memory constraint per program point, solved by the ILP.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/AutoShard.h"
#include "weft/Plan/CostModel.h"
#include "weft/Plan/Sharding.h"
#include "weft/Transforms/ShardedMemory.h"
#include "weft/Transforms/ShardingRules.h"
#include "weft/WeftOps.h"
#include "weft/WeftTypeUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InterleavedRange.h"

#include <chrono>
#include <limits>
#include <map>

using namespace mlir;
using namespace mlir::weft;
using ::weft::plan::AxisList;
using ::weft::plan::TensorSharding;

static constexpr double kInfinity = std::numeric_limits<double>::infinity();
/// How often a plan over budget (once resharding buffers are counted) is
/// solved again with a tighter ILP budget before the planner gives up.
static constexpr int kMaxBudgetTightenings = 8;

std::optional<ShardingMode> mlir::weft::parseShardingMode(StringRef text) {
  return llvm::StringSwitch<std::optional<ShardingMode>>(text)
      .Case("auto", ShardingMode::Auto)
      .Case("dp", ShardingMode::DataParallel)
      .Case("tp", ShardingMode::TensorParallel)
      .Case("replicate", ShardingMode::Replicate)
      .Default(std::nullopt);
}

StringRef mlir::weft::shardingModeName(ShardingMode mode) {
  switch (mode) {
  case ShardingMode::Auto:
    return "auto";
  case ShardingMode::DataParallel:
    return "dp";
  case ShardingMode::TensorParallel:
    return "tp";
  case ShardingMode::Replicate:
    return "replicate";
  }
  return "auto";
}

/// The ONNX name in `loc` ("" when none).
static std::string onnxName(Location loc) {
  NameLoc named = findNameLoc(loc);
  return named ? named.getName().str() : std::string();
}

/// Gives each constant without an ONNX name one from where it is used,
/// "<node>/in<k>" for input k of the first node (in program order) it
/// feeds: folding made it, and MLIR's folder sets the location of the
/// constants it hoists or merges to unknown, while plan.json and --report
/// name every op.
static void nameUnnamedConstants(func::FuncOp func) {
  func.walk([&](ConstantOp op) {
    if (op->use_empty() || !onnxName(op.getLoc()).empty())
      return;
    OpOperand *first = nullptr;
    for (OpOperand &use : op->getUses())
      if (!first || use.getOwner()->isBeforeInBlock(first->getOwner()) ||
          (use.getOwner() == first->getOwner() &&
           use.getOperandNumber() < first->getOperandNumber()))
        first = &use;
    std::string user = onnxName(first->getOwner()->getLoc());
    if (user.empty())
      return;
    std::string name = user + "/in" + std::to_string(first->getOperandNumber());
    op->setLoc(
        NameLoc::get(StringAttr::get(op.getContext(), name), op.getLoc()));
  });
}

static plan::DType dtypeOf(Type type) {
  Type element = cast<ShapedType>(type).getElementType();
  if (element.isF16())
    return plan::DType::F16;
  if (element.isBF16())
    return plan::DType::BF16;
  if (element.isF64())
    return plan::DType::F64;
  if (element.isInteger(1))
    return plan::DType::Bool;
  if (element.isInteger(8))
    return plan::DType::I8;
  if (element.isInteger(32))
    return plan::DType::I32;
  if (element.isInteger(64))
    return plan::DType::I64;
  return plan::DType::F32;
}

static int64_t elementBytes(Type type) {
  Type element = cast<ShapedType>(type).getElementType();
  unsigned bits = element.getIntOrFloatBitWidth();
  return bits == 1 ? 1 : bits / 8;
}

static double bytesOf(ArrayRef<int64_t> shape, int64_t elementSize) {
  double n = elementSize;
  for (int64_t d : shape)
    n *= d;
  return n;
}

namespace {
/// An op (or a function argument, or the return) as a node of the graph.
struct PlannedNode {
  Operation *op = nullptr; // null for arguments
  Value argument;          // for arguments
  std::optional<LoopSpace> space;
  std::vector<LoopAxes> strategies;
  /// For weft.shard: the one sharding allowed.
  std::optional<TensorSharding> fixed;

  unsigned numStrategies() const { return space ? strategies.size() : 1; }
  TensorSharding result(unsigned strategy, unsigned index) const {
    if (fixed)
      return *fixed;
    if (space)
      return resultSharding(*space, index, strategies[strategy]);
    Value v = op ? op->getResult(index) : argument;
    return TensorSharding::replicated(
        cast<RankedTensorType>(v.getType()).getRank());
  }
  /// Nullopt for operands that are not data.
  std::optional<TensorSharding> operand(unsigned strategy,
                                        unsigned index) const {
    if (fixed)
      return *fixed;
    if (space) {
      if (!space->operandIsData[index])
        return std::nullopt;
      return operandSharding(*space, index, strategies[strategy]);
    }
    auto type = dyn_cast<RankedTensorType>(op->getOperand(index).getType());
    if (!type)
      return std::nullopt;
    return TensorSharding::replicated(type.getRank());
  }
};

/// Builds and prices the strategy graph.
class GraphBuilder {
public:
  GraphBuilder(func::FuncOp func, const AutoShardOptions &options,
               const plan::Mesh &mesh)
      : func(func), options(options), mesh(mesh), costs(options.cluster, mesh) {
  }

  plan::StrategyGraph build();
  void annotate(const plan::Solution &solution, ModuleOp module);

private:
  void addNode(PlannedNode node, plan::StrategyGraph::Node graphNode);
  /// Resharding `value` from `from` to `to`: its time, and whether it needs
  /// a collective (rather than local slices only).
  struct ReshardPrice {
    double seconds = 0;
    bool communicates = false;
  };
  ReshardPrice reshardPrice(Value value, const TensorSharding &from,
                            const TensorSharding &to);
  plan::StrategyGraph::Node priceOp(PlannedNode &node);
  bool allowed(const PlannedNode &node, const LoopAxes &strategy) const;

  func::FuncOp func;
  const AutoShardOptions &options;
  const plan::Mesh &mesh;
  plan::CostModel costs;

  std::vector<PlannedNode> nodes;
  plan::StrategyGraph graph;
  /// Which node produces a value.
  llvm::DenseMap<Value, int> producer;
  /// Resharding prices by (value type, from, to).
  std::map<std::tuple<const void *, std::string, std::string>, ReshardPrice>
      reshardCache;
};
} // namespace

GraphBuilder::ReshardPrice
GraphBuilder::reshardPrice(Value value, const TensorSharding &from,
                           const TensorSharding &to) {
  if (from == to)
    return {};
  auto key = std::make_tuple(value.getType().getAsOpaquePointer(), from.str(),
                             to.str());
  if (auto it = reshardCache.find(key); it != reshardCache.end())
    return it->second;
  auto type = cast<RankedTensorType>(value.getType());
  ArrayRef<int64_t> shape = type.getShape();
  int64_t elementSize = elementBytes(type);
  double seconds = 0;
  bool communicates = false;
  std::optional<std::vector<plan::ReshardStep>> steps =
      plan::planReshard(shape, from, to, mesh.shape);
  if (!steps) {
    seconds = kInfinity;
    communicates = true;
  } else {
    TensorSharding before = from;
    for (const plan::ReshardStep &step : *steps) {
      double bytesBefore = bytesOf(
          plan::largestLocalShape(shape, before, mesh.shape), elementSize);
      double bytesAfter = bytesOf(
          plan::largestLocalShape(shape, step.after, mesh.shape), elementSize);
      communicates |= step.kind != plan::ReshardKind::LocalSlice;
      switch (step.kind) {
      case plan::ReshardKind::AllReduce:
        seconds += costs.collectiveSeconds(plan::CollectiveKind::AllReduce,
                                           bytesBefore, step.axes);
        break;
      case plan::ReshardKind::ReduceScatter:
        seconds += costs.collectiveSeconds(plan::CollectiveKind::ReduceScatter,
                                           bytesBefore, step.axes);
        break;
      case plan::ReshardKind::AllGather:
        seconds += costs.collectiveSeconds(plan::CollectiveKind::AllGather,
                                           bytesAfter, step.axes);
        break;
      case plan::ReshardKind::AllToAll:
        seconds += costs.collectiveSeconds(plan::CollectiveKind::AllToAll,
                                           bytesBefore, step.axes);
        break;
      case plan::ReshardKind::LocalSlice:
        // A copy of the kept block.
        seconds += costs.computeSeconds(0, 2 * bytesAfter, dtypeOf(type));
        break;
      }
      before = step.after;
    }
  }
  ReshardPrice price{seconds, communicates};
  reshardCache.emplace(key, price);
  return price;
}

TensorSharding mlir::weft::toTensorSharding(ShardingAttr attr) {
  TensorSharding sharding;
  for (DenseI16ArrayAttr dim : attr.getDims())
    sharding.dims.emplace_back(dim.asArrayRef().begin(),
                               dim.asArrayRef().end());
  sharding.partial.append(attr.getPartial().asArrayRef().begin(),
                          attr.getPartial().asArrayRef().end());
  return sharding;
}

/// Mode constraints on one strategy.
bool GraphBuilder::allowed(const PlannedNode &node,
                           const LoopAxes &strategy) const {
  int64_t usedDevices = parallelism(strategy, mesh.shape);
  bool isWeight = isa_and_present<WeightOp>(node.op);
  switch (options.mode) {
  case ShardingMode::Auto:
    return true;
  case ShardingMode::Replicate:
    return usedDevices == 1;
  case ShardingMode::TensorParallel:
    if (isWeight &&
        cast<RankedTensorType>(node.op->getResult(0).getType()).getRank() >= 2)
      return usedDevices == mesh.size();
    return true;
  case ShardingMode::DataParallel:
    if (isWeight)
      return usedDevices == 1;
    // Weights are consumed whole.
    for (unsigned i = 0; i < node.op->getNumOperands(); ++i)
      if (isa_and_present<WeightOp>(node.op->getOperand(i).getDefiningOp()) &&
          node.space->operandIsData[i] &&
          !operandSharding(*node.space, i, strategy).isReplicated())
        return false;
    return true;
  }
  return true;
}

plan::StrategyGraph::Node GraphBuilder::priceOp(PlannedNode &node) {
  plan::StrategyGraph::Node out;
  Operation *op = node.op;
  out.name = onnxName(op->getLoc());
  if (out.name.empty())
    out.name = op->getName().getStringRef().str();
  out.memoryAlwaysLive = isa<WeightOp, ConstantOp>(op);
  if (auto shard = dyn_cast<ShardOp>(op)) {
    node.fixed = toTensorSharding(shard.getSharding());
  } else {
    node.space = getLoopSpace(op);
  }
  if (node.space) {
    std::vector<LoopAxes> all = enumerateStrategies(*node.space, mesh.shape);
    // A weight the user pinned (weft.shard on it, from --sharding-file) is
    // stored as pinned, whatever the whole-plan mode says: the pin is the
    // more specific request, and storing it whole and slicing locally would
    // not save the memory the pin asks for.
    std::optional<TensorSharding> pinned;
    if (isa<WeightOp>(op))
      for (Operation *user : op->getUsers())
        if (auto shard = dyn_cast<ShardOp>(user))
          pinned = toTensorSharding(shard.getSharding());
    for (LoopAxes &s : all)
      if (pinned ? resultSharding(*node.space, 0, s) == *pinned
                 : allowed(node, s))
        node.strategies.push_back(std::move(s));
    // Data parallel asks every op to use the whole mesh where it can.
    if (options.mode == ShardingMode::DataParallel && !isa<WeightOp>(op)) {
      std::vector<LoopAxes> whole;
      for (const LoopAxes &s : node.strategies)
        if (parallelism(s, mesh.shape) == mesh.size())
          whole.push_back(s);
      if (!whole.empty())
        node.strategies = std::move(whole);
    }
    if (node.strategies.empty())
      node.strategies.push_back(LoopAxes(node.space->sizes.size()));
  }
  plan::DType dtype = op->getNumResults() ? dtypeOf(op->getResult(0).getType())
                                          : plan::DType::F32;
  for (unsigned s = 0; s < node.numStrategies(); ++s) {
    double localBytes = 0, resultBytes = 0;
    for (auto [i, result] : llvm::enumerate(op->getResults())) {
      auto type = cast<RankedTensorType>(result.getType());
      double bytes =
          bytesOf(plan::largestLocalShape(type.getShape(), node.result(s, i),
                                          mesh.shape),
                  elementBytes(type));
      resultBytes += bytes;
    }
    localBytes += resultBytes;
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      std::optional<TensorSharding> sharding = node.operand(s, i);
      if (!sharding)
        continue;
      auto type = cast<RankedTensorType>(op->getOperand(i).getType());
      localBytes += bytesOf(
          plan::largestLocalShape(type.getShape(), *sharding, mesh.shape),
          elementBytes(type));
    }
    double work = 0;
    if (node.space)
      work = node.space->flops /
             static_cast<double>(parallelism(node.strategies[s], mesh.shape));
    double seconds = isa<WeightOp, ConstantOp, ShardOp>(op)
                         ? 0
                         : costs.computeSeconds(work, localBytes, dtype);
    std::string name =
        node.fixed ? "fixed " + node.fixed->str() : node.result(s, 0).str();
    out.strategyNames.push_back(name);
    out.cost.push_back(seconds);
    out.memoryBytes.push_back(resultBytes);
  }
  return out;
}

void GraphBuilder::addNode(PlannedNode node,
                           plan::StrategyGraph::Node graphNode) {
  int index = nodes.size();
  if (node.op)
    for (Value result : node.op->getResults())
      producer[result] = index;
  else
    producer[node.argument] = index;
  nodes.push_back(std::move(node));
  graph.nodes.push_back(std::move(graphNode));
}

plan::StrategyGraph GraphBuilder::build() {
  Block &body = func.getBody().front();
  // Arguments: every device receives the whole input.
  for (BlockArgument arg : body.getArguments()) {
    PlannedNode node;
    node.argument = arg;
    auto type = cast<RankedTensorType>(arg.getType());
    plan::StrategyGraph::Node g;
    g.name = "input " + std::to_string(arg.getArgNumber());
    if (auto name =
            func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "weft.name"))
      g.name = "input " + name.str();
    g.strategyNames = {"replicated"};
    g.cost = {0};
    g.memoryBytes = {bytesOf(type.getShape(), elementBytes(type))};
    g.memoryAlwaysLive = true;
    addNode(std::move(node), std::move(g));
  }
  // Ops, in program order.
  llvm::DenseMap<Operation *, int> position;
  for (Operation &op : body.without_terminator()) {
    position[&op] = position.size();
    PlannedNode node;
    node.op = &op;
    plan::StrategyGraph::Node g = priceOp(node);
    addNode(std::move(node), std::move(g));
  }
  // The results must end whole on every device.
  Operation *terminator = body.getTerminator();
  int outputNode = graph.nodes.size();
  {
    plan::StrategyGraph::Node g;
    g.name = "outputs";
    g.strategyNames = {"replicated"};
    g.cost = {0};
    g.memoryBytes = {0};
    graph.nodes.push_back(std::move(g));
  }

  // Edges: producer's result sharding against the consumer's need.
  auto addEdge =
      [&](Value value, int to,
          llvm::function_ref<std::optional<TensorSharding>(unsigned)> need,
          unsigned toStrategies, bool free) {
        auto it = producer.find(value);
        if (it == producer.end())
          return;
        int from = it->second;
        const PlannedNode &source = nodes[from];
        unsigned resultIndex =
            source.op ? cast<OpResult>(value).getResultNumber() : 0;
        plan::StrategyGraph::Edge edge;
        edge.from = from;
        edge.to = to;
        bool anyCost = false;
        // A weight is stored in a sharding that its consumers read without
        // communicating (or slice locally). Gathering it at the use, as ZeRO
        // does, would save memory only if the gathered copy were priced at the
        // point of use, which the live sets (one size per node strategy) cannot
        // express; so it is not a choice. Unless the weight cannot be stored
        // whole (tp, a pinned weight): then a consumer that cannot take it
        // split gathers it (and the memory count after the solve sees that).
        bool storedWhole = false;
        if (source.op && isa<WeightOp, ConstantOp>(source.op))
          for (unsigned s = 0; s < source.numStrategies(); ++s)
            storedWhole |= source.result(s, resultIndex).isReplicated();
        // Distinct shardings first: many strategies share them.
        std::vector<TensorSharding> needs;
        for (unsigned t = 0; t < toStrategies; ++t)
          needs.push_back(*need(t));
        for (unsigned s = 0; s < source.numStrategies(); ++s) {
          TensorSharding have = source.result(s, resultIndex);
          std::vector<double> row;
          for (unsigned t = 0; t < toStrategies; ++t) {
            ReshardPrice price = reshardPrice(value, have, needs[t]);
            double seconds =
                storedWhole && price.communicates ? kInfinity : price.seconds;
            if (free && seconds != kInfinity)
              seconds = 0;
            anyCost |= seconds != 0;
            row.push_back(seconds);
          }
          edge.cost.push_back(std::move(row));
        }
        if (anyCost)
          graph.edges.push_back(std::move(edge));
      };
  for (auto [index, node] : llvm::enumerate(nodes)) {
    if (!node.op)
      continue;
    for (unsigned i = 0; i < node.op->getNumOperands(); ++i) {
      if (!node.operand(0, i))
        continue;
      const PlannedNode &consumer = node;
      addEdge(
          node.op->getOperand(i), index,
          [&](unsigned t) { return consumer.operand(t, i); },
          node.numStrategies(), /*free=*/false);
    }
  }
  for (Value result : terminator->getOperands()) {
    unsigned rank = cast<RankedTensorType>(result.getType()).getRank();
    addEdge(
        result, outputNode,
        [&](unsigned) { return TensorSharding::replicated(rank); }, 1,
        /*free=*/options.objective == Objective::Throughput);
  }

  // Memory: what is live at each op (weights and inputs always are).
  llvm::DenseMap<Value, int> lastUse;
  for (Operation &op : body) {
    for (Value operand : op.getOperands())
      lastUse[operand] = position.lookup(&op);
  }
  int numOps = position.size();
  std::vector<std::vector<int>> starts(numOps + 1), ends(numOps + 1);
  for (auto [index, node] : llvm::enumerate(nodes)) {
    if (!node.op || graph.nodes[index].memoryAlwaysLive)
      continue;
    int def = position.lookup(node.op);
    int last = def;
    for (Value result : node.op->getResults()) {
      auto it = lastUse.find(result);
      if (it != lastUse.end())
        last = std::max(last, it->second);
      // Returned values live to the end.
      for (OpOperand &use : result.getUses())
        if (use.getOwner() == terminator)
          last = numOps;
    }
    starts[def].push_back(index);
    ends[std::min(last, numOps)].push_back(index);
  }
  std::vector<int> live;
  bool grew = false;
  for (int i = 0; i <= numOps; ++i) {
    for (int n : starts[i]) {
      live.push_back(n);
      grew = true;
    }
    // A set is only worth a constraint at its peaks: after growth, before
    // values die.
    if (grew && !ends[i].empty()) {
      graph.liveSets.push_back(live);
      grew = false;
    }
    for (int n : ends[i])
      llvm::erase(live, n);
  }
  if (grew && !live.empty())
    graph.liveSets.push_back(live);
  graph.memoryBudgetBytes = costs.deviceMemoryBytes();
  return graph;
}

ShardingAttr mlir::weft::toShardingAttr(FlatSymbolRefAttr mesh,
                                        const TensorSharding &s) {
  SmallVector<SmallVector<int16_t>> dims;
  for (const AxisList &axes : s.dims)
    dims.emplace_back(axes.begin(), axes.end());
  SmallVector<int16_t> partial(s.partial.begin(), s.partial.end());
  return ShardingAttr::get(mesh, dims, partial);
}

void GraphBuilder::annotate(const plan::Solution &solution, ModuleOp module) {
  MLIRContext *context = module.getContext();
  Builder b(context);
  auto meshRef = FlatSymbolRefAttr::get(context, options.meshSymbol);
  auto toAttr = [&](MLIRContext *, const TensorSharding &s) {
    return toShardingAttr(meshRef, s);
  };
  for (auto [index, node] : llvm::enumerate(nodes)) {
    int choice = solution.choice[index];
    if (!node.op) {
      func.setArgAttr(cast<BlockArgument>(node.argument).getArgNumber(),
                      kShardingAttr, toAttr(context, node.result(choice, 0)));
      continue;
    }
    Operation *op = node.op;
    SmallVector<Attribute> results, operands;
    for (unsigned i = 0; i < op->getNumResults(); ++i)
      results.push_back(toAttr(context, node.result(choice, i)));
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      std::optional<TensorSharding> need = node.operand(choice, i);
      if (need)
        operands.push_back(toAttr(context, *need));
      else
        operands.push_back(b.getUnitAttr());
    }
    op->setAttr(kShardingAttr, b.getArrayAttr(results));
    op->setAttr(kOperandShardingAttr, b.getArrayAttr(operands));
    // The op's time and what its operands cost to bring into shape.
    double seconds = graph.nodes[index].cost[choice];
    for (const plan::StrategyGraph::Edge &edge : graph.edges)
      if (edge.to == static_cast<int>(index))
        seconds += edge.cost[solution.choice[edge.from]][choice];
    op->setAttr(kPredictedSecondsAttr, b.getF64FloatAttr(seconds));
  }
}

LogicalResult mlir::weft::autoShard(ModuleOp module,
                                    const AutoShardOptions &options,
                                    AutoShardReport &report) {
  auto func = module.lookupSymbol<func::FuncOp>("main");
  if (!func)
    return module.emitError("the module has no main function to shard");
  if (options.mesh < 0 ||
      options.mesh >= static_cast<int>(options.cluster.meshes.size()))
    return module.emitError("the cluster has no mesh to plan for");
  const plan::Mesh &mesh = options.cluster.meshes[options.mesh];
  nameUnnamedConstants(func);

  auto start = std::chrono::steady_clock::now();
  GraphBuilder builder(func, options, mesh);
  plan::StrategyGraph graph = builder.build();
  report.graphNodes = graph.nodes.size();
  report.graphEdges = graph.edges.size();
  report.liveSets = graph.liveSets.size();
  report.memoryBudgetBytes = graph.memoryBudgetBytes;
  for (const auto &node : graph.nodes)
    report.strategies += node.cost.size();
  report.buildSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();

  auto planError = [&]() {
    InFlightDiagnostic diag = module.emitError();
    if (!options.planLabel.empty())
      diag << options.planLabel << " (devices "
           << llvm::interleaved(mesh.devices, ", ") << "): ";
    diag << "sharding plan for mesh [" << llvm::interleaved(mesh.shape)
         << "]: ";
    return diag;
  };
  llvm::Expected<plan::Solution> solution =
      plan::solveILP(graph, options.solve);
  if (!solution)
    return planError() << llvm::toString(solution.takeError());

  // Declare the mesh, then annotate.
  OpBuilder b(module.getContext());
  if (auto old = module.lookupSymbol<MeshOp>(options.meshSymbol))
    old.erase();
  b.setInsertionPointToStart(module.getBody());
  MeshOp::create(b, module.getLoc(), options.meshSymbol, mesh.shape,
                 options.meshWorldRanks.empty()
                     ? DenseI64ArrayAttr()
                     : b.getDenseI64ArrayAttr(options.meshWorldRanks));
  builder.annotate(*solution, module);

  // The ILP prices each op's results, not the buffers resharding adds
  // (they depend on two ops' choices): count the whole plan, and while it
  // is over budget, solve again with the ILP's budget lowered by the excess.
  double budget = graph.memoryBudgetBytes;
  ShardedMemory memory = countShardedMemory(func, mesh.shape);
  while (memory.peakBytes > budget) {
    std::optional<plan::Solution> tighter;
    if (report.budgetTightenings < kMaxBudgetTightenings) {
      graph.memoryBudgetBytes -= memory.peakBytes - budget;
      llvm::Expected<plan::Solution> solved =
          plan::solveILP(graph, options.solve);
      if (solved)
        tighter = std::move(*solved);
      else
        llvm::consumeError(solved.takeError());
    }
    if (!tighter) // No tighter plan: report what the last one needs.
      return planError() << llvm::formatv(
                 "memory budget too small: the best plan found needs {0} "
                 "({1:F0} bytes) per device, {2} of it buffers for "
                 "resharding; the budget is {3} ({4:F0} bytes)",
                 plan::formatBytes(memory.peakBytes), memory.peakBytes,
                 plan::formatBytes(memory.reshardBytesAtPeak),
                 plan::formatBytes(budget), budget);
    *solution = std::move(*tighter);
    builder.annotate(*solution, module);
    memory = countShardedMemory(func, mesh.shape);
    ++report.budgetTightenings;
  }
  report.solution = *solution;
  report.memory = memory;
  return success();
}
