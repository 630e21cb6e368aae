//===- SpmdPartition.cpp - Per-device programs from a sharded one ---------===//
//
// Walks the planned function in order, keeping for every value its local
// part and sharding; brings operands into the sharding their user needs
// with the resharding planner's collectives, then rebuilds each op on local
// operands and lets type inference give its local result types.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/SpmdPartition.h"
#include "weft/ModelFunction.h"
#include "weft/Plan/Sharding.h"
#include "weft/Transforms/AutoShard.h"
#include "weft/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/Support/InterleavedRange.h"

using namespace mlir;
using namespace mlir::weft;
using ::weft::plan::AxisList;
using ::weft::plan::TensorSharding;
namespace plan = ::weft::plan;

static DenseI16ArrayAttr axesAttr(MLIRContext *context, const AxisList &axes) {
  SmallVector<int16_t> values(axes.begin(), axes.end());
  return DenseI16ArrayAttr::get(context, values);
}

namespace {
/// A value's part on this device and how it is laid out.
struct LocalValue {
  Value value;
  TensorSharding sharding;
};

class Partitioner {
public:
  Partitioner(func::FuncOp func, FlatSymbolRefAttr mesh,
              ArrayRef<int64_t> meshShape, int64_t device)
      : func(func), mesh(mesh), meshShape(meshShape), device(device) {}

  LogicalResult run();

private:
  FailureOr<Value> reshard(OpBuilder &b, Location loc, Value original,
                           const TensorSharding &need);
  LogicalResult partitionOp(Operation *op);
  TensorSharding boundarySharding(DictionaryAttr attrs, Type type) const;
  FailureOr<Operation *> vocabularyParallelGather(OpBuilder &b, Location loc,
                                                  GatherOp gather, Value table,
                                                  Value ids,
                                                  const AxisList &axes);
  SmallVector<int64_t> localShapeOf(Value original,
                                    const TensorSharding &sharding) {
    auto type = cast<RankedTensorType>(original.getType());
    std::vector<int64_t> shape =
        plan::localShape(type.getShape(), sharding, meshShape, device);
    return SmallVector<int64_t>(shape.begin(), shape.end());
  }
  /// A value without a sharding is whole on this mesh.
  TensorSharding whole(Type type) const {
    return TensorSharding::replicated(mesh.getValue(),
                                      cast<RankedTensorType>(type).getRank());
  }

  func::FuncOp func;
  /// The mesh the collectives and every sharding name.
  FlatSymbolRefAttr mesh;
  ArrayRef<int64_t> meshShape;
  int64_t device;
  DenseMap<Value, LocalValue> locals;
  /// The resharded local values made so far, per original value.
  DenseMap<Value, SmallVector<std::pair<TensorSharding, Value>>> resharded;
};
} // namespace

