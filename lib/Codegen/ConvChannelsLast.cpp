//===- ConvChannelsLast.cpp - Channels-last tensors between convolutions --===//
//
// A tensor that only flows from one convolution into others can be stored
// channels-last (N x H x W x C) instead of channels-first, and then the
// CPU kernels need no transposes: the depthwise kernel reads each pixel's
// channels as whole vectors where it otherwise transposes 16 channel planes
// into a tile and back (about half its time on MobileNetV2's 7- to 28-wide
// layers), and a 1x1 convolution is the GEMM pixels x C times C x M, which
// oneDNN runs faster than M x C times C x pixels on small planes (1280x320
// at 7x7: 201 -> 154 us, one thread; bench/kernels/README.md).
//
// The pass finds the largest set of convolution results that may be
// channels-last: each is at most max-plane pixels (on MobileNetV2's 56x56
// and 112x112 planes the channels-first kernels win) and used only as the
// input of a convolution the CPU kernel runs channels-last, as the addend
// of one whose result is in the set too (an addend has its result's
// layout), or by a global pool (a reduction over the spatial dimensions,
// whose axes then move: MobileNetV2's last 1x1 convolution, 1280x320 at
// 7x7, then runs as the GEMM pixels x C times C x M); a result with an
// addend is in the set only with its addend, and a depthwise convolution's
// result only with its input (its forms that change the layout, a
// transposing tile fill or store, lose to the channels-first kernels). Of that set it keeps the connected parts
// (tensors joined by a convolution that reads one and writes the other)
// that contain a depthwise convolution: the gain is the depthwise layers'
// and the small planes' GEMMs; a chain of 1x1 convolutions alone would only
// trade one GEMM shape for another. Every convolution touching a kept
// tensor then says so in its layout attributes and, unless it is a 1x1
// convolution writing channels-first (whose GEMM reads M x C as it is),
// takes its weight kernel-first (K x K x C/group x M: stored permuted when
// it is the model's, folded when it is a constant weft.transpose folds).
//
//===----------------------------------------------------------------------===//

#include "KernelOps.h"
#include "weft/Codegen/Passes.h"
#include "weft/WeftOps.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::weft {
#define GEN_PASS_DEF_WEFTCONVCHANNELSLAST
#include "weft/Codegen/Passes.h.inc"
} // namespace mlir::weft

using namespace mlir;
using namespace mlir::weft;

namespace {

/// A convolution this pass may give other layouts: one the CPU kernel runs
/// channels-last, with static shapes, still in the default layouts.
bool isCandidate(ConvOp conv) {
  return !conv.hasNonDefaultLayout() && hasStaticShapes(conv) &&
         isChannelsLastConvSupported(conv);
}

/// H x W of a channels-first convolution tensor.
int64_t planeSize(Value tensor) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(tensor.getType()).getShape();
  int64_t plane = 1;
  for (int64_t size : shape.drop_front(2))
    plane *= size;
  return plane;
}

/// Whether `reduce` combines exactly the spatial dimensions of a static
/// channels-first convolution tensor (GlobalAveragePool and GlobalMaxPool
/// import as such): on a channels-last input it reduces dimensions 1 to
/// rank - 2 instead, and its result holds the same elements in the same
/// order (N x C, or N x C x 1... with keepdims: a reshape away).
bool reducesSpatialDims(ReduceOp reduce) {
  auto type = cast<RankedTensorType>(reduce.getInput().getType());
  if (reduce.getDynamicAxes() || !type.hasStaticShape() || type.getRank() < 3)
    return false;
  ArrayRef<int64_t> axes = reduce.getAxes();
  if (static_cast<int64_t>(axes.size()) != type.getRank() - 2)
    return false;
  for (auto [i, axis] : llvm::enumerate(axes))
    if (axis != static_cast<int64_t>(i) + 2)
      return false;
  return true;
}

