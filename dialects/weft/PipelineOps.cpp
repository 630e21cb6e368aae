//===- PipelineOps.cpp - Stages and the transfers between them ------------===//
//
// Verifiers of weft.stage, weft.yield, weft.transfer, weft.send, weft.recv
// and the two ends of a broadcast: the structural rules of a pipeline (what
// may feed a stage, what a transfer connects) are checked here, so that
// every later pass can rely on them.
//
//===----------------------------------------------------------------------===//

#include "weft/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/InterleavedRange.h"

using namespace mlir;
using namespace mlir::weft;

/// Largest tag a transfer may use: the runtime's bound (it checks MPI's own
/// MPI_TAG_UB when it sends).
static constexpr int64_t kMaxTag = (int64_t(1) << 20) - 1;

//===----------------------------------------------------------------------===//
// weft.stage
//===----------------------------------------------------------------------===//

void StageOp::build(OpBuilder &builder, OperationState &state,
                    TypeRange resultTypes, FlatSymbolRefAttr mesh,
                    ValueRange inputs) {
  state.addTypes(resultTypes);
  state.addOperands(inputs);
  state.addAttribute(getMeshAttrName(state.name), mesh);
  Region *body = state.addRegion();
  Block *block = new Block();
  body->push_back(block);
  for (Value input : inputs)
    block->addArgument(input.getType(), input.getLoc());
}

LogicalResult StageOp::verify() {
  Block &body = getBodyBlock();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("body has ")
           << body.getNumArguments() << " arguments for "
           << getInputs().size() << " inputs";
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip(getInputs(), body.getArguments()))) {
    auto [input, arg] = pair;
    if (input.getType() != arg.getType())
      return emitOpError("input ")
             << i << " is " << input.getType() << " but the body's argument "
             << "is " << arg.getType();
  }
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getOperandTypes() != getResultTypes())
    return emitOpError("yields (")
           << yield.getOperandTypes() << ") but the stage gives ("
           << getResultTypes() << ")";
  // An input is a model input (a function argument) or what a transfer
  // brought to this stage's mesh.
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    if (isa<BlockArgument>(input))
      continue;
    auto transfer = input.getDefiningOp<TransferOp>();
    if (!transfer)
      return emitOpError("input ")
             << i << " is neither an argument of the enclosing function nor "
             << "the result of a weft.transfer";
    if (transfer.getTarget().getMesh() != getMeshAttr())
      return emitOpError("input ")
             << i << " was transferred to " << transfer.getTarget().getMesh()
             << ", not to this stage's mesh " << getMeshAttr();
  }
  return success();
}

LogicalResult StageOp::verifySymbolUses(SymbolTableCollection &tables) {
  if (!tables.lookupNearestSymbolFrom<MeshOp>(*this, getMeshAttr()))
    return emitOpError("names mesh ")
           << getMeshAttr() << ", which is not a weft.mesh in scope";
  return success();
}

LogicalResult YieldOp::verify() { return success(); }

//===----------------------------------------------------------------------===//
// weft.transfer
//===----------------------------------------------------------------------===//

LogicalResult TransferOp::verify() {
  if (getSource().getMesh() == getTarget().getMesh())
    return emitOpError("moves a value within mesh ")
           << getSource().getMesh()
           << "; a change of sharding on one mesh is the SPMD partitioner's "
              "(weft.shard)";
  if (!getTarget().getPartial().empty())
    return emitOpError("target holds partial sums over mesh axes [")
           << llvm::interleaved(getTarget().getPartial().asArrayRef())
           << "]; a transfer delivers whole values (partial sums are reduced "
              "on the source mesh)";
  // A transfer leaves a stage (or is a model input's way to a stage).
  Value input = getInput();
  if (auto stage = input.getDefiningOp<StageOp>())
    if (stage.getMeshAttr() != getSource().getMesh())
      return emitOpError("source is on ")
             << getSource().getMesh() << " but its value comes from a stage "
             << "on " << stage.getMeshAttr();
  return success();
}

LogicalResult TransferOp::verifySymbolUses(SymbolTableCollection &tables) {
  auto type = cast<RankedTensorType>(getType());
  if (failed(verifyShardingFor(*this, getSource(), type, &tables)) ||
      failed(verifyShardingFor(*this, getTarget(), type, &tables)))
    return failure();
  auto source = tables.lookupNearestSymbolFrom<MeshOp>(*this,
                                                       getSource().getMesh());
  auto target = tables.lookupNearestSymbolFrom<MeshOp>(*this,
                                                       getTarget().getMesh());
  std::optional<ArrayRef<int64_t>> from = source.getDevices();
  std::optional<ArrayRef<int64_t>> to = target.getDevices();
  if (from && to)
    for (int64_t device : *from)
      if (llvm::is_contained(*to, device))
        return emitOpError("meshes ")
               << getSource().getMesh() << " and " << getTarget().getMesh()
               << " share device " << device
               << "; a transfer connects disjoint meshes";
  return success();
}

