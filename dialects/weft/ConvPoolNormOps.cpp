//===- ConvPoolNormOps.cpp - Weft convolution, pooling, norms -------------===//
//
// Type inference and canonicalization of weft.conv, weft.pool,
// weft.batch_norm and weft.normalize: output sizes of windowed ops and the
// checks on channels, windows and parameters.
//
//===----------------------------------------------------------------------===//

#include "weft/WeftOps.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;
using namespace mlir::weft;

static bool isStatic(int64_t size) { return !ShapedType::isDynamic(size); }

/// Rounds a / b (b > 0) up or down.
static int64_t divide(int64_t a, int64_t b, bool roundUp) {
  int64_t q = a / b, r = a % b;
  if (r != 0 && ((r > 0) == roundUp))
    q += roundUp ? 1 : -1;
  return q;
}

//===----------------------------------------------------------------------===//
// Windows (shared by conv and pool)
//===----------------------------------------------------------------------===//

namespace {
/// The window attributes of a conv or pool, for n spatial dimensions.
struct Window {
  ArrayRef<int64_t> strides, pads, dilations;
  AutoPad autoPad;
  bool ceilMode;
};
} // namespace

/// Checks the lengths and ranges of a window's attributes.
static LogicalResult verifyWindow(const Window &window, size_t n,
                                  std::optional<Location> loc) {
  auto check = [&](ArrayRef<int64_t> values, StringRef name, size_t count,
                   int64_t min) -> LogicalResult {
    if (values.size() != count)
      return emitOptionalError(loc, name, " has ", values.size(),
                               " values, expected ", count);
    for (int64_t v : values)
      if (v < min)
        return emitOptionalError(loc, name, " value ", v, " must be >= ", min);
    return success();
  };
  if (failed(check(window.strides, "strides", n, 1)) ||
      failed(check(window.dilations, "dilations", n, 1)) ||
      failed(check(window.pads, "pads", 2 * n, 0)))
    return failure();
  if (window.autoPad != AutoPad::notset &&
      llvm::any_of(window.pads, [](int64_t p) { return p != 0; }))
    return emitOptionalError(loc, "pads must be zero with auto_pad ",
                             stringifyAutoPad(window.autoPad));
  return success();
}

/// Output sizes of a windowed op over `inputSizes` with `kernelSizes`
/// (either may be dynamic); assumes verifyWindow passed.
static FailureOr<SmallVector<int64_t>>
inferWindowSizes(ArrayRef<int64_t> inputSizes, ArrayRef<int64_t> kernelSizes,
                 const Window &window, std::optional<Location> loc) {
  size_t n = inputSizes.size();
  SmallVector<int64_t> out;
  for (size_t i = 0; i < n; ++i) {
    int64_t in = inputSizes[i], k = kernelSizes[i], s = window.strides[i];
    if (window.autoPad != AutoPad::notset) {
      out.push_back(isStatic(in) ? divide(in, s, /*roundUp=*/true)
                                 : ShapedType::kDynamic);
      continue;
    }
    if (!isStatic(in) || !isStatic(k)) {
      out.push_back(ShapedType::kDynamic);
      continue;
    }
    if (k < 1)
      return emitOptionalError(loc, "kernel size ", k, " in spatial dimension ",
                               i, " must be >= 1");
    int64_t begin = window.pads[i];
    std::optional<int64_t> effective =
        llvm::checkedMulAdd<int64_t>(window.dilations[i], k - 1, 1);
    std::optional<int64_t> padded = llvm::checkedAdd<int64_t>(in, begin);
    if (padded)
      padded = llvm::checkedAdd<int64_t>(*padded, window.pads[n + i]);
    if (!effective || !padded)
      return emitOptionalError(loc, "window or padded input size overflows ",
                               "in spatial dimension ", i);
    if (*padded < *effective)
      return emitOptionalError(loc, "window of size ", *effective, " (kernel ",
                               k, ", dilation ", window.dilations[i],
                               ") is larger than the ", "padded input size ",
                               *padded, " in spatial dimension ", i);
    int64_t size = divide(*padded - *effective, s, window.ceilMode) + 1;
    // The last window must start inside the input or its begin padding (an
    // overflowing start is past it).
    if (window.ceilMode) {
      std::optional<int64_t> start = llvm::checkedMul<int64_t>(size - 1, s);
      if (!start || *start >= in + begin)
        --size;
    }
    out.push_back(size);
  }
  return out;
}

