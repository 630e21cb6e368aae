//===- Gather.cpp - ONNX Gather and GatherElements ------------------------===//
//
// The indexing kernels: every index is checked (negative ones count from
// the end) before anything is written.
//
//===----------------------------------------------------------------------===//

#include "ElementCopy.h"
#include "KernelParams.h"

using namespace weft::rt::cpu;

/// Index `i` of the buffer as int64.
static int64_t readIndex(const void *indices, bool wide, int64_t i) {
  return wide ? static_cast<const int64_t *>(indices)[i]
              : static_cast<const int32_t *>(indices)[i];
}

/// Checks that each of `count` indices lies in [-size, size); the first one
/// that does not fails with its position and value.
static weft_rt_status checkIndices(weft_rt_context *ctx, const char *kernel,
                                   const void *indices, bool wide,
                                   int64_t count, int64_t size) {
  for (int64_t i = 0; i < count; ++i) {
    int64_t index = readIndex(indices, wide, i);
    if (index < -size || index >= size)
      return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                          "%s: index %lld at position %lld is out of range "
                          "for an axis of size %lld",
                          kernel, static_cast<long long>(index),
                          static_cast<long long>(i),
                          static_cast<long long>(size));
  }
  return WEFT_RT_OK;
}

weft_rt_status weft_rt_cpu_gather(weft_rt_context *ctx, const int64_t *params,
                                  const void *input, const void *indices,
                                  void *out) {
  static const char *const kernel = "gather";
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  GatherShape shape;
  WEFT_RT_TRY(parseGather(ctx, params, shape));
  const int64_t elementBytes = shape.elementBytes, outer = shape.outer,
                axis = shape.axis, inner = shape.inner, count = shape.count,
                outBytes = shape.outBytes;
  if (count > 0)
    WEFT_RT_TRY(requireBuffer(ctx, kernel, indices, "indices"));
  const bool wide = shape.wideIndices;
  WEFT_RT_TRY(checkIndices(ctx, kernel, indices, wide, count, axis));
  if (outBytes == 0)
    return WEFT_RT_OK;
  WEFT_RT_TRY(requireBuffer(ctx, kernel, input, "input"));
  WEFT_RT_TRY(requireBuffer(ctx, kernel, out, "out"));
  const auto *x = static_cast<const char *>(input);
  auto *y = static_cast<char *>(out);
  const int64_t rowBytes = inner * elementBytes;
  int nt = threadsFor(ctx, outBytes / 4);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (int64_t unit = 0; unit < outer * count; ++unit) {
    int64_t o = unit / count, i = unit % count;
    int64_t index = readIndex(indices, wide, i);
    if (index < 0)
      index += axis;
    std::memcpy(y + unit * rowBytes, x + (o * axis + index) * rowBytes,
                static_cast<size_t>(rowBytes));
  }
  return WEFT_RT_OK;
}

weft_rt_status weft_rt_cpu_gather_elements(weft_rt_context *ctx,
                                           const int64_t *params,
                                           const void *input,
                                           const void *indices, void *out) {
  static const char *const kernel = "gather_elements";
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  GatherElementsShape shape;
  WEFT_RT_TRY(parseGatherElements(ctx, params, shape));
  const int64_t elementBytes = shape.elementBytes, rank = shape.rank,
                axis = shape.axis, count = shape.count;
  const int64_t *inDims = shape.inDims, *indexDims = shape.indexDims;
  if (count == 0)
    return WEFT_RT_OK;
  WEFT_RT_TRY(requireBuffer(ctx, kernel, indices, "indices"));
  const bool wide = shape.wideIndices;
  const int64_t size = inDims[axis];
  WEFT_RT_TRY(checkIndices(ctx, kernel, indices, wide, count, size));
  WEFT_RT_TRY(requireBuffer(ctx, kernel, input, "input"));
  WEFT_RT_TRY(requireBuffer(ctx, kernel, out, "out"));
  int64_t inStrides[kMaxRank];
  int64_t stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d)
    inStrides[d] = stride, stride *= inDims[d];
  // Rows along the indices' last dimension.
  const int64_t last = rank - 1, length = indexDims[last];
  int nt = threadsFor(ctx, count);
  return visitElementSize(elementBytes, [&](auto zero) -> weft_rt_status {
    using E = decltype(zero);
    const E *x = static_cast<const E *>(input);
    E *y = static_cast<E *>(out);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t row = 0; row < count / length; ++row) {
      int64_t index = row, base = 0;
      for (int64_t d = last - 1; d >= 0; --d) {
        if (d != axis)
          base += (index % indexDims[d]) * inStrides[d];
        index /= indexDims[d];
      }
      for (int64_t j = 0; j < length; ++j) {
        int64_t position = row * length + j;
        int64_t i = readIndex(indices, wide, position);
        if (i < 0)
          i += size;
        int64_t offset = base + i * inStrides[axis];
        if (axis != last)
          offset += j * inStrides[last];
        y[position] = x[offset];
      }
    }
    return WEFT_RT_OK;
  });
}
