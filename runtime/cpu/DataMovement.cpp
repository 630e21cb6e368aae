//===- DataMovement.cpp - Transpose, Slice, Pad, Tile, Trilu, copies ------===//
//
// The kernels that move elements without computing on them; they work on
// element sizes, so one implementation serves every dtype.
//
//===----------------------------------------------------------------------===//

#include "ElementCopy.h"
#include "KernelParams.h"

#include <algorithm>

using namespace weft::rt::cpu;

/// Row-major strides of `dims`, in elements.
static void rowMajorStrides(const int64_t *dims, int64_t rank,
                            int64_t *strides) {
  int64_t stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d)
    strides[d] = stride, stride *= dims[d];
}

//===----------------------------------------------------------------------===//
// Transpose
//===----------------------------------------------------------------------===//

namespace {
/// A permutation simplified to the output dimensions that matter: size-1
/// dimensions dropped, runs that stay adjacent in the input merged.
struct Permutation {
  int64_t rank = 0;
  int64_t sizes[kMaxRank], inStrides[kMaxRank], outStrides[kMaxRank];
};
} // namespace

static Permutation simplify(const int64_t *inDims, const int64_t *perm,
                            int64_t rank) {
  int64_t strides[kMaxRank];
  rowMajorStrides(inDims, rank, strides);
  Permutation p;
  int64_t previous = -2;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t d = perm[i];
    if (inDims[d] == 1)
      continue;
    if (p.rank > 0 && d == previous + 1) {
      p.sizes[p.rank - 1] *= inDims[d];
      p.inStrides[p.rank - 1] = strides[d];
    } else {
      p.sizes[p.rank] = inDims[d];
      p.inStrides[p.rank++] = strides[d];
    }
    previous = d;
  }
  int64_t stride = 1;
  for (int64_t i = p.rank - 1; i >= 0; --i)
    p.outStrides[i] = stride, stride *= p.sizes[i];
  return p;
}

template <typename E>
static void transposeAs(const Permutation &p, const E *x, E *y, int nt) {
  const int64_t last = p.rank - 1;
  if (p.inStrides[last] == 1) {
    // The innermost dimension stays innermost: copy rows.
    const int64_t length = p.sizes[last];
    const int64_t rows = p.outStrides[0] * p.sizes[0] / length;
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t row = 0; row < rows; ++row) {
      int64_t index = row, offset = 0;
      for (int64_t d = last - 1; d >= 0; --d) {
        offset += (index % p.sizes[d]) * p.inStrides[d];
        index /= p.sizes[d];
      }
      std::copy(x + offset, x + offset + length, y + row * length);
    }
    return;
  }
  // Tile the plane of the output's innermost dimension and the output
  // dimension q that is the input's innermost, so that both sides are read
  // or written in runs.
  int64_t q = 0;
  while (p.inStrides[q] != 1)
    ++q;
  constexpr int64_t kTile = 32;
  const int64_t sizeQ = p.sizes[q], sizeLast = p.sizes[last];
  const int64_t tilesQ = (sizeQ + kTile - 1) / kTile;
  const int64_t tilesLast = (sizeLast + kTile - 1) / kTile;
  const int64_t planes = p.outStrides[0] * p.sizes[0] / (sizeQ * sizeLast);
  const int64_t units = planes * tilesQ * tilesLast;
  const int64_t outStrideQ = p.outStrides[q], inStrideLast = p.inStrides[last];
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (int64_t unit = 0; unit < units; ++unit) {
    int64_t plane = unit / (tilesQ * tilesLast);
    int64_t tile = unit % (tilesQ * tilesLast);
    int64_t q0 = (tile / tilesLast) * kTile, l0 = (tile % tilesLast) * kTile;
    int64_t q1 = std::min(q0 + kTile, sizeQ),
            l1 = std::min(l0 + kTile, sizeLast);
    int64_t index = plane, inOffset = 0, outOffset = 0;
    for (int64_t d = last - 1; d >= 0; --d) {
      if (d == q)
        continue;
      int64_t i = index % p.sizes[d];
      index /= p.sizes[d];
      inOffset += i * p.inStrides[d];
      outOffset += i * p.outStrides[d];
    }
    for (int64_t a = q0; a < q1; ++a)
      for (int64_t b = l0; b < l1; ++b)
        y[outOffset + a * outStrideQ + b] = x[inOffset + a + b * inStrideLast];
  }
}

