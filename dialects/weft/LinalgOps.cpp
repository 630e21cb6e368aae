//===- LinalgOps.cpp - Weft matrix products and einsum --------------------===//
//
// Type inference and verification of weft.matmul and weft.einsum, including
// the parser of einsum equations.
//
//===----------------------------------------------------------------------===//

#include "weft/WeftOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::weft;

/// Reports that the element types of a product's operands differ.
static LogicalResult emitElementTypeMismatch(std::optional<Location> loc,
                                             StringRef what, Type expected,
                                             Type actual) {
  return emitOptionalError(loc, what, " element type ", actual,
                           " differs from ", expected);
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto lhsType = cast<RankedTensorType>(adaptor.getLhs().getType());
  auto rhsType = cast<RankedTensorType>(adaptor.getRhs().getType());
  Type elementType = lhsType.getElementType();
  if (rhsType.getElementType() != elementType)
    return emitElementTypeMismatch(loc, "rhs", elementType,
                                   rhsType.getElementType());
  if (lhsType.getRank() < 1 || rhsType.getRank() < 1)
    return emitOptionalError(loc, "operands must have rank >= 1, got lhs ",
                             lhsType, " and rhs ", rhsType);
  bool transposeA = adaptor.getTransposeA();
  bool transposeB = adaptor.getTransposeB();
  if (transposeA && lhsType.getRank() < 2)
    return emitOptionalError(loc, "transpose_a needs lhs of rank >= 2, got ",
                             lhsType);
  if (transposeB && rhsType.getRank() < 2)
    return emitOptionalError(loc, "transpose_b needs rhs of rank >= 2, got ",
                             rhsType);

  // Promote 1-D operands to matrices, remembering which dimension to drop.
  SmallVector<int64_t> lhs(lhsType.getShape());
  SmallVector<int64_t> rhs(rhsType.getShape());
  bool dropRows = lhs.size() == 1;
  bool dropCols = rhs.size() == 1;
  if (dropRows)
    lhs.insert(lhs.begin(), 1);
  if (dropCols)
    rhs.push_back(1);
  if (transposeA)
    std::swap(lhs[lhs.size() - 2], lhs[lhs.size() - 1]);
  if (transposeB)
    std::swap(rhs[rhs.size() - 2], rhs[rhs.size() - 1]);

  int64_t lhsK = lhs.back();
  int64_t rhsK = rhs[rhs.size() - 2];
  if (!ShapedType::isDynamic(lhsK) && !ShapedType::isDynamic(rhsK) &&
      lhsK != rhsK)
    return emitOptionalError(loc, "contracted dimensions differ: lhs ", lhsType,
                             " has ", lhsK, ", rhs ", rhsType, " has ", rhsK);

  ArrayRef<int64_t> lhsBatch = ArrayRef(lhs).drop_back(2);
  ArrayRef<int64_t> rhsBatch = ArrayRef(rhs).drop_back(2);
  FailureOr<SmallVector<int64_t>> shape =
      broadcastShapes({lhsBatch, rhsBatch}, loc);
  if (failed(shape))
    return failure();
  if (!dropRows)
    shape->push_back(lhs[lhs.size() - 2]);
  if (!dropCols)
    shape->push_back(rhs.back());

  if (Value bias = adaptor.getBias()) {
    auto biasType = cast<RankedTensorType>(bias.getType());
    if (biasType.getElementType() != elementType)
      return emitElementTypeMismatch(loc, "bias", elementType,
                                     biasType.getElementType());
    ArrayRef<int64_t> biasShape = biasType.getShape();
    auto biasError = [&] {
      return emitOptionalError(loc, "bias ", biasType,
                               " does not broadcast to the product's shape ",
                               formatShape(*shape));
    };
    if (biasShape.size() > shape->size())
      return biasError();
    size_t offset = shape->size() - biasShape.size();
    for (auto [i, b] : llvm::enumerate(biasShape)) {
      int64_t d = (*shape)[offset + i];
      if (ShapedType::isDynamic(b) || b == 1 || ShapedType::isDynamic(d))
        continue;
      if (b != d)
        return biasError();
    }
  }
  inferred.push_back(RankedTensorType::get(*shape, elementType));
  return success();
}

LogicalResult MatmulOp::verify() {
  if (!isa<IntegerType>(getLhs().getType().getElementType()))
    return success();
  std::pair<StringRef, double> scales[] = {
      {"alpha", getAlpha().convertToDouble()},
      {"beta", getBeta().convertToDouble()}};
  for (auto [name, value] : scales)
    if (value != std::trunc(value) || !std::isfinite(value))
      return emitOpError(name)
             << " must be a whole number for integer operands, got " << value;
  return success();
}

