//===- MovementKernels.cu - Transpose, gathers, slices, pads on CUDA ------===//
//
// weft_rt_cuda_{transpose,gather,gather_elements,slice,pad,tile,trilu,
// copy2d}: one thread per output element (grid-stride, int64 indices) on
// elements of 1, 2, 4, 8 or 16 bytes, a shared-memory tiled transpose, and
// cudaMemcpy*Async for plain copies.
//
//===----------------------------------------------------------------------===//

#include "cuda/kernels/SimpleDevice.cuh"
#include "weft_rt_cuda.h"

#include <climits>
#include <cstdint>

using namespace weft::rt::cuda;
using namespace weft::rt::cuda::simple;

/// Calls launch.template operator()<E>() for the element type of `bytes`
/// (which the plan checked): integers of that size, a 16-byte vector.
template <typename Launch>
static weft_rt_status visitElement(int64_t bytes, Launch &&launch) {
  switch (bytes) {
  case 1:
    return launch(uint8_t{});
  case 2:
    return launch(uint16_t{});
  case 4:
    return launch(uint32_t{});
  case 8:
    return launch(static_cast<unsigned long long>(0));
  default:
    return launch(ulonglong2{});
  }
}

//===----------------------------------------------------------------------===//
// Strided copies: transposes that keep the innermost dimension, slices
//===----------------------------------------------------------------------===//

template <typename E>
__global__ void __launch_bounds__(kThreads)
    stridedCopyKernel(const E *__restrict__ x, E *__restrict__ y, int64_t count,
                      StridedLayout l) {
  for (int64_t i = globalThread(); i < count; i += gridThreads())
    y[i] = x[l.base + offsetOf(i, l.rank, l.sizes, l.strides)];
}

template <typename E>
static weft_rt_status launchStrided(weft_rt_context *ctx, cudaStream_t stream,
                                    const StridedLayout &layout, int64_t count,
                                    const void *input, void *out) {
  stridedCopyKernel<E><<<blocksFor(count, kThreads), kThreads, 0, stream>>>(
      static_cast<const E *>(input), static_cast<E *>(out), count, layout);
  WEFT_SIMPLE_CHECK_LAUNCH(ctx);
  return WEFT_RT_OK;
}

//===----------------------------------------------------------------------===//
// Transpose
//===----------------------------------------------------------------------===//

constexpr int kTile = 32, kTileRows = 8;

/// Tiles of the plane of output dimensions q (the input's innermost) and
/// last (the output's innermost): read along q, written along last, so
/// that both sides move whole runs. One block per tile of a plane.
template <typename E>
__global__ void __launch_bounds__(kTile *kTileRows)
    transposeTiledKernel(const E *__restrict__ x, E *__restrict__ y,
                         TransposePlan p, int64_t planes, int64_t tilesQ,
                         int64_t tilesLast) {
  __shared__ E tile[kTile][kTile + 1];
  const int last = p.rank - 1, q = p.tiledDim;
  const int64_t sizeQ = p.sizes[q], sizeLast = p.sizes[last];
  const int64_t inStrideLast = p.inStrides[last];
  const int64_t outStrideQ = p.outStrides[q];
  const int64_t units = planes * tilesQ * tilesLast;
  for (int64_t unit = blockIdx.x; unit < units; unit += gridDim.x) {
    const int64_t plane = unit / (tilesQ * tilesLast);
    const int64_t t = unit % (tilesQ * tilesLast);
    const int64_t q0 = (t / tilesLast) * kTile, l0 = (t % tilesLast) * kTile;
    int64_t index = plane, inOffset = 0, outOffset = 0;
    for (int d = last - 1; d >= 0; --d) {
      if (d == q)
        continue;
      int64_t i = index % p.sizes[d];
      index /= p.sizes[d];
      inOffset += i * p.inStrides[d];
      outOffset += i * p.outStrides[d];
    }
    for (int r = threadIdx.y; r < kTile; r += kTileRows) {
      int64_t a = q0 + threadIdx.x, b = l0 + r;
      if (a < sizeQ && b < sizeLast)
        tile[r][threadIdx.x] = x[inOffset + a + b * inStrideLast];
    }
    __syncthreads();
    for (int r = threadIdx.y; r < kTile; r += kTileRows) {
      int64_t a = q0 + r, b = l0 + threadIdx.x;
      if (a < sizeQ && b < sizeLast)
        y[outOffset + a * outStrideQ + b] = tile[threadIdx.x][r];
    }
    __syncthreads();
  }
}