weft_rt_status weft_rt_cpu_transpose(weft_rt_context *ctx,
                                     const int64_t *params, const void *input,
                                     void *out) {
  static const char *const kernel = "transpose";
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  TransposeShape shape;
  WEFT_RT_TRY(parseTranspose(ctx, params, shape));
  const int64_t elementBytes = shape.elementBytes, rank = shape.rank,
                count = shape.count;
  const int64_t *dims = shape.dims, *perm = shape.perm;
  if (count == 0)
    return WEFT_RT_OK;
  WEFT_RT_TRY(requireBuffer(ctx, kernel, input, "input"));
  WEFT_RT_TRY(requireBuffer(ctx, kernel, out, "out"));
  Permutation p = simplify(dims, perm, rank);
  if (p.rank <= 1) {
    copyElements(out, input, count, elementBytes);
    return WEFT_RT_OK;
  }
  int nt = threadsFor(ctx, count);
  return visitElementSize(elementBytes, [&](auto zero) -> weft_rt_status {
    using E = decltype(zero);
    transposeAs(p, static_cast<const E *>(input), static_cast<E *>(out), nt);
    return WEFT_RT_OK;
  });
}

//===----------------------------------------------------------------------===//
// Slice
//===----------------------------------------------------------------------===//

weft_rt_status weft_rt_cpu_slice(weft_rt_context *ctx, const int64_t *params,
                                 const void *input, void *out) {
  static const char *const kernel = "slice";
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  SliceShape shape;
  WEFT_RT_TRY(parseSlice(ctx, params, shape));
  const int64_t elementBytes = shape.elementBytes, rank = shape.rank,
                outCount = shape.outCount;
  const int64_t *inDims = shape.inDims, *outDims = shape.outDims;
  const int64_t *starts = shape.starts, *steps = shape.steps;
  if (outCount == 0)
    return WEFT_RT_OK;
  WEFT_RT_TRY(requireBuffer(ctx, kernel, input, "input"));
  WEFT_RT_TRY(requireBuffer(ctx, kernel, out, "out"));
  if (rank == 0) {
    copyElements(out, input, 1, elementBytes);
    return WEFT_RT_OK;
  }
  int64_t inStrides[kMaxRank];
  rowMajorStrides(inDims, rank, inStrides);
  int64_t base = 0;
  for (int64_t d = 0; d < rank; ++d)
    base += starts[d] * inStrides[d];
  const int64_t last = rank - 1, length = outDims[last];
  const int64_t rows = outCount / length, step = steps[last];
  int nt = threadsFor(ctx, outCount);
  return visitElementSize(elementBytes, [&](auto zero) -> weft_rt_status {
    using E = decltype(zero);
    const E *x = static_cast<const E *>(input) + base;
    E *y = static_cast<E *>(out);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t row = 0; row < rows; ++row) {
      int64_t index = row, offset = 0;
      for (int64_t d = last - 1; d >= 0; --d) {
        offset += (index % outDims[d]) * steps[d] * inStrides[d];
        index /= outDims[d];
      }
      const E *src = x + offset;
      E *dst = y + row * length;
      if (step == 1) {
        std::copy(src, src + length, dst);
        continue;
      }
      for (int64_t i = 0; i < length; ++i)
        dst[i] = src[i * step];
    }
    return WEFT_RT_OK;
  });
}

//===----------------------------------------------------------------------===//
// Pad
//===----------------------------------------------------------------------===//

/// The input index output index `o` reads along a dimension of `size`
/// padded by `before`, or -1 for the constant.
static int64_t padSource(int64_t mode, int64_t o, int64_t before,
                         int64_t size) {
  int64_t i = o - before;
  if (i >= 0 && i < size)
    return i;
  switch (mode) {
  case kEdge:
    return i < 0 ? 0 : size - 1;
  case kWrap:
    return ((i % size) + size) % size;
  case kReflect: {
    // numpy's reflect: mirror about the end elements, period 2 (size - 1).
    if (size == 1)
      return 0;
    int64_t period = 2 * (size - 1);
    int64_t m = ((i % period) + period) % period;
    return m < size ? m : period - m;
  }
  default:
    return -1;
  }
}