/// The largest set of convolution results in `func` that may be
/// channels-last (see the file comment), before the depthwise filter.
llvm::SetVector<Value> feasibleTensors(func::FuncOp func, int64_t maxPlane) {
  llvm::SetVector<Value> chosen;
  func.walk([&](ConvOp conv) {
    if (isCandidate(conv) && planeSize(conv.getResult()) <= maxPlane)
      chosen.insert(conv.getResult());
  });
  // Removing a tensor can only make others infeasible: iterate to the
  // fixed point.
  bool changed = true;
  while (changed) {
    changed = false;
    for (Value tensor : llvm::to_vector(chosen)) {
      auto producer = tensor.getDefiningOp<ConvOp>();
      // A depthwise convolution keeps its layout: its forms that change it
      // (a transposing tile fill or store) lose to the channels-first
      // kernels.
      bool feasible =
          (!producer.getAddend() || chosen.contains(producer.getAddend())) &&
          (!producer.isDepthwise() || chosen.contains(producer.getInput()));
      for (OpOperand &use : tensor.getUses()) {
        if (!feasible)
          break;
        // A global pool reads any layout (the reduction's axes move).
        if (auto reduce = dyn_cast<ReduceOp>(use.getOwner())) {
          feasible = reducesSpatialDims(reduce);
          continue;
        }
        auto consumer = dyn_cast<ConvOp>(use.getOwner());
        if (!consumer || !isCandidate(consumer)) {
          feasible = false;
        } else if (use.getOperandNumber() ==
                   consumer.getInputMutable().getOperandNumber()) {
          // Read as the input: a 1x1 convolution may change the layout.
          feasible =
              !consumer.isDepthwise() || chosen.contains(consumer.getResult());
        } else if (consumer.getAddend() &&
                   use.getOperandNumber() ==
                       consumer.getAddendMutable()[0].getOperandNumber()) {
          feasible = chosen.contains(consumer.getResult());
        } else {
          // A weight or a bias.
          feasible = false;
        }
      }
      if (!feasible) {
        chosen.remove(tensor);
        changed = true;
      }
    }
  }
  return chosen;
}

/// Keeps the connected parts of `chosen` that a depthwise convolution
/// reads or writes.
llvm::DenseSet<Value>
keepPartsWithDepthwise(func::FuncOp func,
                       const llvm::SetVector<Value> &chosen) {
  llvm::EquivalenceClasses<void *> parts;
  for (Value tensor : chosen)
    parts.insert(tensor.getAsOpaquePointer());
  llvm::DenseSet<void *> withDepthwise;
  func.walk([&](ConvOp conv) {
    SmallVector<Value, 3> touched;
    for (Value v : {conv.getInput(), conv.getAddend(), conv.getResult()})
      if (v && chosen.contains(v))
        touched.push_back(v);
    if (touched.empty())
      return;
    for (Value v : ArrayRef(touched).drop_front())
      parts.unionSets(touched.front().getAsOpaquePointer(),
                      v.getAsOpaquePointer());
    if (conv.isDepthwise())
      withDepthwise.insert(touched.front().getAsOpaquePointer());
  });
  llvm::DenseSet<void *> keptLeaders;
  for (void *member : withDepthwise)
    keptLeaders.insert(parts.getLeaderValue(member));
  llvm::DenseSet<Value> kept;
  for (Value tensor : chosen)
    if (keptLeaders.contains(parts.getLeaderValue(tensor.getAsOpaquePointer())))
      kept.insert(tensor);
  return kept;
}

/// `weight` permuted to kernel-first: a weight the weights file stores
/// permuted, a constant folded, else a weft.transpose that runs with the
/// program.
Value kernelFirstWeight(OpBuilder &b, Location loc, Value weight) {
  auto type = cast<RankedTensorType>(weight.getType());
  SmallVector<int64_t> perm = toKernelFirstWeightPerm(type.getRank());
  auto permutedType = RankedTensorType::get(
      applyPermutation(type.getShape(), perm), type.getElementType());
  if (auto stored = weight.getDefiningOp<WeightOp>()) {
    // The weights file holds it permuted (layoutWeights).
    SmallVector<int64_t> composed = perm;
    if (std::optional<ArrayRef<int64_t>> first = stored.getPerm())
      for (int64_t &d : composed)
        d = (*first)[d];
    auto permuted = cast<WeightOp>(b.clone(*stored));
    permuted.setPermAttr(b.getDenseI64ArrayAttr(composed));
    permuted.getResult().setType(permutedType);
    return permuted;
  }
  // A constant folds (TransposeOp::fold, up to its element limit).
  return b.createOrFold<TransposeOp>(loc, permutedType, weight,
                                     b.getDenseI64ArrayAttr(perm));
}

