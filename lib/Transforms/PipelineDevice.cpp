//===- PipelineDevice.cpp - The program of one rank of a pipeline ---------===//
//
// A rank's program is its stage's partitioned body between the receives
// and sends of the transfers its stage takes part in. Every point-to-point
// operation of the job has a key (source stage, target stage, transfer,
// piece); each rank runs its receives, its stage's compute and its sends in
// increasing key order (the compute sits at key (stage, stage)), so the
// unfinished operation with the smallest key always has both of its ranks
// ready: blocking sends and receives cannot deadlock.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/Transfer.h"
#include "weft/Transforms/AutoShard.h"
#include "weft/Transforms/Pipeline.h"
#include "weft/Transforms/SpmdPartition.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"

#include <algorithm>
#include <climits>
#include <tuple>

using namespace mlir;
using namespace mlir::weft;
using ::weft::plan::TensorSharding;
namespace plan = ::weft::plan;

namespace {
/// One end of a transfer.
struct TransferEnd {
  int stage = 0; // INT_MAX: the model's outputs on the collector.
  FlatSymbolRefAttr mesh;
  std::vector<int64_t> meshShape;
  std::vector<int64_t> ranks;
  TensorSharding sharding;
};

/// A transfer of the job, planned.
struct PlannedTransfer {
  std::string tensor;
  Value value; // In the pipeline's main.
  RankedTensorType type;
  TransferEnd source, target;
  /// The stage result it takes (the source stage's result index).
  unsigned sourceResult = 0;
  /// The pipeline's weft.transfer, or the model output's index.
  TransferOp op;
  int outputIndex = -1;
  plan::TransferPlan tiles;
  int64_t firstTag = 0;
  std::string sourceText, targetText;
};
} // namespace

static std::vector<int64_t> toVector(ArrayRef<int64_t> values) {
  return std::vector<int64_t>(values.begin(), values.end());
}

static TransferEnd endOf(ModuleOp pipeline, ShardingAttr sharding,
                         int stage) {
  TransferEnd end;
  end.stage = stage;
  end.mesh = sharding.getMesh();
  auto mesh = pipeline.lookupSymbol<MeshOp>(sharding.getMesh().getValue());
  end.meshShape = toVector(mesh.getShape());
  end.ranks = toVector(*mesh.getDevices());
  end.sharding = toTensorSharding(sharding);
  return end;
}

static std::string shardingText(Attribute attr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << attr;
  return text;
}

int64_t mlir::weft::collectorRank(ModuleOp pipeline) {
  auto main = pipeline.lookupSymbol<func::FuncOp>("main");
  StageOp last;
  for (StageOp stage : main.getOps<StageOp>())
    last = stage;
  if (!last)
    return 0;
  auto mesh = pipeline.lookupSymbol<MeshOp>(last.getMesh());
  if (!mesh || !mesh.getDevices() || mesh.getDevices()->empty())
    return 0;
  return *llvm::min_element(*mesh.getDevices());
}