//===----------------------------------------------------------------------===//
// EinsumOp
//===----------------------------------------------------------------------===//

/// Parses one term of an einsum equation: letters and at most one "...".
static FailureOr<EinsumOp::Term> parseEinsumTerm(StringRef text, StringRef what,
                                                 std::optional<Location> loc) {
  EinsumOp::Term term;
  bool sawEllipsis = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (llvm::isAlpha(c)) {
      term.push_back(c);
      continue;
    }
    if (c == '.') {
      if (!text.substr(i).starts_with("..."))
        return emitOptionalError(loc, "einsum ", what, " '", text,
                                 "' has a '.' that is not part of '...'");
      if (sawEllipsis)
        return emitOptionalError(loc, "einsum ", what, " '", text,
                                 "' has more than one '...'");
      sawEllipsis = true;
      term.push_back(EinsumOp::kEllipsis);
      i += 2;
      continue;
    }
    return emitOptionalError(loc, "einsum ", what, " '", text,
                             "' has invalid character '", StringRef(&c, 1),
                             "' (expected letters and '...')");
  }
  return term;
}

/// Number of dimensions a term names with letters.
static int64_t getNumLetters(const EinsumOp::Term &term) {
  return llvm::count_if(term, [](char c) { return c != EinsumOp::kEllipsis; });
}

static bool hasEllipsis(const EinsumOp::Term &term) {
  return llvm::is_contained(term, EinsumOp::kEllipsis);
}

FailureOr<EinsumOp::Equation>
EinsumOp::parseEquation(StringRef equation, ArrayRef<int64_t> ranks,
                        std::optional<Location> loc) {
  std::string text;
  for (char c : equation)
    if (!llvm::isSpace(c))
      text.push_back(c);
  StringRef rest(text);
  auto [lhs, rhs] = rest.split("->");
  bool isExplicit = rest.contains("->");
  if (rhs.contains("->"))
    return emitOptionalError(loc, "einsum equation '", equation,
                             "' has more than one '->'");

  Equation result;
  SmallVector<StringRef> termTexts;
  lhs.split(termTexts, ',');
  if (termTexts.size() != ranks.size())
    return emitOptionalError(loc, "einsum equation '", equation, "' has ",
                             termTexts.size(), " input terms but the op has ",
                             ranks.size(), " inputs");
  for (auto [i, termText] : llvm::enumerate(termTexts)) {
    std::string what = "term " + std::to_string(i);
    FailureOr<Term> term = parseEinsumTerm(termText, what, loc);
    if (failed(term))
      return failure();
    int64_t letters = getNumLetters(*term);
    int64_t rank = ranks[i];
    if (hasEllipsis(*term) ? rank < letters : rank != letters)
      return emitOptionalError(loc, "einsum term ", i, " '", termText,
                               "' names ", letters,
                               hasEllipsis(*term) ? " or more" : "",
                               " dimensions but input ", i, " has rank ", rank);
    result.inputs.push_back(std::move(*term));
  }

  // How often each label occurs over all inputs, and the widest "...".
  std::array<int, 128> counts{};
  int64_t ellipsisRank = -1;
  for (auto [term, rank] : llvm::zip(result.inputs, ranks)) {
    for (char c : term)
      if (c != kEllipsis)
        ++counts[static_cast<unsigned char>(c)];
    if (hasEllipsis(term))
      ellipsisRank = std::max(ellipsisRank, rank - getNumLetters(term));
  }

  if (!isExplicit) {
    if (ellipsisRank >= 0)
      result.output.push_back(kEllipsis);
    for (int c = 0; c < 128; ++c)
      if (counts[c] == 1)
        result.output.push_back(static_cast<char>(c));
    return result;
  }

  FailureOr<Term> output = parseEinsumTerm(rhs, "output", loc);
  if (failed(output))
    return failure();
  std::array<bool, 128> seen{};
  for (char c : *output) {
    if (c == kEllipsis)
      continue;
    auto index = static_cast<unsigned char>(c);
    if (seen[index])
      return emitOptionalError(loc, "einsum output '", rhs, "' names label '",
                               StringRef(&c, 1), "' twice");
    seen[index] = true;
    if (counts[index] == 0)
      return emitOptionalError(loc, "einsum output label '", StringRef(&c, 1),
                               "' does not occur in any input");
  }
  if (ellipsisRank > 0 && !hasEllipsis(*output))
    return emitOptionalError(loc, "einsum equation '", equation,
                             "' has '...' covering ", ellipsisRank,
                             " dimensions in an input but none in the output");
  result.output = std::move(*output);
  return result;
}

