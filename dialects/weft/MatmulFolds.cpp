//===- MatmulFolds.cpp - Canonicalization of weft.matmul ------------------===//
//
// Splits a matrix product whose columns are used only in pieces into one
// product per piece. Exporters pack attention's Q, K and V projections into
// one MatMul with a [hidden, 3 * hidden] weight and slice the result apart;
// once each piece has a weight of its own, the sharding planner can split
// every projection by heads (Megatron's column parallelism) instead of
// having to split a packed dimension whose slices straddle devices.
//
//===----------------------------------------------------------------------===//

#include "weft/KnownShapeValues.h"
#include "weft/WeftTypeUtils.h"
#include "weft/WeftOps.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::weft;

namespace {

/// The columns [start, start + count) of the product that `use` stands for.
struct Piece {
  Value use;
  int64_t start = 0, count = 0;
};

/// Appends the pieces `user` takes of the last dimension (of static size
/// `columns`) of `packed`: a unit-step slice of that dimension alone, or a
/// split of it with static pieces. False for any other use.
bool collectPieces(Operation *user, Value packed, int64_t columns,
                   SmallVectorImpl<Piece> &pieces) {
  int64_t last = cast<RankedTensorType>(packed.getType()).getRank() - 1;
  if (auto slice = dyn_cast<SliceOp>(user)) {
    if (slice.getDynamicAxes() || slice.getAxes().size() != 1 ||
        slice.getAxes()[0] != last)
      return false;
    FailureOr<SliceParams> params =
        getSliceParams(slice.getStarts(), slice.getEnds(), slice.getSteps(),
                       slice.getAxes(), std::nullopt);
    if (failed(params) || params->steps[0] != 1 ||
        ShapedType::isDynamic(params->starts[0]) ||
        ShapedType::isDynamic(params->ends[0]))
      return false;
    SliceRange range =
        getSliceRange(columns, params->starts[0], params->ends[0], 1);
    if (range.count <= 0 || range.count >= columns ||
        slice.getType().getDimSize(last) != range.count)
      return false;
    pieces.push_back({slice.getResult(), range.start, range.count});
    return true;
  }
  if (auto split = dyn_cast<SplitOp>(user)) {
    if (split.getAxis() != last && split.getAxis() != -1)
      return false;
    int64_t start = 0;
    for (Value result : split.getResults()) {
      int64_t count = cast<RankedTensorType>(result.getType()).getDimSize(last);
      if (ShapedType::isDynamic(count) || count <= 0 || count >= columns)
        return false;
      pieces.push_back({result, start, count});
      start += count;
    }
    return start == columns;
  }
  return false;
}

/// A tensor that only varies along the last of `rank` dimensions, where it
/// has `columns` elements: a bias added to every row of the product.
bool isColumnVector(Value value, int64_t rank, int64_t columns) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getRank() < 1 || type.getRank() > rank ||
      type.getDimSize(type.getRank() - 1) != columns)
    return false;
  return llvm::all_of(type.getShape().drop_back(),
                      [](int64_t d) { return d == 1; });
}

/// Operands whose pieces fold away: weights become blocks of the stored
/// tensor, constants fold to smaller constants. Slicing anything else would
/// copy at run time what the packed product had in one piece.
bool slicesForFree(Value value) {
  return isa_and_present<WeightOp, ConstantOp>(value.getDefiningOp());
}

/// `value`'s elements [start, start + count) along `axis`.
Value sliceAxis(PatternRewriter &rewriter, Location loc, Value value,
                int64_t axis, int64_t start, int64_t count) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[axis] = count;
  auto boundType = RankedTensorType::get({1}, rewriter.getI64Type());
  auto bound = [&](int64_t v) -> Value {
    return ConstantOp::create(rewriter, loc,
                              DenseElementsAttr::get(boundType, {v}));
  };
  return SliceOp::create(
      rewriter, loc, RankedTensorType::get(shape, type.getElementType()), value,
      bound(start), bound(start + count), bound(1), ArrayRef<int64_t>{axis});
}

/// The location of piece `index` of the op at `loc`: its ONNX name with
/// "/<index>" appended, so that each piece's product is told apart in
/// diagnostics, plan.json and --report ("MatMul:qkv/0", "/1", "/2"). `loc`
/// itself when it carries no name.
Location pieceLoc(Location loc, size_t index) {
  NameLoc named = findNameLoc(loc);
  if (!named)
    return loc;
  std::string name = (named.getName().getValue() + "/" + Twine(index)).str();
  return NameLoc::get(StringAttr::get(loc->getContext(), name),
                      named.getChildLoc());
}

