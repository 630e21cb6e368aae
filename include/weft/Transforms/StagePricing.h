//===- StagePricing.h - The sharded time of part of a function --*- C++ -*-===//
//
// What the inter-operator stage planner asks thousands of times: how fast,
// and in how much memory, can these ops of the model run on that sub-mesh?
// StagePricer answers with autoShard's own ILP over just those ops, without
// touching the function, and remembers every answer and the work behind it.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TRANSFORMS_STAGEPRICING_H
#define WEFT_TRANSFORMS_STAGEPRICING_H

#include "weft/Transforms/AutoShard.h"
#include "weft/Transforms/StageSignature.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace mlir::weft {

/// The scope of a stage made of `ops` of `func`'s body (the terminator
/// excluded), as the stage planner cuts a model:
///   - the weights and constants they use count as theirs (every stage that
///     uses one holds its own copy), and so does a weft.shard pinning one;
///   - values made outside the stage are inputs, arriving whole on every
///     device: function arguments first (by number), then op results (in
///     body order);
///   - values the stage makes that the function returns (in the return's
///     order, repeats kept) or that ops outside it use (in body order) are
///     outputs, which must end whole. A weight or constant is never one:
///     its users outside hold their own.
/// An argument no op of the stage uses is not an input, so the whole body
/// is autoShard's scope unless some argument is unused.
/// Errors: an op not of the body, the terminator, no op at all.
llvm::Expected<PlanScope> stageScope(func::FuncOp func,
                                     llvm::ArrayRef<Operation *> ops);

/// What a stage costs on one sub-mesh.
struct StagePrice {
  /// `seconds`, `ops` and `memory` are a plan within the budget. When not,
  /// `whyNot` says why, and they are a plan over it, which shows what the
  /// stage needs: the fastest plan ignoring the budget when the ILP found
  /// none within it, else the last one tried when resharding buffers took
  /// each plan over it.
  bool fits = false;
  std::string whyNot;
  /// The plan's predicted time: the ILP objective (the ops' compute, the
  /// resharding between them and from the whole inputs, and gathering the
  /// outputs whole unless the objective is throughput).
  double seconds = 0;
  /// The chosen sharding of each op of the scope (weights and constants it
  /// uses included), in body order, on the mesh kMeshName (any sub-mesh is
  /// priced under that name); writeOpSharding applies one.
  std::vector<OpSharding> ops;
  /// The plan's memory per device as autoShard checks it (countShardedMemory
  /// on the stage as a function of its own: inputs and outputs whole for the
  /// whole run, weights, each op's local results, and the buffers
  /// resharding adds).
  ShardedMemory memory;
  /// The ILP's own figure, which counts op results only.
  double ilpPeakMemoryBytes = 0;
  /// The budget the plan was held to, bytes per device.
  double budgetBytes = 0;
  /// The solve: its choice is per graph node (the scope's inputs, its ops,
  /// then the outputs), optimality, gap, sizes and seconds.
  plan::Solution solution;
  int64_t graphNodes = 0, graphEdges = 0, liveSets = 0, strategies = 0;
  int64_t inputs = 0, outputs = 0;
  /// Times the ILP was solved again because resharding buffers took the
  /// plan over the budget (as autoShard's report counts them).
  int budgetTightenings = 0;
  /// Seconds spent on the first request: assembling the graph, and all of
  /// it (scope, graph, solves and memory counts).
  double buildSeconds = 0, totalSeconds = 0;
};

struct StagePricerOptions {
  Objective objective = Objective::Latency;
  plan::SolveOptions solve;
  /// Solve each distinct problem once: stages whose scopes have the same
  /// signature (StageSignature.h) on the same mesh, mode and budget share
  /// one solve. Off, every new request is solved (for tests).
  bool shareBySignature = true;
};

/// What a stage costs, without its plan: StagePricer::cost's answer.
struct StageCost {
  bool fits = false;
  double seconds = 0;
  ShardedMemory memory;
};

/// Prices stages of one function on sub-meshes of one cluster. Each answer
/// is kept, so a request repeated with the same ops, mesh (shape and
/// devices), mode and budget is a lookup; a stage with the same signature as
/// one already solved (a run of a transformer's blocks like another) takes
/// that solve's answer; and each op's strategies and costs and each edge's
/// resharding prices are kept per mesh and mode, so a new stage on a known
/// mesh costs its graph's assembly and its solve.
///
/// The function is only read, and must neither change nor go away while
/// the pricer lives; the answers point at its ops.
class StagePricer {
public:
  StagePricer(func::FuncOp func, plan::Cluster cluster,
              StagePricerOptions options = {});
  ~StagePricer();

  /// The number of ops of the body, the terminator excluded.
  int64_t numOps() const { return static_cast<int64_t>(bodyOps.size()); }
  /// Op `index` of the body (0 <= index < numOps()).
  Operation *op(int64_t index) const { return bodyOps[index]; }

