//===- StagePricing.cpp - The sharded time of part of a function ----------===//
//
// A stage's scope, autoShard's graph of it (StrategyGraphBuilder, kept per
// mesh and mode), the ILP, and autoShard's memory check, counted on a
// throwaway copy of the stage since countShardedMemory reads the plan from
// annotations and the function itself must stay as it is.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/StagePricing.h"
#include "weft/Transforms/ShardedMemory.h"
#include "weft/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InterleavedRange.h"

#include <algorithm>
#include <chrono>
#include <limits>

using namespace mlir;
using namespace mlir::weft;

static llvm::Error stageError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

static double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       start)
      .count();
}

/// Weights, constants and weft.shard pins of them: every stage that uses one
/// holds its own copy, so they follow their users rather than crossing a
/// stage boundary.
static bool followsUsers(Operation *op) {
  if (isa<WeightOp, ConstantOp>(op))
    return true;
  if (auto shard = dyn_cast<ShardOp>(op))
    if (Operation *pinned = shard->getOperand(0).getDefiningOp())
      return followsUsers(pinned);
  return false;
}

llvm::Expected<PlanScope> mlir::weft::stageScope(func::FuncOp func,
                                                 ArrayRef<Operation *> ops) {
  Block &body = func.getBody().front();
  Operation *terminator = body.getTerminator();
  llvm::DenseSet<Operation *> chosen;
  for (Operation *op : ops) {
    if (!op || op->getBlock() != &body)
      return stageError("a stage's ops must be ops of the body of @" +
                     func.getSymName());
    if (op == terminator)
      return stageError("a stage cannot hold the function's return");
    chosen.insert(op);
  }
  if (chosen.empty())
    return stageError("a stage needs at least one op");

  // The weights and constants the chosen ops use (and the weights' pins)
  // join them.
  llvm::DenseSet<Operation *> inScope = chosen;
  SmallVector<Operation *> work(chosen.begin(), chosen.end());
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (def->getBlock() == &body && followsUsers(def) &&
            inScope.insert(def).second)
          work.push_back(def);
  }
  // Only the scope's ops and their uses are visited, not the whole body:
  // the stage planner asks for thousands of scopes of long models.
  SmallVector<Operation *> ordered(inScope.begin(), inScope.end());
  llvm::sort(ordered, [](Operation *a, Operation *b) {
    return a->isBeforeInBlock(b);
  });
  PlanScope scope;
  scope.ops.assign(ordered.begin(), ordered.end());
  llvm::DenseSet<Value> seen;
  SmallVector<BlockArgument> args;
  SmallVector<OpResult> results;
  for (Operation *op : ordered)
    op->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands()) {
        if (auto arg = dyn_cast<BlockArgument>(operand)) {
          if (arg.getOwner() == &body && seen.insert(operand).second)
            args.push_back(arg);
          continue;
        }
        Operation *top = body.findAncestorOpInBlock(*operand.getDefiningOp());
        if (top && !inScope.contains(top) && seen.insert(operand).second)
          results.push_back(cast<OpResult>(operand));
      }
    });
  llvm::sort(args, [](BlockArgument a, BlockArgument b) {
    return a.getArgNumber() < b.getArgNumber();
  });
  llvm::sort(results, [](OpResult a, OpResult b) {
    if (a.getOwner() != b.getOwner())
      return a.getOwner()->isBeforeInBlock(b.getOwner());
    return a.getResultNumber() < b.getResultNumber();
  });
  scope.inputs.assign(args.begin(), args.end());
  scope.inputs.insert(scope.inputs.end(), results.begin(), results.end());
  auto usedOutside = [&](Value value) {
    return llvm::any_of(value.getUsers(), [&](Operation *user) {
      Operation *top = body.findAncestorOpInBlock(*user);
      return top && top != terminator && !inScope.contains(top);
    });
  };
  for (Value result : terminator->getOperands())
    if (Operation *def = result.getDefiningOp(); def && chosen.contains(def))
      scope.outputs.push_back(result);
  llvm::DenseSet<Value> leaving(scope.outputs.begin(), scope.outputs.end());
  for (Operation *op : scope.ops) {
    if (!chosen.contains(op) || followsUsers(op))
      continue;
    for (Value result : op->getResults())
      if (!leaving.contains(result) && usedOutside(result))
        scope.outputs.push_back(result);
  }
  return scope;
}