/// Every transfer of the job (the pipeline's weft.transfer ops, then the
/// collection of each model output that a stage computes on the collector
/// rank), planned and in key order, with the tags of their pieces.
static FailureOr<std::vector<PlannedTransfer>> planTransfers(ModuleOp pipeline) {
  auto main = pipeline.lookupSymbol<func::FuncOp>("main");
  int64_t collector = collectorRank(pipeline);
  DenseMap<Operation *, int> stageIndex;
  for (auto [k, stage] : llvm::enumerate(main.getOps<StageOp>()))
    stageIndex[stage] = static_cast<int>(k);
  std::vector<PlannedTransfer> transfers;
  auto stageOfValue = [&](Value v) -> std::pair<StageOp, unsigned> {
    auto result = cast<OpResult>(v);
    return {cast<StageOp>(result.getOwner()), result.getResultNumber()};
  };
  for (TransferOp op : main.getOps<TransferOp>()) {
    PlannedTransfer t;
    t.op = op;
    t.value = op.getInput();
    t.type = cast<RankedTensorType>(op.getType());
    auto [stage, index] = stageOfValue(op.getInput());
    t.sourceResult = index;
    t.source = endOf(pipeline, op.getSource(), stageIndex[stage]);
    // The consumer: the stage on the target mesh that uses it.
    int target = INT_MAX;
    for (Operation *user : op->getUsers())
      if (auto consumer = dyn_cast<StageOp>(user))
        target = std::min(target, stageIndex[consumer]);
    if (target == INT_MAX)
      return op.emitOpError("internal: a transfer that no stage uses");
    t.target = endOf(pipeline, op.getTarget(), target);
    t.sourceText = shardingText(op.getSource());
    t.targetText = shardingText(op.getTarget());
    transfers.push_back(std::move(t));
  }
  Operation *ret = main.getBody().front().getTerminator();
  for (auto [i, output] : llvm::enumerate(ret->getOperands())) {
    if (isa<BlockArgument>(output))
      continue; // Every rank has the inputs whole.
    PlannedTransfer t;
    t.value = output;
    t.outputIndex = static_cast<int>(i);
    t.type = cast<RankedTensorType>(output.getType());
    auto [stage, index] = stageOfValue(output);
    t.sourceResult = index;
    // The source sharding is the one the stage's result leaves in: that of
    // any transfer of it, else the stage module's (recorded by
    // chooseBoundaryShardings on the stage's result attributes).
    auto sharding = stage->getAttrOfType<ArrayAttr>(kResultShardingsAttr);
    ShardingAttr from =
        sharding ? cast<ShardingAttr>(sharding[index])
                 : ShardingAttr::getReplicated(stage.getMeshAttr(),
                                               t.type.getRank());
    t.source = endOf(pipeline, from, stageIndex[stage]);
    t.target.stage = INT_MAX;
    t.target.meshShape = {1};
    t.target.ranks = {collector};
    t.target.sharding = TensorSharding::replicated(t.type.getRank());
    t.sourceText = shardingText(from);
    t.targetText = "whole on rank " + std::to_string(collector);
    transfers.push_back(std::move(t));
  }
  for (PlannedTransfer &t : transfers) {
    // A partial source is reduced on its mesh before it is cut (send()).
    TensorSharding reduced = t.source.sharding;
    reduced.partial.clear();
    std::string error;
    std::optional<plan::TransferPlan> tiles =
        plan::planTransfer(t.type.getShape(), reduced, t.source.meshShape,
                           t.target.sharding, t.target.meshShape, &error);
    if (!tiles)
      return emitError(t.value.getLoc()) << "internal: transfer plan: " << error;
    t.tiles = std::move(*tiles);
  }
  std::stable_sort(transfers.begin(), transfers.end(),
                   [](const PlannedTransfer &a, const PlannedTransfer &b) {
                     return std::make_pair(a.source.stage, a.target.stage) <
                            std::make_pair(b.source.stage, b.target.stage);
                   });
  int64_t tag = 0;
  for (PlannedTransfer &t : transfers) {
    t.firstTag = tag;
    tag += static_cast<int64_t>(t.tiles.pieces.size());
  }
  // The runtime's bound on tags (weft.send's verifier says the same).
  if (tag > (int64_t(1) << 20))
    return pipeline.emitError("the pipeline's transfers have ")
           << tag << " pieces; at most 2^20 are supported";
  return transfers;
}

/// 1-D i64 constant.
static Value indexConstant(OpBuilder &b, Location loc, ArrayRef<int64_t> v) {
  auto type = RankedTensorType::get({static_cast<int64_t>(v.size())},
                                    b.getI64Type());
  return ConstantOp::create(b, loc, DenseIntElementsAttr::get(type, v));
}

/// The box [offsets, offsets + sizes) of `local` (whole: no op).
static Value sliceBox(OpBuilder &b, Location loc, Value local,
                      ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes) {
  auto type = cast<RankedTensorType>(local.getType());
  if (llvm::all_of(offsets, [](int64_t o) { return o == 0; }) &&
      type.getShape() == sizes)
    return local;
  SmallVector<int64_t> ends, steps, axes;
  for (auto [d, pair] : llvm::enumerate(llvm::zip(offsets, sizes))) {
    auto [offset, size] = pair;
    ends.push_back(offset + size);
    steps.push_back(1);
    axes.push_back(d);
  }
  auto resultType = RankedTensorType::get(sizes, type.getElementType());
  return SliceOp::create(b, loc, resultType, local,
                         indexConstant(b, loc, offsets),
                         indexConstant(b, loc, ends),
                         indexConstant(b, loc, steps),
                         b.getDenseI64ArrayAttr(axes), Value());
}

/// Rebuilds a block from its grid of pieces (row-major, last dimension
/// fastest) by concatenating along the last dimension, then the one
/// before, and so on.
static Value assembleGrid(OpBuilder &b, Location loc,
                          const plan::TransferGrid &grid,
                          SmallVector<Value> pieces) {
  for (int64_t dim = static_cast<int64_t>(grid.boundaries.size()) - 1;
       dim >= 0; --dim) {
    int64_t n = grid.intervals(dim);
    if (n <= 1)
      continue;
    SmallVector<Value> joined;
    for (size_t start = 0; start < pieces.size(); start += n) {
      SmallVector<Value> run(pieces.begin() + start, pieces.begin() + start + n);
      auto first = cast<RankedTensorType>(run.front().getType());
      SmallVector<int64_t> shape(first.getShape());
      shape[dim] = 0;
      for (Value v : run)
        shape[dim] += cast<RankedTensorType>(v.getType()).getDimSize(dim);
      joined.push_back(ConcatOp::create(
          b, loc, RankedTensorType::get(shape, first.getElementType()), run,
          b.getI64IntegerAttr(dim)));
    }
    pieces = std::move(joined);
  }
  return pieces.front();
}

