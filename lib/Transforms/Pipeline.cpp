//===- Pipeline.cpp - Splitting a model into stages -----------------------===//
//
// splitIntoStages turns main into weft.stage regions joined by
// weft.transfer ops; outlineStage and chooseBoundaryShardings connect each
// stage to the intra-operator planner. Per-device programs are built in
// PipelineDevice.cpp.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Pipeline.h"
#include "weft/ModelFunction.h"
#include "weft/Transforms/AutoShard.h"
#include "weft/Transforms/ShardedMemory.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::weft;
using ::weft::plan::TensorSharding;

bool mlir::weft::isReplicableOp(Operation *op) {
  return isa<WeightOp, ConstantOp>(op);
}

/// The ONNX name of `value` for messages and plan.json: a function
/// argument's weft.name, else its producer's location name.
static std::string valueName(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
      if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        "weft.name"))
        return name.str();
    return "argument " + std::to_string(arg.getArgNumber());
  }
  Operation *op = value.getDefiningOp();
  std::string name = "?";
  if (NameLoc loc = findNameLoc(op->getLoc()))
    name = loc.getName().str();
  if (op->getNumResults() > 1)
    name += "#" + std::to_string(cast<OpResult>(value).getResultNumber());
  return name;
}

namespace {
/// What one stage computes and what crosses its boundary.
struct StagePlan {
  SmallVector<Operation *> ops;
  /// Values from outside: the model's inputs and other stages' results.
  llvm::SetVector<Value> inputs;
  /// Values later stages or the model's outputs use.
  llvm::SetVector<Value> results;
};
} // namespace

LogicalResult mlir::weft::splitIntoStages(ModuleOp module,
                                          const StageAssignment &assignment,
                                          ArrayRef<StageMesh> meshes) {
  func::FuncOp func = getModelFunction(module, "pipeline stages");
  if (!func)
    return failure();
  if (static_cast<int>(meshes.size()) != assignment.numStages)
    return module.emitError("internal: ")
           << assignment.numStages << " stages but " << meshes.size()
           << " meshes";
  Block &body = func.getBody().front();
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  if (ops.size() != assignment.stageOfOp.size())
    return module.emitError("internal: a stage assignment of ")
           << assignment.stageOfOp.size() << " ops for " << ops.size();

  int numStages = assignment.numStages;
  DenseMap<Operation *, int> stageOf;
  for (auto [op, stage] : llvm::zip(ops, assignment.stageOfOp))
    if (!isReplicableOp(op))
      stageOf[op] = stage;
  std::vector<StagePlan> plans(numStages);
  for (Operation *op : ops) {
    if (isReplicableOp(op))
      continue;
    int stage = stageOf[op];
    plans[stage].ops.push_back(op);
    for (Value operand : op->getOperands()) {
      Operation *producer = operand.getDefiningOp();
      if (producer && isReplicableOp(producer))
        continue;
      int from = producer ? stageOf[producer] : -1;
      if (from > stage)
        return op->emitError("is in stage ")
               << stage << " but uses '" << valueName(operand)
               << "', which stage " << from
               << " computes: stages must follow the model's order";
      if (from == stage)
        continue;
      plans[stage].inputs.insert(operand);
      if (from >= 0)
        plans[from].results.insert(operand);
    }
  }
  // The model's outputs: a stage's value, an input passed through, or a
  // weight or constant (computed by the last stage).
  Operation *terminator = body.getTerminator();
  for (Value output : terminator->getOperands()) {
    Operation *producer = output.getDefiningOp();
    if (!producer)
      continue;
    if (isReplicableOp(producer)) {
      plans[numStages - 1].results.insert(output);
      continue;
    }
    plans[stageOf[producer]].results.insert(output);
  }
  for (auto [k, plan] : llvm::enumerate(plans))
    if (plan.ops.empty() && plan.results.empty())
      return module.emitError("stage ")
             << k << " has no ops: every stage must compute something";

  // Meshes first, then the stages in order, each preceded by the transfers
  // that bring it what it uses.
  MLIRContext *context = module.getContext();
  OpBuilder b(context);
  b.setInsertionPointToStart(module.getBody());
  std::vector<FlatSymbolRefAttr> meshRefs;
  for (const StageMesh &mesh : meshes) {
    MeshOp::create(b, module.getLoc(), mesh.name, mesh.shape,
                   b.getDenseI64ArrayAttr(mesh.worldRanks));
    meshRefs.push_back(FlatSymbolRefAttr::get(context, mesh.name));
  }

  b.setInsertionPoint(terminator);
  // The stage result that stands for each original value.
  DenseMap<Value, Value> stageValue;
  for (auto [k, plan] : llvm::enumerate(plans)) {
    int stage = static_cast<int>(k);
    SmallVector<Value> operands;
    for (Value input : plan.inputs) {
      if (isa<BlockArgument>(input)) {
        operands.push_back(input);
        continue;
      }
      int from = stageOf[input.getDefiningOp()];
      auto type = cast<RankedTensorType>(input.getType());
      auto transfer = TransferOp::create(
          b, input.getLoc(), stageValue.lookup(input),
          ShardingAttr::getReplicated(meshRefs[from], type.getRank()),
          ShardingAttr::getReplicated(meshRefs[stage], type.getRank()));
      operands.push_back(transfer);
    }
    SmallVector<Type> resultTypes;
    for (Value result : plan.results)
      resultTypes.push_back(result.getType());
    auto stageOp = StageOp::create(b, func.getLoc(), resultTypes,
                                   meshRefs[stage], operands);
    Block &stageBody = stageOp.getBodyBlock();
    IRMapping mapping;
    for (auto [input, arg] : llvm::zip(plan.inputs, stageBody.getArguments()))
      mapping.map(input, arg);
    OpBuilder inner = OpBuilder::atBlockEnd(&stageBody);
    // Weights and constants are cloned where they are used first.
    auto cloneReplicable = [&](Value value) {
      Operation *producer = value.getDefiningOp();
      if (!producer || !isReplicableOp(producer) || mapping.contains(value))
        return;
      inner.clone(*producer, mapping);
    };
    for (Operation *op : plan.ops) {
      for (Value operand : op->getOperands())
        cloneReplicable(operand);
      inner.clone(*op, mapping);
    }
    SmallVector<Value> yielded;
    for (Value result : plan.results) {
      cloneReplicable(result);
      yielded.push_back(mapping.lookup(result));
    }
    YieldOp::create(inner, func.getLoc(), yielded);
    for (auto [result, value] : llvm::zip(plan.results, stageOp.getResults()))
      stageValue[result] = value;
  }
  for (OpOperand &operand : terminator->getOpOperands())
    if (Value staged = stageValue.lookup(operand.get()))
      operand.set(staged);
  for (Operation *op : llvm::reverse(ops)) {
    op->dropAllUses();
    op->erase();
  }
  if (failed(mlir::verify(module)))
    return module.emitError("internal: the split pipeline does not verify");
  return success();
}