FailureOr<Value> Partitioner::reshard(OpBuilder &b, Location loc,
                                      Value original,
                                      const TensorSharding &need) {
  LocalValue have = locals.lookup(original);
  if (!have.value)
    return emitError(loc) << "internal: an operand has no local value";
  if (have.sharding == need)
    return have.value;
  // Values are resharded once per needed sharding, however many ops use
  // them so: communicating the same data twice would be pure waste.
  for (auto &[sharding, value] : resharded[original])
    if (sharding == need)
      return value;
  auto type = cast<RankedTensorType>(original.getType());
  ArrayRef<int64_t> shape = type.getShape();
  std::optional<std::vector<plan::ReshardStep>> steps =
      plan::planReshard(shape, have.sharding, need, meshShape);
  if (!steps)
    return emitError(loc) << "cannot reshard " << have.sharding.str()
                          << " to " << need.str()
                          << ": partial sums cannot be created";
  MLIRContext *context = b.getContext();
  Value value = have.value;
  TensorSharding current = have.sharding;
  for (const plan::ReshardStep &step : *steps) {
    std::vector<int64_t> before =
        plan::localShape(shape, current, meshShape, device);
    std::vector<int64_t> after =
        plan::localShape(shape, step.after, meshShape, device);
    auto afterType = RankedTensorType::get(after, type.getElementType());
    int64_t parts = plan::groupSize(meshShape, step.axes);
    DenseI16ArrayAttr axes = axesAttr(context, step.axes);
    switch (step.kind) {
    case plan::ReshardKind::AllReduce:
      value = AllReduceOp::create(b, loc, value, mesh, axes);
      break;
    case plan::ReshardKind::ReduceScatter:
      value = ReduceScatterOp::create(
          b, loc, afterType, value, mesh.getValue(), axes, step.dim,
          b.getDenseI64ArrayAttr(plan::blockSizes(before[step.dim], parts)));
      break;
    case plan::ReshardKind::AllGather:
      value = AllGatherOp::create(
          b, loc, afterType, value, mesh.getValue(), axes, step.dim,
          b.getDenseI64ArrayAttr(plan::blockSizes(after[step.dim], parts)));
      break;
    case plan::ReshardKind::LocalSlice:
      value = LocalSliceOp::create(
          b, loc, afterType, value, mesh.getValue(), axes, step.dim,
          b.getDenseI64ArrayAttr(plan::blockSizes(before[step.dim], parts)));
      break;
    case plan::ReshardKind::AllToAll:
      value = AllToAllOp::create(
          b, loc, afterType, value, mesh.getValue(), axes, step.splitDim, step.dim,
          b.getDenseI64ArrayAttr(plan::blockSizes(before[step.splitDim], parts)),
          b.getDenseI64ArrayAttr(plan::blockSizes(after[step.dim], parts)));
      break;
    }
    current = step.after;
  }
  resharded[original].push_back({need, value});
  return value;
}

/// A 1-D i64 constant (a reshape's or expand's local target shape).
static Value shapeConstant(OpBuilder &b, Location loc, ArrayRef<int64_t> dims) {
  auto type = RankedTensorType::get({static_cast<int64_t>(dims.size())},
                                    b.getI64Type());
  return ConstantOp::create(b, loc, DenseIntElementsAttr::get(type, dims));
}

/// A constant of `type`'s element type, shape `shape`, from `values`.
static Value intConstant(OpBuilder &b, Location loc, Type element,
                         ArrayRef<int64_t> shape, ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get(shape, element);
  SmallVector<APInt> bits;
  for (int64_t v : values)
    bits.push_back(APInt(element.getIntOrFloatBitWidth(), v, /*isSigned=*/true));
  return ConstantOp::create(b, loc, DenseIntElementsAttr::get(type, bits));
}

static Value binary(OpBuilder &b, Location loc, BinaryKind kind, Value lhs,
                    Value rhs) {
  return BinaryOp::create(b, loc, kind, lhs, rhs);
}