weft_rt_status weft_rt_cpu_pad(weft_rt_context *ctx, const int64_t *params,
                               const void *input, const void *value,
                               void *out) {
  static const char *const kernel = "pad";
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  PadShape shape;
  WEFT_RT_TRY(parsePad(ctx, params, shape));
  const int64_t elementBytes = shape.elementBytes, mode = shape.mode,
                rank = shape.rank, inCount = shape.inCount,
                outCount = shape.outCount;
  const int64_t *inDims = shape.inDims, *pads = shape.pads;
  const int64_t *outDims = shape.outDims;
  if (outCount == 0)
    return WEFT_RT_OK;
  WEFT_RT_TRY(requireBuffer(ctx, kernel, out, "out"));
  if (inCount > 0)
    WEFT_RT_TRY(requireBuffer(ctx, kernel, input, "input"));
  // Each output index's source, per dimension.
  int64_t total = 0;
  for (int64_t d = 0; d < rank; ++d)
    total += outDims[d];
  ScratchBuffer sourceBuffer;
  WEFT_RT_TRY(sourceBuffer.allocate(ctx, kernel, total * 8, "index maps"));
  int64_t *sources[kMaxRank];
  int64_t *cursor = sourceBuffer.as<int64_t>();
  for (int64_t d = 0; d < rank; ++d) {
    sources[d] = cursor;
    for (int64_t o = 0; o < outDims[d]; ++o)
      cursor[o] = padSource(mode, o, pads[d], inDims[d]);
    cursor += outDims[d];
  }
  int64_t inStrides[kMaxRank];
  rowMajorStrides(inDims, rank, inStrides);
  int nt = threadsFor(ctx, outCount);
  return visitElementSize(elementBytes, [&](auto zero) -> weft_rt_status {
    using E = decltype(zero);
    E fill = {};
    if (value)
      std::memcpy(&fill, value, sizeof(E));
    const E *x = static_cast<const E *>(input);
    E *y = static_cast<E *>(out);
    if (rank == 0) {
      y[0] = x[0];
      return WEFT_RT_OK;
    }
    const int64_t last = rank - 1, length = outDims[last];
    const int64_t *lastSources = sources[last];
    // The run of the last dimension that copies the input unchanged.
    int64_t runBegin = std::clamp<int64_t>(pads[last], 0, length);
    int64_t runEnd =
        std::clamp<int64_t>(pads[last] + inDims[last], runBegin, length);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t row = 0; row < outCount / length; ++row) {
      E *dst = y + row * length;
      int64_t index = row, offset = 0;
      bool constantRow = false;
      for (int64_t d = last - 1; d >= 0; --d) {
        int64_t source = sources[d][index % outDims[d]];
        index /= outDims[d];
        constantRow |= source < 0;
        offset += source * inStrides[d];
      }
      if (constantRow) {
        std::fill(dst, dst + length, fill);
        continue;
      }
      const E *src = x + offset;
      for (int64_t o = 0; o < runBegin; ++o)
        dst[o] = lastSources[o] < 0 ? fill : src[lastSources[o]];
      if (runBegin < runEnd) {
        const E *run = src + lastSources[runBegin];
        std::copy(run, run + (runEnd - runBegin), dst + runBegin);
      }
      for (int64_t o = runEnd; o < length; ++o)
        dst[o] = lastSources[o] < 0 ? fill : src[lastSources[o]];
    }
    return WEFT_RT_OK;
  });
}

//===----------------------------------------------------------------------===//
// Tile
//===----------------------------------------------------------------------===//

weft_rt_status weft_rt_cpu_tile(weft_rt_context *ctx, const int64_t *params,
                                const void *input, void *out) {
  static const char *const kernel = "tile";
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  TileShape shape;
  WEFT_RT_TRY(parseTile(ctx, params, shape));
  const int64_t elementBytes = shape.elementBytes, rank = shape.rank,
                outCount = shape.outCount;
  const int64_t *inDims = shape.inDims, *repeats = shape.repeats;
  const int64_t *outDims = shape.outDims;
  if (outCount == 0)
    return WEFT_RT_OK;
  WEFT_RT_TRY(requireBuffer(ctx, kernel, input, "input"));
  WEFT_RT_TRY(requireBuffer(ctx, kernel, out, "out"));
  if (rank == 0) {
    copyElements(out, input, 1, elementBytes);
    return WEFT_RT_OK;
  }
  int64_t inStrides[kMaxRank];
  rowMajorStrides(inDims, rank, inStrides);
  const int64_t last = rank - 1, length = inDims[last];
  const int64_t copies = repeats[last], rowLength = outDims[last];
  int nt = threadsFor(ctx, outCount);
  return visitElementSize(elementBytes, [&](auto zero) -> weft_rt_status {
    using E = decltype(zero);
    const E *x = static_cast<const E *>(input);
    E *y = static_cast<E *>(out);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t row = 0; row < outCount / rowLength; ++row) {
      int64_t index = row, offset = 0;
      for (int64_t d = last - 1; d >= 0; --d) {
        offset += (index % outDims[d]) % inDims[d] * inStrides[d];
        index /= outDims[d];
      }
      E *dst = y + row * rowLength;
      for (int64_t c = 0; c < copies; ++c)
        std::copy(x + offset, x + offset + length, dst + c * length);
    }
    return WEFT_RT_OK;
  });
}

