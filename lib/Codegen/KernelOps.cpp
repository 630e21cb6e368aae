//===- KernelOps.cpp - The kernel call of each heavy weft op --------------===//
//
// For every weft op that runs as a runtime kernel or collective: which element
// types the runtime takes, and how the op's shapes and attributes fill the
// call's parameter block (layouts documented in runtime/include/weft_rt.h).
//
//===----------------------------------------------------------------------===//

#include "KernelOps.h"

#include <limits>
#include "KernelCall.h"

#include "weft/Codegen/ProgramABI.h"
#include "weft/WeftOps.h"
#include "weft/WeftTypeUtils.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/InterleavedRange.h"

#include <numeric>

using namespace mlir;
using namespace mlir::weft;

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<ShapedType>(v.getType()).getShape();
}

static Type elementOf(Value v) {
  return cast<ShapedType>(v.getType()).getElementType();
}

static int64_t product(ArrayRef<int64_t> dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t{1},
                         std::multiplies<int64_t>());
}

/// The dtype code of `v`'s elements if it is one of `allowed` ("f32",
/// "f64", "i8", "u8", "i32", "i64", "bool", "f16", "bf16"), else an error on
/// `op` naming the kernel's types.
static FailureOr<int64_t> requireDType(Operation *op, Value v,
                                       ArrayRef<StringRef> allowed) {
  Type t = elementOf(v);
  std::string name;
  llvm::raw_string_ostream os(name);
  if (t.isUnsignedInteger(8))
    os << "u8";
  else if (t.isSignlessInteger(1))
    os << "bool";
  else
    os << t;
  if (llvm::is_contained(allowed, StringRef(name)))
    return *getRuntimeDType(t);
  return op->emitOpError() << "on " << name
                           << " is not supported by the CPU backend (its "
                              "kernel takes "
                           << llvm::join(allowed, ", ") << ")";
}

static int64_t elementBytes(Value v) { return getStorageBytes(elementOf(v)); }

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

static LogicalResult emitMatmul(MatmulOp op, OpBuilder &b, ValueRange in,
                                ValueRange out) {
  FailureOr<int64_t> dtype =
      requireDType(op, op.getLhs(), {"f32", "f64", "i32", "i64"});
  if (failed(dtype))
    return failure();
  ArrayRef<int64_t> a = shapeOf(op.getLhs()), bs = shapeOf(op.getRhs());
  ArrayRef<int64_t> result = shapeOf(op.getResult());
  bool ta = op.getTransposeA(), tb = op.getTransposeB();
  int64_t ar = a.size(), br = bs.size(), rr = result.size();
  int64_t m = ar == 1 ? 1 : (ta ? a[ar - 1] : a[ar - 2]);
  int64_t k = ar == 1 ? a[0] : (ta ? a[ar - 2] : a[ar - 1]);
  int64_t n = br == 1 ? 1 : (tb ? bs[br - 2] : bs[br - 1]);

  // Batch dimensions of the result and, per operand, the element stride of
  // each (0 where the operand broadcasts).
  ArrayRef<int64_t> aBatch = a.drop_back(std::min<int64_t>(ar, 2));
  ArrayRef<int64_t> bBatch = bs.drop_back(std::min<int64_t>(br, 2));
  int64_t batchRank = std::max(aBatch.size(), bBatch.size());
  SmallVector<int64_t> outBatch, aStrides, bStrides;
  auto batchStrides = [&](ArrayRef<int64_t> batch, int64_t matrix,
                          SmallVectorImpl<int64_t> &strides) {
    strides.assign(batchRank, 0);
    int64_t stride = matrix;
    for (int64_t i = batch.size() - 1; i >= 0; --i) {
      int64_t outIndex = batchRank - batch.size() + i;
      strides[outIndex] = batch[i] == 1 ? 0 : stride;
      stride *= batch[i];
    }
  };
  batchStrides(aBatch, m * k, aStrides);
  batchStrides(bBatch, k * n, bStrides);
  for (int64_t i = 0; i < batchRank; ++i) {
    int64_t ai = i - (batchRank - (int64_t)aBatch.size());
    int64_t bi = i - (batchRank - (int64_t)bBatch.size());
    int64_t d = 1;
    if (ai >= 0)
      d = std::max(d, aBatch[ai]);
    if (bi >= 0)
      d = std::max(d, bBatch[bi]);
    outBatch.push_back(d);
  }

  // The bias broadcasts to the result; the kernel takes one M x N bias for
  // every batch, addressed by a row and a column stride.
  int64_t biasRowStride = 0, biasColStride = 0;
  if (Value bias = op.getBias()) {
    ArrayRef<int64_t> bshape = shapeOf(bias);
    int64_t rowDim = ar > 1 ? (br > 1 ? rr - 2 : rr - 1) : -1;
    int64_t colDim = br > 1 ? rr - 1 : -1;
    int64_t stride = 1;
    for (int64_t i = bshape.size() - 1; i >= 0; --i) {
      int64_t resultDim = rr - bshape.size() + i;
      if (bshape[i] != 1) {
        if (resultDim == rowDim)
          biasRowStride = stride;
        else if (resultDim == colDim)
          biasColStride = stride;
        else
          return op.emitOpError("with a bias that varies over batch "
                                "dimensions is not supported by the CPU "
                                "backend");
      }
      stride *= bshape[i];
    }
  }

  KernelCall call("matmul");
  call.param(*dtype).param(m).param(n).param(k).param(ta).param(tb);
  call.paramF64(op.getAlpha().convertToDouble())
      .paramF64(op.getBias() ? op.getBeta().convertToDouble() : 0.0);
  call.param(biasRowStride).param(biasColStride).param(batchRank);
  call.params_(outBatch).params_(aStrides).params_(bStrides);
  call.buffer(in[0]).buffer(in[1]);
  call.buffer(op.getBias() ? in[2] : Value());
  call.buffer(out[0]);
  call.emit(b, op);
  return success();
}