/// The lookup of a gather whose table is split along the gathered axis over
/// mesh axes `axes` (a vocabulary-parallel embedding): this device holds
/// block g of the rows, starting at row offsets[g]. An id inside the block
/// is looked up there; the result is 0 for the others, so the members'
/// results sum to the whole lookup. Which block is this device's is read at
/// run time (weft.local_slice), so that devices with equal blocks share a
/// program. An id outside the whole table is passed on as it is, so that the
/// lookup still fails on it.
FailureOr<Operation *>
Partitioner::vocabularyParallelGather(OpBuilder &b, Location loc,
                                      GatherOp gather, Value table, Value ids,
                                      const AxisList &axes) {
  int64_t axis = gather.getAxis();
  int64_t rows = gather.getInput().getType().getShape()[axis];
  int64_t localRows = cast<RankedTensorType>(table.getType()).getShape()[axis];
  auto idsType = cast<RankedTensorType>(ids.getType());
  Type idType = idsType.getElementType();
  std::vector<int64_t> sizes =
      plan::blockSizes(rows, plan::groupSize(meshShape, axes));
  SmallVector<int64_t> offsets;
  int64_t at = 0;
  for (int64_t size : sizes) {
    offsets.push_back(at);
    at += size;
  }
  int64_t parts = static_cast<int64_t>(sizes.size());
  Value allOffsets = intConstant(b, loc, idType, {parts}, offsets);
  Value mine = LocalSliceOp::create(
      b, loc, RankedTensorType::get({1}, idType), allOffsets, mesh.getValue(),
      axesAttr(b.getContext(), axes), 0,
      b.getDenseI64ArrayAttr(SmallVector<int64_t>(parts, 1)));
  Value offset = ReshapeOp::create(b, loc, RankedTensorType::get({}, idType),
                                   mine, shapeConstant(b, loc, {}));
  auto scalar = [&](int64_t v) { return intConstant(b, loc, idType, {}, {v}); };
  Value zero = scalar(0);
  // Negative ids count from the end of the whole table.
  Value negative = binary(b, loc, BinaryKind::Less, ids, zero);
  Value wrapped = binary(b, loc, BinaryKind::Add, ids, scalar(rows));
  Value id = SelectOp::create(b, loc, negative, wrapped, ids);
  Value shifted = binary(b, loc, BinaryKind::Sub, id, offset);
  // One op after the other (argument order is unspecified in C++, and the
  // IR should not depend on the compiler).
  Value atOrAboveStart = binary(b, loc, BinaryKind::GreaterEqual, shifted, zero);
  Value belowEnd =
      binary(b, loc, BinaryKind::Less, shifted, scalar(localRows));
  Value inBlock = binary(b, loc, BinaryKind::And, atOrAboveStart, belowEnd);
  Value atOrAboveFirst =
      binary(b, loc, BinaryKind::GreaterEqual, ids, scalar(-rows));
  Value belowLast = binary(b, loc, BinaryKind::Less, ids, scalar(rows));
  Value inTable = binary(b, loc, BinaryKind::And, atOrAboveFirst, belowLast);
  Value elsewhere = SelectOp::create(b, loc, inTable, zero, ids);
  Value lookupIds = SelectOp::create(b, loc, inBlock, shifted, elsewhere);
  Value looked = GatherOp::create(b, loc, table, lookupIds, gather.getAxis());
  // The mask, shaped to broadcast over the table's other axes.
  auto lookedType = cast<RankedTensorType>(looked.getType());
  SmallVector<int64_t> maskShape(lookedType.getRank(), 1);
  for (auto [d, size] : llvm::enumerate(idsType.getShape()))
    maskShape[axis + d] = size;
  Value mask = ReshapeOp::create(
      b, loc, RankedTensorType::get(maskShape, b.getI1Type()), inBlock,
      shapeConstant(b, loc, maskShape));
  auto zeroType = RankedTensorType::get({}, lookedType.getElementType());
  Value zeros = ConstantOp::create(
      b, loc, cast<ElementsAttr>(b.getZeroAttr(zeroType)));
  return SelectOp::create(b, loc, mask, looked, zeros).getOperation();
}

