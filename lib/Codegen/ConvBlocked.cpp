//===- ConvBlocked.cpp - Channel-blocked tensors between convolutions -----===//
//
// oneDNN runs ResNet-style 3x3 convolutions in its channel-blocked layout,
// N x C/16 x H x W x 16 (nChw16c). With the model's channels-first tensors
// on both sides, every such convolution reordered its input into that
// layout and its output back: 36 reorders per ResNet-18 inference, 0.48 ms
// of 10.5 on one thread and 0.43 of 5.6 on two (where they hardly speed
// up), and 0.17 ms of a CRNN's 2.4.
//
// The pass stores channel-blocked the tensors that only pass between such
// convolutions: the results of convolutions the CPU runtime runs on oneDNN
// (1- to 3-D, group 1, a kernel larger than 1x1 or a stride, input and
// output channels multiples of 16, static shapes, no other layout), and of
// the pools between them, that are used only
//   - as the input of such a convolution,
//   - as the addend of any such convolution (the runtime adds an addend of
//     either layout to a result of either layout), or
//   - as the input of a pool whose result is blocked too (a pool keeps its
//     input's layout).
// Removing a tensor can only make pools' results infeasible, so the set
// is found by iterating to a fixed point. Every convolution and pool
// touching a chosen tensor then says so in its layout attributes.
//
// A convolution whose oneDNN kernel wants another layout (a strided 3x3
// one runs NHWC) still reorders, from the blocked layout instead of the
// plain one.
//
//===----------------------------------------------------------------------===//

#include "KernelOps.h"
#include "weft/Codegen/Passes.h"
#include "weft/WeftOps.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::weft {
#define GEN_PASS_DEF_WEFTCONVBLOCKED
#include "weft/Codegen/Passes.h.inc"
} // namespace mlir::weft

using namespace mlir;
using namespace mlir::weft;

namespace {

/// A convolution that runs on oneDNN, where the blocked layout saves the
/// reorders: f32, group 1, a kernel of more than one tap or a stride (the
/// runtime runs unstrided 1x1 convolutions as GEMMs on the plain layout;
/// ResNet's strided 1x1 projections run as fast on oneDNN blocked, and
/// then the tensors at a stage's end stay blocked: ResNet-18 11.05 -> 10.73
/// ms on one thread, 5.60 -> 5.45 on two, against 11.08 and 5.52 with the
/// projections left plain), channels multiples of 16 on both sides (which
/// also leaves out the first layers that the direct kernel takes), static
/// shapes, default layouts.
bool isCandidate(ConvOp conv) {
  if (conv.hasNonDefaultLayout() || !hasStaticShapes(conv) ||
      conv.getGroup() != 1 ||
      !conv.getInput().getType().getElementType().isF32())
    return false;
  ConvDims dims = conv.getDims();
  int64_t taps = 1;
  for (int64_t k : dims.kernelSpatial())
    taps *= k;
  bool strided =
      llvm::any_of(conv.getStrides(), [](int64_t s) { return s > 1; });
  return (taps > 1 || strided) && dims.input[1] % kChannelBlock == 0 &&
         dims.result[1] % kChannelBlock == 0;
}

/// A pool that may keep a blocked input's layout: f32, no indices, static
/// shapes, not blocked yet.
bool isCandidate(PoolOp pool) {
  return !pool.getBlocked() && !pool.getIndices() && hasStaticShapes(pool) &&
         pool.getInput().getType().getElementType().isF32() &&
         pool.getInput().getType().getDimSize(1) % kChannelBlock == 0;
}

/// Whether `use` may read its value channel-blocked, given the tensors
/// `chosen` so far.
bool readsBlocked(OpOperand &use, const llvm::SetVector<Value> &chosen) {
  Operation *owner = use.getOwner();
  if (auto conv = dyn_cast<ConvOp>(owner)) {
    if (!isCandidate(conv))
      return false;
    if (use.getOperandNumber() ==
        conv.getInputMutable().getOperandNumber())
      return true;
    return conv.getAddend() &&
           use.getOperandNumber() ==
               conv.getAddendMutable()[0].getOperandNumber();
  }
  if (auto pool = dyn_cast<PoolOp>(owner))
    return isCandidate(pool) && chosen.contains(pool.getResult());
  return false;
}

/// The tensors of `func` to store channel-blocked (see the file comment).
llvm::SetVector<Value> blockedTensors(func::FuncOp func) {
  llvm::SetVector<Value> chosen;
  func.walk([&](Operation *op) {
    if (auto conv = dyn_cast<ConvOp>(op); conv && isCandidate(conv))
      chosen.insert(conv.getResult());
    if (auto pool = dyn_cast<PoolOp>(op); pool && isCandidate(pool))
      chosen.insert(pool.getResult());
  });
  bool changed = true;
  while (changed) {
    changed = false;
    for (Value tensor : llvm::to_vector(chosen)) {
      // A pool's result is blocked only with its input.
      bool feasible = true;
      if (auto pool = tensor.getDefiningOp<PoolOp>())
        feasible = chosen.contains(pool.getInput());
      for (OpOperand &use : tensor.getUses())
        feasible = feasible && readsBlocked(use, chosen);
      if (!feasible) {
        chosen.remove(tensor);
        changed = true;
      }
    }
  }
  return chosen;
}

RankedTensorType blockedType(Value plain) {
  auto type = cast<RankedTensorType>(plain.getType());
  return RankedTensorType::get(toChannelBlockedShape(type.getShape()),
                               type.getElementType());
}

struct ConvBlockedPass
    : mlir::weft::impl::WeftConvBlockedBase<ConvBlockedPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    llvm::SetVector<Value> blocked = blockedTensors(func);
    if (blocked.empty())
      return;
    // Attributes first, from the channels-first types; then the result
    // types.
    SmallVector<ConvOp> convs;
    SmallVector<PoolOp> pools;
    func.walk([&](Operation *op) {
      if (auto conv = dyn_cast<ConvOp>(op))
        convs.push_back(conv);
      else if (auto pool = dyn_cast<PoolOp>(op);
               pool && blocked.contains(pool.getResult()))
        pools.push_back(pool);
    });
    for (ConvOp conv : convs) {
      if (blocked.contains(conv.getInput()))
        conv.setBlockedInput(true);
      if (conv.getAddend() && blocked.contains(conv.getAddend()))
        conv.setBlockedAddend(true);
      if (blocked.contains(conv.getResult()))
        conv.setBlockedResult(true);
    }
    for (PoolOp pool : pools)
      pool.setBlocked(true);
    for (Value tensor : blocked)
      tensor.setType(blockedType(tensor));
  }
};

} // namespace
