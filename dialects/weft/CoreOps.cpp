//===- CoreOps.cpp - Weft constants and weights ---------------------------===//
//
// Verifiers, type inference and folding of weft.constant and weft.weight.
//
//===----------------------------------------------------------------------===//

#include "weft/WeftOps.h"

#include "llvm/ADT/StringExtras.h"

#include "llvm/Support/InterleavedRange.h"

using namespace mlir;
using namespace mlir::weft;

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  auto type = dyn_cast_or_null<RankedTensorType>(adaptor.getValue().getType());
  if (!type)
    return emitOptionalError(loc, "value must be a ranked tensor");
  inferred.push_back(type);
  return success();
}

LogicalResult ConstantOp::verify() {
  if (getValue().getType() != getType())
    return emitOpError("value type ")
           << getValue().getType() << " differs from result type "
           << getType();
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// WeightOp
//===----------------------------------------------------------------------===//

SmallVector<int64_t> WeightOp::getUnpermutedShape() {
  ArrayRef<int64_t> shape = getType().getShape();
  std::optional<ArrayRef<int64_t>> perm = getPerm();
  if (!perm)
    return SmallVector<int64_t>(shape);
  SmallVector<int64_t> unpermuted(shape.size());
  for (auto [i, source] : llvm::enumerate(*perm))
    unpermuted[source] = shape[i];
  return unpermuted;
}

LogicalResult WeightOp::verify() {
  RankedTensorType resultType = getType();
  if (!resultType.hasStaticShape())
    return emitOpError("weight '")
           << getName() << "' must have a static shape, got " << resultType;
  if (std::optional<ArrayRef<int64_t>> perm = getPerm()) {
    SmallVector<bool> seen(resultType.getRank(), false);
    bool valid = perm->size() == seen.size();
    for (int64_t d : *perm) {
      valid = valid && d >= 0 && d < resultType.getRank() && !seen[d];
      if (valid)
        seen[d] = true;
    }
    if (!valid)
      return emitOpError("weight '")
             << getName() << "': permuted [" << llvm::interleaved(*perm)
             << "] is not a permutation of [0, " << resultType.getRank()
             << ")";
  }
  // Below, the block or stored tensor as the file holds it.
  auto type = RankedTensorType::get(getUnpermutedShape(),
                                    resultType.getElementType());
  if (static_cast<int64_t>(getOffset()) < 0)
    return emitOpError("weight '")
           << getName() << "' has negative offset "
           << static_cast<int64_t>(getOffset());
  int64_t bits = type.getElementTypeBitWidth();
  // i1 weights are stored one byte per element, as ONNX stores booleans.
  int64_t bytesPerElement = bits == 1 ? 1 : bits / 8;
  int64_t stored = type.getNumElements();
  std::optional<ArrayRef<int64_t>> offsets = getBlockOffsets();
  std::optional<ArrayRef<int64_t>> full = getFullShape();
  if (offsets.has_value() != full.has_value())
    return emitOpError("weight '")
           << getName() << "' needs both block offsets and the full shape";
  if (offsets) {
    if (offsets->size() != static_cast<size_t>(type.getRank()) ||
        full->size() != offsets->size())
      return emitOpError("weight '")
             << getName() << "': block offsets and full shape must have rank "
             << type.getRank();
    stored = 1;
    for (auto [offset, size, whole] :
         llvm::zip(*offsets, type.getShape(), *full)) {
      if (offset < 0 || whole < 0 || offset + size > whole)
        return emitOpError("weight '")
               << getName() << "': block " << type << " at offsets ["
               << llvm::interleaved(*offsets) << "] is outside the stored ["
               << llvm::interleaved(*full) << "]";
      stored *= whole;
    }
  }
  int64_t expected = stored * bytesPerElement;
  if (static_cast<int64_t>(getSize()) != expected)
    return emitOpError("weight '")
           << getName() << "' has size " << getSize() << " bytes but "
           << (offsets ? "its stored tensor" : "") << type << " needs "
           << expected;
  StringRef checksum = getChecksum();
  if (checksum.size() != 16 ||
      !llvm::all_of(checksum, [](char c) { return llvm::isHexDigit(c); }))
    return emitOpError("checksum must be 16 hex digits, got '")
           << checksum << "'";
  return success();
}