template <typename E>
static weft_rt_status launchTiled(weft_rt_context *ctx, cudaStream_t stream,
                                  const TransposePlan &p, const void *input,
                                  void *out) {
  const int64_t sizeQ = p.sizes[p.tiledDim], sizeLast = p.sizes[p.rank - 1];
  const int64_t planes = p.count / (sizeQ * sizeLast);
  const int64_t tilesQ = (sizeQ + kTile - 1) / kTile;
  const int64_t tilesLast = (sizeLast + kTile - 1) / kTile;
  transposeTiledKernel<E>
      <<<blocksFor(planes * tilesQ * tilesLast, 1), dim3(kTile, kTileRows), 0,
         stream>>>(static_cast<const E *>(input), static_cast<E *>(out), p,
                   planes, tilesQ, tilesLast);
  WEFT_SIMPLE_CHECK_LAUNCH(ctx);
  return WEFT_RT_OK;
}

weft_rt_status weft_rt_cuda_transpose(weft_rt_context *ctx,
                                      const int64_t *params, const void *input,
                                      void *out) {
  TransposePlan plan;
  WEFT_SIMPLE_TRY(planTranspose(ctx, params, input, out, &plan));
  DeviceState *state = deviceStateOf(ctx, "transpose");
  if (!state)
    return WEFT_RT_INTERNAL;
  if (plan.count == 0)
    return WEFT_RT_OK;
  cudaStream_t stream = state->stream.get();
  switch (plan.path) {
  case TransposePlan::kCopy:
    WEFT_CUDA_CHECK(
        ctx, WEFT_RT_INTERNAL,
        cudaMemcpyAsync(out, input,
                        static_cast<size_t>(plan.count * plan.elementBytes),
                        cudaMemcpyDeviceToDevice, stream));
    return WEFT_RT_OK;
  case TransposePlan::kStrided:
    return visitElement(plan.elementBytes, [&](auto zero) {
      return launchStrided<decltype(zero)>(ctx, stream, plan.layout, plan.count,
                                           input, out);
    });
  default:
    return visitElement(plan.elementBytes, [&](auto zero) {
      return launchTiled<decltype(zero)>(ctx, stream, plan, input, out);
    });
  }
}

//===----------------------------------------------------------------------===//
// Slice
//===----------------------------------------------------------------------===//

weft_rt_status weft_rt_cuda_slice(weft_rt_context *ctx, const int64_t *params,
                                  const void *input, void *out) {
  SlicePlan plan;
  WEFT_SIMPLE_TRY(planSlice(ctx, params, input, out, &plan));
  DeviceState *state = deviceStateOf(ctx, "slice");
  if (!state)
    return WEFT_RT_INTERNAL;
  if (plan.count == 0)
    return WEFT_RT_OK;
  cudaStream_t stream = state->stream.get();
  return visitElement(plan.elementBytes, [&](auto zero) {
    return launchStrided<decltype(zero)>(ctx, stream, plan.layout, plan.count,
                                         input, out);
  });
}

//===----------------------------------------------------------------------===//
// Pad
//===----------------------------------------------------------------------===//