std::string EinsumOp::printEquation(const Equation &equation) {
  std::string out;
  auto printTerm = [&](const Term &term) {
    for (char c : term)
      out += c == kEllipsis ? std::string("...") : std::string(1, c);
  };
  llvm::interleave(equation.inputs, printTerm, [&] { out += ','; });
  out += "->";
  printTerm(equation.output);
  return out;
}

/// Sizes seen for one label across the inputs, merged the way broadcasting
/// merges them: a static size other than 1 wins, and size 1 or a dynamic
/// size otherwise.
namespace {
struct LabelSize {
  int64_t known = 1;
  bool sawDynamic = false;
  bool seen = false;

  int64_t get() const {
    return known == 1 && sawDynamic ? ShapedType::kDynamic : known;
  }
};
} // namespace

LogicalResult EinsumOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(loc, "einsum needs at least one input");
  SmallVector<RankedTensorType> types;
  SmallVector<int64_t> ranks;
  for (Value input : inputs) {
    types.push_back(cast<RankedTensorType>(input.getType()));
    ranks.push_back(types.back().getRank());
  }
  Type elementType = types.front().getElementType();
  for (auto [i, type] : llvm::enumerate(types))
    if (type.getElementType() != elementType)
      return emitElementTypeMismatch(loc, "input " + std::to_string(i),
                                     elementType, type.getElementType());

  FailureOr<Equation> equation =
      parseEquation(adaptor.getEquation(), ranks, loc);
  if (failed(equation))
    return failure();

  std::array<LabelSize, 128> sizes;
  SmallVector<SmallVector<int64_t>> ellipsisShapes;
  for (auto [i, term, type] : llvm::enumerate(equation->inputs, types)) {
    ArrayRef<int64_t> shape = type.getShape();
    int64_t ellipsisDims = type.getRank() - getNumLetters(term);
    // Sizes of this input's labels; a repeated label (a diagonal) must name
    // equal sizes.
    std::array<int64_t, 128> local;
    local.fill(0);
    std::array<bool, 128> inThisInput{};
    size_t dim = 0;
    for (char c : term) {
      if (c == kEllipsis) {
        ellipsisShapes.emplace_back(shape.slice(dim, ellipsisDims));
        dim += ellipsisDims;
        continue;
      }
      auto index = static_cast<unsigned char>(c);
      int64_t d = shape[dim++];
      if (!inThisInput[index]) {
        inThisInput[index] = true;
        local[index] = d;
        continue;
      }
      int64_t &prev = local[index];
      if (!ShapedType::isDynamic(prev) && !ShapedType::isDynamic(d) &&
          prev != d)
        return emitOptionalError(loc, "einsum label '", StringRef(&c, 1),
                                 "' names dimensions of sizes ", prev, " and ",
                                 d, " in input ", i);
      if (ShapedType::isDynamic(prev))
        prev = d;
    }
    for (int c = 0; c < 128; ++c) {
      if (!inThisInput[c])
        continue;
      LabelSize &size = sizes[c];
      int64_t d = local[c];
      size.seen = true;
      if (ShapedType::isDynamic(d)) {
        size.sawDynamic = true;
        continue;
      }
      if (d == 1)
        continue;
      if (size.known != 1 && size.known != d) {
        char label = static_cast<char>(c);
        return emitOptionalError(loc, "einsum label '", StringRef(&label, 1),
                                 "' has size ", size.known,
                                 " in one input and ", d, " in input ", i);
      }
      size.known = d;
    }
  }

  SmallVector<ArrayRef<int64_t>> ellipsisRefs(ellipsisShapes.begin(),
                                              ellipsisShapes.end());
  FailureOr<SmallVector<int64_t>> ellipsisShape =
      broadcastShapes(ellipsisRefs, loc);
  if (failed(ellipsisShape))
    return failure();

  SmallVector<int64_t> shape;
  for (char c : equation->output) {
    if (c == kEllipsis) {
      llvm::append_range(shape, *ellipsisShape);
      continue;
    }
    shape.push_back(sizes[static_cast<unsigned char>(c)].get());
  }
  inferred.push_back(RankedTensorType::get(shape, elementType));
  return success();
}
