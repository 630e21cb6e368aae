//===- ShardingRules.cpp - How each weft op may be split ------------------===//
//
// Loop spaces of the weft ops: einsum-like ops from their indexing, and
// explicit rules for convolution, pooling, normalization, softmax, reshapes,
// gather, concat and slice. See ShardingRules.h.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/ShardingRules.h"
#include "weft/ConvClamp.h"
#include "weft/WeftOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <numeric>

using namespace mlir;
using namespace mlir::weft;
using ::weft::plan::AxisList;
using ::weft::plan::TensorSharding;

namespace {
/// Builds a loop space step by step.
struct SpaceBuilder {
  LoopSpace space;

  int addLoop(int64_t size, LoopKind kind = LoopKind::Parallel,
              bool evenOnly = false) {
    space.sizes.push_back(size);
    space.kinds.push_back(kind);
    space.evenOnly.push_back(evenOnly);
    return space.sizes.size() - 1;
  }
  void addOperand(SmallVector<int> dims) {
    space.operandDims.push_back(std::move(dims));
    space.operandIsData.push_back(true);
  }
  /// An operand that is not tensor data: kept as it is.
  void addNonData() {
    space.operandDims.emplace_back();
    space.operandIsData.push_back(false);
  }
  void addResult(SmallVector<int> dims) {
    space.resultDims.push_back(std::move(dims));
  }
};
} // namespace

/// ONNX axes may count from the end.
static int64_t wrapAxis(uint64_t attr, int64_t rank) {
  int64_t axis = static_cast<int64_t>(attr);
  return axis < 0 ? axis + rank : axis;
}

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

static double numElements(Value v) {
  double n = 1;
  for (int64_t d : shapeOf(v))
    n *= d;
  return n;
}

/// Operand dims aligned to the result's loops from the right (numpy
/// broadcasting): a dimension of the operand's own size follows the loop,
/// a broadcast one (size 1 against more) stays whole.
static SmallVector<int> broadcastDims(ArrayRef<int64_t> operand,
                                      ArrayRef<int64_t> result,
                                      ArrayRef<int> resultLoops) {
  SmallVector<int> dims(operand.size(), -1);
  int64_t shift = result.size() - operand.size();
  for (int64_t d = 0; d < static_cast<int64_t>(operand.size()); ++d) {
    int64_t r = d + shift;
    if (r >= 0 && operand[d] == result[r])
      dims[d] = resultLoops[r];
  }
  return dims;
}

/// Elementwise ops (with broadcasting): one parallel loop per result dim.
static LoopSpace elementwise(Operation *op) {
  SpaceBuilder b;
  ArrayRef<int64_t> result = shapeOf(op->getResult(0));
  SmallVector<int> loops;
  for (int64_t size : result)
    loops.push_back(b.addLoop(size));
  for (Value operand : op->getOperands())
    b.addOperand(broadcastDims(shapeOf(operand), result, loops));
  b.addResult(loops);
  b.space.flops = numElements(op->getResult(0));
  return b.space;
}

/// Batched matmul with optional transposes and a bias broadcast to M x N.
static std::optional<LoopSpace> matmul(MatmulOp op) {
  ArrayRef<int64_t> lhs = shapeOf(op.getLhs()), rhs = shapeOf(op.getRhs());
  ArrayRef<int64_t> out = shapeOf(op.getResult());
  if (lhs.size() < 2 || rhs.size() < 2 || out.size() < 2)
    return std::nullopt;
  SpaceBuilder b;
  SmallVector<int> outLoops;
  for (int64_t size : out)
    outLoops.push_back(b.addLoop(size));
  int64_t kSize = op.getTransposeA() ? lhs[lhs.size() - 2] : lhs.back();
  // A bias would be added once per member: with it, K stays whole.
  bool kSplittable = !op.getBias();
  int k = b.addLoop(kSize, LoopKind::ReductionSum);
  int m = outLoops[out.size() - 2], n = outLoops[out.size() - 1];
  auto batchDims = [&](ArrayRef<int64_t> shape) {
    SmallVector<int64_t> batch(shape.begin(), shape.end() - 2);
    SmallVector<int> dims = broadcastDims(
        batch, ArrayRef<int64_t>(out).drop_back(2),
        ArrayRef<int>(outLoops).drop_back(2));
    return dims;
  };
  SmallVector<int> lhsDims = batchDims(lhs);
  if (op.getTransposeA())
    lhsDims.append({kSplittable ? k : -1, m});
  else
    lhsDims.append({m, kSplittable ? k : -1});
  SmallVector<int> rhsDims = batchDims(rhs);
  if (op.getTransposeB())
    rhsDims.append({n, kSplittable ? k : -1});
  else
    rhsDims.append({kSplittable ? k : -1, n});
  b.addOperand(lhsDims);
  b.addOperand(rhsDims);
  if (Value bias = op.getBias())
    b.addOperand(broadcastDims(shapeOf(bias), out.take_back(2),
                               {outLoops[out.size() - 2], n}));
  b.addResult(outLoops);
  b.space.flops = 2 * numElements(op.getResult()) * kSize;
  return b.space;
}