namespace {
/// A stage as a function of its own (its inputs the arguments, its outputs
/// returned), detached from every module, on which a plan is written and
/// counted as autoShard counts a planned main.
class StageCopy {
public:
  StageCopy(const PlanScope &scope, Location loc) {
    SmallVector<Type> inputTypes, outputTypes;
    for (Value input : scope.inputs)
      inputTypes.push_back(input.getType());
    for (Value output : scope.outputs)
      outputTypes.push_back(output.getType());
    copy = func::FuncOp::create(
        loc, "stage",
        FunctionType::get(loc.getContext(), inputTypes, outputTypes));
    Block *block = copy.addEntryBlock();
    IRMapping mapping;
    for (auto [input, arg] : llvm::zip(scope.inputs, block->getArguments())) {
      mapping.map(input, arg);
      // An input made by another stage comes by a receive, with a staging
      // buffer; the model's own inputs are read where they are needed.
      if (!isa<BlockArgument>(input))
        copy.setArgAttr(arg.getArgNumber(), kReceivedArgAttr,
                        UnitAttr::get(loc.getContext()));
    }
    OpBuilder b = OpBuilder::atBlockEnd(block);
    for (Operation *op : scope.ops)
      copied.push_back(b.clone(*op, mapping));
    SmallVector<Value> results;
    for (Value output : scope.outputs)
      results.push_back(mapping.lookup(output));
    func::ReturnOp::create(b, loc, results);
  }
  ~StageCopy() { copy->erase(); }
  StageCopy(const StageCopy &) = delete;
  StageCopy &operator=(const StageCopy &) = delete;

  /// Writes the plan `choice` of `scoped` on the copy and counts it on a
  /// mesh of `meshShape`. Only the shardings are written (the count reads
  /// nothing else), as one dictionary per op and strategy, kept in
  /// `written` across copies: writing them was a third of pricing.
  ShardedMemory count(const ScopeGraph &scoped, ArrayRef<int> choice,
                      ArrayRef<int64_t> meshShape,
                      StagePricer::WrittenShardings &written) {
    for (int index = scoped.firstOpNode, end = scoped.planned.size();
         index < end; ++index) {
      Operation *op = copied[index - scoped.firstOpNode];
      DictionaryAttr &attrs = written[{scoped.planned[index], choice[index]}];
      if (!attrs) {
        auto [results, operands] = opShardingAttrs(
            copy.getContext(), scoped.readNode(index, choice[index]));
        NamedAttrList list(op->getDiscardableAttrDictionary());
        list.set(kShardingAttr, results);
        list.set(kOperandShardingAttr, operands);
        attrs = list.getDictionary(op->getContext());
      }
      op->setDiscardableAttrs(attrs);
    }
    return countShardedMemory(copy, kMeshName, meshShape);
  }

private:
  func::FuncOp copy;
  /// The copies of the scope's ops, in scope order (as their graph nodes).
  std::vector<Operation *> copied;
};
} // namespace

StagePricer::StagePricer(func::FuncOp func, plan::Cluster cluster,
                         StagePricerOptions options)
    : func(func), cluster(std::move(cluster)), options(std::move(options)),
      signatures(std::make_unique<StageSignatures>()) {
  for (Operation &op : func.getBody().front().without_terminator()) {
    position[&op] = bodyOps.size();
    bodyOps.push_back(&op);
  }
}

StagePricer::~StagePricer() = default;

llvm::Expected<const StagePrice &>
StagePricer::price(int64_t first, int64_t last, const plan::Mesh &mesh,
                   ShardingMode mode, double budgetBytes) {
  if (first < 0 || last > numOps() || first >= last)
    return stageError(llvm::formatv("ops [{0}, {1}) are not a range of the {2} "
                                 "ops of the body",
                                 first, last, numOps()));
  return priceRuns({first, last}, mesh, mode, budgetBytes);
}

llvm::Expected<StagePricer::Runs>
StagePricer::runsOf(ArrayRef<Operation *> ops) {
  std::vector<int64_t> positions;
  for (Operation *op : ops) {
    auto it = position.find(op);
    if (it == position.end())
      return stageError("a stage's ops must be ops of the body of @" +
                     func.getSymName() + ", its return excluded");
    positions.push_back(it->second);
  }
  if (positions.empty())
    return stageError("a stage needs at least one op");
  if (!llvm::is_sorted(positions))
    llvm::sort(positions);
  Runs runs;
  for (int64_t p : positions) {
    if (!runs.empty() && p < runs.back())
      continue; // a repeat
    if (!runs.empty() && p == runs.back())
      ++runs.back();
    else
      runs.insert(runs.end(), {p, p + 1});
  }
  return runs;
}

int64_t StagePricer::numberOf(const Runs &runs) {
  auto [it, fresh] =
      runNumbers.try_emplace(runs, static_cast<int64_t>(runNumbers.size()));
  if (fresh) {
    runsByNumber.push_back(runs);
    signatureOfRuns.push_back(-1);
  }
  return it->second;
}

