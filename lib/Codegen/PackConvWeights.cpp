//===- PackConvWeights.cpp - 1x1 weights in the kernel's panels -----------===//
//
// The CPU kernel for a channels-last 1x1 convolution computes tiles of the
// product pixels x C times C x M, 32 output channels at a time, from the
// weight in panels M/32 x C x 32 (runtime/cpu/PointwisePacked.cpp). Packed
// at run time, the panels would be a second copy of the weights away from
// the weights file, whose reading in order streams the next layer's
// weights into the cache (MobileNetV2's depthwise layers after a packed
// expansion took 17 to 20 us instead of 11: bench/kernels/README.md). So
// the model's weight is packed here, into the weights file: a panel
// layout is a permutation of the stored M x C x 1 x 1 bytes viewed as
// M/32 x 32 x C, which `weft.weight` already expresses.
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/Passes.h"
#include "weft/WeftOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::weft {
#define GEN_PASS_DEF_WEFTPACKCONVWEIGHTS
#include "weft/Codegen/Passes.h.inc"
} // namespace mlir::weft

using namespace mlir;
using namespace mlir::weft;

namespace {

/// Whether `conv` is a 2-D 1x1 convolution between channels-last tensors
/// that the packed kernel runs: f32, group 1, strides 1, no pads, static
/// shapes, M a multiple of 32.
bool isPackable(ConvOp conv) {
  if (!conv.getChannelsLastInput() || !conv.getChannelsLastResult() ||
      conv.getPackedWeight() || conv.hasChannelBlockedLayout() ||
      conv.getGroup() != 1 || conv.getAutoPad() != AutoPad::notset ||
      !conv.getInput().getType().getElementType().isF32())
    return false;
  ConvDims dims = conv.getDims();
  auto ones = [](ArrayRef<int64_t> values) {
    return llvm::all_of(values, [](int64_t v) { return v == 1; });
  };
  return dims.spatialRank() == 2 && ones(dims.kernelSpatial()) &&
         ones(conv.getStrides()) &&
         llvm::all_of(conv.getPads(), [](int64_t v) { return v == 0; }) &&
         llvm::none_of(dims.weight, ShapedType::isDynamic) &&
         dims.weight[0] % kWeightPanel == 0;
}

/// The model's weight of `conv` in panels, or null: `weight` must read the
/// whole stored tensor, stored M x C x 1 x 1 (as ONNX stores it) and seen
/// by the convolution as it is or kernel-first.
WeightOp packedWeight(OpBuilder &b, ConvOp conv, WeightOp weight) {
  if (weight.getBlockOffsets() || weight.getFullShape())
    return nullptr;
  ConvDims dims = conv.getDims();
  if (ArrayRef<int64_t>(weight.getUnpermutedShape()) !=
      ArrayRef<int64_t>(dims.weight))
    return nullptr;
  std::optional<ArrayRef<int64_t>> perm = weight.getPerm();
  SmallVector<int64_t> kernelFirst = toKernelFirstWeightPerm(4);
  const bool storedAsSeen =
      conv.getKernelFirstWeight()
          ? perm && ArrayRef<int64_t>(*perm) == ArrayRef<int64_t>(kernelFirst)
          : !perm;
  if (!storedAsSeen)
    return nullptr;
  // The stored M x C x 1 x 1 bytes are M/32 x 32 x C; panel p holds
  // [p, c, j] = W[32p + j, c]: result dimension 1 is stored dimension 2.
  auto packed = cast<WeightOp>(b.clone(*weight));
  packed.setPermAttr(b.getDenseI64ArrayAttr({0, 2, 1}));
  packed.getResult().setType(RankedTensorType::get(
      toPackedWeightShape(dims.weight), weight.getType().getElementType()));
  return packed;
}

struct PackConvWeightsPass
    : mlir::weft::impl::WeftPackConvWeightsBase<PackConvWeightsPass> {
  void runOnOperation() override {
    SmallVector<ConvOp> convs;
    getOperation().walk([&](ConvOp conv) {
      if (isPackable(conv))
        convs.push_back(conv);
    });
    for (ConvOp conv : convs) {
      auto weight = conv.getWeight().getDefiningOp<WeightOp>();
      if (!weight)
        continue;
      OpBuilder b(conv);
      WeightOp packed = packedWeight(b, conv, weight);
      if (!packed)
        continue;
      conv.getWeightMutable().assign(packed);
      conv.setKernelFirstWeight(false);
      conv.setPackedWeight(true);
      // weftc lays out the weights after the pipeline: a weight nothing
      // reads any more must not take space in the device's file.
      if (isOpTriviallyDead(weight))
        weight->erase();
    }
  }
};

} // namespace
