//===- AutoShard.cpp - Choosing a sharding for every op -------------------===//
//
// Alpa's intra-operator pass over a weft function: one node per op with the
// strategies its sharding rule allows, edges priced by the resharding
// planner, a memory constraint per program point, solved by the ILP.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/AutoShard.h"
#include "weft/ModelFunction.h"
#include "weft/Plan/CostModel.h"
#include "weft/Plan/Sharding.h"
#include "weft/Transforms/ShardedMemory.h"
#include "weft/Transforms/ShardingRules.h"
#include "weft/WeftOps.h"
#include "weft/WeftTypeUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
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

/// The name a constant without an ONNX name goes by, from where it is used:
/// "<node>/in<k>" for input k of the first node (in program order) it
/// feeds; "" when that node has no name either or nothing uses it. Folding
/// made such a constant, and MLIR's folder sets the location of the
/// constants it hoists or merges to unknown, while plan.json and --report
/// name every op.
static std::string usedAsName(ConstantOp op) {
  OpOperand *first = nullptr;
  for (OpOperand &use : op->getUses())
    if (!first || use.getOwner()->isBeforeInBlock(first->getOwner()) ||
        (use.getOwner() == first->getOwner() &&
         use.getOperandNumber() < first->getOperandNumber()))
      first = &use;
  if (!first)
    return std::string();
  std::string user = onnxName(first->getOwner()->getLoc());
  if (user.empty())
    return std::string();
  return user + "/in" + std::to_string(first->getOperandNumber());
}

/// Gives each constant without an ONNX name the one usedAsName finds.
static void nameUnnamedConstants(func::FuncOp func) {
  func.walk([&](ConstantOp op) {
    if (!onnxName(op.getLoc()).empty())
      return;
    std::string name = usedAsName(op);
    if (name.empty())
      return;
    op->setLoc(
        NameLoc::get(StringAttr::get(op.getContext(), name), op.getLoc()));
  });
}

