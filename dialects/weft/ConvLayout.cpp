//===- ConvLayout.cpp - weft.conv's tensor layouts ------------------------===//

#include "weft/ConvLayout.h"

#include "mlir/IR/BuiltinTypeInterfaces.h"

#include <cassert>

using namespace mlir;
using namespace mlir::weft;

SmallVector<int64_t> mlir::weft::toChannelsLastPerm(int64_t rank) {
  assert(rank >= 2 && "a convolution tensor has N and C");
  SmallVector<int64_t> perm{0};
  for (int64_t d = 2; d < rank; ++d)
    perm.push_back(d);
  perm.push_back(1);
  return perm;
}

SmallVector<int64_t> mlir::weft::toChannelsFirstPerm(int64_t rank) {
  assert(rank >= 2 && "a convolution tensor has N and C");
  SmallVector<int64_t> perm{0, rank - 1};
  for (int64_t d = 1; d < rank - 1; ++d)
    perm.push_back(d);
  return perm;
}

SmallVector<int64_t> mlir::weft::toKernelFirstWeightPerm(int64_t rank) {
  assert(rank >= 2 && "a convolution weight has M and C/group");
  SmallVector<int64_t> perm;
  for (int64_t d = 2; d < rank; ++d)
    perm.push_back(d);
  perm.push_back(1);
  perm.push_back(0);
  return perm;
}

SmallVector<int64_t> mlir::weft::toOutputFirstWeightPerm(int64_t rank) {
  assert(rank >= 2 && "a convolution weight has M and C/group");
  SmallVector<int64_t> perm{rank - 1, rank - 2};
  for (int64_t d = 0; d < rank - 2; ++d)
    perm.push_back(d);
  return perm;
}

SmallVector<int64_t>
mlir::weft::toChannelBlockedShape(ArrayRef<int64_t> shape) {
  assert(shape.size() >= 2 && "a convolution tensor has N and C");
  SmallVector<int64_t> blocked{shape[0], ShapedType::isDynamic(shape[1])
                                             ? ShapedType::kDynamic
                                             : shape[1] / kChannelBlock};
  llvm::append_range(blocked, shape.drop_front(2));
  blocked.push_back(kChannelBlock);
  return blocked;
}

SmallVector<int64_t>
mlir::weft::fromChannelBlockedShape(ArrayRef<int64_t> shape) {
  assert(shape.size() >= 3 && "a blocked tensor has N, C/16 and 16");
  SmallVector<int64_t> plain{shape[0], ShapedType::isDynamic(shape[1])
                                           ? ShapedType::kDynamic
                                           : shape[1] * kChannelBlock};
  llvm::append_range(plain, shape.drop_front(2).drop_back());
  return plain;
}

SmallVector<int64_t>
mlir::weft::toPackedWeightShape(ArrayRef<int64_t> shape) {
  return {shape[0] / kWeightPanel, shape[1], kWeightPanel};
}

SmallVector<int64_t>
mlir::weft::fromPackedWeightShape(ArrayRef<int64_t> shape) {
  return {ShapedType::isDynamic(shape[0]) ? ShapedType::kDynamic
                                          : shape[0] * kWeightPanel,
          shape[1], 1, 1};
}