std::optional<SmallVector<int64_t>>
ConvOp::getSamePads(ArrayRef<int64_t> inputSizes, ArrayRef<int64_t> kernelSizes,
                    ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                    bool upper) {
  size_t n = inputSizes.size();
  SmallVector<int64_t> pads(2 * n, 0);
  for (size_t i = 0; i < n; ++i) {
    int64_t in = inputSizes[i], k = kernelSizes[i];
    if (!isStatic(in) || !isStatic(k))
      return std::nullopt;
    int64_t out = divide(in, strides[i], /*roundUp=*/true);
    // (out - 1) * stride + dilation * (k - 1) + 1 - in, when it fits.
    std::optional<int64_t> effective =
        llvm::checkedMulAdd<int64_t>(dilations[i], k - 1, 1);
    std::optional<int64_t> span =
        effective
            ? llvm::checkedMulAdd<int64_t>(out - 1, strides[i], *effective)
            : std::nullopt;
    if (k < 1 || !span)
      return std::nullopt;
    int64_t total = std::max<int64_t>(0, *span - in);
    int64_t small = total / 2;
    pads[i] = upper ? small : total - small;
    pads[n + i] = total - pads[i];
  }
  return pads;
}

//===----------------------------------------------------------------------===//
// ConvOp
//===----------------------------------------------------------------------===//

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto storedInputType = cast<RankedTensorType>(adaptor.getInput().getType());
  auto storedWeightType =
      cast<RankedTensorType>(adaptor.getWeight().getType());
  Type elementType = storedInputType.getElementType();
  const bool blockedInput = static_cast<bool>(adaptor.getBlockedInput());
  const bool blockedResult = static_cast<bool>(adaptor.getBlockedResult());
  const bool blockedAddend = static_cast<bool>(adaptor.getBlockedAddend());
  if ((blockedInput || blockedResult || blockedAddend) &&
      (adaptor.getChannelsLastInput() || adaptor.getChannelsLastResult() ||
       adaptor.getKernelFirstWeight()))
    return emitOptionalError(loc, "channel-blocked layouts exclude the ",
                             "channels-last and kernel-first ones");
  if (blockedAddend && !adaptor.getAddend())
    return emitOptionalError(loc, "blocked_addend needs an addend");
  const bool packedWeight = static_cast<bool>(adaptor.getPackedWeight());
  if (packedWeight) {
    if (blockedInput || blockedResult || blockedAddend ||
        adaptor.getKernelFirstWeight())
      return emitOptionalError(loc, "packed_weight excludes ",
                               "kernel_first_weight and the channel-blocked ",
                               "layouts");
    if (!adaptor.getChannelsLastInput() || !adaptor.getChannelsLastResult())
      return emitOptionalError(loc, "packed_weight needs ",
                               "channels_last_input and channels_last_result");
    if (storedInputType.getRank() != 4)
      return emitOptionalError(loc, "packed_weight is for 2-D convolutions, ",
                               "got input ", storedInputType);
    if (storedWeightType.getRank() != 3 ||
        storedWeightType.getDimSize(2) != kWeightPanel)
      return emitOptionalError(loc, "a packed weight must be M/",
                               kWeightPanel, " x C x ", kWeightPanel,
                               ", got ", storedWeightType);
  }
  // A blocked input has one dimension more than the weight (the 16).
  const int64_t inputRank = storedInputType.getRank() - (blockedInput ? 1 : 0);
  if (inputRank < 3)
    return emitOptionalError(loc, "input must have rank >= 3 (N x C x ",
                             "spatial", blockedInput ? ", blocked: + 1" : "",
                             "), got ", storedInputType);
  if (!packedWeight && storedWeightType.getRank() != inputRank)
    return emitOptionalError(loc, "weight ", storedWeightType,
                             " must have the input's rank ", inputRank);
  if (blockedInput &&
      storedInputType.getShape().back() != kChannelBlock)
    return emitOptionalError(loc, "blocked input ", storedInputType,
                             " must end in a dimension of ", kChannelBlock);
  // Everything below reasons in channels-first order; a channels-last or
  // blocked result is laid out again at the end.
  const int64_t rank = inputRank;
  auto inputType =
      adaptor.getChannelsLastInput()
          ? RankedTensorType::get(applyPermutation(storedInputType.getShape(),
                                                   toChannelsFirstPerm(rank)),
                                  elementType)
      : blockedInput
          ? RankedTensorType::get(
                fromChannelBlockedShape(storedInputType.getShape()),
                elementType)
          : storedInputType;
  auto weightType =
      packedWeight
          ? RankedTensorType::get(
                fromPackedWeightShape(storedWeightType.getShape()),
                storedWeightType.getElementType())
      : adaptor.getKernelFirstWeight()
          ? RankedTensorType::get(
                applyPermutation(storedWeightType.getShape(),
                                 toOutputFirstWeightPerm(rank)),
                storedWeightType.getElementType())
          : storedWeightType;
  if (weightType.getElementType() != elementType)
    return emitOptionalError(loc, "weight element type ",
                             weightType.getElementType(), " differs from ",
                             "input element type ", elementType);
  size_t n = inputType.getRank() - 2;
  Window window{adaptor.getStrides(), adaptor.getPads(), adaptor.getDilations(),
                adaptor.getAutoPad(),
                /*ceilMode=*/false};
  if (failed(verifyWindow(window, n, loc)))
    return failure();
  int64_t group = adaptor.getGroup();
  if (group < 1)
    return emitOptionalError(loc, "group ", group, " must be >= 1");
  if ((blockedInput || blockedResult || blockedAddend) && group != 1)
    return emitOptionalError(loc, "channel-blocked layouts need group 1, ",
                             "got ", group);
  if (packedWeight &&
      (group != 1 || adaptor.getAutoPad() != AutoPad::notset ||
       llvm::any_of(adaptor.getStrides(), [](int64_t v) { return v != 1; }) ||
       llvm::any_of(adaptor.getPads(), [](int64_t v) { return v != 0; })))
    return emitOptionalError(loc, "packed_weight needs group 1, strides 1 ",
                             "and no pads");
  std::optional<APFloat> clampMin = adaptor.getClampMin();
  std::optional<APFloat> clampMax = adaptor.getClampMax();
  for (const std::optional<APFloat> &bound : {clampMin, clampMax})
    if (bound && !bound->isFinite())
      return emitOptionalError(loc, "clamp bounds must be finite");
  if (clampMin && clampMax && clampMin->convertToDouble() >
                                  clampMax->convertToDouble())
    return emitOptionalError(loc, "clamp_min ", clampMin->convertToDouble(),
                             " is greater than clamp_max ",
                             clampMax->convertToDouble());

  int64_t channels = inputType.getDimSize(1);
  int64_t outChannels = weightType.getDimSize(0);
  int64_t groupChannels = weightType.getDimSize(1);
  if (isStatic(outChannels) && outChannels % group != 0)
    return emitOptionalError(loc, "weight's ", outChannels,
                             " output channels are not divisible by group ",
                             group);
  if (isStatic(channels) && isStatic(groupChannels) &&
      channels != groupChannels * group)
    return emitOptionalError(loc, "input has ", channels,
                             " channels but weight expects ", groupChannels,
                             " per group times group ", group);
  if (Value bias = adaptor.getBias()) {
    auto biasType = cast<RankedTensorType>(bias.getType());
    if (biasType.getElementType() != elementType)
      return emitOptionalError(loc, "bias element type ",
                               biasType.getElementType(), " differs from ",
                               "input element type ", elementType);
    if (biasType.getRank() != 1 ||
        (isStatic(biasType.getDimSize(0)) && isStatic(outChannels) &&
         biasType.getDimSize(0) != outChannels))
      return emitOptionalError(loc, "bias ", biasType, " must have shape (",
                               formatShape({outChannels}), ")");
    if (!isStatic(outChannels))
      outChannels = biasType.getDimSize(0);
  }

  FailureOr<SmallVector<int64_t>> sizes =
      inferWindowSizes(inputType.getShape().drop_front(2),
                       weightType.getShape().drop_front(2), window, loc);
  if (failed(sizes))
    return failure();
  SmallVector<int64_t> shape{inputType.getDimSize(0), outChannels};
  llvm::append_range(shape, *sizes);
  if ((blockedResult || blockedAddend) && isStatic(outChannels) &&
      outChannels % kChannelBlock != 0)
    return emitOptionalError(loc, "a blocked result or addend needs output ",
                             "channels that are a multiple of ",
                             kChannelBlock, ", got ", outChannels);
  // In their layouts: the result, and the addend (the result's unless
  // blocked_addend says otherwise).
  auto laidOut = [&](bool blocked) {
    if (blocked)
      return RankedTensorType::get(toChannelBlockedShape(shape), elementType);
    if (adaptor.getChannelsLastResult())
      return RankedTensorType::get(
          applyPermutation(shape, toChannelsLastPerm(rank)), elementType);
    return RankedTensorType::get(shape, elementType);
  };
  auto resultType = laidOut(blockedResult);
  if (Value addend = adaptor.getAddend()) {
    auto addendType = laidOut(blockedAddend);
    if (!areCompatibleTensorTypes(TypeRange(addend.getType()),
                                  TypeRange(addendType)))
      return emitOptionalError(
          loc, "addend ", addend.getType(), " must have the result's ",
          blockedAddend == blockedResult ? ""
          : blockedAddend                ? "channel-blocked "
                                         : "channels-first ",
          "type ", addendType);
  }
  inferred.push_back(resultType);
  return success();
}