  /// Prices ops [first, last) of the body on `mesh` in `mode` within
  /// `budgetBytes` per device (0: the mesh's device memory). A budget no
  /// plan meets is an answer (fits false). Errors: a range outside the
  /// body or empty, a mesh not of the cluster's devices (plan::verifyMesh),
  /// a negative budget, a stage that no plan can run at all (the mode
  /// forbids every plan), a solver failure. The answer lives as long as the
  /// pricer; its `ops` are these ops' shardings, and a shared solve's
  /// figures (whyNot names the ops of the stage first solved).
  llvm::Expected<const StagePrice &> price(int64_t first, int64_t last,
                                           const plan::Mesh &mesh,
                                           ShardingMode mode,
                                           double budgetBytes = 0);
  /// The same for any set of the body's ops (repeats ignored).
  llvm::Expected<const StagePrice &> price(llvm::ArrayRef<Operation *> ops,
                                           const plan::Mesh &mesh,
                                           ShardingMode mode,
                                           double budgetBytes = 0);
  /// The time and memory of price(ops, ...) without its plan: what the
  /// stage planner asks thousands of times, kept in far less memory.
  llvm::Expected<StageCost> cost(llvm::ArrayRef<Operation *> ops,
                                 const plan::Mesh &mesh, ShardingMode mode,
                                 double budgetBytes = 0);
  /// A number for a set of the body's ops (the same set, the same number;
  /// errors as price()), and cost() by that number: a stage asked about on
  /// many meshes is read once.
  llvm::Expected<int64_t> stageNumber(llvm::ArrayRef<Operation *> ops);
  llvm::Expected<StageCost> cost(int64_t stage, const plan::Mesh &mesh,
                                 ShardingMode mode, double budgetBytes = 0);

  /// The sharding attributes of an op under a strategy, as the memory
  /// count reads them (see StagePricing.cpp).
  using WrittenShardings =
      llvm::DenseMap<std::pair<const PlannedNode *, int>, DictionaryAttr>;

  struct Stats {
    /// Requests answered from memory, answered by the solve of another
    /// stage with the same signature, and solved.
    int64_t hits = 0, shared = 0, misses = 0;
    /// Over every mesh and mode: ops and edges priced, and reused.
    StrategyGraphBuilder::Stats graphs;
    /// Meshes-and-modes with a builder.
    int64_t builders = 0;
  };
  Stats stats() const;

private:
  /// Ops as runs of body positions [begin, end), ascending.
  using Runs = std::vector<int64_t>;
  using BuilderKey =
      std::tuple<std::vector<int64_t>, std::vector<int>, ShardingMode>;
  /// (number of the set of ops, mesh shape, devices, mode, budget).
  using PriceKey = std::tuple<int64_t, std::vector<int64_t>, std::vector<int>,
                              ShardingMode, double>;
  struct RunsHash {
    size_t operator()(const Runs &runs) const {
      return llvm::hash_combine_range(runs.begin(), runs.end());
    }
  };
  /// (signature number, mesh shape, devices, mode, budget).
  using SolveKey = std::tuple<int64_t, std::vector<int64_t>, std::vector<int>,
                              ShardingMode, double>;

  llvm::Expected<Runs> runsOf(llvm::ArrayRef<Operation *> ops);
  /// The solved answer of a request (its `ops` empty), solving it, or
  /// taking another stage's with the same signature, when new.
  llvm::Expected<const StagePrice &> solved(int64_t runNumber,
                                            const plan::Mesh &mesh,
                                            ShardingMode mode,
                                            double budgetBytes);
  /// The full answer: the solved one with the request's own shardings.
  llvm::Expected<const StagePrice &> priceRuns(Runs runs,
                                               const plan::Mesh &mesh,
                                               ShardingMode mode,
                                               double budgetBytes);
  llvm::Expected<StagePrice> solve(const PlanScope &scope, int64_t numOps,
                                   const plan::Mesh &mesh, ShardingMode mode,
                                   double budgetBytes);
  StrategyGraphBuilder &builderFor(const plan::Mesh &mesh, ShardingMode mode);
  std::vector<Operation *> opsOf(const Runs &runs) const;
  static int64_t opsCount(const Runs &runs);

  func::FuncOp func;
  plan::Cluster cluster;
  StagePricerOptions options;
  std::vector<Operation *> bodyOps;
  llvm::DenseMap<Operation *, int64_t> position;
  std::map<BuilderKey, std::unique_ptr<StrategyGraphBuilder>> builders;
  std::unique_ptr<StageSignatures> signatures;
  std::map<ScopeSignature, int64_t> signatureNumbers;
  /// Each set of ops asked about gets a number (the keys of the maps below
  /// stay short), and its signature's number once worked out (-1 before).
  std::unordered_map<Runs, int64_t, RunsHash> runNumbers;
  std::vector<Runs> runsByNumber;
  std::vector<int64_t> signatureOfRuns;
  /// The scope of the first stage of each signature, by its number.
  std::map<int64_t, PlanScope> firstScopes;
  int64_t numberOf(const Runs &runs);
  /// Solved answers (without `ops`), by problem, and each request's.
  std::vector<std::unique_ptr<StagePrice>> solutions;
  std::map<SolveKey, size_t> bySignature;
  std::map<PriceKey, size_t> requests;
  /// Full answers given out by price().
  std::map<PriceKey, StagePrice> prices;
  int64_t hits = 0, shared = 0, misses = 0;
  WrittenShardings written;
};

} // namespace mlir::weft

#endif // WEFT_TRANSFORMS_STAGEPRICING_H