/// A tensor of `type` with every element zero: the empty block of an
/// uneven split, and the outputs of ranks other than the collector.
static Value zeros(OpBuilder &b, Location loc, RankedTensorType type) {
  return ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(type, b.getZeroAttr(type.getElementType())));
}

namespace {
/// Emits one rank's part of the job's transfers.
class TransferEmitter {
public:
  TransferEmitter(OpBuilder &b, int64_t rank) : b(b), rank(rank) {}

  /// The source side: this rank's block `local` (of t.source) goes out in
  /// pieces; pieces this rank receives itself are kept for receive().
  void send(const PlannedTransfer &t, Value local) {
    Location loc = t.value.getLoc();
    if (!t.source.sharding.partial.empty()) {
      SmallVector<int16_t> axes(t.source.sharding.partial.begin(),
                                t.source.sharding.partial.end());
      local = AllReduceOp::create(b, loc, local, t.source.mesh,
                                  b.getDenseI16ArrayAttr(axes));
    }
    for (auto [p, piece] : llvm::enumerate(t.tiles.pieces)) {
      if (t.source.ranks[piece.srcPosition] != rank)
        continue;
      Value box = sliceBox(b, loc, local, piece.srcLocalOffsets, piece.sizes);
      int64_t to = t.target.ranks[piece.dstPosition];
      if (to == rank) {
        ownPieces[{&t, p}] = box;
        continue;
      }
      SendOp::create(b, loc, box, to, t.firstTag + static_cast<int64_t>(p));
    }
  }

  /// The target side: this rank's block of t.target, from its pieces.
  Value receive(const PlannedTransfer &t, int64_t position) {
    Location loc = t.value.getLoc();
    const plan::TransferGrid &grid = t.tiles.grids[position];
    std::vector<int64_t> blockShape(grid.sizes.begin(), grid.sizes.end());
    auto blockType =
        RankedTensorType::get(blockShape, t.type.getElementType());
    if (grid.numPieces == 0)
      return zeros(b, loc, blockType);
    SmallVector<Value> pieces;
    for (size_t p = grid.firstPiece; p < grid.firstPiece + grid.numPieces;
         ++p) {
      const plan::TransferPiece &piece = t.tiles.pieces[p];
      if (Value own = ownPieces.lookup({&t, p})) {
        pieces.push_back(own);
        continue;
      }
      auto type = RankedTensorType::get(piece.sizes, t.type.getElementType());
      pieces.push_back(RecvOp::create(b, loc, type,
                                      t.source.ranks[piece.srcPosition],
                                      t.firstTag + static_cast<int64_t>(p)));
    }
    return assembleGrid(b, loc, grid, std::move(pieces));
  }

private:
  OpBuilder &b;
  int64_t rank;
  DenseMap<std::pair<const PlannedTransfer *, size_t>, Value> ownPieces;
};
} // namespace