LogicalResult Partitioner::partitionOp(Operation *op) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  auto resultAttrs = op->getAttrOfType<ArrayAttr>(kShardingAttr);
  auto operandAttrs = op->getAttrOfType<ArrayAttr>(kOperandShardingAttr);
  auto resultSharding = [&](unsigned i) {
    if (resultAttrs && i < resultAttrs.size())
      if (auto attr = dyn_cast<ShardingAttr>(resultAttrs[i]))
        return toTensorSharding(attr);
    return whole(op->getResult(i).getType());
  };

  // Operands in the shardings the op needs.
  IRMapping mapping;
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    Value operand = op->getOperand(i);
    auto type = dyn_cast<RankedTensorType>(operand.getType());
    Attribute attr = operandAttrs && i < operandAttrs.size()
                         ? operandAttrs[i]
                         : Attribute();
    if (!type) {
      continue;
    }
    if (attr && isa<UnitAttr>(attr)) {
      // Not data (a shape, slice bounds): whatever this device has of it,
      // which is all of it (such operands are constants).
      FailureOr<Value> local = reshard(b, loc, operand, whole(type));
      if (failed(local))
        return failure();
      mapping.map(operand, *local);
      continue;
    }
    TensorSharding need =
        attr ? toTensorSharding(cast<ShardingAttr>(attr)) : whole(type);
    FailureOr<Value> local = reshard(b, loc, operand, need);
    if (failed(local))
      return failure();
    mapping.map(operand, *local);
  }

  if (auto shard = dyn_cast<ShardOp>(op)) {
    locals[shard.getResult()] = {mapping.lookup(shard.getInput()),
                                 toTensorSharding(shard.getSharding())};
    return success();
  }

  Operation *local = nullptr;
  auto gather = dyn_cast<GatherOp>(op);
  std::optional<AxisList> vocabularyAxes;
  if (gather && operandAttrs && !operandAttrs.empty())
    if (auto table = dyn_cast<ShardingAttr>(operandAttrs[0])) {
      TensorSharding sharding = toTensorSharding(table);
      if (!sharding.dims[gather.getAxis()].empty())
        vocabularyAxes = sharding.dims[gather.getAxis()];
    }
  if (vocabularyAxes) {
    FailureOr<Operation *> lookup = vocabularyParallelGather(
        b, loc, gather, mapping.lookup(gather.getInput()),
        mapping.lookup(gather.getIndices()), *vocabularyAxes);
    if (failed(lookup))
      return failure();
    local = *lookup;
  } else if (auto weight = dyn_cast<WeightOp>(op)) {
    TensorSharding sharding = resultSharding(0);
    if (!sharding.isReplicated() && weight.getPerm())
      return op->emitOpError("is stored permuted (codegen's form); it cannot "
                             "be split between devices");
    local = b.clone(*op);
    if (!sharding.isReplicated()) {
      auto type = weight.getType();
      std::vector<int64_t> offsets =
          plan::localOffsets(type.getShape(), sharding, meshShape, device);
      // The weight may already be a block of the stored tensor (a packed
      // weight split by canonicalization): the device's block lies inside.
      SmallVector<int64_t> full(type.getShape());
      if (std::optional<ArrayRef<int64_t>> outer = weight.getBlockOffsets()) {
        for (auto [offset, outerOffset] : llvm::zip_equal(offsets, *outer))
          offset += outerOffset;
        full.assign(weight.getFullShape()->begin(),
                    weight.getFullShape()->end());
      }
      auto localWeight = cast<WeightOp>(local);
      // retargetPartition places weights the same way: keep them in step.
      localWeight.setBlockOffsets(offsets);
      localWeight.setFullShape(full);
      localWeight.getResult().setType(RankedTensorType::get(
          localShapeOf(weight.getResult(), sharding), type.getElementType()));
    }
  } else {
    // A reshape's or expand's target shape is the local one (created first:
    // the clone goes after it).
    Value localShape;
    if (isa<ReshapeOp, ExpandOp>(op))
      localShape = shapeConstant(
          b, loc, localShapeOf(op->getResult(0), resultSharding(0)));
    local = b.clone(*op, mapping);
    if (localShape)
      local->setOperand(1, localShape);
    if (auto infer = dyn_cast<InferTypeOpInterface>(local)) {
      SmallVector<Type> inferred;
      if (failed(infer.inferReturnTypes(
              local->getContext(), loc, local->getOperands(),
              local->getRawDictionaryAttrs(), local->getPropertiesStorage(),
              local->getRegions(), inferred)))
        return op->emitError("internal: the local op's types cannot be "
                             "inferred after partitioning");
      for (auto [result, t] : llvm::zip(local->getResults(), inferred))
        result.setType(t);
    }
  }
  for (StringRef name : {kShardingAttr, kOperandShardingAttr,
                         kPredictedSecondsAttr, kStrategyAttr})
    local->removeAttr(name);

  for (unsigned i = 0; i < op->getNumResults(); ++i) {
    TensorSharding sharding = resultSharding(i);
    Value result = local->getResult(i);
    if (auto type = dyn_cast<RankedTensorType>(result.getType())) {
      SmallVector<int64_t> expected = localShapeOf(op->getResult(i), sharding);
      if (type.getShape() != ArrayRef<int64_t>(expected))
        return op->emitError("internal: the local op gives ")
               << type << " where sharding " << sharding.str()
               << " needs [" << llvm::interleaved(expected)
               << "]; please report this with the model";
    }
    locals[op->getResult(i)] = {result, sharding};
  }
  return success();
}