OwningOpRef<ModuleOp> mlir::weft::outlineStage(StageOp stage) {
  MLIRContext *context = stage.getContext();
  Location loc = stage.getLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  // The model's module attributes (where its weights are, its opset).
  if (auto parent = stage->getParentOfType<ModuleOp>())
    for (NamedAttribute attr : parent->getAttrs())
      if (attr.getName() != SymbolTable::getSymbolAttrName())
        (*module)->setAttr(attr.getName(), attr.getValue());
  Block &body = stage.getBodyBlock();
  auto yield = cast<YieldOp>(body.getTerminator());
  OpBuilder b = OpBuilder::atBlockEnd(module->getBody());
  auto func = func::FuncOp::create(
      b, loc, "main",
      FunctionType::get(context, body.getArgumentTypes(),
                        yield.getOperandTypes()));
  setModelFunction(func);
  // Names cross with the values: plan.json and --report name every op.
  for (auto [i, input] : llvm::enumerate(stage.getInputs())) {
    func.setArgAttr(i, "weft.name", b.getStringAttr(valueName(input)));
    // Another stage's value comes by a receive (and its staging buffer).
    if (input.getDefiningOp<TransferOp>())
      func.setArgAttr(i, kReceivedArgAttr, b.getUnitAttr());
  }
  for (auto [i, result] : llvm::enumerate(yield.getOperands()))
    func.setResultAttr(i, "weft.name",
                       b.getStringAttr(isa<BlockArgument>(result)
                                           ? valueName(stage.getInputs()[
                                                 cast<BlockArgument>(result)
                                                     .getArgNumber()])
                                           : valueName(result)));
  Block *entry = func.addEntryBlock();
  IRMapping mapping;
  mapping.map(body.getArguments(), entry->getArguments());
  OpBuilder inner = OpBuilder::atBlockEnd(entry);
  for (Operation &op : body.without_terminator())
    inner.clone(op, mapping);
  SmallVector<Value> results;
  for (Value v : yield.getOperands())
    results.push_back(mapping.lookup(v));
  func::ReturnOp::create(inner, loc, results);
  return module;
}