//===----------------------------------------------------------------------===//
// Trilu
//===----------------------------------------------------------------------===//

weft_rt_status weft_rt_cpu_trilu(weft_rt_context *ctx, const int64_t *params,
                                 const void *input, void *out) {
  static const char *const kernel = "trilu";
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  TriluShape shape;
  WEFT_RT_TRY(parseTrilu(ctx, params, shape));
  const int64_t elementBytes = shape.elementBytes, count = shape.count;
  const int64_t *dims = shape.dims;
  const bool upper = shape.upper;
  int64_t k = shape.k;
  if (count == 0)
    return WEFT_RT_OK;
  WEFT_RT_TRY(requireBuffer(ctx, kernel, input, "input"));
  WEFT_RT_TRY(requireBuffer(ctx, kernel, out, "out"));
  const int64_t rows = dims[1], cols = dims[2];
  // j - i spans [-(rows - 1), cols - 1]; clamping keeps i + k from
  // overflowing without changing which elements are kept.
  k = std::clamp<int64_t>(k, -rows, cols);
  int nt = threadsFor(ctx, count);
  return visitElementSize(elementBytes, [&](auto zero) -> weft_rt_status {
    using E = decltype(zero);
    const E *x = static_cast<const E *>(input);
    E *y = static_cast<E *>(out);
    const E zeroElement = {};
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t row = 0; row < dims[0] * rows; ++row) {
      int64_t i = row % rows;
      // Keep columns [keepBegin, keepEnd).
      int64_t keepBegin = upper ? std::clamp<int64_t>(i + k, 0, cols) : 0;
      int64_t keepEnd = upper ? cols : std::clamp<int64_t>(i + k + 1, 0, cols);
      const E *src = x + row * cols;
      E *dst = y + row * cols;
      std::fill(dst, dst + keepBegin, zeroElement);
      std::copy(src + keepBegin, src + keepEnd, dst + keepBegin);
      std::fill(dst + keepEnd, dst + cols, zeroElement);
    }
    return WEFT_RT_OK;
  });
}

//===----------------------------------------------------------------------===//
// Copy2d
//===----------------------------------------------------------------------===//

weft_rt_status weft_rt_cpu_copy2d(weft_rt_context *ctx, const int64_t *params,
                                  const void *src, void *dst) {
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  Copy2dShape shape;
  WEFT_RT_TRY(parseCopy2d(ctx, params, shape));
  if (shape.empty())
    return WEFT_RT_OK;
  const int64_t rows = shape.rows, rowBytes = shape.rowBytes;
  const int64_t srcOffset = shape.srcOffset, srcStride = shape.srcStride;
  const int64_t dstOffset = shape.dstOffset, dstStride = shape.dstStride;
  WEFT_RT_TRY(requireBuffer(ctx, "copy2d", src, "src"));
  WEFT_RT_TRY(requireBuffer(ctx, "copy2d", dst, "dst"));
  const char *from = static_cast<const char *>(src) + srcOffset;
  char *to = static_cast<char *>(dst) + dstOffset;
  if (srcStride == rowBytes && dstStride == rowBytes) {
    std::memcpy(to, from, static_cast<size_t>(rows * rowBytes));
    return WEFT_RT_OK;
  }
  int nt = threadsFor(ctx, rows * rowBytes / 4);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (int64_t row = 0; row < rows; ++row)
    std::memcpy(to + row * dstStride, from + row * srcStride,
                static_cast<size_t>(rowBytes));
  return WEFT_RT_OK;
}