/// Einsum: a parallel loop per output label (and per output `...`
/// dimension), a summing loop per label the output drops, each operand
/// dimension on its label's loop unless it broadcasts (size 1). A label
/// repeated within one operand (a diagonal) cannot be split consistently:
/// such an einsum runs replicated.
static std::optional<LoopSpace> einsum(EinsumOp op) {
  SmallVector<int64_t> ranks;
  for (Value input : op.getInputs())
    ranks.push_back(shapeOf(input).size());
  FailureOr<EinsumOp::Equation> equation =
      EinsumOp::parseEquation(op.getEquation(), ranks, std::nullopt);
  if (failed(equation))
    return std::nullopt;
  SpaceBuilder b;
  ArrayRef<int64_t> out = shapeOf(op.getResult());
  llvm::DenseMap<char, int> loopOf;
  SmallVector<int> outLoops, ellipsisLoops;
  int64_t outDim = 0;
  for (char label : equation->output) {
    if (label != EinsumOp::kEllipsis) {
      loopOf[label] = b.addLoop(out[outDim++]);
      outLoops.push_back(loopOf[label]);
      continue;
    }
    int64_t covered = static_cast<int64_t>(out.size()) -
                      static_cast<int64_t>(equation->output.size()) + 1;
    for (int64_t e = 0; e < covered; ++e) {
      ellipsisLoops.push_back(b.addLoop(out[outDim++]));
      outLoops.push_back(ellipsisLoops.back());
    }
  }
  // Summed labels, sized by an operand that does not broadcast them.
  double work = 1;
  for (auto [term, input] : llvm::zip(equation->inputs, op.getInputs())) {
    ArrayRef<int64_t> shape = shapeOf(input);
    llvm::SmallDenseSet<char> seen;
    int64_t covered = static_cast<int64_t>(shape.size()) -
                      static_cast<int64_t>(term.size()) + 1;
    int64_t d = 0;
    for (char label : term) {
      if (label == EinsumOp::kEllipsis) {
        d += covered;
        continue;
      }
      if (!seen.insert(label).second)
        return std::nullopt;
      auto [it, inserted] = loopOf.try_emplace(label, -1);
      if (inserted)
        it->second = b.addLoop(shape[d], LoopKind::ReductionSum);
      else if (b.space.sizes[it->second] == 1)
        b.space.sizes[it->second] = shape[d];
      ++d;
    }
  }
  for (int64_t size : b.space.sizes)
    work *= static_cast<double>(size);
  for (auto [term, input] : llvm::zip(equation->inputs, op.getInputs())) {
    ArrayRef<int64_t> shape = shapeOf(input);
    int64_t covered = static_cast<int64_t>(shape.size()) -
                      static_cast<int64_t>(term.size()) + 1;
    SmallVector<int> dims;
    for (char label : term) {
      if (label != EinsumOp::kEllipsis) {
        int loop = loopOf[label];
        dims.push_back(shape[dims.size()] == b.space.sizes[loop] ? loop : -1);
        continue;
      }
      // `...` dimensions align from the right with the output's.
      for (int64_t e = 0; e < covered; ++e) {
        int64_t fromRight = covered - e;
        int64_t r = static_cast<int64_t>(ellipsisLoops.size()) - fromRight;
        int loop = r >= 0 ? ellipsisLoops[r] : -1;
        int64_t size = shape[dims.size()];
        dims.push_back(loop >= 0 && size == b.space.sizes[loop] ? loop : -1);
      }
    }
    b.addOperand(dims);
  }
  b.addResult(outLoops);
  b.space.flops = work * std::max<size_t>(equation->inputs.size(), 1);
  return b.space;
}