/// The input index output index `o` reads along a dimension of `size`
/// padded by `before`, or -1 for the constant (the CPU kernel's padSource).
__device__ static int64_t padSource(int64_t mode, int64_t o, int64_t before,
                                    int64_t size) {
  int64_t i = o - before;
  if (i >= 0 && i < size)
    return i;
  switch (mode) {
  case 2: // edge
    return i < 0 ? 0 : size - 1;
  case 3: // wrap
    return ((i % size) + size) % size;
  case 1: { // reflect: numpy's, about the end elements, period 2 (size - 1)
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

/// `value` is a device pointer to one element, or null for zero.
template <typename E>
__global__ void __launch_bounds__(kThreads)
    padKernel(const E *__restrict__ x, const E *__restrict__ value,
              E *__restrict__ y, PadPlan p) {
  const E fill = value ? *value : E{};
  for (int64_t i = globalThread(); i < p.count; i += gridThreads()) {
    int64_t index = i, offset = 0;
    bool constant = false;
    for (int d = p.rank - 1; d >= 0; --d) {
      int64_t source =
          padSource(p.mode, index % p.outDims[d], p.before[d], p.inDims[d]);
      index /= p.outDims[d];
      constant |= source < 0;
      offset += source * p.inStrides[d];
    }
    y[i] = constant ? fill : x[offset];
  }
}

weft_rt_status weft_rt_cuda_pad(weft_rt_context *ctx, const int64_t *params,
                                const void *input, const void *value,
                                void *out) {
  PadPlan plan;
  WEFT_SIMPLE_TRY(planPad(ctx, params, input, value, out, &plan));
  DeviceState *state = deviceStateOf(ctx, "pad");
  if (!state)
    return WEFT_RT_INTERNAL;
  if (plan.count == 0)
    return WEFT_RT_OK;
  cudaStream_t stream = state->stream.get();
  return visitElement(plan.elementBytes, [&](auto zero) -> weft_rt_status {
    using E = decltype(zero);
    padKernel<E><<<blocksFor(plan.count, kThreads), kThreads, 0, stream>>>(
        static_cast<const E *>(input), static_cast<const E *>(value),
        static_cast<E *>(out), plan);
    WEFT_SIMPLE_CHECK_LAUNCH(ctx);
    return WEFT_RT_OK;
  });
}

//===----------------------------------------------------------------------===//
// Tile
//===----------------------------------------------------------------------===//

template <typename E>
__global__ void __launch_bounds__(kThreads)
    tileKernel(const E *__restrict__ x, E *__restrict__ y, TilePlan p) {
  for (int64_t i = globalThread(); i < p.count; i += gridThreads()) {
    int64_t index = i, offset = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      offset += (index % p.outDims[d]) % p.inDims[d] * p.inStrides[d];
      index /= p.outDims[d];
    }
    y[i] = x[offset];
  }
}

weft_rt_status weft_rt_cuda_tile(weft_rt_context *ctx, const int64_t *params,
                                 const void *input, void *out) {
  TilePlan plan;
  WEFT_SIMPLE_TRY(planTile(ctx, params, input, out, &plan));
  DeviceState *state = deviceStateOf(ctx, "tile");
  if (!state)
    return WEFT_RT_INTERNAL;
  if (plan.count == 0)
    return WEFT_RT_OK;
  cudaStream_t stream = state->stream.get();
  return visitElement(plan.elementBytes, [&](auto zero) -> weft_rt_status {
    using E = decltype(zero);
    tileKernel<E><<<blocksFor(plan.count, kThreads), kThreads, 0, stream>>>(
        static_cast<const E *>(input), static_cast<E *>(out), plan);
    WEFT_SIMPLE_CHECK_LAUNCH(ctx);
    return WEFT_RT_OK;
  });
}

//===----------------------------------------------------------------------===//
// Trilu
//===----------------------------------------------------------------------===//

template <typename E>
__global__ void __launch_bounds__(kThreads)
    triluKernel(const E *__restrict__ x, E *__restrict__ y, TriluPlan p) {
  for (int64_t i = globalThread(); i < p.count; i += gridThreads()) {
    const int64_t col = i % p.cols, row = (i / p.cols) % p.rows;
    const int64_t diagonal = col - row;
    const bool keep = p.upper ? diagonal >= p.k : diagonal <= p.k;
    y[i] = keep ? x[i] : E{};
  }
}

weft_rt_status weft_rt_cuda_trilu(weft_rt_context *ctx, const int64_t *params,
                                  const void *input, void *out) {
  TriluPlan plan;
  WEFT_SIMPLE_TRY(planTrilu(ctx, params, input, out, &plan));
  DeviceState *state = deviceStateOf(ctx, "trilu");
  if (!state)
    return WEFT_RT_INTERNAL;
  if (plan.count == 0)
    return WEFT_RT_OK;
  cudaStream_t stream = state->stream.get();
  return visitElement(plan.elementBytes, [&](auto zero) -> weft_rt_status {
    using E = decltype(zero);
    triluKernel<E><<<blocksFor(plan.count, kThreads), kThreads, 0, stream>>>(
        static_cast<const E *>(input), static_cast<E *>(out), plan);
    WEFT_SIMPLE_CHECK_LAUNCH(ctx);
    return WEFT_RT_OK;
  });
}

//===----------------------------------------------------------------------===//
// Gather and GatherElements
//===----------------------------------------------------------------------===//

// The indices are in device memory: checking them on the host would need a
// copy and a synchronization, which kernels never do. An index out of
// [-size, size) therefore yields a zero element instead of failing.

template <typename E, typename I>
__global__ void __launch_bounds__(kThreads)
    gatherKernel(const E *__restrict__ x, const I *__restrict__ indices,
                 E *__restrict__ y, GatherPlan p) {
  for (int64_t u = globalThread(); u < p.count; u += gridThreads()) {
    const int64_t t = u % p.inner, rest = u / p.inner;
    const int64_t i = rest % p.indexCount, o = rest / p.indexCount;
    int64_t index = static_cast<int64_t>(indices[i]);
    if (index < 0)
      index += p.axis;
    y[u] = index >= 0 && index < p.axis ? x[(o * p.axis + index) * p.inner + t]
                                        : E{};
  }
}

weft_rt_status weft_rt_cuda_gather(weft_rt_context *ctx, const int64_t *params,
                                   const void *input, const void *indices,
                                   void *out) {
  GatherPlan plan;
  WEFT_SIMPLE_TRY(planGather(ctx, params, input, indices, out, &plan));
  DeviceState *state = deviceStateOf(ctx, "gather");
  if (!state)
    return WEFT_RT_INTERNAL;
  if (plan.count == 0)
    return WEFT_RT_OK;
  cudaStream_t stream = state->stream.get();
  return visitElement(plan.elementBytes, [&](auto zero) -> weft_rt_status {
    using E = decltype(zero);
    unsigned blocks = blocksFor(plan.count, kThreads);
    if (plan.wideIndices)
      gatherKernel<E, int64_t><<<blocks, kThreads, 0, stream>>>(
          static_cast<const E *>(input), static_cast<const int64_t *>(indices),
          static_cast<E *>(out), plan);
    else
      gatherKernel<E, int32_t><<<blocks, kThreads, 0, stream>>>(
          static_cast<const E *>(input), static_cast<const int32_t *>(indices),
          static_cast<E *>(out), plan);
    WEFT_SIMPLE_CHECK_LAUNCH(ctx);
    return WEFT_RT_OK;
  });
}

template <typename E, typename I>
__global__ void __launch_bounds__(kThreads)
    gatherElementsKernel(const E *__restrict__ x, const I *__restrict__ indices,
                         E *__restrict__ y, GatherElementsPlan p) {
  const int64_t size = p.inDims[p.axis];
  for (int64_t u = globalThread(); u < p.count; u += gridThreads()) {
    int64_t index = u, offset = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      int64_t c = index % p.indexDims[d];
      index /= p.indexDims[d];
      if (d != p.axis)
        offset += c * p.inStrides[d];
    }
    int64_t k = static_cast<int64_t>(indices[u]);
    if (k < 0)
      k += size;
    y[u] = k >= 0 && k < size ? x[offset + k * p.inStrides[p.axis]] : E{};
  }
}

weft_rt_status weft_rt_cuda_gather_elements(weft_rt_context *ctx,
                                            const int64_t *params,
                                            const void *input,
                                            const void *indices, void *out) {
  GatherElementsPlan plan;
  WEFT_SIMPLE_TRY(planGatherElements(ctx, params, input, indices, out, &plan));
  DeviceState *state = deviceStateOf(ctx, "gather_elements");
  if (!state)
    return WEFT_RT_INTERNAL;
  if (plan.count == 0)
    return WEFT_RT_OK;
  cudaStream_t stream = state->stream.get();
  return visitElement(plan.elementBytes, [&](auto zero) -> weft_rt_status {
    using E = decltype(zero);
    unsigned blocks = blocksFor(plan.count, kThreads);
    if (plan.wideIndices)
      gatherElementsKernel<E, int64_t><<<blocks, kThreads, 0, stream>>>(
          static_cast<const E *>(input), static_cast<const int64_t *>(indices),
          static_cast<E *>(out), plan);
    else
      gatherElementsKernel<E, int32_t><<<blocks, kThreads, 0, stream>>>(
          static_cast<const E *>(input), static_cast<const int32_t *>(indices),
          static_cast<E *>(out), plan);
    WEFT_SIMPLE_CHECK_LAUNCH(ctx);
    return WEFT_RT_OK;
  });
}

//===----------------------------------------------------------------------===//
// Copy2d
//===----------------------------------------------------------------------===//

weft_rt_status weft_rt_cuda_copy2d(weft_rt_context *ctx, const int64_t *params,
                                   const void *src, void *dst) {
  Copy2dPlan plan;
  WEFT_SIMPLE_TRY(planCopy2d(ctx, params, src, dst, &plan));
  DeviceState *state = deviceStateOf(ctx, "copy2d");
  if (!state)
    return WEFT_RT_INTERNAL;
  if (plan.count == 0)
    return WEFT_RT_OK;
  cudaStream_t stream = state->stream.get();
  const char *from = static_cast<const char *>(src) + plan.srcOffset;
  char *to = static_cast<char *>(dst) + plan.dstOffset;
  if (plan.rows == 1 ||
      (plan.srcStride == plan.rowBytes && plan.dstStride == plan.rowBytes)) {
    WEFT_CUDA_CHECK(ctx, WEFT_RT_INTERNAL,
                    cudaMemcpyAsync(to, from, static_cast<size_t>(plan.count),
                                    cudaMemcpyDeviceToDevice, stream));
    return WEFT_RT_OK;
  }
  // CUDA refuses pitches above cudaDevAttrMaxPitch (2^31 - 1 on current
  // GPUs); such rows are far apart enough to copy one by one.
  if (plan.srcStride <= INT_MAX && plan.dstStride <= INT_MAX) {
    WEFT_CUDA_CHECK(ctx, WEFT_RT_INTERNAL,
                    cudaMemcpy2DAsync(to, static_cast<size_t>(plan.dstStride),
                                      from, static_cast<size_t>(plan.srcStride),
                                      static_cast<size_t>(plan.rowBytes),
                                      static_cast<size_t>(plan.rows),
                                      cudaMemcpyDeviceToDevice, stream));
    return WEFT_RT_OK;
  }
  for (int64_t row = 0; row < plan.rows; ++row)
    WEFT_CUDA_CHECK(ctx, WEFT_RT_INTERNAL,
                    cudaMemcpyAsync(to + row * plan.dstStride,
                                    from + row * plan.srcStride,
                                    static_cast<size_t>(plan.rowBytes),
                                    cudaMemcpyDeviceToDevice, stream));
  return WEFT_RT_OK;
}