/// Replaces auto_pad by explicit pads once the input's spatial sizes are
/// static.
template <typename OpTy>
static LogicalResult resolveAutoPad(OpTy op, ArrayRef<int64_t> inputSizes,
                                    ArrayRef<int64_t> kernelSizes,
                                    PatternRewriter &rewriter) {
  if (op.getAutoPad() == AutoPad::notset)
    return failure();
  std::optional<SmallVector<int64_t>> pads = ConvOp::getSamePads(
      inputSizes, kernelSizes, op.getStrides(), op.getDilations(),
      op.getAutoPad() == AutoPad::same_upper);
  if (!pads)
    return failure();
  rewriter.modifyOpInPlace(op, [&] {
    op.setPads(*pads);
    op.setAutoPad(AutoPad::notset);
  });
  return success();
}

ConvDims ConvOp::getDims() {
  ArrayRef<int64_t> input = getInput().getType().getShape();
  ArrayRef<int64_t> weight = getWeight().getType().getShape();
  ArrayRef<int64_t> result = getResult().getType().getShape();
  const int64_t rank = input.size();
  ConvDims dims;
  dims.input = getChannelsLastInput()
                   ? applyPermutation(input, toChannelsFirstPerm(rank))
               : getBlockedInput() ? fromChannelBlockedShape(input)
                                   : SmallVector<int64_t>(input);
  const int64_t weightRank = weight.size();
  dims.weight =
      getPackedWeight() ? fromPackedWeightShape(weight)
      : getKernelFirstWeight()
          ? applyPermutation(weight, toOutputFirstWeightPerm(weightRank))
          : SmallVector<int64_t>(weight);
  const int64_t resultRank = result.size();
  dims.result = getChannelsLastResult()
                    ? applyPermutation(result, toChannelsFirstPerm(resultRank))
                : getBlockedResult() ? fromChannelBlockedShape(result)
                                     : SmallVector<int64_t>(result);
  return dims;
}