/// The name a graph node of `op` goes by: the one autoShard gives it after
/// nameUnnamedConstants, found without renaming anything.
static std::string plannedName(Operation *op) {
  std::string name = onnxName(op->getLoc());
  if (name.empty())
    if (auto constant = dyn_cast<ConstantOp>(op))
      name = usedAsName(constant);
  if (name.empty())
    name = op->getName().getStringRef().str();
  return name;
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

/// An op or an input as a node of the graph.
struct mlir::weft::PlannedNode {
  Operation *op = nullptr; // null for inputs
  Value input;             // for inputs
  /// The symbol of the mesh planned on (the builder's, which owns it).
  StringRef mesh;
  std::optional<LoopSpace> space;
  std::vector<LoopAxes> strategies;
  /// For weft.shard: the one sharding allowed.
  std::optional<TensorSharding> fixed;

  unsigned numStrategies() const { return space ? strategies.size() : 1; }
  TensorSharding result(unsigned strategy, unsigned index) const {
    if (fixed)
      return *fixed;
    if (space)
      return resultSharding(*space, index, strategies[strategy], mesh);
    Value v = op ? op->getResult(index) : input;
    return TensorSharding::replicated(
        mesh, cast<RankedTensorType>(v.getType()).getRank());
  }
  /// Whether operand `index` is data (operand() is then not nullopt).
  bool isData(unsigned index) const {
    if (fixed)
      return true;
    if (space)
      return space->operandIsData[index];
    return isa<RankedTensorType>(op->getOperand(index).getType());
  }
  /// Nullopt for operands that are not data.
  std::optional<TensorSharding> operand(unsigned strategy,
                                        unsigned index) const {
    if (fixed)
      return *fixed;
    if (space) {
      if (!space->operandIsData[index])
        return std::nullopt;
      return operandSharding(*space, index, strategies[strategy], mesh);
    }
    auto type = dyn_cast<RankedTensorType>(op->getOperand(index).getType());
    if (!type)
      return std::nullopt;
    return TensorSharding::replicated(mesh, type.getRank());
  }
};

namespace {
/// Resharding a value from one sharding to another: its time, and whether it
/// needs a collective (rather than local slices only).
struct ReshardPrice {
  double seconds = 0;
  bool communicates = false;
};

/// A node as every graph that holds it has it.
struct PricedNode {
  PlannedNode planned;
  plan::StrategyGraph::Node node;
};

/// Edge costs [strategy of from][strategy of to]; nullopt when every pair is
/// free, so that the graph has no edge.
using EdgeCost = std::optional<std::vector<std::vector<double>>>;
} // namespace

struct StrategyGraphBuilder::Impl {
  Impl(const plan::Cluster &cluster, const plan::Mesh &mesh,
       StringRef meshSymbol, ShardingMode mode, Objective objective)
      : meshSymbol(meshSymbol.str()), meshShape(mesh.shape),
        meshSize(mesh.size()), mode(mode), objective(objective),
        costs(cluster, mesh) {}

  ReshardPrice reshardPrice(Value value, const TensorSharding &from,
                            const TensorSharding &to);
  bool allowed(const PlannedNode &node, const LoopAxes &strategy) const;
  plan::StrategyGraph::Node priceOp(PlannedNode &node);
  const PricedNode &pricedOp(Operation *op);
  const PricedNode &pricedInput(Value input);
  /// The edge carrying `value` from `source` to a node of `toStrategies`
  /// strategies needing need(t); `free` prices every allowed pair at 0.
  EdgeCost
  edgeCost(const PlannedNode &source, Value value,
           llvm::function_ref<std::optional<TensorSharding>(unsigned)> need,
           unsigned toStrategies, bool free);
  /// The sharding `shard` pins, laid on this mesh (see the constructor's
  /// comment in AutoShard.h).
  TensorSharding pinOf(ShardOp shard) const {
    return toTensorSharding(shard.getSharding()).onMesh(meshSymbol);
  }

  std::string meshSymbol;
  std::vector<int64_t> meshShape;
  int64_t meshSize;
  ShardingMode mode;
  Objective objective;
  plan::CostModel costs;

  llvm::DenseMap<Operation *, std::unique_ptr<PricedNode>> ops;
  llvm::DenseMap<Value, std::unique_ptr<PricedNode>> inputs;
  /// Edges into operand k of an op, by (op, k, whether the value comes from
  /// an input of the scope rather than its producer op).
  std::map<std::tuple<Operation *, unsigned, bool>, EdgeCost> operandEdges;
  /// Edges from a value to the outputs, by (value, from an input).
  std::map<std::pair<const void *, bool>, EdgeCost> outputEdges;
  /// Resharding prices by (value type, from, to), all on this mesh.
  std::map<std::tuple<const void *, std::string, std::string>, ReshardPrice>
      reshardCache;
  Stats stats;
};

ReshardPrice StrategyGraphBuilder::Impl::reshardPrice(
    Value value, const TensorSharding &from, const TensorSharding &to) {
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
      plan::planReshard(shape, from, to, meshShape);
  if (!steps) {
    seconds = kInfinity;
    communicates = true;
  } else {
    TensorSharding before = from;
    for (const plan::ReshardStep &step : *steps) {
      double bytesBefore = bytesOf(
          plan::largestLocalShape(shape, before, meshShape), elementSize);
      double bytesAfter = bytesOf(
          plan::largestLocalShape(shape, step.after, meshShape), elementSize);
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
        seconds += costs.computeSeconds(0, 2 * bytesAfter, costDTypeOf(type));
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
  sharding.mesh = attr.getMesh().getValue().str();
  for (DenseI16ArrayAttr dim : attr.getDims())
    sharding.dims.emplace_back(dim.asArrayRef().begin(),
                               dim.asArrayRef().end());
  sharding.partial.append(attr.getPartial().asArrayRef().begin(),
                          attr.getPartial().asArrayRef().end());
  return sharding;
}

LogicalResult mlir::weft::verifyShardingsOnMesh(func::FuncOp func,
                                                FlatSymbolRefAttr mesh,
                                                StringRef role) {
  WalkResult walked = func.walk([&](Operation *op) {
    // Inherent attributes too: a weft.shard's, a function's arg_attrs.
    return op->getAttrDictionary().walk([&](ShardingAttr sharding) {
      if (sharding.getMesh() == mesh)
        return WalkResult::advance();
      op->emitOpError("has a sharding on mesh ")
          << sharding.getMesh() << ", not on " << role << " " << mesh;
      return WalkResult::interrupt();
    });
  });
  return failure(walked.wasInterrupted());
}

/// Mode constraints on one strategy.
bool StrategyGraphBuilder::Impl::allowed(const PlannedNode &node,
                                         const LoopAxes &strategy) const {
  int64_t usedDevices = parallelism(strategy, meshShape);
  bool isWeight = isa_and_present<WeightOp>(node.op);
  switch (mode) {
  case ShardingMode::Auto:
    return true;
  case ShardingMode::Replicate:
    return usedDevices == 1;
  case ShardingMode::TensorParallel:
    if (isWeight &&
        cast<RankedTensorType>(node.op->getResult(0).getType()).getRank() >= 2)
      return usedDevices == meshSize;
    return true;
  case ShardingMode::DataParallel:
    if (isWeight)
      return usedDevices == 1;
    // Weights are consumed whole.
    for (unsigned i = 0; i < node.op->getNumOperands(); ++i)
      if (isa_and_present<WeightOp>(node.op->getOperand(i).getDefiningOp()) &&
          node.space->operandIsData[i] &&
          !operandSharding(*node.space, i, strategy, meshSymbol).isReplicated())
        return false;
    return true;
  }
  return true;
}

plan::StrategyGraph::Node
StrategyGraphBuilder::Impl::priceOp(PlannedNode &node) {
  plan::StrategyGraph::Node out;
  Operation *op = node.op;
  out.name = plannedName(op);
  out.memoryAlwaysLive = isa<WeightOp, ConstantOp>(op);
  if (auto shard = dyn_cast<ShardOp>(op)) {
    node.fixed = pinOf(shard);
  } else {
    node.space = getLoopSpace(op);
  }
  if (node.space) {
    std::vector<LoopAxes> all = enumerateStrategies(*node.space, meshShape);
    // A weight the user pinned (weft.shard on it, from --sharding-file) is
    // stored as pinned, whatever the whole-plan mode says: the pin is the
    // more specific request, and storing it whole and slicing locally would
    // not save the memory the pin asks for.
    std::optional<TensorSharding> pinned;
    if (isa<WeightOp>(op))
      for (Operation *user : op->getUsers())
        if (auto shard = dyn_cast<ShardOp>(user))
          pinned = pinOf(shard);
    for (LoopAxes &s : all)
      if (pinned ? resultSharding(*node.space, 0, s, meshSymbol) == *pinned
                 : allowed(node, s))
        node.strategies.push_back(std::move(s));
    // Data parallel asks every op to use the whole mesh where it can.
    if (mode == ShardingMode::DataParallel && !isa<WeightOp>(op)) {
      std::vector<LoopAxes> whole;
      for (const LoopAxes &s : node.strategies)
        if (parallelism(s, meshShape) == meshSize)
          whole.push_back(s);
      if (!whole.empty())
        node.strategies = std::move(whole);
    }
    if (node.strategies.empty())
      node.strategies.push_back(LoopAxes(node.space->sizes.size()));
  }
  plan::DType dtype = op->getNumResults()
                          ? costDTypeOf(op->getResult(0).getType())
                          : plan::DType::F32;
  for (unsigned s = 0; s < node.numStrategies(); ++s) {
    // resultBytes is what the op holds (its memory); localBytes what it
    // moves, which fused elementwise values do not (isCostFreeView and
    // the InRegisters rules: the simulator prices ops the same way).
    double localBytes = 0, resultBytes = 0;
    for (auto [i, result] : llvm::enumerate(op->getResults())) {
      auto type = cast<RankedTensorType>(result.getType());
      double bytes = bytesOf(plan::largestLocalShape(
                                 type.getShape(), node.result(s, i), meshShape),
                             elementBytes(type));
      resultBytes += bytes;
      if (!resultStaysInRegisters(result))
        localBytes += bytes;
    }
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      std::optional<TensorSharding> sharding = node.operand(s, i);
      if (!sharding || operandStaysInRegisters(op, i))
        continue;
      auto type = cast<RankedTensorType>(op->getOperand(i).getType());
      double bytes = bytesOf(
          plan::largestLocalShape(type.getShape(), *sharding, meshShape),
          elementBytes(type));
      if (node.space && i < node.space->operandReadInPart.size() &&
          node.space->operandReadInPart[i])
        bytes = std::min(bytes, resultBytes);
      localBytes += bytes;
    }
    double work = 0;
    if (node.space)
      work = node.space->flops /
             static_cast<double>(parallelism(node.strategies[s], meshShape));
    double seconds = isa<WeightOp, ConstantOp, ShardOp>(op) ||
                             isCostFreeView(op) ||
                             (isClampFusedIntoConv(op) && costs.allDevicesCpu())
                         ? 0
                         : costs.computeSeconds(work, localBytes, dtype,
                                                kernelClassOf(op));
    std::string name =
        node.fixed ? "fixed " + node.fixed->str() : node.result(s, 0).str();
    out.strategyNames.push_back(name);
    out.cost.push_back(seconds);
    out.memoryBytes.push_back(resultBytes);
  }
  return out;
}

const PricedNode &StrategyGraphBuilder::Impl::pricedOp(Operation *op) {
  std::unique_ptr<PricedNode> &slot = ops[op];
  if (slot) {
    ++stats.opsReused;
    return *slot;
  }
  ++stats.opsPriced;
  slot = std::make_unique<PricedNode>();
  slot->planned.op = op;
  slot->planned.mesh = meshSymbol;
  slot->node = priceOp(slot->planned);
  return *slot;
}

/// Every device receives an input whole.
const PricedNode &StrategyGraphBuilder::Impl::pricedInput(Value input) {
  std::unique_ptr<PricedNode> &slot = inputs[input];
  if (slot)
    return *slot;
  slot = std::make_unique<PricedNode>();
  slot->planned.input = input;
  slot->planned.mesh = meshSymbol;
  plan::StrategyGraph::Node &g = slot->node;
  if (auto arg = dyn_cast<BlockArgument>(input)) {
    g.name = "input " + std::to_string(arg.getArgNumber());
    if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
      if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        "weft.name"))
        g.name = "input " + name.str();
  } else {
    auto result = cast<OpResult>(input);
    g.name = "input " + plannedName(result.getOwner());
    if (result.getOwner()->getNumResults() > 1)
      g.name += "#" + std::to_string(result.getResultNumber());
  }
  auto type = cast<RankedTensorType>(input.getType());
  g.strategyNames = {"replicated"};
  g.cost = {0};
  g.memoryBytes = {bytesOf(type.getShape(), elementBytes(type))};
  g.memoryAlwaysLive = true;
  return *slot;
}

