//===- CoreOps.cpp - Weft constants and weights ---------------------------===//
//
// Verifiers, type inference and folding of weft.constant and weft.weight.
//
//===----------------------------------------------------------------------===//

#include "weft/WeftOps.h"

#include "llvm/ADT/StringExtras.h"

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

LogicalResult WeightOp::verify() {
  RankedTensorType type = getType();
  if (!type.hasStaticShape())
    return emitOpError("weight '")
           << getName() << "' must have a static shape, got " << type;
  if (static_cast<int64_t>(getOffset()) < 0)
    return emitOpError("weight '")
           << getName() << "' has negative offset "
           << static_cast<int64_t>(getOffset());
  int64_t bits = type.getElementTypeBitWidth();
  // i1 weights are stored one byte per element, as ONNX stores booleans.
  int64_t bytesPerElement = bits == 1 ? 1 : bits / 8;
  int64_t expected = type.getNumElements() * bytesPerElement;
  if (static_cast<int64_t>(getSize()) != expected)
    return emitOpError("weight '")
           << getName() << "' has size " << getSize() << " bytes but "
           << type << " needs " << expected;
  StringRef checksum = getChecksum();
  if (checksum.size() != 16 ||
      !llvm::all_of(checksum, [](char c) { return llvm::isHexDigit(c); }))
    return emitOpError("checksum must be 16 hex digits, got '")
           << checksum << "'";
  return success();
}