/// The sharding an argument or result of the function is laid out in:
/// its `weft.sharding` attribute, or whole when it has none.
TensorSharding Partitioner::boundarySharding(DictionaryAttr attrs,
                                             Type type) const {
  if (attrs)
    if (auto attr = attrs.getAs<ShardingAttr>(kShardingAttr))
      return toTensorSharding(attr);
  return whole(type);
}

LogicalResult Partitioner::run() {
  // Every sharding read below is taken to be on this mesh.
  if (failed(verifyShardingsOnMesh(func, mesh, "the partition's mesh")))
    return failure();
  Block &body = func.getBody().front();
  // Arguments arrive in their sharding (whole, unless a pipeline's transfer
  // delivers them split): the argument becomes this device's block.
  for (BlockArgument arg : body.getArguments()) {
    auto type = cast<RankedTensorType>(arg.getType());
    TensorSharding sharding =
        boundarySharding(func.getArgAttrDict(arg.getArgNumber()), type);
    if (!sharding.partial.empty())
      return func.emitError("internal: argument ")
             << arg.getArgNumber() << " arrives as a partial sum";
    SmallVector<int64_t> local = localShapeOf(arg, sharding);
    locals[arg] = {arg, sharding};
    arg.setType(RankedTensorType::get(local, type.getElementType()));
    func.removeArgAttr(arg.getArgNumber(), kShardingAttr);
  }
  SmallVector<Operation *> originals;
  for (Operation &op : body.without_terminator())
    originals.push_back(&op);
  for (Operation *op : originals)
    if (failed(partitionOp(op)))
      return failure();
  // Results leave whole, or in the sharding a pipeline's transfer takes
  // them from (never as partial sums: those are reduced here, on this
  // mesh).
  Operation *terminator = body.getTerminator();
  OpBuilder b(terminator);
  for (OpOperand &operand : terminator->getOpOperands()) {
    unsigned index = operand.getOperandNumber();
    TensorSharding need = boundarySharding(func.getResultAttrDict(index),
                                           operand.get().getType());
    need.partial.clear();
    FailureOr<Value> local =
        reshard(b, terminator->getLoc(), operand.get(), need);
    if (failed(local))
      return failure();
    operand.set(*local);
    func.removeResultAttr(index,
                          StringAttr::get(func.getContext(), kShardingAttr));
  }
  for (Operation *op : llvm::reverse(originals)) {
    op->dropAllUses();
    op->erase();
  }
  func.setType(FunctionType::get(func.getContext(), body.getArgumentTypes(),
                                 terminator->getOperandTypes()));
  return success();
}

LogicalResult mlir::weft::spmdPartition(ModuleOp module, int64_t device,
                                        StringRef meshSymbol) {
  auto mesh = module.lookupSymbol<MeshOp>(meshSymbol);
  if (!mesh)
    return module.emitError("spmd partition: the module declares no "
                            "weft.mesh @")
           << meshSymbol << " (run weft-auto-shard first)";
  if (device < 0 || device >= mesh.getNumDevices())
    return module.emitError("spmd partition: device ")
           << device << " is not in mesh [" << llvm::interleaved(mesh.getShape())
           << "]";
  func::FuncOp func = getModelFunction(module, "spmd partition");
  if (!func)
    return failure();
  SmallVector<int64_t> shape(mesh.getShape());
  Partitioner partitioner(
      func, FlatSymbolRefAttr::get(module.getContext(), meshSymbol), shape,
      device);
  if (failed(partitioner.run()))
    return failure();
  // weftc hands the result straight to codegen, which assumes valid IR.
  if (failed(mlir::verify(module)))
    return module.emitError("internal: the partitioned program of device ")
           << device << " does not verify";
  return success();
}