EdgeCost StrategyGraphBuilder::Impl::edgeCost(
    const PlannedNode &source, Value value,
    llvm::function_ref<std::optional<TensorSharding>(unsigned)> need,
    unsigned toStrategies, bool free) {
  ++stats.edgesPriced;
  unsigned resultIndex =
      source.op ? cast<OpResult>(value).getResultNumber() : 0;
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
  std::vector<std::vector<double>> cost;
  bool anyCost = false;
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
    cost.push_back(std::move(row));
  }
  if (!anyCost)
    return std::nullopt;
  return cost;
}

PlanScope mlir::weft::wholeFunctionScope(func::FuncOp func) {
  PlanScope scope;
  Block &body = func.getBody().front();
  for (BlockArgument arg : body.getArguments())
    scope.inputs.push_back(arg);
  for (Operation &op : body.without_terminator())
    scope.ops.push_back(&op);
  for (Value result : body.getTerminator()->getOperands())
    scope.outputs.push_back(result);
  return scope;
}

StrategyGraphBuilder::StrategyGraphBuilder(const plan::Cluster &cluster,
                                           const plan::Mesh &mesh,
                                           StringRef meshSymbol,
                                           ShardingMode mode,
                                           Objective objective)
    : impl(std::make_unique<Impl>(cluster, mesh, meshSymbol, mode, objective)) {
}