/// Convolution: batch, output channels and (without bias or clamp,
/// ungrouped) input channels, whose partial sums must not be biased or
/// clamped before they are added; spatial dimensions stay whole (halos are
/// not modelled).
static std::optional<LoopSpace> conv(ConvOp op) {
  // Codegen chooses other layouts (weft-conv-channels-last) after sharding;
  // a convolution that has them already is not split.
  if (op.hasNonDefaultLayout())
    return std::nullopt;
  ArrayRef<int64_t> x = shapeOf(op.getInput()), w = shapeOf(op.getWeight());
  ArrayRef<int64_t> y = shapeOf(op.getResult());
  SpaceBuilder b;
  bool ungrouped = op.getGroup() == 1;
  int n = b.addLoop(y[0]);
  int co = ungrouped ? b.addLoop(y[1]) : -1;
  int ci = ungrouped && !op.getBias() && !op.getAddend() &&
                   !op.getClampMin() && !op.getClampMax()
               ? b.addLoop(x[1], LoopKind::ReductionSum)
               : -1;
  SmallVector<int> xDims(x.size(), -1), wDims(w.size(), -1),
      yDims(y.size(), -1);
  xDims[0] = n;
  xDims[1] = ci;
  wDims[0] = co;
  wDims[1] = ci;
  yDims[0] = n;
  yDims[1] = co;
  b.addOperand(xDims);
  b.addOperand(wDims);
  if (op.getBias())
    b.addOperand({co});
  if (op.getAddend())
    b.addOperand(yDims);
  b.addResult(yDims);
  double window = 1;
  for (int64_t d : w.drop_front(1))
    window *= d;
  b.space.flops = 2 * numElements(op.getResult()) * window;
  return b.space;
}

/// Ops that keep some leading dims parallel and need the rest whole
/// (pooling, softmax, normalization): `parallelDims` says which result dims
/// are loops; operands of the same rank follow, others stay whole.
static LoopSpace parallelOver(Operation *op, ArrayRef<bool> parallelDims,
                              double flopsPerElement) {
  SpaceBuilder b;
  ArrayRef<int64_t> result = shapeOf(op->getResult(0));
  SmallVector<int> loops;
  for (auto [d, size] : llvm::enumerate(result))
    loops.push_back(parallelDims[d] ? b.addLoop(size) : -1);
  for (Value operand : op->getOperands()) {
    if (operand == op->getOperand(0)) {
      SmallVector<int> dims(loops);
      // Pooling's input has other spatial sizes: those are whole anyway.
      b.addOperand(dims);
    } else {
      b.addOperand(SmallVector<int>(shapeOf(operand).size(), -1));
    }
  }
  for (Value res : op->getResults()) {
    ArrayRef<int64_t> shape = shapeOf(res);
    SmallVector<int> dims(shape.size(), -1);
    for (size_t d = 0; d < shape.size() && d < loops.size(); ++d)
      if (loops[d] >= 0 && shape[d] == result[d])
        dims[d] = loops[d];
    b.addResult(dims);
  }
  b.space.flops = flopsPerElement * numElements(op->getOperand(0));
  return b.space;
}