int64_t StagePricer::opsCount(const Runs &runs) {
  int64_t count = 0;
  for (size_t r = 0; r < runs.size(); r += 2)
    count += runs[r + 1] - runs[r];
  return count;
}

std::vector<Operation *> StagePricer::opsOf(const Runs &runs) const {
  std::vector<Operation *> ops;
  for (size_t r = 0; r < runs.size(); r += 2)
    for (int64_t p = runs[r]; p < runs[r + 1]; ++p)
      ops.push_back(bodyOps[p]);
  return ops;
}

llvm::Expected<const StagePrice &>
StagePricer::price(ArrayRef<Operation *> ops, const plan::Mesh &mesh,
                   ShardingMode mode, double budgetBytes) {
  llvm::Expected<Runs> runs = runsOf(ops);
  if (!runs)
    return runs.takeError();
  return priceRuns(std::move(*runs), mesh, mode, budgetBytes);
}

llvm::Expected<StageCost> StagePricer::cost(ArrayRef<Operation *> ops,
                                            const plan::Mesh &mesh,
                                            ShardingMode mode,
                                            double budgetBytes) {
  llvm::Expected<int64_t> stage = stageNumber(ops);
  if (!stage)
    return stage.takeError();
  return cost(*stage, mesh, mode, budgetBytes);
}

llvm::Expected<int64_t> StagePricer::stageNumber(ArrayRef<Operation *> ops) {
  llvm::Expected<Runs> runs = runsOf(ops);
  if (!runs)
    return runs.takeError();
  return numberOf(*runs);
}

llvm::Expected<StageCost> StagePricer::cost(int64_t stage,
                                            const plan::Mesh &mesh,
                                            ShardingMode mode,
                                            double budgetBytes) {
  if (stage < 0 || stage >= static_cast<int64_t>(runsByNumber.size()))
    return stageError(llvm::formatv("{0} is not a stage number", stage));
  llvm::Expected<const StagePrice &> price =
      solved(stage, mesh, mode, budgetBytes);
  if (!price)
    return price.takeError();
  return StageCost{price->fits, price->seconds, price->memory};
}

StrategyGraphBuilder &StagePricer::builderFor(const plan::Mesh &mesh,
                                              ShardingMode mode) {
  std::unique_ptr<StrategyGraphBuilder> &builder =
      builders[{mesh.shape, mesh.devices, mode}];
  if (!builder)
    builder = std::make_unique<StrategyGraphBuilder>(cluster, mesh, kMeshName,
                                                     mode, options.objective);
  return *builder;
}

llvm::Expected<const StagePrice &>
StagePricer::solved(int64_t runNumber, const plan::Mesh &mesh,
                    ShardingMode mode, double budgetBytes) {
  if (!(budgetBytes >= 0))
    return stageError(llvm::formatv("the memory budget {0} is not a byte count",
                                 budgetBytes));
  const Runs &runs = runsByNumber[runNumber];
  PriceKey key{runNumber, mesh.shape, mesh.devices, mode, budgetBytes};
  if (auto it = requests.find(key); it != requests.end()) {
    ++hits;
    return *solutions[it->second];
  }
  if (llvm::Error error = plan::verifyMesh(cluster, mesh))
    return std::move(error);
  // Stages with one signature are one problem: solved once. A set of ops
  // has one signature whatever the mesh, so it is worked out once. (Without
  // sharing, every request is a problem of its own.)
  std::optional<PlanScope> scope;
  int64_t number = -static_cast<int64_t>(solutions.size()) - 1;
  if (options.shareBySignature) {
    int64_t &known = signatureOfRuns[runNumber];
    if (known < 0) {
      llvm::Expected<PlanScope> made = stageScope(func, opsOf(runs));
      if (!made)
        return made.takeError();
      scope = std::move(*made);
      auto [it, fresh] = signatureNumbers.try_emplace(
          signatures->of(*scope),
          static_cast<int64_t>(signatureNumbers.size()));
      known = it->second;
      // The first stage of a signature is the one solved on every mesh:
      // its scope is kept.
      if (fresh)
        firstScopes.try_emplace(runNumber, *scope);
    }
    number = known;
  }
  SolveKey problem{number, mesh.shape, mesh.devices, mode, budgetBytes};
  if (auto it = bySignature.find(problem); it != bySignature.end()) {
    ++shared;
    requests[key] = it->second;
    return *solutions[it->second];
  }
  if (!scope) {
    if (auto it = firstScopes.find(runNumber); it != firstScopes.end()) {
      scope = it->second;
    } else {
      llvm::Expected<PlanScope> made = stageScope(func, opsOf(runs));
      if (!made)
        return made.takeError();
      scope = std::move(*made);
    }
  }
  ++misses;
  llvm::Expected<StagePrice> price =
      solve(*scope, opsCount(runs), mesh, mode, budgetBytes);
  if (!price)
    return price.takeError();
  solutions.push_back(std::make_unique<StagePrice>(std::move(*price)));
  bySignature[problem] = solutions.size() - 1;
  requests[key] = solutions.size() - 1;
  return *solutions.back();
}

