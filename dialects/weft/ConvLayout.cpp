//===- ConvLayout.cpp - weft.conv's tensor layouts ------------------------===//

#include "weft/ConvLayout.h"

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