/// Reshape-like ops: dimensions are grouped where the products of input and
/// output sizes agree; a group's leading (non-unit) dimensions form one
/// loop that may be split evenly, the rest stay whole.
static std::optional<LoopSpace> reshapeLike(Operation *op,
                                            ArrayRef<bool> dataOperands) {
  ArrayRef<int64_t> in = shapeOf(op->getOperand(0));
  ArrayRef<int64_t> out = shapeOf(op->getResult(0));
  SpaceBuilder b;
  SmallVector<int> inDims(in.size(), -1), outDims(out.size(), -1);
  size_t i = 0, o = 0;
  while (i < in.size() || o < out.size()) {
    // Unit dims on either side join no group.
    if (i < in.size() && in[i] == 1) {
      ++i;
      continue;
    }
    if (o < out.size() && out[o] == 1) {
      ++o;
      continue;
    }
    if (i >= in.size() || o >= out.size())
      return std::nullopt;
    size_t gi = i, go = o;
    int64_t pi = in[i++], po = out[o++];
    while (pi != po) {
      if (pi < po) {
        if (i >= in.size())
          return std::nullopt;
        pi *= in[i++];
      } else {
        if (o >= out.size())
          return std::nullopt;
        po *= out[o++];
      }
    }
    bool simple = i - gi == 1 && o - go == 1;
    // A merged group's leading dims line up only when both split evenly:
    // the gcd makes "the loop splits evenly" mean exactly that.
    int loop = b.addLoop(simple ? in[gi] : std::gcd(in[gi], out[go]),
                         LoopKind::Parallel, /*evenOnly=*/!simple);
    inDims[gi] = loop;
    outDims[go] = loop;
  }
  for (auto [index, isData] : llvm::enumerate(dataOperands)) {
    if (index == 0)
      b.addOperand(inDims);
    else
      b.addNonData();
  }
  b.addResult(outDims);
  return b.space;
}

static SmallVector<bool> firstOnly(Operation *op) {
  SmallVector<bool> data(op->getNumOperands(), false);
  data[0] = true;
  return data;
}