llvm::Expected<const StagePrice &>
StagePricer::priceRuns(Runs runs, const plan::Mesh &mesh, ShardingMode mode,
                       double budgetBytes) {
  PriceKey key{numberOf(runs), mesh.shape, mesh.devices, mode, budgetBytes};
  if (auto it = prices.find(key); it != prices.end()) {
    ++hits;
    return it->second;
  }
  llvm::Expected<const StagePrice &> answer =
      solved(std::get<0>(key), mesh, mode, budgetBytes);
  if (!answer)
    return answer.takeError();
  // This stage's own shardings: its graph is the solved one's, node for
  // node, so the solved choice reads as its plan.
  llvm::Expected<PlanScope> scope = stageScope(func, opsOf(runs));
  if (!scope)
    return scope.takeError();
  StagePrice full = *answer;
  full.ops = builderFor(mesh, mode).build(*scope).read(full.solution.choice);
  return prices.emplace(std::move(key), std::move(full)).first->second;
}

llvm::Expected<StagePrice> StagePricer::solve(const PlanScope &scope,
                                              int64_t numOps,
                                              const plan::Mesh &mesh,
                                              ShardingMode mode,
                                              double budgetBytes) {
  auto start = std::chrono::steady_clock::now();
  StrategyGraphBuilder &builder = builderFor(mesh, mode);
  auto buildStart = std::chrono::steady_clock::now();
  ScopeGraph scoped = builder.build(scope);
  plan::StrategyGraph &graph = scoped.graph;
  if (budgetBytes > 0)
    graph.memoryBudgetBytes = budgetBytes;
  StagePrice price;
  price.buildSeconds = secondsSince(buildStart);
  price.budgetBytes = graph.memoryBudgetBytes;
  price.graphNodes = graph.nodes.size();
  price.graphEdges = graph.edges.size();
  price.liveSets = graph.liveSets.size();
  for (const plan::StrategyGraph::Node &node : graph.nodes)
    price.strategies += node.cost.size();
  price.inputs = scope.inputs.size();
  price.outputs = scope.outputs.size();

  StageCopy copy(scope, func.getLoc());
  auto countMemory = [&](ArrayRef<int> choice) {
    return copy.count(scoped, choice, mesh.shape, written);
  };
  auto planError = [&](llvm::Error error) {
    return stageError(llvm::formatv("stage of {0} op(s) on mesh [{1}] (devices "
                                 "{2}): {3}",
                                 numOps, llvm::interleaved(mesh.shape),
                                 llvm::interleaved(mesh.devices, ", "),
                                 llvm::toString(std::move(error))));
  };
  llvm::Expected<plan::Solution> solution =
      plan::solveILP(graph, options.solve);
  if (solution) {
    llvm::Error fit =
        fitPlanToBudget(graph, options.solve, countMemory, *solution,
                        price.memory, price.budgetTightenings);
    price.fits = !fit;
    if (fit)
      price.whyNot = llvm::toString(std::move(fit));
    price.solution = std::move(*solution);
  } else {
    // Over every budget, or none at all: which one decides between an
    // answer and an error.
    price.whyNot = llvm::toString(solution.takeError());
    if (graph.memoryBudgetBytes == std::numeric_limits<double>::infinity())
      return planError(stageError(price.whyNot));
    graph.memoryBudgetBytes = std::numeric_limits<double>::infinity();
    llvm::Expected<plan::Solution> unbounded =
        plan::solveILP(graph, options.solve);
    if (!unbounded)
      return planError(unbounded.takeError());
    price.solution = std::move(*unbounded);
    price.memory = countMemory(price.solution.choice);
  }
  price.seconds = price.solution.objective;
  price.ilpPeakMemoryBytes = price.solution.peakMemoryBytes;
  price.totalSeconds = secondsSince(start);
  return price;
}

StagePricer::Stats StagePricer::stats() const {
  Stats stats;
  stats.hits = hits;
  stats.shared = shared;
  stats.misses = misses;
  stats.builders = builders.size();
  for (const auto &[key, builder] : builders) {
    const StrategyGraphBuilder::Stats &s = builder->stats();
    stats.graphs.opsPriced += s.opsPriced;
    stats.graphs.opsReused += s.opsReused;
    stats.graphs.edgesPriced += s.edgesPriced;
    stats.graphs.edgesReused += s.edgesReused;
  }
  return stats;
}
