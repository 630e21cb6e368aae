//===- ElementCopy.h - Moving elements of a given byte size -----*- C++ -*-===//
//
// The data-movement kernels take an element size rather than a dtype; this
// turns the size into a type so that element copies compile to single
// moves; private to runtime/cpu.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CPU_ELEMENTCOPY_H
#define WEFT_RUNTIME_CPU_ELEMENTCOPY_H

#include "KernelSupport.h"

namespace weft::rt::cpu {

/// An element of `bytes` bytes, copied as a value.
template <int bytes> struct Element { unsigned char data[bytes]; };

/// Calls fn(Element<E>{}) for the element size E (isElementSize holds).
template <typename Fn> weft_rt_status visitElementSize(int64_t bytes, Fn &&fn) {
  switch (bytes) {
  case 1:
    return fn(Element<1>{});
  case 2:
    return fn(Element<2>{});
  case 4:
    return fn(Element<4>{});
  case 8:
    return fn(Element<8>{});
  case 16:
    return fn(Element<16>{});
  default:
    return WEFT_RT_INTERNAL;
  }
}

/// Fails unless `bytes` is an element size the kernels move.
inline weft_rt_status checkElementSize(weft_rt_context *ctx, const char *kernel,
                                       int64_t bytes) {
  if (isElementSize(bytes))
    return WEFT_RT_OK;
  return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                      "%s: element size %lld is not 1, 2, 4, 8 or 16 bytes",
                      kernel, static_cast<long long>(bytes));
}

/// Reads a rank and its dimensions: rank in [0, kMaxRank], dims >= 0, and
/// their product (in *count) fits in int64.
inline weft_rt_status readDims(weft_rt_context *ctx, const char *kernel,
                               ParamReader &reader, int64_t rank,
                               const int64_t *&dims, int64_t *count,
                               const char *what) {
  if (rank < 0 || rank > kMaxRank)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s: rank %lld is not between 0 and %lld", kernel,
                        static_cast<long long>(rank),
                        static_cast<long long>(kMaxRank));
  dims = reader.array(rank);
  int64_t product;
  if (!checkedProduct(dims, rank, product))
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s: %s are negative or their product overflows",
                        kernel, what);
  if (count)
    *count = product;
  return WEFT_RT_OK;
}

} // namespace weft::rt::cpu

#endif // WEFT_RUNTIME_CPU_ELEMENTCOPY_H