std::optional<LoopSpace> mlir::weft::getLoopSpace(Operation *op) {
  for (Value v : op->getOperands())
    if (auto t = dyn_cast<RankedTensorType>(v.getType());
        !t || !t.hasStaticShape())
      return std::nullopt;
  for (Value v : op->getResults())
    if (auto t = dyn_cast<RankedTensorType>(v.getType());
        !t || !t.hasStaticShape())
      return std::nullopt;
  return llvm::TypeSwitch<Operation *, std::optional<LoopSpace>>(op)
      .Case<UnaryOp, ClipOp, CastOp, BinaryOp, SelectOp>(
          [](Operation *op) -> std::optional<LoopSpace> {
            return elementwise(op);
          })
      .Case<MatmulOp>([](MatmulOp op) { return matmul(op); })
      .Case<EinsumOp>([](EinsumOp op) { return einsum(op); })
      .Case<ConvOp>([](ConvOp op) { return conv(op); })
      .Case<PoolOp>([](PoolOp op) -> std::optional<LoopSpace> {
        SmallVector<bool> parallel(shapeOf(op->getResult(0)).size(), false);
        parallel[0] = parallel[1] = true;
        double window = 1;
        for (int64_t k : op.getKernelShape())
          window *= k;
        LoopSpace space = parallelOver(op, parallel, 1);
        space.flops = numElements(op->getResult(0)) * window;
        return space;
      })
      .Case<BatchNormOp>([](BatchNormOp op) -> std::optional<LoopSpace> {
        SpaceBuilder b;
        ArrayRef<int64_t> x = shapeOf(op.getInput());
        if (x.size() < 2)
          return std::nullopt;
        SmallVector<int> dims(x.size(), -1);
        dims[0] = b.addLoop(x[0]);
        dims[1] = b.addLoop(x[1]);
        b.addOperand(dims);
        for (int i = 0; i < 4; ++i)
          b.addOperand({dims[1]});
        b.addResult(dims);
        b.space.flops = 2 * numElements(op.getInput());
        return b.space;
      })
      .Case<NormalizeOp>([](NormalizeOp op) -> std::optional<LoopSpace> {
        int64_t rank = shapeOf(op.getInput()).size();
        SmallVector<bool> parallel(rank, false);
        if (op.getKind() == NormKind::layer) {
          int64_t axis = wrapAxis(op.getAxis(), rank);
          for (int64_t d = 0; d < axis && d < rank; ++d)
            parallel[d] = true;
        } else if (rank >= 2) {
          parallel[0] = parallel[1] = true; // instance norm: per (n, c)
        }
        return parallelOver(op, parallel, 8);
      })
      .Case<SoftmaxOp>([](SoftmaxOp op) -> std::optional<LoopSpace> {
        int64_t rank = shapeOf(op.getInput()).size();
        int64_t axis = wrapAxis(op.getAxis(), rank);
        SmallVector<bool> parallel(rank, true);
        for (int64_t d = axis; d < rank; ++d)
          if (d == axis || op.getTrailing())
            parallel[d] = false;
        return parallelOver(op, parallel, 5);
      })
      .Case<ReduceOp>([](ReduceOp op) -> std::optional<LoopSpace> {
        if (op.getDynamicAxes())
          return std::nullopt;
        ArrayRef<int64_t> in = shapeOf(op.getInput());
        int64_t rank = in.size();
        SmallVector<bool> reduced(rank, op.getAxes().empty());
        for (int64_t a : op.getAxes())
          reduced[a < 0 ? a + rank : a] = true;
        SpaceBuilder b;
        SmallVector<int> inDims, outDims;
        for (int64_t d = 0; d < rank; ++d) {
          if (!reduced[d]) {
            int loop = b.addLoop(in[d]);
            inDims.push_back(loop);
            outDims.push_back(loop);
            continue;
          }
          inDims.push_back(op.getKind() == ReduceKind::sum
                               ? b.addLoop(in[d], LoopKind::ReductionSum)
                               : -1);
          if (op.getKeepdims())
            outDims.push_back(-1);
        }
        b.addOperand(inDims);
        b.addResult(outDims);
        b.space.flops = numElements(op.getInput());
        return b.space;
      })
      .Case<TransposeOp>([](TransposeOp op) -> std::optional<LoopSpace> {
        SpaceBuilder b;
        SmallVector<int> inDims;
        for (int64_t size : shapeOf(op.getInput()))
          inDims.push_back(b.addLoop(size));
        SmallVector<int> outDims;
        for (int64_t p : op.getPerm())
          outDims.push_back(inDims[p]);
        b.addOperand(inDims);
        b.addResult(outDims);
        b.space.flops = numElements(op.getInput());
        return b.space;
      })
      .Case<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp>(
          [](Operation *op) { return reshapeLike(op, firstOnly(op)); })
      .Case<ExpandOp>([](ExpandOp op) -> std::optional<LoopSpace> {
        SpaceBuilder b;
        ArrayRef<int64_t> out = shapeOf(op.getResult());
        SmallVector<int> loops;
        for (int64_t size : out)
          loops.push_back(b.addLoop(size));
        b.addOperand(broadcastDims(shapeOf(op.getInput()), out, loops));
        b.addNonData();
        b.addResult(loops);
        b.space.flops = numElements(op.getResult());
        return b.space;
      })
      .Case<ConcatOp>([](ConcatOp op) -> std::optional<LoopSpace> {
        SpaceBuilder b;
        ArrayRef<int64_t> out = shapeOf(op.getResult());
        int64_t axis = wrapAxis(op.getAxis(), out.size());
        SmallVector<int> loops;
        for (auto [d, size] : llvm::enumerate(out))
          loops.push_back(static_cast<int64_t>(d) == axis ? -1
                                                          : b.addLoop(size));
        for (size_t i = 0; i < op.getInputs().size(); ++i)
          b.addOperand(loops);
        b.addResult(loops);
        b.space.flops = numElements(op.getResult());
        return b.space;
      })
      .Case<SliceOp>([](SliceOp op) -> std::optional<LoopSpace> {
        if (op.getDynamicAxes())
          return std::nullopt;
        ArrayRef<int64_t> in = shapeOf(op.getInput());
        ArrayRef<int64_t> out = shapeOf(op.getResult());
        SpaceBuilder b;
        SmallVector<int> loops;
        for (auto [d, size] : llvm::enumerate(in))
          loops.push_back(size == out[d] ? b.addLoop(size) : -1);
        b.addOperand(loops);
        for (unsigned i = 1; i < op->getNumOperands(); ++i)
          b.addNonData();
        b.addResult(loops);
        b.space.flops = numElements(op.getResult());
        return b.space;
      })
      .Case<SplitOp>([](SplitOp op) -> std::optional<LoopSpace> {
        if (op.getDynamicSizes())
          return std::nullopt;
        ArrayRef<int64_t> in = shapeOf(op.getInput());
        int64_t axis = wrapAxis(op.getAxis(), in.size());
        SpaceBuilder b;
        SmallVector<int> loops;
        for (auto [d, size] : llvm::enumerate(in))
          loops.push_back(static_cast<int64_t>(d) == axis ? -1
                                                          : b.addLoop(size));
        b.addOperand(loops);
        for (size_t i = 0; i < op.getResults().size(); ++i)
          b.addResult(loops);
        b.space.flops = numElements(op.getInput());
        return b.space;
      })
      .Case<GatherOp>([](GatherOp op) -> std::optional<LoopSpace> {
        ArrayRef<int64_t> data = shapeOf(op.getInput());
        ArrayRef<int64_t> indices = shapeOf(op.getIndices());
        int64_t axis = wrapAxis(op.getAxis(), data.size());
        SpaceBuilder b;
        SmallVector<int> dataDims, indexDims, outDims;
        for (int64_t d = 0; d < axis; ++d) {
          dataDims.push_back(b.addLoop(data[d]));
          outDims.push_back(dataDims.back());
        }
        // The gathered axis (an embedding's vocabulary): split, each member
        // holds a block of rows, looks up only the ids inside it and gives
        // zeros for the others, so the members' results sum to the lookup
        // (Megatron-LM's vocabulary-parallel embedding; SpmdPartition
        // builds the masked lookup).
        dataDims.push_back(b.addLoop(data[axis], LoopKind::ReductionSum));
        for (int64_t size : indices) {
          indexDims.push_back(b.addLoop(size));
          outDims.push_back(indexDims.back());
        }
        for (int64_t d = axis + 1; d < static_cast<int64_t>(data.size());
             ++d) {
          dataDims.push_back(b.addLoop(data[d]));
          outDims.push_back(dataDims.back());
        }
        b.addOperand(dataDims);
        b.addOperand(indexDims);
        b.addResult(outDims);
        // An embedding lookup reads the rows it gathers, not the table.
        b.space.operandReadInPart = {true, false};
        b.space.flops = numElements(op.getResult());
        return b.space;
      })
      .Case<WeightOp>([](WeightOp op) -> std::optional<LoopSpace> {
        SpaceBuilder b;
        SmallVector<int> loops;
        for (int64_t size : shapeOf(op.getResult()))
          loops.push_back(b.addLoop(size));
        b.addResult(loops);
        return b.space;
      })
      .Default([](Operation *) { return std::nullopt; });
}