LogicalResult ConvOp::canonicalize(ConvOp op, PatternRewriter &rewriter) {
  if (op.getAutoPad() == AutoPad::notset)
    return failure();
  // The spatial sizes wherever the layouts put them.
  ConvDims dims = op.getDims();
  return resolveAutoPad(op, dims.inputSpatial(), dims.kernelSpatial(),
                        rewriter);
}

//===----------------------------------------------------------------------===//
// PoolOp
//===----------------------------------------------------------------------===//

LogicalResult PoolOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto storedInputType = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> kernel = adaptor.getKernelShape();
  size_t n = kernel.size();
  if (n == 0)
    return emitOptionalError(loc, "kernel_shape must not be empty");
  // A blocked pool reasons in channels-first order too.
  const bool blocked = static_cast<bool>(adaptor.getBlocked());
  const int64_t blockDims = blocked ? 1 : 0;
  if (storedInputType.getRank() != static_cast<int64_t>(n) + 2 + blockDims)
    return emitOptionalError(loc, "input ", storedInputType,
                             " must have rank ", n + 2 + blockDims,
                             " for a kernel_shape of ", n, " values",
                             blocked ? " (blocked)" : "");
  if (blocked && (storedInputType.getShape().back() != kChannelBlock ||
                  adaptor.getWithIndices()))
    return emitOptionalError(loc, "a blocked pool's input ends in a ",
                             "dimension of ", kChannelBlock,
                             " and it has no indices, got ", storedInputType);
  auto inputType =
      blocked ? RankedTensorType::get(
                    fromChannelBlockedShape(storedInputType.getShape()),
                    storedInputType.getElementType())
              : storedInputType;
  for (int64_t k : kernel)
    if (k < 1)
      return emitOptionalError(loc, "kernel_shape value ", k, " must be >= 1");
  bool isAverage = adaptor.getKind() == PoolKind::average;
  if (isAverage && !isa<FloatType>(inputType.getElementType()))
    return emitOptionalError(loc, "average pooling needs a float element ",
                             "type, got ", inputType.getElementType());
  if (!isAverage && adaptor.getCountIncludePad())
    return emitOptionalError(loc, "count_include_pad is only for average ",
                             "pooling");
  Window window{adaptor.getStrides(), adaptor.getPads(), adaptor.getDilations(),
                adaptor.getAutoPad(), adaptor.getCeilMode()};
  if (failed(verifyWindow(window, n, loc)))
    return failure();
  FailureOr<SmallVector<int64_t>> sizes =
      inferWindowSizes(inputType.getShape().drop_front(2), kernel, window, loc);
  if (failed(sizes))
    return failure();
  if (adaptor.getWithIndices() && isAverage)
    return emitOptionalError(loc, "with_indices is only for max pooling");
  if (adaptor.getColumnMajor() && !adaptor.getWithIndices())
    return emitOptionalError(loc, "column_major needs with_indices");
  SmallVector<int64_t> shape(inputType.getShape().take_front(2));
  llvm::append_range(shape, *sizes);
  inferred.push_back(RankedTensorType::get(
      blocked ? toChannelBlockedShape(shape) : shape,
      inputType.getElementType()));
  if (adaptor.getWithIndices())
    inferred.push_back(RankedTensorType::get(
        shape, IntegerType::get(inputType.getContext(), 64)));
  return success();
}