/// matmul(x, W) (+ bias) used only through column pieces ->
/// one matmul(x, W[:, piece]) (+ bias[piece]) per piece.
struct SplitPackedMatmul : public OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulOp op,
                                PatternRewriter &rewriter) const override {
    auto rhsType = cast<RankedTensorType>(op.getRhs().getType());
    RankedTensorType type = op.getType();
    if (rhsType.getRank() != 2 || type.getRank() < 2 ||
        !slicesForFree(op.getRhs()))
      return failure();
    int64_t rank = type.getRank();
    int64_t columns = type.getDimSize(rank - 1);
    if (ShapedType::isDynamic(columns))
      return failure();
    // The matmul's own bias is either per column (sliced with the weight)
    // or constant across columns (shared by every piece).
    Value bias = op.getBias();
    auto biasType =
        bias ? cast<RankedTensorType>(bias.getType()) : RankedTensorType();
    bool sliceBias = biasType && biasType.getRank() > 0 &&
                     biasType.getDimSize(biasType.getRank() - 1) == columns;
    if (sliceBias &&
        (!isColumnVector(bias, rank, columns) || !slicesForFree(bias)))
      return failure();

    // A following bias add (ONNX MatMul + Add) is split along.
    Value packed = op.getResult();
    BinaryOp add;
    Value addend;
    if (op->hasOneUse())
      if (auto user = dyn_cast<BinaryOp>(*op->user_begin());
          user && user.getKind() == BinaryKind::Add && user.getType() == type) {
        Value other = user.getLhs() == packed ? user.getRhs() : user.getLhs();
        if (other != packed && isColumnVector(other, rank, columns) &&
            slicesForFree(other)) {
          add = user;
          addend = other;
          packed = user.getResult();
        }
      }

    SmallVector<Piece> pieces;
    SmallVector<Operation *> users(packed.getUsers());
    if (users.empty())
      return failure();
    for (Operation *user : users)
      if (!collectPieces(user, packed, columns, pieces))
        return failure();

    int64_t rhsAxis = op.getTransposeB() ? 0 : 1;
    for (auto [index, piece] : llvm::enumerate(pieces)) {
      Location loc = pieceLoc(op.getLoc(), index);
      auto pieceType = cast<RankedTensorType>(piece.use.getType());
      Value rhs = sliceAxis(rewriter, loc, op.getRhs(), rhsAxis, piece.start,
                            piece.count);
      Value pieceBias = bias;
      if (sliceBias)
        pieceBias = sliceAxis(rewriter, loc, bias, biasType.getRank() - 1,
                              piece.start, piece.count);
      Value product = MatmulOp::create(
          rewriter, loc, pieceType, op.getLhs(), rhs, pieceBias,
          op.getTransposeA(), op.getTransposeB(), op.getAlpha(), op.getBeta());
      if (add) {
        Location addLoc = pieceLoc(add.getLoc(), index);
        Value addendPiece =
            sliceAxis(rewriter, addLoc, addend,
                      cast<RankedTensorType>(addend.getType()).getRank() - 1,
                      piece.start, piece.count);
        bool addendFirst = add.getLhs() == addend;
        product = BinaryOp::create(rewriter, addLoc, pieceType, BinaryKind::Add,
                                   addendFirst ? addendPiece : product,
                                   addendFirst ? product : addendPiece);
      }
      rewriter.replaceAllUsesWith(piece.use, product);
    }
    for (Operation *user : users)
      rewriter.eraseOp(user);
    if (add)
      rewriter.eraseOp(add);
    rewriter.eraseOp(op);
    return success();
  }
};

/// Whether `perm` swaps the last two dimensions and keeps the others.
static bool swapsLastTwo(ArrayRef<int64_t> perm) {
  int64_t rank = static_cast<int64_t>(perm.size());
  if (rank < 2)
    return false;
  for (int64_t d = 0; d < rank - 2; ++d)
    if (perm[d] != d)
      return false;
  return perm[rank - 2] == rank - 1 && perm[rank - 1] == rank - 2;
}

/// matmul(transpose(a), b) -> matmul(a, b) {transpose_a}, and likewise for
/// b, when the transpose swaps the last two dimensions. A tied LM head
/// (GPT-2: logits = h @ wte^T) then reads the embedding table itself: no
/// transposed copy of the table in the arena, and the planner sees one
/// weight whose row split serves both the lookup and the head.
struct FoldTransposeIntoMatmul : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp op,
                                PatternRewriter &rewriter) const override {
    auto transposed = [](Value v) -> TransposeOp {
      auto t = v.getDefiningOp<TransposeOp>();
      return t && swapsLastTwo(t.getPerm()) ? t : TransposeOp();
    };
    TransposeOp lhs = transposed(op.getLhs());
    TransposeOp rhs = transposed(op.getRhs());
    if (!lhs && !rhs)
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      if (lhs) {
        op.getLhsMutable().assign(lhs.getInput());
        op.setTransposeA(!op.getTransposeA());
      }
      if (rhs) {
        op.getRhsMutable().assign(rhs.getInput());
        op.setTransposeB(!op.getTransposeB());
      }
    });
    return success();
  }
};

} // namespace

void MatmulOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                           MLIRContext *context) {
  results.add<SplitPackedMatmul, FoldTransposeIntoMatmul>(context);
}