std::vector<LoopAxes>
mlir::weft::enumerateStrategies(const LoopSpace &space,
                                ArrayRef<int64_t> meshShape) {
  // A loop that no operand or result dim uses cannot be split.
  SmallVector<bool> usable(space.sizes.size(), false);
  for (const auto &dims : space.operandDims)
    for (int loop : dims)
      if (loop >= 0)
        usable[loop] = true;
  for (const auto &dims : space.resultDims)
    for (int loop : dims)
      if (loop >= 0)
        usable[loop] = true;

  std::vector<LoopAxes> strategies;
  // An axis of size 1 splits nothing: only the others pick loops, so that
  // the enumeration does not grow with the count of size-1 axes.
  SmallVector<int> splitting;
  for (auto [a, size] : llvm::enumerate(meshShape))
    if (size > 1)
      splitting.push_back(static_cast<int>(a));
  int64_t numAxes = splitting.size();
  int64_t numLoops = space.sizes.size();
  // Each axis picks a loop in [-1, numLoops): mixed-radix enumeration.
  SmallVector<int> pick(numAxes, -1);
  while (true) {
    LoopAxes strategy(numLoops);
    bool valid = true;
    for (int64_t a = 0; a < numAxes && valid; ++a) {
      if (pick[a] < 0)
        continue;
      if (!usable[pick[a]])
        valid = false;
      else
        strategy[pick[a]].push_back(splitting[a]);
    }
    for (int64_t l = 0; l < numLoops && valid; ++l) {
      if (strategy[l].empty())
        continue;
      int64_t parts = plan::groupSize(meshShape, strategy[l]);
      // Every member gets a non-empty block (ceil-sized blocks can leave
      // the last ones empty: 5 over 4 is 2, 2, 1, 0).
      int64_t block = (space.sizes[l] + parts - 1) / parts;
      if (parts > space.sizes[l] || (parts - 1) * block >= space.sizes[l])
        valid = false;
      if (space.evenOnly[l] && space.sizes[l] % parts != 0)
        valid = false;
    }
    if (valid)
      strategies.push_back(std::move(strategy));
    int64_t a = 0;
    for (; a < numAxes; ++a) {
      if (++pick[a] < numLoops)
        break;
      pick[a] = -1;
    }
    if (a == numAxes)
      break;
  }
  return strategies;
}