/// The mesh shape and main function of a planned module, or failure.
static FailureOr<std::pair<SmallVector<int64_t>, func::FuncOp>>
plannedMain(ModuleOp module, StringRef meshSymbol) {
  auto mesh = module.lookupSymbol<MeshOp>(meshSymbol);
  if (!mesh)
    return module.emitError("spmd partition: no weft.mesh @") << meshSymbol;
  func::FuncOp func = getModelFunction(module, "spmd partition");
  if (!func)
    return failure();
  return std::make_pair(SmallVector<int64_t>(mesh.getShape()), func);
}

FailureOr<std::string> mlir::weft::blockShapeKey(ModuleOp planned,
                                                 int64_t device,
                                                 StringRef meshSymbol) {
  auto found = plannedMain(planned, meshSymbol);
  if (failed(found))
    return failure();
  auto &[meshShape, func] = *found;
  std::string key;
  auto add = [&](Type type, Attribute attr) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    auto sharding = dyn_cast_or_null<ShardingAttr>(attr);
    if (!tensor || !sharding)
      return;
    for (int64_t d : plan::localShape(tensor.getShape(),
                                      toTensorSharding(sharding), meshShape,
                                      device))
      key += std::to_string(d) + ",";
    key += ";";
  };
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    add(func.getArgument(i).getType(),
        func.getArgAttr(i, kShardingAttr));
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    add(func.getResultTypes()[i], func.getResultAttr(i, kShardingAttr));
  func.walk([&](Operation *op) {
    if (auto results = op->getAttrOfType<ArrayAttr>(kShardingAttr))
      for (auto [result, attr] : llvm::zip(op->getResults(), results))
        add(result.getType(), attr);
    if (auto operands = op->getAttrOfType<ArrayAttr>(kOperandShardingAttr))
      for (auto [operand, attr] : llvm::zip(op->getOperands(), operands))
        add(operand.getType(), attr);
    if (auto shard = dyn_cast<ShardOp>(op))
      add(shard.getType(), shard.getSharding());
    key += "|";
  });
  return key;
}

LogicalResult mlir::weft::retargetPartition(ModuleOp planned,
                                            ModuleOp partitioned,
                                            int64_t device,
                                            StringRef meshSymbol) {
  auto found = plannedMain(planned, meshSymbol);
  if (failed(found))
    return failure();
  auto &[meshShape, func] = *found;
  SmallVector<WeightOp> originals, locals;
  func.walk([&](WeightOp w) { originals.push_back(w); });
  partitioned.walk([&](WeightOp w) { locals.push_back(w); });
  if (originals.size() != locals.size())
    return partitioned.emitError("internal: the partitioned program has ")
           << locals.size() << " weights for " << originals.size();
  for (auto [weight, local] : llvm::zip(originals, locals)) {
    auto attrs = weight->getAttrOfType<ArrayAttr>(kShardingAttr);
    auto attr = attrs && !attrs.empty() ? dyn_cast<ShardingAttr>(attrs[0])
                                        : ShardingAttr();
    if (!attr || attr.isReplicated())
      continue;
    // As partitionOp places a weight's block (kept in step with it).
    std::vector<int64_t> offsets = plan::localOffsets(
        weight.getType().getShape(), toTensorSharding(attr), meshShape,
        device);
    if (std::optional<ArrayRef<int64_t>> outer = weight.getBlockOffsets())
      for (auto [offset, outerOffset] : llvm::zip_equal(offsets, *outer))
        offset += outerOffset;
    local.setBlockOffsets(offsets);
  }
  return success();
}