LogicalResult PoolOp::canonicalize(PoolOp op, PatternRewriter &rewriter) {
  // Indices nobody reads are not worth computing.
  if (Value indices = op.getIndices(); indices && indices.use_empty()) {
    Properties props = op.getProperties();
    props.setWithIndices(UnitAttr());
    props.setColumnMajor(UnitAttr());
    auto pool = PoolOp::create(rewriter, op.getLoc(),
                               TypeRange(op.getResult().getType()),
                               op->getOperands(), props);
    rewriter.replaceAllUsesWith(op.getResult(), pool.getResult());
    rewriter.eraseOp(op);
    return success();
  }
  ArrayRef<int64_t> input = op.getInput().getType().getShape();
  return resolveAutoPad(
      op, input.drop_front(2).drop_back(op.getBlocked() ? 1 : 0),
      op.getKernelShape(), rewriter);
}

//===----------------------------------------------------------------------===//
// BatchNormOp
//===----------------------------------------------------------------------===//

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto inputType = cast<RankedTensorType>(adaptor.getInput().getType());
  if (inputType.getRank() < 2)
    return emitOptionalError(loc, "input must have rank >= 2 (N x C x ...), ",
                             "got ", inputType);
  std::pair<StringRef, Value> params[] = {{"scale", adaptor.getScale()},
                                          {"bias", adaptor.getBias()},
                                          {"mean", adaptor.getMean()},
                                          {"var", adaptor.getVar()}};
  auto scaleType = cast<RankedTensorType>(adaptor.getScale().getType());
  // Per channel (C) or, for a rank-1 scale on a rank-2 input, the same.
  bool perChannel = scaleType.getRank() == 1;
  ArrayRef<int64_t> expected = perChannel ? inputType.getShape().slice(1, 1)
                                          : inputType.getShape().drop_front();
  for (auto [name, value] : params) {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getRank() != static_cast<int64_t>(expected.size()) ||
        !areCompatibleTensorTypes(
            RankedTensorType::get(expected, type.getElementType()), type))
      return emitOptionalError(
          loc, name, " ", type, " must have shape (", formatShape(expected),
          perChannel ? ")" : ") like the input without dimension 0",
          " for input ", inputType);
  }
  auto sameElements = [&](unsigned a, unsigned b) -> LogicalResult {
    Type ta =
        cast<RankedTensorType>(params[a].second.getType()).getElementType();
    Type tb =
        cast<RankedTensorType>(params[b].second.getType()).getElementType();
    if (ta != tb)
      return emitOptionalError(loc, params[a].first, " element type ", ta,
                               " differs from ", params[b].first,
                               " element type ", tb);
    return success();
  };
  if (failed(sameElements(0, 1)) || failed(sameElements(2, 3)))
    return failure();
  inferred.push_back(inputType);
  return success();
}