/// Gives `conv` the layouts `channelsLast` asks for its input and result,
/// and a kernel-first weight.
void relayout(ConvOp conv, const llvm::DenseSet<Value> &channelsLast) {
  const bool input = channelsLast.contains(conv.getInput());
  const bool result = channelsLast.contains(conv.getResult());
  if (!input && !result)
    return;
  // Kernel-first weights, except for a 1x1 convolution that reads
  // channels-last and writes channels-first: the GEMM pixels-major input
  // times the weight transposed reads M x C as it is (1280x320 at 7x7: 205
  // us, as channels-first, against 235 with a kernel-first weight).
  if (result || conv.isDepthwise()) {
    OpBuilder b(conv);
    Value original = conv.getWeight();
    conv.getWeightMutable().assign(
        kernelFirstWeight(b, conv.getLoc(), original));
    conv.setKernelFirstWeight(true);
    // weftc lays out the weights right after this pass: a weight nothing
    // reads any more must not take space in the device's file.
    if (Operation *def = original.getDefiningOp();
        def && isOpTriviallyDead(def))
      def->erase();
  }
  if (input)
    conv.setChannelsLastInput(true);
  if (result) {
    conv.setChannelsLastResult(true);
    RankedTensorType type = conv.getResult().getType();
    conv.getResult().setType(RankedTensorType::get(
        applyPermutation(type.getShape(), toChannelsLastPerm(type.getRank())),
        type.getElementType()));
  }
}

/// Moves `reduce`'s axes (the spatial ones, reducesSpatialDims) to where
/// its now channels-last input has them; with keepdims its N x 1... x C
/// result is reshaped back to the N x C x 1... that its users read (the
/// same elements in the same order).
void reduceChannelsLast(ReduceOp reduce) {
  auto inputType = cast<RankedTensorType>(reduce.getInput().getType());
  const int64_t rank = inputType.getRank();
  SmallVector<int64_t> axes;
  for (int64_t d = 1; d < rank - 1; ++d)
    axes.push_back(d);
  reduce.setAxes(axes);
  if (!reduce.getKeepdims())
    return;
  RankedTensorType planar = reduce.getType();
  SmallVector<int64_t> shape(rank, 1);
  shape.front() = inputType.getDimSize(0);
  shape.back() = inputType.getDimSize(rank - 1);
  reduce.getResult().setType(
      RankedTensorType::get(shape, planar.getElementType()));
  OpBuilder b(reduce->getContext());
  b.setInsertionPointAfter(reduce);
  auto shapeType = RankedTensorType::get({rank}, b.getI64Type());
  Value target = ConstantOp::create(
      b, reduce.getLoc(),
      DenseElementsAttr::get(shapeType, ArrayRef(planar.getShape())));
  Value reshaped =
      ReshapeOp::create(b, reduce.getLoc(), planar, reduce.getResult(), target);
  reduce.getResult().replaceAllUsesExcept(reshaped,
                                          reshaped.getDefiningOp());
}

struct ConvChannelsLastPass
    : mlir::weft::impl::WeftConvChannelsLastBase<ConvChannelsLastPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    llvm::SetVector<Value> feasible = feasibleTensors(func, maxPlane);
    if (feasible.empty())
      return;
    llvm::DenseSet<Value> channelsLast = keepPartsWithDepthwise(func, feasible);
    SmallVector<ConvOp> convs;
    SmallVector<ReduceOp> reduces;
    func.walk([&](Operation *op) {
      if (auto conv = dyn_cast<ConvOp>(op))
        convs.push_back(conv);
      else if (auto reduce = dyn_cast<ReduceOp>(op);
               reduce && channelsLast.contains(reduce.getInput()))
        reduces.push_back(reduce);
    });
    for (ConvOp conv : convs)
      relayout(conv, channelsLast);
    for (ReduceOp reduce : reduces)
      reduceChannelsLast(reduce);
  }
};

} // namespace