static LogicalResult emitEinsum(EinsumOp op, OpBuilder &b, ValueRange in,
                                ValueRange out) {
  if (op.getInputs().size() > 2)
    return op.emitOpError("with more than two operands is not supported by "
                          "the CPU backend");
  FailureOr<int64_t> dtype =
      requireDType(op, op.getInputs()[0], {"f32", "f64", "i32", "i64"});
  if (failed(dtype))
    return failure();
  SmallVector<int64_t> ranks;
  for (Value v : op.getInputs())
    ranks.push_back(shapeOf(v).size());
  FailureOr<EinsumOp::Equation> eq =
      EinsumOp::parseEquation(op.getEquation(), ranks, op.getLoc());
  if (failed(eq))
    return failure();

  // Give every label, and every dimension an ellipsis stands for (aligned
  // from the right), an index number, and check that sizes agree.
  SmallVector<int64_t> sizes;
  llvm::DenseMap<char, int64_t> labelIndex;
  SmallVector<int64_t> ellipsisIndex; // from the right
  auto indicesOf =
      [&](const EinsumOp::Term &term,
          ArrayRef<int64_t> shape) -> FailureOr<SmallVector<int64_t>> {
    SmallVector<int64_t> indices;
    int64_t ellipsisDims =
        shape.size() -
        (term.size() - (llvm::is_contained(term, EinsumOp::kEllipsis) ? 1 : 0));
    int64_t dim = 0;
    for (char label : term) {
      if (label == EinsumOp::kEllipsis) {
        for (int64_t e = 0; e < ellipsisDims; ++e, ++dim) {
          int64_t fromRight = ellipsisDims - 1 - e;
          while ((int64_t)ellipsisIndex.size() <= fromRight) {
            ellipsisIndex.push_back(sizes.size());
            sizes.push_back(-1);
          }
          indices.push_back(ellipsisIndex[fromRight]);
        }
        continue;
      }
      auto [it, inserted] = labelIndex.try_emplace(label, sizes.size());
      if (inserted)
        sizes.push_back(-1);
      indices.push_back(it->second);
      ++dim;
    }
    for (auto [i, index] : llvm::enumerate(indices)) {
      if (shape.empty())
        break;
      int64_t size = shape[i];
      if (sizes[index] == -1)
        sizes[index] = size;
      else if (sizes[index] != size)
        return op.emitOpError("broadcasts an index of sizes ")
               << sizes[index] << " and " << size
               << ", which the CPU backend does not support";
    }
    return indices;
  };
  SmallVector<SmallVector<int64_t>> inputIndices;
  for (auto [term, v] : llvm::zip(eq->inputs, op.getInputs())) {
    auto indices = indicesOf(term, shapeOf(v));
    if (failed(indices))
      return failure();
    inputIndices.push_back(*indices);
  }
  auto outIndices = indicesOf(eq->output, shapeOf(op.getResult()));
  if (failed(outIndices))
    return failure();

  KernelCall call("einsum");
  call.param(*dtype).param(sizes.size()).params_(sizes);
  call.param(outIndices->size()).params_(*outIndices);
  call.param(inputIndices.size());
  for (auto &indices : inputIndices)
    call.param(indices.size()).params_(indices);
  call.buffer(in[0]).buffer(in.size() > 1 ? in[1] : Value()).buffer(out[0]);
  call.emit(b, op);
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution, pooling, normalization
//===----------------------------------------------------------------------===//

/// Explicit begin and end pads of a windowed op, resolving auto_pad.
static void windowPads(AutoPad autoPad, ArrayRef<int64_t> pads,
                       ArrayRef<int64_t> inputSpatial, ArrayRef<int64_t> kernel,
                       ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                       SmallVectorImpl<int64_t> &begin,
                       SmallVectorImpl<int64_t> &end) {
  SmallVector<int64_t> all(pads.begin(), pads.end());
  if (autoPad != AutoPad::notset)
    if (auto same =
            ConvOp::getSamePads(inputSpatial, kernel, strides, dilations,
                                autoPad == AutoPad::same_upper))
      all = *same;
  size_t n = inputSpatial.size();
  begin.assign(all.begin(), all.begin() + n);
  end.assign(all.begin() + n, all.end());
}

bool mlir::weft::hasStaticShapes(Operation *op) {
  auto isStatic = [](Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    return tensor && tensor.hasStaticShape();
  };
  return llvm::all_of(op->getOperandTypes(), isStatic) &&
         llvm::all_of(op->getResultTypes(), isStatic);
}

bool mlir::weft::isChannelsLastConvSupported(ConvOp conv) {
  ConvDims dims = conv.getDims();
  if (dims.spatialRank() != 2 ||
      !conv.getInput().getType().getElementType().isF32())
    return false;
  if (conv.isDepthwise())
    return true;
  auto allEqual = [](ArrayRef<int64_t> values, int64_t expected) {
    return llvm::all_of(values, [&](int64_t v) { return v == expected; });
  };
  return conv.getGroup() == 1 && allEqual(dims.kernelSpatial(), 1) &&
         allEqual(conv.getStrides(), 1) && allEqual(conv.getPads(), 0) &&
         conv.getAutoPad() == AutoPad::notset;
}

static LogicalResult emitConv(ConvOp op, OpBuilder &b, ValueRange in,
                              ValueRange out) {
  FailureOr<int64_t> dtype = requireDType(op, op.getInput(), {"f32"});
  if (failed(dtype))
    return failure();
  // The block describes the convolution in channels-first order and says
  // in its last word how each tensor is stored.
  ConvDims dims = op.getDims();
  ArrayRef<int64_t> x = dims.input, w = dims.weight, y = dims.result;
  int64_t s = x.size() - 2;
  if (s < 1 || s > 3)
    return op.emitOpError("with ") << s
                                   << " spatial dimensions is not supported "
                                      "by the CPU backend (1 to 3)";
  // The runtime checks a blocked layout's channels and group as the
  // verifier does; it runs every such convolution on oneDNN.
  if (op.hasNonDefaultLayout() && !op.hasChannelBlockedLayout() &&
      !isChannelsLastConvSupported(op))
    return op.emitOpError(
        "with a channels-last or kernel-first layout is supported by the CPU "
        "backend for 2-D 1x1 convolutions (group 1, stride 1, no pads) and "
        "2-D depthwise ones only");
  SmallVector<int64_t> begin, end;
  windowPads(op.getAutoPad(), op.getPads(), x.drop_front(2), w.drop_front(2),
             op.getStrides(), op.getDilations(), begin, end);
  // A fused residual Add (weft-fuse-conv-clamp) calls conv_add, which
  // takes the addend's buffer after the bias's.
  KernelCall call(op.getAddend() ? "conv_add" : "conv");
  call.param(*dtype).param(s).param(x[0]).param(x[1]).param(w[0]);
  call.param(op.getGroup());
  call.params_(x.drop_front(2)).params_(w.drop_front(2));
  call.params_(op.getStrides()).params_(op.getDilations());
  call.params_(begin).params_(end).params_(y.drop_front(2));
  // The fused clamp (weft-fuse-conv-clamp): activation 1 with its bounds,
  // or 0.
  if (op.getClampMin() || op.getClampMax()) {
    constexpr double inf = std::numeric_limits<double>::infinity();
    call.param(1);
    call.paramF64(op.getClampMin() ? op.getClampMin()->convertToDouble()
                                   : -inf);
    call.paramF64(op.getClampMax() ? op.getClampMax()->convertToDouble()
                                   : inf);
  } else {
    call.param(0).param(0).param(0);
  }
  call.param((op.getChannelsLastInput() ? 1 : 0) |
             (op.getChannelsLastResult() ? 2 : 0) |
             (op.getKernelFirstWeight() ? 4 : 0) |
             (op.getBlockedInput() ? 8 : 0) | (op.getBlockedResult() ? 16 : 0) |
             (op.getBlockedAddend() ? 32 : 0) |
             (op.getPackedWeight() ? 64 : 0));
  call.buffer(in[0]).buffer(in[1]);
  call.buffer(op.getBias() ? in[2] : Value());
  if (op.getAddend())
    call.buffer(in[op.getBias() ? 3 : 2]);
  call.buffer(out[0]);
  call.emit(b, op);
  return success();
}

static LogicalResult emitPool(PoolOp op, OpBuilder &b, ValueRange in,
                              ValueRange out) {
  if (op.getIndices() && !op.getIndices().use_empty())
    return op.emitOpError("with an Indices output is not supported by the "
                          "CPU backend");
  bool isMax = op.getKind() == PoolKind::max;
  FailureOr<int64_t> dtype =
      isMax ? requireDType(op, op.getInput(), {"f32", "f64", "i8", "u8"})
            : requireDType(op, op.getInput(), {"f32", "f64"});
  if (failed(dtype))
    return failure();
  if (op.getBlocked() && !elementOf(op.getInput()).isF32())
    return op.emitOpError("in the channel-blocked layout is supported by the "
                          "CPU backend for f32 only");
  // The block describes the pool in channels-first order and says in its
  // last word how the input and the output are stored.
  SmallVector<int64_t> x(shapeOf(op.getInput())), y(shapeOf(op.getResult()));
  if (op.getBlocked()) {
    x = fromChannelBlockedShape(x);
    y = fromChannelBlockedShape(y);
  }
  int64_t s = x.size() - 2;
  SmallVector<int64_t> begin, end;
  windowPads(op.getAutoPad(), op.getPads(), ArrayRef(x).drop_front(2),
             op.getKernelShape(), op.getStrides(), op.getDilations(), begin,
             end);
  KernelCall call("pool");
  call.param(*dtype).param(isMax ? 0 : 1).param(op.getCountIncludePad());
  call.param(s).param(x[0]).param(x[1]).params_(ArrayRef(x).drop_front(2));
  call.params_(op.getKernelShape()).params_(op.getStrides());
  call.params_(op.getDilations()).params_(begin).params_(end);
  call.params_(ArrayRef(y).drop_front(2));
  // The layout word: 0 NC[D]HW, 1 channel-blocked by 16.
  call.param(op.getBlocked() ? 1 : 0);
  call.buffer(in[0]).buffer(out[0]);
  call.emit(b, op);
  return success();
}

static LogicalResult emitBatchNorm(BatchNormOp op, OpBuilder &b, ValueRange in,
                                   ValueRange out) {
  FailureOr<int64_t> dtype = requireDType(op, op.getInput(), {"f32", "f64"});
  if (failed(dtype))
    return failure();
  ArrayRef<int64_t> x = shapeOf(op.getInput());
  for (Value v : {op.getScale(), op.getBias(), op.getMean(), op.getVar()}) {
    if (elementOf(v) != elementOf(op.getInput()) || shapeOf(v).size() != 1)
      return op.emitOpError("with statistics that are not one value per "
                            "channel of the input's type is not supported "
                            "by the CPU backend");
  }
  KernelCall call("batch_norm");
  call.param(*dtype).param(x[0]).param(x[1]).param(product(x.drop_front(2)));
  call.paramF64(op.getEpsilon().convertToDouble());
  for (Value v : in)
    call.buffer(v);
  call.buffer(out[0]);
  call.emit(b, op);
  return success();
}

static LogicalResult emitNormalize(NormalizeOp op, OpBuilder &b, ValueRange in,
                                   ValueRange out) {
  FailureOr<int64_t> dtype = requireDType(op, op.getInput(), {"f32", "f64"});
  if (failed(dtype))
    return failure();
  bool statsUsed = !op.getMean().use_empty() || !op.getInvStdDev().use_empty();
  if (statsUsed && (elementOf(op.getMean()) != elementOf(op.getInput()) ||
                    elementOf(op.getInvStdDev()) != elementOf(op.getInput())))
    return op.emitOpError("with mean or inv_std_dev in a stash type other "
                          "than the input's is not supported by the CPU "
                          "backend");
  ArrayRef<int64_t> x = shapeOf(op.getInput());
  int64_t axis = op.getAxis();
  int64_t outer = product(x.take_front(axis));
  int64_t size = product(x.drop_front(axis));
  bool isLayer = op.getKind() == NormKind::layer;
  int64_t channels = isLayer ? 0 : x[1];
  int64_t expected = isLayer ? size : channels;
  for (Value v : {op.getScale(), op.getBias()})
    if (v && product(shapeOf(v)) != expected)
      return op.emitOpError("with scale or bias that broadcast is not "
                            "supported by the CPU backend");
  KernelCall call("normalize");
  call.param(*dtype).param(isLayer ? 0 : 1).param(outer).param(size);
  call.param(channels).paramF64(op.getEpsilon().convertToDouble());
  call.buffer(in[0]).buffer(in[1]);
  call.buffer(op.getBias() ? in[2] : Value()).buffer(out[0]);
  // The statistics, one value per row, when the model uses them.
  call.buffer(statsUsed ? out[1] : Value());
  call.buffer(statsUsed ? out[2] : Value());
  call.emit(b, op);
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

static LogicalResult emitSoftmax(SoftmaxOp op, OpBuilder &b, ValueRange in,
                                 ValueRange out) {
  FailureOr<int64_t> dtype = requireDType(op, op.getInput(), {"f32", "f64"});
  if (failed(dtype))
    return failure();
  ArrayRef<int64_t> x = shapeOf(op.getInput());
  int64_t axis = op.getAxis();
  int64_t outer = product(x.take_front(axis));
  int64_t axisSize = op.getTrailing() ? product(x.drop_front(axis)) : x[axis];
  int64_t inner = op.getTrailing() ? 1 : product(x.drop_front(axis + 1));
  KernelCall call("softmax");
  call.param(*dtype).param(outer).param(axisSize).param(inner);
  call.param(op.getLog());
  call.buffer(in[0]).buffer(out[0]);
  call.emit(b, op);
  return success();
}

static LogicalResult emitReduce(ReduceOp op, OpBuilder &b, ValueRange in,
                                ValueRange out) {
  if (op.getDynamicAxes())
    return op.emitOpError("with axes computed at run time is not supported "
                          "by the CPU backend");
  bool isExtreme =
      op.getKind() == ReduceKind::max || op.getKind() == ReduceKind::min;
  FailureOr<int64_t> dtype =
      isExtreme ? requireDType(op, op.getInput(),
                               {"f32", "f64", "i32", "i64", "i8", "u8"})
                : requireDType(op, op.getInput(), {"f32", "f64", "i32", "i64"});
  if (failed(dtype))
    return failure();
  ArrayRef<int64_t> x = shapeOf(op.getInput());
  SmallVector<int64_t> mask(x.size(), 0);
  for (int64_t axis : op.getAxes())
    mask[axis] = 1;
  KernelCall call("reduce");
  call.param(*dtype).param(static_cast<int64_t>(op.getKind()));
  call.param(x.size()).params_(x).params_(mask);
  call.buffer(in[0]).buffer(out[0]);
  call.emit(b, op);
  return success();
}

static LogicalResult emitArgReduce(ArgReduceOp op, OpBuilder &b, ValueRange in,
                                   ValueRange out) {
  FailureOr<int64_t> dtype =
      requireDType(op, op.getInput(), {"f32", "f64", "i8", "u8", "i32", "i64"});
  if (failed(dtype))
    return failure();
  ArrayRef<int64_t> x = shapeOf(op.getInput());
  int64_t axis = op.getAxis();
  KernelCall call("arg_reduce");
  call.param(*dtype).param(op.getKind() == ArgReduceKind::max ? 0 : 1);
  call.param(product(x.take_front(axis))).param(x[axis]);
  call.param(product(x.drop_front(axis + 1))).param(op.getSelectLastIndex());
  call.buffer(in[0]).buffer(out[0]);
  call.emit(b, op);
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

static LogicalResult emitTranspose(TransposeOp op, OpBuilder &b, ValueRange in,
                                   ValueRange out) {
  ArrayRef<int64_t> x = shapeOf(op.getInput());
  KernelCall call("transpose");
  call.param(elementBytes(op.getInput())).param(x.size()).params_(x);
  call.params_(op.getPerm());
  call.buffer(in[0]).buffer(out[0]);
  call.emit(b, op);
  return success();
}

static FailureOr<int64_t> indexDType(Operation *op, Value indices) {
  return requireDType(op, indices, {"i32", "i64"});
}

static LogicalResult emitGather(GatherOp op, OpBuilder &b, ValueRange in,
                                ValueRange out) {
  FailureOr<int64_t> indexType = indexDType(op, op.getIndices());
  if (failed(indexType))
    return failure();
  ArrayRef<int64_t> x = shapeOf(op.getInput());
  int64_t axis = op.getAxis();
  KernelCall call("gather");
  call.param(elementBytes(op.getInput())).param(*indexType);
  call.param(product(x.take_front(axis))).param(x[axis]);
  call.param(product(x.drop_front(axis + 1)));
  call.param(product(shapeOf(op.getIndices())));
  call.buffer(in[0]).buffer(in[1]).buffer(out[0]);
  call.emit(b, op);
  return success();
}

static LogicalResult emitGatherElements(GatherElementsOp op, OpBuilder &b,
                                        ValueRange in, ValueRange out) {
  FailureOr<int64_t> indexType = indexDType(op, op.getIndices());
  if (failed(indexType))
    return failure();
  ArrayRef<int64_t> x = shapeOf(op.getInput());
  KernelCall call("gather_elements");
  call.param(elementBytes(op.getInput())).param(*indexType);
  call.param(x.size()).param(op.getAxis()).params_(x);
  call.params_(shapeOf(op.getIndices()));
  call.buffer(in[0]).buffer(in[1]).buffer(out[0]);
  call.emit(b, op);
  return success();
}

/// The values of a constant integer operand, or an error naming it.
static FailureOr<SmallVector<int64_t>> constantValues(Operation *op, Value v,
                                                      StringRef what) {
  // weft.constant before lowering, arith.constant after.
  if (auto values = getConstantIntValues(v))
    return SmallVector<int64_t>(values->begin(), values->end());
  DenseIntElementsAttr attr;
  // During bufferization a constant already bufferized is a constant
  // global read through to_tensor.
  if (auto toTensor = v.getDefiningOp<bufferization::ToTensorOp>())
    if (auto getGlobal =
            toTensor.getBuffer().getDefiningOp<memref::GetGlobalOp>())
      if (auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
              op, getGlobal.getNameAttr());
          global && global.getConstant())
        attr = dyn_cast_or_null<DenseIntElementsAttr>(
            global.getInitialValueAttr());
  if (attr || matchPattern(v, m_Constant(&attr)))
    return llvm::to_vector(
        llvm::map_range(attr.getValues<APInt>(),
                        [](const APInt &i) { return i.getSExtValue(); }));
  return op->emitOpError() << "with " << what
                           << " computed at run time is not supported by "
                              "the CPU backend (shapes must be static)";
}

static LogicalResult emitSlice(SliceOp op, OpBuilder &b, ValueRange in,
                               ValueRange out) {
  if (op.getDynamicAxes())
    return op.emitOpError("with axes computed at run time is not supported "
                          "by the CPU backend");
  auto starts = constantValues(op, op.getStarts(), "starts");
  auto steps = constantValues(op, op.getSteps(), "steps");
  if (failed(starts) || failed(steps))
    return failure();
  ArrayRef<int64_t> x = shapeOf(op.getInput()), y = shapeOf(op.getResult());
  SmallVector<int64_t> begin(x.size(), 0), step(x.size(), 1);
  for (auto [i, axis] : llvm::enumerate(op.getAxes())) {
    int64_t d = x[axis], s = (*starts)[i], t = (*steps)[i];
    if (s < 0)
      s += d;
    // ONNX clamps starts to [0, d] (positive steps) or [0, d - 1].
    s = t > 0 ? std::clamp<int64_t>(s, 0, d) : std::clamp<int64_t>(s, 0, d - 1);
    begin[axis] = s;
    step[axis] = t;
  }
  KernelCall call("slice");
  call.param(elementBytes(op.getInput())).param(x.size()).params_(x);
  call.params_(y).params_(begin).params_(step);
  call.buffer(in[0]).buffer(out[0]);
  call.emit(b, op);
  return success();
}

static LogicalResult emitPad(PadOp op, OpBuilder &b, ValueRange in,
                             ValueRange out) {
  if (op.getDynamicPads())
    return op.emitOpError("with pads computed at run time is not supported "
                          "by the CPU backend");
  ArrayRef<int64_t> x = shapeOf(op.getInput());
  KernelCall call("pad");
  call.param(elementBytes(op.getInput()));
  call.param(static_cast<int64_t>(op.getMode())).param(x.size()).params_(x);
  call.params_(op.getPads());
  call.buffer(in[0]).buffer(op.getValue() ? in[1] : Value()).buffer(out[0]);
  call.emit(b, op);
  return success();
}

static LogicalResult emitTile(TileOp op, OpBuilder &b, ValueRange in,
                              ValueRange out) {
  auto repeats = constantValues(op, op.getRepeats(), "repeats");
  if (failed(repeats))
    return failure();
  ArrayRef<int64_t> x = shapeOf(op.getInput());
  KernelCall call("tile");
  call.param(elementBytes(op.getInput())).param(x.size()).params_(x);
  call.params_(*repeats);
  call.buffer(in[0]).buffer(out[0]);
  call.emit(b, op);
  return success();
}

/// Concat and Split are row copies: with the tensors viewed as outer x
/// (axis * inner), each piece is a block of columns.
static LogicalResult emitConcat(ConcatOp op, OpBuilder &b, ValueRange in,
                                ValueRange out) {
  ArrayRef<int64_t> y = shapeOf(op.getResult());
  int64_t axis = op.getAxis();
  int64_t outer = product(y.take_front(axis));
  int64_t inner =
      product(y.drop_front(axis + 1)) * elementBytes(op.getResult());
  int64_t dstStride = y[axis] * inner, offset = 0;
  for (auto [input, buffer] : llvm::zip(op.getInputs(), in)) {
    int64_t rowBytes = shapeOf(input)[axis] * inner;
    if (rowBytes > 0 && outer > 0) {
      KernelCall call("copy2d");
      call.param(outer).param(rowBytes).param(0).param(rowBytes);
      call.param(offset).param(dstStride);
      call.buffer(buffer).buffer(out[0]);
      call.emit(b, op);
    }
    offset += rowBytes;
  }
  return success();
}

static LogicalResult emitSplit(SplitOp op, OpBuilder &b, ValueRange in,
                               ValueRange out) {
  ArrayRef<int64_t> x = shapeOf(op.getInput());
  int64_t axis = op.getAxis();
  int64_t outer = product(x.take_front(axis));
  int64_t inner = product(x.drop_front(axis + 1)) * elementBytes(op.getInput());
  int64_t srcStride = x[axis] * inner, offset = 0;
  for (auto [result, buffer] : llvm::zip(op.getResults(), out)) {
    int64_t rowBytes = shapeOf(result)[axis] * inner;
    if (rowBytes > 0 && outer > 0) {
      KernelCall call("copy2d");
      call.param(outer).param(rowBytes).param(offset).param(srcStride);
      call.param(0).param(rowBytes);
      call.buffer(in[0]).buffer(buffer);
      call.emit(b, op);
    }
    offset += rowBytes;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// Kinds of weft_rt_collective (runtime/include/weft_rt.h).
enum CollectiveKind : int64_t {
  kAllReduceSum = 0,
  kAllGather = 1,
  kReduceScatterSum = 2,
  kAllToAll = 3,
  kLocalSlice = 4,
  kSend = 5,
  kRecv = 6,
  kBroadcast = 7,
};

/// The shape of the mesh the program runs on: recorded by
/// weft-expose-program-abi (the collective names no mesh in scope), or the module's
/// weft.mesh itself before that pass.
static FailureOr<SmallVector<int64_t>> meshShapeOf(Operation *op) {
  // The mesh the collective names.
  if (auto ref = op->getAttrOfType<FlatSymbolRefAttr>("mesh"))
    if (auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, ref))
      return SmallVector<int64_t>(mesh.getShape());
  if (auto module = op->getParentOfType<ModuleOp>()) {
    if (auto shape = module->getAttrOfType<DenseI64ArrayAttr>(kMeshShapeAttr))
      return SmallVector<int64_t>(shape.asArrayRef());
    for (MeshOp mesh : module.getOps<MeshOp>())
      return SmallVector<int64_t>(mesh.getShape());
  }
  return op->emitOpError("runs over mesh axes but the module declares no "
                         "weft.mesh");
}

/// Starts a collective's parameter block (kind, dtype, A, axes[A]) after
/// checking its axes against the mesh and, for `members` >= 0, that the
/// op gives one block size per member of its group.
static FailureOr<KernelCall> startCollective(Operation *op, StringRef name,
                                             CollectiveKind kind, Value value,
                                             ArrayRef<int16_t> axes,
                                             int64_t members) {
  FailureOr<SmallVector<int64_t>> mesh = meshShapeOf(op);
  if (failed(mesh))
    return failure();
  int64_t groupSize = 1;
  for (int16_t axis : axes) {
    if (axis < 0 || axis >= static_cast<int64_t>(mesh->size()))
      return op->emitOpError("runs over mesh axis ")
             << axis << " but the mesh [" << llvm::interleaved(*mesh)
             << "] has " << mesh->size() << " axes";
    groupSize *= (*mesh)[axis];
  }
  if (members >= 0 && members != groupSize)
    return op->emitOpError("gives ")
           << members << " block sizes but its group (mesh axes ["
           << llvm::interleaved(axes) << "] of mesh ["
           << llvm::interleaved(*mesh) << "]) has " << groupSize << " devices";
  std::optional<int32_t> dtype = getRuntimeDType(elementOf(value));
  if (!dtype)
    return op->emitOpError("on ")
           << elementOf(value) << " is not supported by the runtime's "
           << "collectives";
  KernelCall call = KernelCall::collective(name);
  call.param(kind).param(*dtype).param(axes.size());
  for (int16_t axis : axes)
    call.param(axis);
  return call;
}

static LogicalResult emitAllReduce(AllReduceOp op, OpBuilder &b, ValueRange in,
                                   ValueRange out) {
  FailureOr<KernelCall> call = startCollective(op, "all_reduce", kAllReduceSum,
                                               op.getInput(), op.getAxes(), -1);
  if (failed(call))
    return failure();
  call->param(product(shapeOf(op.getInput())));
  // `in` and `out` are the same buffer when the sum runs in place.
  call->buffer(in[0]).buffer(out[0]);
  call->emit(b, op);
  return success();
}

/// all_gather, reduce_scatter and local_slice: `shape` (either side's: they
/// differ only along `dim`) viewed as outer x dim x inner, and the blocks.
static LogicalResult emitBlockCollective(Operation *op, StringRef name,
                                         CollectiveKind kind, Value input,
                                         ArrayRef<int16_t> axes, int64_t dim,
                                         ArrayRef<int64_t> sizes, OpBuilder &b,
                                         ValueRange in, ValueRange out) {
  FailureOr<KernelCall> call =
      startCollective(op, name, kind, input, axes, sizes.size());
  if (failed(call))
    return failure();
  ArrayRef<int64_t> x = shapeOf(input);
  call->param(product(x.take_front(dim)));
  call->param(product(x.drop_front(dim + 1)));
  call->param(sizes.size()).params_(sizes);
  call->buffer(in[0]).buffer(out[0]);
  call->emit(b, op);
  return success();
}

static LogicalResult emitAllToAll(AllToAllOp op, OpBuilder &b, ValueRange in,
                                  ValueRange out) {
  ArrayRef<int64_t> splitSizes = op.getSplitSizes();
  FailureOr<KernelCall> call =
      startCollective(op, "all_to_all", kAllToAll, op.getInput(), op.getAxes(),
                      splitSizes.size());
  if (failed(call))
    return failure();
  ArrayRef<int64_t> x = shapeOf(op.getInput());
  int64_t splitDim = op.getSplitDim(), gatherDim = op.getGatherDim();
  int64_t lo = std::min(splitDim, gatherDim);
  int64_t hi = std::max(splitDim, gatherDim);
  call->param(product(x.take_front(lo)));
  call->param(product(x.slice(lo + 1, hi - lo - 1)));
  call->param(product(x.drop_front(hi + 1)));
  call->param(gatherDim < splitDim ? 1 : 0);
  call->param(splitSizes.size()).params_(splitSizes);
  call->params_(op.getGatherSizes());
  call->buffer(in[0]).buffer(out[0]);
  call->emit(b, op);
  return success();
}

/// weft.send and weft.recv: point-to-point between world ranks, through
/// weft_rt_collective with no mesh axes (params: kind, dtype, 0, peer, tag,
/// count). The runtime ignores the other buffer; the same one is passed.
static LogicalResult emitPointToPoint(Operation *op, StringRef name,
                                      CollectiveKind kind, Value value,
                                      std::optional<uint64_t> peerAttr,
                                      std::optional<uint64_t> tagAttr,
                                      std::optional<uint64_t> slot,
                                      Value buffer, OpBuilder &b) {
  // A peer table slot s goes to the runtime as peer = tag = -1 - s: the
  // rank's table (its weights file) holds the real pair.
  int64_t peer = slot ? -1 - static_cast<int64_t>(*slot)
                      : static_cast<int64_t>(*peerAttr);
  int64_t tag = slot ? peer : static_cast<int64_t>(*tagAttr);
  std::optional<int32_t> dtype = getRuntimeDType(elementOf(value));
  if (!dtype)
    return op->emitOpError("on ")
           << elementOf(value) << " is not supported by the runtime's "
           << "transfers";
  KernelCall call = KernelCall::collective(name);
  call.param(kind).param(*dtype).param(0).param(peer).param(tag);
  call.param(product(shapeOf(value)));
  call.buffer(buffer).buffer(buffer);
  call.emit(b, op);
  return success();
}

/// weft.broadcast_send and weft.broadcast_recv: a chunked chain through
/// world ranks, through weft_rt_collective with no mesh axes (params: kind,
/// dtype, 0, group, tag, rows, row_elements, chunks, N, chain[N]). The root
/// passes its input, the others their result; the same buffer goes as in
/// and out, and the runtime reads or writes it by the rank's place.
static LogicalResult emitBroadcast(Operation *op, Value value,
                                   ArrayRef<int64_t> chain, int64_t chunks,
                                   int64_t group, int64_t tag, Value buffer,
                                   OpBuilder &b) {
  std::optional<int32_t> dtype = getRuntimeDType(elementOf(value));
  if (!dtype)
    return op->emitOpError("on ")
           << elementOf(value) << " is not supported by the runtime's "
           << "broadcasts";
  auto [rows, rowElements] = broadcastRows(shapeOf(value));
  KernelCall call = KernelCall::collective("broadcast");
  call.param(kBroadcast).param(*dtype).param(0).param(group).param(tag);
  call.param(rows).param(rowElements).param(chunks);
  call.param(chain.size()).params_(chain);
  call.buffer(buffer).buffer(buffer);
  call.emit(b, op);
  return success();
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

bool mlir::weft::isKernelOp(Operation *op) {
  return isa<MatmulOp, EinsumOp, ConvOp, PoolOp, BatchNormOp, NormalizeOp,
             SoftmaxOp, ReduceOp, ArgReduceOp, TransposeOp, GatherOp,
             GatherElementsOp, SliceOp, PadOp, TileOp, ConcatOp, SplitOp,
             AllReduceOp, AllGatherOp, ReduceScatterOp, LocalSliceOp,
             AllToAllOp, SendOp, RecvOp, BroadcastSendOp, BroadcastRecvOp>(op);
}

bool mlir::weft::isKernelOperandRead(Operation *op, unsigned operandIndex) {
  // Operands read only for their (constant) values at compile time: the
  // kernel never sees their buffers.
  if (isa<SliceOp>(op))
    return operandIndex == 0;
  if (isa<TileOp>(op))
    return operandIndex == 0;
  return true;
}

LogicalResult mlir::weft::emitKernelCalls(Operation *op, OpBuilder &b,
                                          ValueRange operandBuffers,
                                          ValueRange resultBuffers) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](MatmulOp o) {
        return emitMatmul(o, b, operandBuffers, resultBuffers);
      })
      .Case([&](EinsumOp o) {
        return emitEinsum(o, b, operandBuffers, resultBuffers);
      })
      .Case([&](ConvOp o) {
        return emitConv(o, b, operandBuffers, resultBuffers);
      })
      .Case([&](PoolOp o) {
        return emitPool(o, b, operandBuffers, resultBuffers);
      })
      .Case([&](BatchNormOp o) {
        return emitBatchNorm(o, b, operandBuffers, resultBuffers);
      })
      .Case([&](NormalizeOp o) {
        return emitNormalize(o, b, operandBuffers, resultBuffers);
      })
      .Case([&](SoftmaxOp o) {
        return emitSoftmax(o, b, operandBuffers, resultBuffers);
      })
      .Case([&](ReduceOp o) {
        return emitReduce(o, b, operandBuffers, resultBuffers);
      })
      .Case([&](ArgReduceOp o) {
        return emitArgReduce(o, b, operandBuffers, resultBuffers);
      })
      .Case([&](TransposeOp o) {
        return emitTranspose(o, b, operandBuffers, resultBuffers);
      })
      .Case([&](GatherOp o) {
        return emitGather(o, b, operandBuffers, resultBuffers);
      })
      .Case([&](GatherElementsOp o) {
        return emitGatherElements(o, b, operandBuffers, resultBuffers);
      })
      .Case([&](SliceOp o) {
        return emitSlice(o, b, operandBuffers, resultBuffers);
      })
      .Case(
          [&](PadOp o) { return emitPad(o, b, operandBuffers, resultBuffers); })
      .Case([&](TileOp o) {
        return emitTile(o, b, operandBuffers, resultBuffers);
      })
      .Case([&](ConcatOp o) {
        return emitConcat(o, b, operandBuffers, resultBuffers);
      })
      .Case([&](SplitOp o) {
        return emitSplit(o, b, operandBuffers, resultBuffers);
      })
      .Case([&](AllReduceOp o) {
        return emitAllReduce(o, b, operandBuffers, resultBuffers);
      })
      .Case([&](AllGatherOp o) {
        return emitBlockCollective(o, "all_gather", kAllGather, o.getInput(),
                                   o.getAxes(), o.getDim(), o.getSizes(), b,
                                   operandBuffers, resultBuffers);
      })
      .Case([&](ReduceScatterOp o) {
        return emitBlockCollective(
            o, "reduce_scatter", kReduceScatterSum, o.getInput(), o.getAxes(),
            o.getDim(), o.getSizes(), b, operandBuffers, resultBuffers);
      })
      .Case([&](LocalSliceOp o) {
        return emitBlockCollective(o, "local_slice", kLocalSlice, o.getInput(),
                                   o.getAxes(), o.getDim(), o.getSizes(), b,
                                   operandBuffers, resultBuffers);
      })
      .Case([&](AllToAllOp o) {
        return emitAllToAll(o, b, operandBuffers, resultBuffers);
      })
      .Case([&](SendOp o) {
        return emitPointToPoint(o, "send", kSend, o.getInput(), o.getPeer(),
                                o.getTag(), o.getSlot(), operandBuffers[0], b);
      })
      .Case([&](RecvOp o) {
        return emitPointToPoint(o, "recv", kRecv, o.getResult(), o.getPeer(),
                                o.getTag(), o.getSlot(), resultBuffers[0],
                                b);
      })
      .Case([&](BroadcastSendOp o) {
        return emitBroadcast(o, o.getInput(), o.getChain(), o.getChunks(),
                             o.getGroup(), o.getTag(), operandBuffers[0], b);
      })
      .Case([&](BroadcastRecvOp o) {
        return emitBroadcast(o, o.getResult(), o.getChain(), o.getChunks(),
                             o.getGroup(), o.getTag(), resultBuffers[0], b);
      })
      .Default(
          [](Operation *o) { return o->emitOpError("has no CPU kernel"); });
}