/// The planned sharding of `value` inside a stage module's main (its
/// producer's `weft.sharding`, or an argument's), whole on the stage's
/// `mesh` when none.
static TensorSharding plannedSharding(func::FuncOp func, Value value,
                                      StringRef mesh) {
  auto rank = cast<RankedTensorType>(value.getType()).getRank();
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    if (auto attr = func.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(),
                                                        kShardingAttr))
      return toTensorSharding(attr);
    return TensorSharding::replicated(mesh, rank);
  }
  auto result = cast<OpResult>(value);
  if (auto attrs =
          result.getOwner()->getAttrOfType<ArrayAttr>(kShardingAttr))
    if (result.getResultNumber() < attrs.size())
      if (auto attr = dyn_cast<ShardingAttr>(attrs[result.getResultNumber()]))
        return toTensorSharding(attr);
  return TensorSharding::replicated(mesh, rank);
}

/// The sharding argument `arg` should arrive in on the stage's `mesh`: the
/// one all its users need when they agree (and it holds no partial sums),
/// else whole.
static TensorSharding neededSharding(BlockArgument arg, StringRef mesh) {
  auto rank = cast<RankedTensorType>(arg.getType()).getRank();
  TensorSharding whole = TensorSharding::replicated(mesh, rank);
  std::optional<TensorSharding> agreed;
  for (OpOperand &use : arg.getUses()) {
    Operation *user = use.getOwner();
    auto attrs = user->getAttrOfType<ArrayAttr>(kOperandShardingAttr);
    TensorSharding need = whole;
    if (attrs && use.getOperandNumber() < attrs.size())
      if (auto attr = dyn_cast<ShardingAttr>(attrs[use.getOperandNumber()]))
        need = toTensorSharding(attr);
    if (isa<func::ReturnOp>(user))
      need = whole;
    if (!need.partial.empty() || (agreed && *agreed != need))
      return whole;
    agreed = need;
  }
  return agreed ? *agreed : whole;
}

LogicalResult mlir::weft::chooseBoundaryShardings(
    ModuleOp pipeline, MutableArrayRef<OwningOpRef<ModuleOp>> plannedStages) {
  func::FuncOp main = lookupModelFunction(pipeline);
  SmallVector<StageOp> stages = llvm::to_vector(main.getOps<StageOp>());
  MLIRContext *context = pipeline.getContext();
  // Each stage's plan is read as shardings on the stage's mesh.
  for (auto [k, stage] : llvm::enumerate(stages))
    if (failed(verifyShardingsOnMesh(
            plannedStages[k]->lookupSymbol<func::FuncOp>("main"),
            stage.getMeshAttr(), "stage " + std::to_string(k) + "'s mesh")))
      return pipeline.emitError("internal: stage ")
             << k << " was planned on another mesh than its own";
  // Sources: each stage result leaves as its producer lies, partial sums
  // reduced on the stage's own mesh.
  DenseMap<Value, TensorSharding> leaving;
  for (auto [k, stage] : llvm::enumerate(stages)) {
    func::FuncOp func = lookupModelFunction(*plannedStages[k]);
    Operation *ret = func.getBody().front().getTerminator();
    SmallVector<Attribute> shardings;
    for (auto [i, value] : llvm::enumerate(ret->getOperands())) {
      TensorSharding sharding = plannedSharding(func, value, stage.getMesh());
      sharding.partial.clear();
      leaving[stage.getResult(i)] = sharding;
      ShardingAttr attr = toShardingAttr(context, sharding);
      func.setResultAttr(i, kShardingAttr, attr);
      shardings.push_back(attr);
    }
    stage->setAttr(kResultShardingsAttr,
                   ArrayAttr::get(context, shardings));
  }
  // Targets: what the consumer's users need.
  for (auto [k, stage] : llvm::enumerate(stages)) {
    func::FuncOp func = lookupModelFunction(*plannedStages[k]);
    for (auto [i, input] : llvm::enumerate(stage.getInputs())) {
      auto transfer = input.getDefiningOp<TransferOp>();
      if (!transfer)
        continue; // A model input: whole on every rank.
      BlockArgument arg = func.getArgument(i);
      ShardingAttr need =
          toShardingAttr(context, neededSharding(arg, stage.getMesh()));
      func.setArgAttr(i, kShardingAttr, need);
      transfer.setTargetAttr(need);
      // On the producing stage's mesh, as the transfer's source was.
      transfer.setSourceAttr(
          toShardingAttr(context, leaving.lookup(transfer.getInput())));
    }
  }
  return success();
}