StrategyGraphBuilder::~StrategyGraphBuilder() = default;

const StrategyGraphBuilder::Stats &StrategyGraphBuilder::stats() const {
  return impl->stats;
}

ScopeGraph StrategyGraphBuilder::build(const PlanScope &scope) {
  Impl &s = *impl;
  ScopeGraph out;
  plan::StrategyGraph &graph = out.graph;
  /// Which node produces a value.
  llvm::DenseMap<Value, int> producer;
  auto addNode = [&](const PricedNode &priced) {
    int index = graph.nodes.size();
    if (priced.planned.op)
      for (Value result : priced.planned.op->getResults())
        producer[result] = index;
    else
      producer[priced.planned.input] = index;
    out.planned.push_back(&priced.planned);
    // Without strategy names (only validate's messages read them): copying
    // them was a fifth of the stage planner's graph assembly.
    const plan::StrategyGraph::Node &node = priced.node;
    graph.nodes.push_back(
        {node.name, {}, node.cost, node.memoryBytes, node.memoryAlwaysLive});
  };
  for (Value input : scope.inputs)
    addNode(s.pricedInput(input));
  out.firstOpNode = graph.nodes.size();
  for (Operation *op : scope.ops)
    addNode(s.pricedOp(op));
  // The outputs must end whole on every device.
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
  auto addEdge = [&](EdgeCost &cached, bool known, int from, int to,
                     llvm::function_ref<EdgeCost()> price) {
    if (known)
      ++s.stats.edgesReused;
    else
      cached = price();
    if (cached)
      graph.edges.push_back({from, to, *cached});
  };
  for (int index = out.firstOpNode; index < outputNode; ++index) {
    const PlannedNode &consumer = *out.planned[index];
    Operation *op = consumer.op;
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      if (!consumer.isData(i))
        continue;
      Value value = op->getOperand(i);
      auto it = producer.find(value);
      if (it == producer.end())
        continue;
      int from = it->second;
      bool fromInput = from < out.firstOpNode;
      auto [slot, fresh] =
          s.operandEdges.try_emplace({op, i, fromInput}, std::nullopt);
      addEdge(slot->second, !fresh, from, index, [&] {
        return s.edgeCost(
            *out.planned[from], value,
            [&](unsigned t) { return consumer.operand(t, i); },
            consumer.numStrategies(), /*free=*/false);
      });
    }
  }
  for (Value result : scope.outputs) {
    auto it = producer.find(result);
    if (it == producer.end())
      continue;
    int from = it->second;
    bool fromInput = from < out.firstOpNode;
    unsigned rank = cast<RankedTensorType>(result.getType()).getRank();
    auto [slot, fresh] = s.outputEdges.try_emplace(
        {result.getAsOpaquePointer(), fromInput}, std::nullopt);
    addEdge(slot->second, !fresh, from, outputNode, [&] {
      return s.edgeCost(
          *out.planned[from], result,
          [&](unsigned) {
            return TensorSharding::replicated(s.meshSymbol, rank);
          },
          1,
          /*free=*/s.objective == Objective::Throughput);
    });
  }

  // Memory: what is live at each op (weights and inputs always are).
  int numOps = scope.ops.size();
  llvm::DenseMap<Value, int> lastUse;
  for (auto [at, op] : llvm::enumerate(scope.ops))
    for (Value operand : op->getOperands())
      lastUse[operand] = at;
  llvm::DenseSet<Value> leaving(scope.outputs.begin(), scope.outputs.end());
  std::vector<std::vector<int>> starts(numOps + 1), ends(numOps + 1);
  for (int index = out.firstOpNode; index < outputNode; ++index) {
    if (graph.nodes[index].memoryAlwaysLive)
      continue;
    int def = index - out.firstOpNode;
    int last = def;
    for (Value result : out.planned[index]->op->getResults()) {
      auto it = lastUse.find(result);
      if (it != lastUse.end())
        last = std::max(last, it->second);
      // Outputs live to the end.
      if (leaving.contains(result))
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
  graph.memoryBudgetBytes = s.costs.deviceMemoryBytes();
  return out;
}

std::vector<OpSharding> ScopeGraph::read(ArrayRef<int> choice) const {
  // The op's time and what its operands cost to bring into shape.
  std::vector<double> seconds(graph.nodes.size());
  for (auto [index, node] : llvm::enumerate(graph.nodes))
    seconds[index] = node.cost[choice[index]];
  for (const plan::StrategyGraph::Edge &edge : graph.edges)
    seconds[edge.to] += edge.cost[choice[edge.from]][choice[edge.to]];
  std::vector<OpSharding> shardings;
  for (int index = firstOpNode, end = planned.size(); index < end; ++index) {
    shardings.push_back(readNode(index, choice[index]));
    shardings.back().seconds = seconds[index];
  }
  return shardings;
}

OpSharding ScopeGraph::readNode(int index, int strategy) const {
  const PlannedNode &node = *planned[index];
  OpSharding sharding;
  sharding.op = node.op;
  for (unsigned i = 0; i < node.op->getNumResults(); ++i)
    sharding.results.push_back(node.result(strategy, i));
  for (unsigned i = 0; i < node.op->getNumOperands(); ++i)
    sharding.operands.push_back(node.operand(strategy, i));
  return sharding;
}

ShardingAttr mlir::weft::toShardingAttr(MLIRContext *context,
                                        const TensorSharding &s) {
  SmallVector<SmallVector<int16_t>> dims;
  for (const AxisList &axes : s.dims)
    dims.emplace_back(axes.begin(), axes.end());
  SmallVector<int16_t> partial(s.partial.begin(), s.partial.end());
  return ShardingAttr::get(FlatSymbolRefAttr::get(context, s.mesh), dims,
                           partial);
}

std::pair<ArrayAttr, ArrayAttr>
mlir::weft::opShardingAttrs(MLIRContext *context, const OpSharding &sharding) {
  Builder b(context);
  SmallVector<Attribute> results, operands;
  for (const TensorSharding &result : sharding.results)
    results.push_back(toShardingAttr(context, result));
  for (const std::optional<TensorSharding> &need : sharding.operands)
    operands.push_back(need ? Attribute(toShardingAttr(context, *need))
                            : Attribute(b.getUnitAttr()));
  return {b.getArrayAttr(results), b.getArrayAttr(operands)};
}

void mlir::weft::writeOpSharding(Operation *op, const OpSharding &sharding) {
  Builder b(op->getContext());
  auto [results, operands] = opShardingAttrs(op->getContext(), sharding);
  op->setAttr(kShardingAttr, results);
  op->setAttr(kOperandShardingAttr, operands);
  op->setAttr(kPredictedSecondsAttr, b.getF64FloatAttr(sharding.seconds));
}

/// Writes the plan `choice` of `graph` (built over wholeFunctionScope, on
/// `mesh`) on `func`: its arguments arrive whole.
static void annotate(func::FuncOp func, const ScopeGraph &graph,
                     ArrayRef<int> choice, FlatSymbolRefAttr mesh) {
  for (BlockArgument arg : func.getArguments())
    func.setArgAttr(arg.getArgNumber(), kShardingAttr,
                    ShardingAttr::getReplicated(
                        mesh, cast<RankedTensorType>(arg.getType()).getRank()));
  for (const OpSharding &sharding : graph.read(choice))
    writeOpSharding(sharding.op, sharding);
}

/// Refuses a weft.shard of `func` that pins a sharding on a mesh other than
/// `meshSymbol`, the one planned: its axes are another mesh's.
static LogicalResult checkPinsOnMesh(func::FuncOp func, StringRef meshSymbol) {
  WalkResult walked = func.walk([&](ShardOp shard) {
    FlatSymbolRefAttr mesh = shard.getSharding().getMesh();
    if (mesh.getValue() == meshSymbol)
      return WalkResult::advance();
    shard.emitOpError("pins a sharding on mesh ")
        << mesh << ", but the plan is for mesh @" << meshSymbol;
    return WalkResult::interrupt();
  });
  return failure(walked.wasInterrupted());
}

llvm::Error mlir::weft::fitPlanToBudget(
    const plan::StrategyGraph &graph, const plan::SolveOptions &options,
    llvm::function_ref<ShardedMemory(ArrayRef<int>)> countMemory,
    plan::Solution &solution, ShardedMemory &memory, int &tightenings) {
  double budget = graph.memoryBudgetBytes;
  tightenings = 0;
  memory = countMemory(solution.choice);
  std::optional<plan::StrategyGraph> tightened;
  while (memory.peakBytes > budget) {
    std::optional<plan::Solution> tighter;
    if (tightenings < kMaxBudgetTightenings) {
      if (!tightened)
        tightened = graph;
      tightened->memoryBudgetBytes -= memory.peakBytes - budget;
      llvm::Expected<plan::Solution> solved =
          plan::solveILP(*tightened, options);
      if (solved)
        tighter = std::move(*solved);
      else
        llvm::consumeError(solved.takeError());
    }
    if (!tighter) // No tighter plan: report what the last one needs.
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::formatv("memory budget too small: the best plan found needs "
                        "{0} ({1:F0} bytes) per device, {2} of it buffers for "
                        "resharding; the budget is {3} ({4:F0} bytes)",
                        plan::formatBytes(memory.peakBytes), memory.peakBytes,
                        plan::formatBytes(memory.reshardBytesAtPeak),
                        plan::formatBytes(budget), budget)
              .str());
    solution = std::move(*tighter);
    memory = countMemory(solution.choice);
    ++tightenings;
  }
  return llvm::Error::success();
}

