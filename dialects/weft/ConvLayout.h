//===- ConvLayout.h - weft.conv's tensor layouts ----------------*- C++ -*-===//
//
// weft.conv stores each tensor channels-first by default (N x C x D...,
// M x C/group x K...) and channels-last, channel-blocked or kernel-first
// when its layout attributes say so (weft.pool channel-blocked when its
// attribute says so). These helpers move shapes between the orders, so
// that the verifier, the passes and codegen reason in one order.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_CONVLAYOUT_H
#define WEFT_DIALECT_WEFT_CONVLAYOUT_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::weft {

/// A convolution's operand and result sizes in channels-first order.
struct ConvDims {
  /// N x C x D1 x ... x Dn.
  SmallVector<int64_t> input;
  /// M x C/group x K1 x ... x Kn.
  SmallVector<int64_t> weight;
  /// N x M x O1 x ... x On.
  SmallVector<int64_t> result;

  int64_t spatialRank() const { return input.size() - 2; }
  ArrayRef<int64_t> inputSpatial() const {
    return ArrayRef<int64_t>(input).drop_front(2);
  }
  ArrayRef<int64_t> kernelSpatial() const {
    return ArrayRef<int64_t>(weight).drop_front(2);
  }
  ArrayRef<int64_t> resultSpatial() const {
    return ArrayRef<int64_t>(result).drop_front(2);
  }
};

/// The permutation (as weft.transpose's `perm` and mlir::applyPermutation
/// take it: result dimension i is input dimension perm[i]) from channels-first N x C x D... to
/// channels-last N x D... x C, for a tensor of `rank` >= 2.
SmallVector<int64_t> toChannelsLastPerm(int64_t rank);
/// Its inverse: channels-last to channels-first.
SmallVector<int64_t> toChannelsFirstPerm(int64_t rank);
/// From M x C/group x K... to K... x C/group x M, for a weight of `rank` >=
/// 2. The inverse is toOutputFirstWeightPerm.
SmallVector<int64_t> toKernelFirstWeightPerm(int64_t rank);
SmallVector<int64_t> toOutputFirstWeightPerm(int64_t rank);

/// Channels per block of the channel-blocked layout, N x C/16 x D... x 16
/// (oneDNN's nChw16c): a block is one AVX-512 vector of channels.
inline constexpr int64_t kChannelBlock = 16;

/// N x C x D... as N x C/16 x D... x 16, for a channels-first `shape` of
/// rank >= 2 whose C is a multiple of 16 or dynamic (then so is C/16).
SmallVector<int64_t> toChannelBlockedShape(ArrayRef<int64_t> shape);
/// Its inverse: N x C/16 x D... x 16 back to N x C x D..., for a blocked
/// `shape` of rank >= 3.
SmallVector<int64_t> fromChannelBlockedShape(ArrayRef<int64_t> shape);

/// Output channels per panel of a packed 1x1 weight, M/32 x C x 32: two
/// AVX-512 vectors of a row of the product pixels x C times C x M.
inline constexpr int64_t kWeightPanel = 32;

/// A 2-D 1x1 weight M x C x 1 x 1 as M/32 x C x 32 (`packed_weight`), for
/// a static M that is a multiple of 32.
SmallVector<int64_t> toPackedWeightShape(ArrayRef<int64_t> shape);
/// Its inverse: M/32 x C x 32 back to M x C x 1 x 1.
SmallVector<int64_t> fromPackedWeightShape(ArrayRef<int64_t> shape);

} // namespace mlir::weft

#endif // WEFT_DIALECT_WEFT_CONVLAYOUT_H
