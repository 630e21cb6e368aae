//===- ConvClamp.cpp - What a convolution can take over -------------------===//

#include "weft/ConvClamp.h"

#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;
using namespace mlir::weft;

/// The value of a one-element float constant.
static std::optional<double> scalarConstant(Value value) {
  DenseFPElementsAttr attr;
  if (!matchPattern(value, m_Constant(&attr)) || attr.getNumElements() != 1)
    return std::nullopt;
  return (*attr.value_begin<APFloat>()).convertToDouble();
}

std::optional<ClampBounds> mlir::weft::getClampBounds(Operation *op) {
  if (auto unary = dyn_cast<UnaryOp>(op)) {
    if (unary.getKind() != UnaryKind::Relu)
      return std::nullopt;
    return ClampBounds{0.0, std::nullopt};
  }
  auto clip = dyn_cast<ClipOp>(op);
  if (!clip)
    return std::nullopt;
  ClampBounds bounds;
  for (auto [bound, into] : {std::make_pair(clip.getMin(), &bounds.min),
                             std::make_pair(clip.getMax(), &bounds.max)}) {
    if (!bound)
      continue;
    std::optional<double> v = scalarConstant(bound);
    if (!v || !std::isfinite(*v))
      return std::nullopt;
    *into = *v;
  }
  if (bounds.min && bounds.max && *bounds.min > *bounds.max)
    bounds.min = bounds.max;
  return bounds;
}

ConvOp mlir::weft::getConvToFuseInto(Operation *clamp) {
  if (!getClampBounds(clamp) || clamp->getNumOperands() == 0)
    return nullptr;
  auto conv = clamp->getOperand(0).getDefiningOp<ConvOp>();
  if (!conv || conv.getClampMin() || conv.getClampMax() ||
      !conv.getResult().hasOneUse() ||
      !conv.getType().getElementType().isF32() ||
      clamp->getResult(0).getType() != conv.getType())
    return nullptr;
  return conv;
}

std::pair<ConvOp, Value> mlir::weft::getConvToFuseAddendInto(Operation *add) {
  auto binary = dyn_cast<BinaryOp>(add);
  if (!binary || binary.getKind() != BinaryKind::Add)
    return {nullptr, Value()};
  Value lhs = binary.getLhs(), rhs = binary.getRhs();
  for (auto [mine, other] : {std::make_pair(lhs, rhs), std::make_pair(rhs, lhs)}) {
    auto conv = mine.getDefiningOp<ConvOp>();
    if (!conv || conv.getClampMin() || conv.getClampMax() || conv.getAddend() ||
        !conv.getResult().hasOneUse() ||
        !conv.getType().getElementType().isF32() ||
        other.getType() != conv.getType() ||
        binary.getResult().getType() != conv.getType())
      continue;
    return {conv, other};
  }
  return {nullptr, Value()};
}
