//===- WeftTypeUtils.cpp - Shape and type helpers for weft ops ------------===//
//
// Implements the helpers shared by all weft op families.
//
//===----------------------------------------------------------------------===//

#include "weft/WeftTypeUtils.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringExtras.h"

#include <limits>

using namespace mlir;
using namespace mlir::weft;

bool mlir::weft::areCompatibleTensorTypes(TypeRange inferred,
                                          TypeRange actual) {
  if (inferred.size() != actual.size())
    return false;
  for (auto [a, b] : llvm::zip(inferred, actual)) {
    auto ta = dyn_cast<RankedTensorType>(a);
    auto tb = dyn_cast<RankedTensorType>(b);
    if (!ta || !tb) {
      if (a != b)
        return false;
      continue;
    }
    if (ta.getElementType() != tb.getElementType() ||
        ta.getRank() != tb.getRank())
      return false;
    for (auto [da, db] : llvm::zip(ta.getShape(), tb.getShape()))
      if (!ShapedType::isDynamic(da) && !ShapedType::isDynamic(db) && da != db)
        return false;
  }
  return true;
}

SmallVector<int64_t> mlir::weft::joinShapes(ArrayRef<int64_t> a,
                                            ArrayRef<int64_t> b) {
  SmallVector<int64_t> out;
  for (auto [da, db] : llvm::zip(a, b))
    out.push_back(ShapedType::isDynamic(da) ? db : da);
  return out;
}

std::string mlir::weft::formatShape(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string out;
  llvm::raw_string_ostream os(out);
  llvm::interleave(
      shape, os,
      [&](int64_t d) {
        if (ShapedType::isDynamic(d))
          os << '?';
        else
          os << d;
      },
      "x");
  return out;
}

FailureOr<SmallVector<int64_t>>
mlir::weft::broadcastShapes(ArrayRef<ArrayRef<int64_t>> shapes,
                            std::optional<Location> loc) {
  size_t rank = 0;
  for (ArrayRef<int64_t> s : shapes)
    rank = std::max(rank, s.size());
  SmallVector<int64_t> out(rank, 1);
  // Tracks whether a dimension of the output is known; a dynamic input
  // dimension may be 1 or the other size, so it only helps when no static
  // size other than 1 is known.
  for (size_t i = 0; i < rank; ++i) {
    int64_t known = 1;
    bool sawDynamic = false;
    for (ArrayRef<int64_t> s : shapes) {
      if (i + s.size() < rank)
        continue;
      int64_t d = s[i + s.size() - rank];
      if (ShapedType::isDynamic(d)) {
        sawDynamic = true;
        continue;
      }
      if (d == 1)
        continue;
      if (known != 1 && known != d) {
        std::string list;
        for (ArrayRef<int64_t> t : shapes)
          list += (list.empty() ? "" : ", ") + formatShape(t);
        (void)emitOptionalError(loc, "shapes ", list,
                                " cannot be broadcast (dimension ", i,
                                " of the result)");
        return failure();
      }
      known = d;
    }
    out[i] = (known == 1 && sawDynamic) ? ShapedType::kDynamic : known;
  }
  return out;
}

FailureOr<int64_t> mlir::weft::normalizeAxis(int64_t axis, int64_t rank,
                                             std::optional<Location> loc,
                                             StringRef what) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 0) ||
      (rank == 0 && axis != 0)) {
    (void)emitOptionalError(loc, what, " ", axis, " is out of range for rank ",
                            rank, " (expected [", -rank, ", ", rank, "))");
    return failure();
  }
  return axis < 0 ? axis + rank : axis;
}

FailureOr<SmallVector<int64_t>>
mlir::weft::normalizeAxes(ArrayRef<int64_t> axes, int64_t rank,
                          std::optional<Location> loc, StringRef what) {
  SmallVector<int64_t> out;
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) {
      (void)emitOptionalError(loc, what, " value ", a,
                              " is out of range for rank ", rank,
                              " (expected [", -rank, ", ", rank, "))");
      return failure();
    }
    int64_t n = a < 0 ? a + rank : a;
    if (!seen.insert(n).second) {
      (void)emitOptionalError(loc, what, " contain axis ", n, " twice");
      return failure();
    }
    out.push_back(n);
  }
  return out;
}

std::optional<DenseElementsAttr> mlir::weft::getConstantValue(Value value) {
  DenseElementsAttr attr;
  if (value && matchPattern(value, m_Constant(&attr)))
    return attr;
  return std::nullopt;
}

std::optional<SmallVector<int64_t>> mlir::weft::getIntValues(Attribute attr) {
  auto dense = dyn_cast_or_null<DenseIntElementsAttr>(attr);
  if (!dense)
    return std::nullopt;
  bool isUnsigned = dense.getElementType().isUnsignedInteger();
  SmallVector<int64_t> out;
  out.reserve(dense.getNumElements());
  for (const APInt &v : dense.getValues<APInt>())
    out.push_back(isUnsigned ? static_cast<int64_t>(v.getZExtValue())
                             : v.getSExtValue());
  return out;
}

std::optional<SmallVector<int64_t>>
mlir::weft::getConstantIntValues(Value value) {
  std::optional<DenseElementsAttr> attr = getConstantValue(value);
  if (!attr)
    return std::nullopt;
  return getIntValues(*attr);
}

std::optional<int64_t> mlir::weft::getNumElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (ShapedType::isDynamic(d) || d < 0)
      return std::nullopt;
    // Shapes come from models: a product past int64 has no element count.
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      return std::nullopt;
    n *= d;
  }
  return n;
}

NameLoc mlir::weft::findNameLoc(Location loc) {
  NameLoc named;
  loc->walk([&](Location inner) {
    named = dyn_cast<NameLoc>(inner);
    return named ? WalkResult::interrupt() : WalkResult::advance();
  });
  return named;
}