//===----------------------------------------------------------------------===//
// NormalizeOp
//===----------------------------------------------------------------------===//

/// True when `from` broadcasts unidirectionally to `to` (dynamic sizes may).
static bool broadcastsTo(ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return false;
  size_t offset = to.size() - from.size();
  for (auto [i, f] : llvm::enumerate(from)) {
    int64_t t = to[offset + i];
    if (isStatic(f) && f != 1 && isStatic(t) && f != t)
      return false;
  }
  return true;
}

LogicalResult NormalizeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto inputType = cast<RankedTensorType>(adaptor.getInput().getType());
  int64_t rank = inputType.getRank();
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, "axis ", axis, " is out of range for ",
                             "input ", inputType, " (expected [0, ", rank,
                             "))");
  bool isInstance = adaptor.getKind() == NormKind::instance;
  if (isInstance && (rank < 3 || axis != 2))
    return emitOptionalError(loc, "instance normalization needs an input of ",
                             "rank >= 3 and axis 2, got ", inputType,
                             " and axis ", axis);
  SmallVector<std::pair<StringRef, Value>> params = {
      {"scale", adaptor.getScale()}};
  if (adaptor.getBias())
    params.push_back({"bias", adaptor.getBias()});
  for (auto [name, value] : params) {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getElementType() != inputType.getElementType())
      return emitOptionalError(loc, name, " element type ",
                               type.getElementType(), " differs from input ",
                               "element type ", inputType.getElementType());
    if (isInstance) {
      int64_t c = inputType.getDimSize(1);
      if (type.getRank() != 1 || (isStatic(c) && isStatic(type.getDimSize(0)) &&
                                  c != type.getDimSize(0)))
        return emitOptionalError(loc, name, " ", type, " must have shape (",
                                 formatShape({c}), "), one value per channel");
      continue;
    }
    if (!broadcastsTo(type.getShape(), inputType.getShape()))
      return emitOptionalError(loc, name, " ", type,
                               " does not broadcast to the input's shape ",
                               formatShape(inputType.getShape()));
  }
  Type statsElement = inputType.getElementType();
  if (std::optional<Type> stash = adaptor.getStashType())
    statsElement = *stash;
  SmallVector<int64_t> statsShape(inputType.getShape());
  std::fill(statsShape.begin() + axis, statsShape.end(), 1);
  auto statsType = RankedTensorType::get(statsShape, statsElement);
  inferred.append({inputType, statsType, statsType});
  return success();
}