TensorSharding mlir::weft::operandSharding(const LoopSpace &space,
                                           unsigned operand,
                                           const LoopAxes &strategy,
                                           StringRef mesh) {
  TensorSharding sharding;
  sharding.mesh = mesh.str();
  for (int loop : space.operandDims[operand])
    sharding.dims.push_back(loop >= 0 ? strategy[loop] : AxisList());
  return sharding;
}

TensorSharding mlir::weft::resultSharding(const LoopSpace &space,
                                          unsigned result,
                                          const LoopAxes &strategy,
                                          StringRef mesh) {
  TensorSharding sharding;
  sharding.mesh = mesh.str();
  for (int loop : space.resultDims[result])
    sharding.dims.push_back(loop >= 0 ? strategy[loop] : AxisList());
  for (auto [loop, kind] : llvm::enumerate(space.kinds))
    if (kind == LoopKind::ReductionSum)
      sharding.partial.append(strategy[loop].begin(), strategy[loop].end());
  llvm::sort(sharding.partial);
  return sharding;
}

int64_t mlir::weft::parallelism(const LoopAxes &strategy,
                                ArrayRef<int64_t> meshShape) {
  int64_t p = 1;
  for (const AxisList &axes : strategy)
    p *= plan::groupSize(meshShape, axes);
  return p;
}

::weft::plan::DType mlir::weft::costDTypeOf(Type type) {
  namespace plan = ::weft::plan;
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped)
    return plan::DType::F32;
  Type element = shaped.getElementType();
  if (element.isF16())
    return plan::DType::F16;
  if (element.isBF16())
    return plan::DType::BF16;
  if (element.isF64())
    return plan::DType::F64;
  if (element.isInteger(1))
    return plan::DType::Bool;
  if (element.isInteger(8))
    return plan::DType::I8;
  if (element.isInteger(32))
    return plan::DType::I32;
  if (element.isInteger(64))
    return plan::DType::I64;
  return plan::DType::F32;
}

bool mlir::weft::isCostFreeView(Operation *op) {
  return isa<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp>(op);
}

/// Ops that codegen lowers to one linalg.generic each and fuses into the
/// loop of their producer or consumer.
static bool isFusedElementwise(Operation *op) {
  return isa<UnaryOp, BinaryOp, ClipOp, CastOp, SelectOp>(op);
}

bool mlir::weft::operandStaysInRegisters(Operation *op, unsigned operand) {
  if (!isFusedElementwise(op) || operand >= op->getNumOperands())
    return false;
  Value value = op->getOperand(operand);
  Operation *producer = value.getDefiningOp();
  return producer && isFusedElementwise(producer) && value.hasOneUse();
}

bool mlir::weft::resultStaysInRegisters(Value result) {
  Operation *producer = result.getDefiningOp();
  if (!producer || !isFusedElementwise(producer) || !result.hasOneUse())
    return false;
  return isFusedElementwise(*result.getUsers().begin());
}

bool mlir::weft::isClampFusedIntoConv(Operation *op) {
  return static_cast<bool>(getConvToFuseInto(op));
}

plan::KernelClass mlir::weft::kernelClassOf(Operation *op) {
  auto conv = dyn_cast<ConvOp>(op);
  if (!conv)
    return plan::KernelClass::Generic;
  // Weight: M x C/group x K1 x ... x Kn, whatever its layout.
  ConvDims dims = conv.getDims();
  if (dims.weight.size() >= 2 && dims.weight[1] == 1 && conv.getGroup() > 1)
    return plan::KernelClass::DepthwiseConv;
  ArrayRef<int64_t> window = dims.kernelSpatial();
  if (llvm::all_of(window, [](int64_t size) { return size == 1; }))
    return plan::KernelClass::PointwiseConv;
  auto ones = [](ArrayRef<int64_t> values) {
    return llvm::all_of(values, [](int64_t v) { return v == 1; });
  };
  if (window.size() == 2 && window[0] == 3 && window[1] == 3 &&
      conv.getGroup() == 1 && ones(conv.getStrides()) &&
      ones(conv.getDilations()))
    return plan::KernelClass::Conv3x3;
  return plan::KernelClass::Conv;
}