LogicalResult mlir::weft::autoShard(ModuleOp module,
                                    const AutoShardOptions &options,
                                    AutoShardReport &report) {
  func::FuncOp func = getModelFunction(module, "weft-auto-shard");
  if (!func)
    return failure();
  if (options.mesh < 0 ||
      options.mesh >= static_cast<int>(options.cluster.meshes.size()))
    return module.emitError("the cluster has no mesh to plan for");
  const plan::Mesh &mesh = options.cluster.meshes[options.mesh];
  if (failed(checkPinsOnMesh(func, options.meshSymbol)))
    return failure();
  nameUnnamedConstants(func);

  auto start = std::chrono::steady_clock::now();
  StrategyGraphBuilder builder(options.cluster, mesh, options.meshSymbol,
                               options.mode, options.objective);
  ScopeGraph scoped = builder.build(wholeFunctionScope(func));
  const plan::StrategyGraph &graph = scoped.graph;
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
  auto meshRef = FlatSymbolRefAttr::get(module.getContext(), options.meshSymbol);

  // The memory count reads the annotations, so each plan tried is written
  // before it is counted; a failed fit leaves the last one written.
  ShardedMemory memory;
  int tightenings = 0;
  llvm::Error fit = fitPlanToBudget(
      graph, options.solve,
      [&](ArrayRef<int> choice) {
        annotate(func, scoped, choice, meshRef);
        return countShardedMemory(func, options.meshSymbol, mesh.shape);
      },
      *solution, memory, tightenings);
  report.budgetTightenings += tightenings;
  if (fit)
    return planError() << llvm::toString(std::move(fit));
  report.solution = *solution;
  report.memory = memory;
  return success();
}