FailureOr<OwningOpRef<ModuleOp>> mlir::weft::buildDeviceProgram(
    ModuleOp pipeline, ArrayRef<OwningOpRef<ModuleOp>> plannedStages,
    int64_t rank, int64_t worldSize) {
  auto main = pipeline.lookupSymbol<func::FuncOp>("main");
  SmallVector<StageOp> stages = llvm::to_vector(main.getOps<StageOp>());
  int myStage = -1;
  int64_t position = 0;
  for (auto [k, stage] : llvm::enumerate(stages)) {
    auto mesh = pipeline.lookupSymbol<MeshOp>(stage.getMesh());
    ArrayRef<int64_t> ranks = *mesh.getDevices();
    if (const int64_t *at = llvm::find(ranks, rank); at != ranks.end()) {
      myStage = static_cast<int>(k);
      position = at - ranks.begin();
    }
  }
  if (myStage < 0)
    return pipeline.emitError("internal: rank ") << rank << " is in no stage";
  FailureOr<std::vector<PlannedTransfer>> transfers = planTransfers(pipeline);
  if (failed(transfers))
    return failure();
  int64_t collector = collectorRank(pipeline);

  StageOp stage = stages[myStage];
  OwningOpRef<ModuleOp> device = plannedStages[myStage].get().clone();
  if (failed(spmdPartition(*device, position, stage.getMesh())))
    return failure();
  auto body = device->lookupSymbol<func::FuncOp>("main");
  body.setSymName("weft_stage_body");
  Block &bodyBlock = body.getBody().front();

  // The rank's main: the model's signature.
  OpBuilder b = OpBuilder::atBlockEnd(device->getBody());
  Location loc = main.getLoc();
  auto program = func::FuncOp::create(b, loc, "main", main.getFunctionType());
  program.setAllArgAttrs(main.getAllArgAttrs());
  program.setAllResultAttrs(main.getAllResultAttrs());
  Block *entry = program.addEntryBlock();
  b.setInsertionPointToEnd(entry);
  TransferEmitter emitter(b, rank);

  DenseMap<Operation *, Value> received; // weft.transfer -> local block
  SmallVector<Value> stageResults;
  auto compute = [&]() {
    IRMapping mapping;
    for (auto [input, arg] :
         llvm::zip(stage.getInputs(), bodyBlock.getArguments())) {
      if (auto outer = dyn_cast<BlockArgument>(input))
        mapping.map(arg, entry->getArgument(outer.getArgNumber()));
      else
        mapping.map(arg, received.lookup(input.getDefiningOp()));
    }
    for (Operation &op : bodyBlock.without_terminator())
      b.clone(op, mapping);
    for (Value v : bodyBlock.getTerminator()->getOperands())
      stageResults.push_back(mapping.lookup(v));
  };
  bool computed = false;
  SmallVector<Value> outputs(main.getNumResults());
  for (const PlannedTransfer &t : *transfers) {
    if (!computed &&
        std::make_pair(t.source.stage, t.target.stage) >=
            std::make_pair(myStage, myStage)) {
      compute();
      computed = true;
    }
    if (t.source.stage == myStage)
      emitter.send(t, stageResults[t.sourceResult]);
    bool receives = t.target.stage == myStage ||
                    (t.target.stage == INT_MAX && rank == collector);
    if (!receives)
      continue;
    int64_t at = t.target.stage == INT_MAX ? 0 : position;
    Value block = emitter.receive(t, at);
    if (t.op)
      received[t.op] = block;
    else
      outputs[t.outputIndex] = block;
  }
  if (!computed)
    compute();
  Operation *ret = main.getBody().front().getTerminator();
  for (auto [i, output] : llvm::enumerate(ret->getOperands())) {
    if (auto arg = dyn_cast<BlockArgument>(output))
      outputs[i] = entry->getArgument(arg.getArgNumber());
    else if (!outputs[i])
      outputs[i] = zeros(b, loc, cast<RankedTensorType>(output.getType()));
  }
  func::ReturnOp::create(b, loc, outputs);
  body.erase();
  (*device)->setAttr(kWorldSizeAttr, b.getI64IntegerAttr(worldSize));
  (*device)->setAttr(kCollectorRankAttr, b.getI64IntegerAttr(collector));
  if (failed(mlir::verify(*device)))
    return pipeline.emitError("internal: the program of rank ")
           << rank << " does not verify";
  return device;
}

std::vector<TransferSummary> mlir::weft::summarizeTransfers(ModuleOp pipeline) {
  std::vector<TransferSummary> out;
  FailureOr<std::vector<PlannedTransfer>> transfers = planTransfers(pipeline);
  if (failed(transfers))
    return out;
  for (const PlannedTransfer &t : *transfers) {
    TransferSummary s;
    auto name = [&]() -> std::string {
      if (Operation *producer = t.value.getDefiningOp()) {
        auto stage = cast<StageOp>(producer);
        auto yield = stage.getBodyBlock().getTerminator();
        Value inner = yield->getOperand(t.sourceResult);
        if (Operation *op = inner.getDefiningOp())
          if (NameLoc loc = findNameLoc(op->getLoc()))
            return loc.getName().str();
      }
      return "?";
    };
    s.tensor = name();
    s.fromStage = t.source.stage;
    s.toStage = t.target.stage == INT_MAX ? -1 : t.target.stage;
    int64_t elementBytes =
        std::max<int64_t>(1, t.type.getElementTypeBitWidth() / 8);
    s.bytes = t.tiles.totalElements * elementBytes;
    s.pieces = static_cast<int64_t>(t.tiles.pieces.size());
    s.from = t.sourceText;
    s.to = t.targetText;
    std::map<std::pair<int64_t, int64_t>, int64_t> pairs =
        plan::transferBytesByPair(t.tiles, elementBytes);
    for (auto &[pair, bytes] : pairs)
      s.pairBytes.push_back({t.source.ranks[pair.first],
                             t.target.ranks[pair.second], bytes});
    out.push_back(std::move(s));
  }
  return out;
}