//===----------------------------------------------------------------------===//
// weft.send, weft.recv
//===----------------------------------------------------------------------===//

static LogicalResult verifyPeerAndTag(Operation *op, int64_t peer,
                                      int64_t tag) {
  if (peer < 0)
    return op->emitOpError("peer rank ") << peer << " is negative";
  if (tag < 0 || tag > kMaxTag)
    return op->emitOpError("tag ")
           << tag << " is outside [0, " << kMaxTag << "]";
  return success();
}

/// A transfer names either its peer and tag or a slot of the rank's peer
/// table, never both.
static LogicalResult verifyTransferEnd(Operation *op,
                                       std::optional<int64_t> peer,
                                       std::optional<int64_t> tag,
                                       std::optional<int64_t> slot) {
  if (slot) {
    if (peer || tag)
      return op->emitOpError("names both a peer table slot and a peer or tag");
    if (*slot < 0 || *slot > kMaxTag)
      return op->emitOpError("peer table slot ")
             << *slot << " is outside [0, " << kMaxTag << "]";
    return success();
  }
  if (!peer || !tag)
    return op->emitOpError("needs a peer and a tag, or a peer table slot");
  return verifyPeerAndTag(op, *peer, *tag);
}

LogicalResult SendOp::verify() {
  return verifyTransferEnd(*this, getPeer(), getTag(), getSlot());
}

LogicalResult RecvOp::verify() {
  auto type = cast<RankedTensorType>(getType());
  if (!type.hasStaticShape())
    return emitOpError("receives ") << type << "; a receive has a static shape";
  return verifyTransferEnd(*this, getPeer(), getTag(), getSlot());
}

//===----------------------------------------------------------------------===//
// weft.broadcast_send, weft.broadcast_recv
//===----------------------------------------------------------------------===//

std::pair<int64_t, int64_t> mlir::weft::broadcastRows(ArrayRef<int64_t> shape) {
  int64_t elements = 1;
  for (int64_t size : shape)
    elements *= size;
  if (elements == 0)
    return {0, 1};
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] >= 2) {
      int64_t inner = 1;
      for (int64_t size : shape.drop_front(d + 1))
        inner *= size;
      return {shape[d], inner};
    }
  return {1, 1};
}

/// The checks both ends of a broadcast share.
static LogicalResult verifyBroadcast(Operation *op, Type type,
                                     ArrayRef<int64_t> chain, int64_t chunks,
                                     int64_t group, int64_t tag) {
  auto tensor = cast<RankedTensorType>(type);
  if (!tensor.hasStaticShape())
    return op->emitOpError("moves ")
           << tensor << "; a broadcast has a static shape";
  if (chain.size() < 2)
    return op->emitOpError("has a chain of ")
           << chain.size() << " ranks; a broadcast needs at least two";
  for (auto [i, rank] : llvm::enumerate(chain)) {
    if (rank < 0)
      return op->emitOpError("chain rank ") << rank << " is negative";
    if (llvm::is_contained(chain.take_front(i), rank))
      return op->emitOpError("chain lists rank ") << rank << " twice";
  }
  int64_t rows = broadcastRows(tensor.getShape()).first;
  if (chunks < 1 || chunks > std::max<int64_t>(rows, 1))
    return op->emitOpError("cuts ")
           << tensor << " (" << rows << " rows) into " << chunks
           << " chunks; from 1 to max(rows, 1)";
  if (group < -1)
    return op->emitOpError("group ")
           << group << " is neither a broadcast group nor -1 (the world)";
  if (tag < 0 || tag > kMaxTag)
    return op->emitOpError("tag ")
           << tag << " is outside [0, " << kMaxTag << "]";
  return success();
}

LogicalResult BroadcastSendOp::verify() {
  return verifyBroadcast(*this, getInput().getType(), getChain(), getChunks(),
                         getGroup(), getTag());
}

LogicalResult BroadcastRecvOp::verify() {
  return verifyBroadcast(*this, getType(), getChain(), getChunks(), getGroup(),
                         getTag());
}
