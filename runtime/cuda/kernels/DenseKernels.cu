//===- DenseKernels.cu - Hand-written dense kernels on CUDA ---------------===//
//
// The kernels behind weft_rt_cuda_pool, _batch_norm and _einsum, the
// integer matmul and the bias fill that precedes a float matmul's GEMM.
// Each follows its CPU namesake's arithmetic (runtime/cpu) so that results
// agree; parameters arrive checked (DenseParams.cpp).
//
//===----------------------------------------------------------------------===//

#include "cuda/kernels/DenseKernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <type_traits>

using namespace weft::rt::cuda;

namespace {

constexpr int kThreads = 256;

/// Blocks for a grid-stride loop over `count` items: enough to fill any GPU,
/// few enough that each thread does some work when there is plenty.
unsigned blocksFor(int64_t count, int threads = kThreads) {
  int64_t blocks = (count + threads - 1) / threads;
  if (blocks > (int64_t(1) << 16))
    blocks = int64_t(1) << 16;
  return blocks < 1 ? 1u : static_cast<unsigned>(blocks);
}

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

/// How an element type computes: Acc is the type sums and products are done
/// in (f32 for the half types), `lowest` the identity of a max.
template <typename T> struct Arith {
  using Acc = T;
  __device__ static Acc load(T value) { return value; }
  __device__ static T store(Acc value) { return value; }
  __device__ static Acc lowest() { return std::numeric_limits<T>::lowest(); }
};

template <> struct Arith<__half> {
  using Acc = float;
  __device__ static float load(__half value) { return __half2float(value); }
  __device__ static __half store(float value) { return __float2half_rn(value); }
  __device__ static float lowest() { return -65504.0f; }
};

template <> struct Arith<__nv_bfloat16> {
  using Acc = float;
  __device__ static float load(__nv_bfloat16 value) {
    return __bfloat162float(value);
  }
  __device__ static __nv_bfloat16 store(float value) {
    return __float2bfloat16_rn(value);
  }
  __device__ static float lowest() { return -3.38953139e38f; }
};

/// Calls fn(T{}) for a float dtype code; false for others.
template <typename Fn> bool visitFloat(int64_t dtype, Fn &&fn) {
  switch (dtype) {
  case WEFT_RT_F32:
    fn(float{});
    return true;
  case WEFT_RT_F64:
    fn(double{});
    return true;
  case WEFT_RT_F16:
    fn(__half{});
    return true;
  case WEFT_RT_BF16:
    fn(__nv_bfloat16{});
    return true;
  default:
    return false;
  }
}

//===----------------------------------------------------------------------===//
// Matmul helpers
//===----------------------------------------------------------------------===//

template <typename T>
__global__ void biasFillKernel(int64_t total, int64_t m, int64_t n,
                               const T *__restrict__ bias, int64_t rowStride,
                               int64_t colStride, bool scaled, double scale,
                               T *__restrict__ out) {
  using A = Arith<T>;
  using Acc = typename A::Acc;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       idx < total; idx += int64_t(gridDim.x) * blockDim.x) {
    int64_t j = idx % n, i = (idx / n) % m;
    if (!bias) {
      out[idx] = A::store(Acc(0));
      continue;
    }
    T value = bias[i * rowStride + j * colStride];
    out[idx] =
        scaled ? A::store(static_cast<Acc>(scale) * A::load(value)) : value;
  }
}

/// `value` converted to T, clamped to its range (NaN to 0), as the CPU
/// kernel's saturate.
template <typename T> __device__ T saturate(double value) {
  if (value != value)
    return T(0);
  if (value <= static_cast<double>(std::numeric_limits<T>::lowest()))
    return std::numeric_limits<T>::lowest();
  if (value >= static_cast<double>(std::numeric_limits<T>::max()))
    return std::numeric_limits<T>::max();
  return static_cast<T>(value);
}

/// One output element per thread; sums wrap in the unsigned type.
template <typename T>
__global__ void integerMatmulKernel(MatmulParams s, const T *__restrict__ a,
                                    const T *__restrict__ b,
                                    const T *__restrict__ bias,
                                    T *__restrict__ out) {
  using U = std::make_unsigned_t<T>;
  const bool exactScale = s.alpha == 1.0 && (s.beta == 1.0 || !bias);
  const int64_t total = s.batch * s.m * s.n;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       idx < total; idx += int64_t(gridDim.x) * blockDim.x) {
    int64_t j = idx % s.n, row = idx / s.n;
    int64_t i = row % s.m, batchIndex = row / s.m;
    int64_t aOffset = 0, bOffset = 0;
    for (int64_t d = s.rank - 1; d >= 0; --d) {
      int64_t c = batchIndex % s.batchDims[d];
      batchIndex /= s.batchDims[d];
      aOffset += c * s.aStrides[d];
      bOffset += c * s.bStrides[d];
    }
    const T *x = a + aOffset;
    const T *y = b + bOffset;
    U acc = 0;
    for (int64_t p = 0; p < s.k; ++p) {
      U lhs = static_cast<U>(s.transA ? x[p * s.m + i] : x[i * s.k + p]);
      U rhs = static_cast<U>(s.transB ? y[j * s.k + p] : y[p * s.n + j]);
      acc += lhs * rhs;
    }
    T biasValue = bias ? bias[i * s.biasRowStride + j * s.biasColStride] : T(0);
    if (exactScale) {
      out[idx] = static_cast<T>(acc + static_cast<U>(biasValue));
      continue;
    }
    double value = s.alpha * static_cast<double>(static_cast<T>(acc)) +
                   s.beta * static_cast<double>(biasValue);
    out[idx] = saturate<T>(value);
  }
}

//===----------------------------------------------------------------------===//
// Pool
//===----------------------------------------------------------------------===//

__device__ int64_t ceilDiv(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

/// The CPU kernel's Window: taps [first, last) read the input at start +
/// tap * dilation; the first `padded` taps lie in the padded input.
struct Window {
  int64_t start, first, last, padded;
};

__device__ Window windowOf(const PoolParams &s, int d, int64_t o) {
  Window w;
  int64_t dilation = s.dilations[d], k = s.kernel[d];
  w.start = o * s.strides[d] - s.padsBegin[d];
  w.first = w.start >= 0 ? 0 : min(ceilDiv(-w.start, dilation), k);
  w.last = max(min(ceilDiv(s.in[d] - w.start, dilation), k), int64_t(0));
  w.last = max(w.last, w.first);
  w.padded = max(min(ceilDiv(s.in[d] + s.padsEnd[d] - w.start, dilation), k),
                 int64_t(0));
  return w;
}

/// Taps are folded in the CPU kernel's order (depth, height, width), so that
/// f32 averages round alike.
template <typename T, bool isMax>
__global__ void poolKernel(PoolParams s, const T *__restrict__ x,
                           T *__restrict__ y) {
  using A = Arith<T>;
  using Acc = typename A::Acc;
  const int64_t total = s.outCount();
  const int64_t inPlane = s.inPlane();
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       idx < total; idx += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = idx;
    int64_t ow = rest % s.out[2];
    rest /= s.out[2];
    int64_t oh = rest % s.out[1];
    rest /= s.out[1];
    int64_t od = rest % s.out[0];
    int64_t plane = rest / s.out[0];
    Window wd = windowOf(s, 0, od), wh = windowOf(s, 1, oh),
           ww = windowOf(s, 2, ow);
    const T *base = x + plane * inPlane;
    Acc acc = isMax ? (s.global ? A::load(base[0]) : A::lowest()) : Acc(0);
    for (int64_t td = wd.first; td < wd.last; ++td) {
      int64_t id = wd.start + td * s.dilations[0];
      for (int64_t th = wh.first; th < wh.last; ++th) {
        int64_t ih = wh.start + th * s.dilations[1];
        const T *row = base + (id * s.in[1] + ih) * s.in[2];
        for (int64_t tw = ww.first; tw < ww.last; ++tw) {
          Acc v = A::load(row[ww.start + tw * s.dilations[2]]);
          if (isMax)
            acc = acc < v ? v : acc;
          else
            acc += v;
        }
      }
    }
    if (isMax) {
      y[idx] = A::store(acc);
      continue;
    }
    int64_t count = s.countIncludePad
                        ? wd.padded * wh.padded * ww.padded
                        : (wd.last - wd.first) * (wh.last - wh.first) *
                              (ww.last - ww.first);
    // A window wholly outside the (padded) input averages nothing.
    y[idx] =
        count > 0 ? A::store(acc / static_cast<Acc>(count)) : A::store(Acc(0));
  }
}

template <typename T>
cudaError_t poolAs(const PoolParams &s, const void *input, void *out,
                   cudaStream_t stream) {
  const T *x = static_cast<const T *>(input);
  T *y = static_cast<T *>(out);
  unsigned blocks = blocksFor(s.outCount());
  if (s.isMax)
    poolKernel<T, true><<<blocks, kThreads, 0, stream>>>(s, x, y);
  else if constexpr (!std::is_integral_v<T>)
    poolKernel<T, false><<<blocks, kThreads, 0, stream>>>(s, x, y);
  else
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

//===----------------------------------------------------------------------===//
// Batch normalization
//===----------------------------------------------------------------------===//

/// Blocks along x cover one plane's `inner` elements; blocks along y stride
/// over the N * C planes, each taking its channel's coefficients from
/// shared memory.
template <typename T>
__global__ void batchNormKernel(BatchNormParams s, const T *__restrict__ x,
                                const T *__restrict__ scale,
                                const T *__restrict__ bias,
                                const T *__restrict__ mean,
                                const T *__restrict__ var, T *__restrict__ y) {
  using A = Arith<T>;
  using Acc = typename A::Acc;
  __shared__ Acc coefficients[2];
  for (int64_t p = blockIdx.y; p < s.planes; p += gridDim.y) {
    __syncthreads();
    if (threadIdx.x == 0) {
      int64_t c = p % s.c;
      double factor = static_cast<double>(A::load(scale[c])) /
                      sqrt(static_cast<double>(A::load(var[c])) + s.epsilon);
      coefficients[0] = static_cast<Acc>(factor);
      coefficients[1] =
          static_cast<Acc>(static_cast<double>(A::load(bias[c])) -
                           static_cast<double>(A::load(mean[c])) * factor);
    }
    __syncthreads();
    const Acc a = coefficients[0], b = coefficients[1];
    const T *src = x + p * s.inner;
    T *dst = y + p * s.inner;
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
         i < s.inner; i += int64_t(gridDim.x) * blockDim.x)
      dst[i] = A::store(A::load(src[i]) * a + b);
  }
}

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

/// Floats sum in double (as the CPU kernel's strided sums), the half types
/// in f32, integers in their unsigned type so that overflow wraps.
template <typename T> struct EinsumAcc { using type = float; };
template <> struct EinsumAcc<float> { using type = double; };
template <> struct EinsumAcc<double> { using type = double; };
template <> struct EinsumAcc<int32_t> { using type = uint32_t; };
template <> struct EinsumAcc<int64_t> { using type = uint64_t; };

template <typename T, typename Acc> __device__ Acc einsumLoad(T value) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<Acc>(value);
  else
    return static_cast<Acc>(Arith<T>::load(value));
}

template <typename T, typename Acc> __device__ T einsumStore(Acc value) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(value);
  else
    return Arith<T>::store(static_cast<typename Arith<T>::Acc>(value));
}

template <typename T, bool twoInputs>
__global__ void einsumKernel(EinsumParams s, const T *__restrict__ x,
                             const T *__restrict__ y, T *__restrict__ out) {
  using Acc = typename EinsumAcc<T>::type;
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       o < s.outCount; o += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = o, offset0 = 0, offset1 = 0;
    for (int d = s.outRank - 1; d >= 0; --d) {
      int64_t c = rest % s.outSizes[d];
      rest /= s.outSizes[d];
      offset0 += c * s.outStrides[0][d];
      offset1 += c * s.outStrides[1][d];
    }
    // An odometer over the summed indices, innermost fastest.
    int64_t coords[kDenseMaxIndices];
    for (int d = 0; d < s.sumRank; ++d)
      coords[d] = 0;
    Acc acc = 0;
    for (int64_t step = 0; step < s.sumCount; ++step) {
      Acc term = einsumLoad<T, Acc>(x[offset0]);
      if (twoInputs)
        term = term * einsumLoad<T, Acc>(y[offset1]);
      acc += term;
      for (int d = s.sumRank - 1; d >= 0; --d) {
        offset0 += s.sumStrides[0][d];
        offset1 += s.sumStrides[1][d];
        if (++coords[d] < s.sumSizes[d])
          break;
        offset0 -= s.sumStrides[0][d] * s.sumSizes[d];
        offset1 -= s.sumStrides[1][d] * s.sumSizes[d];
        coords[d] = 0;
      }
    }
    out[o] = einsumStore<T, Acc>(acc);
  }
}

template <typename T>
cudaError_t einsumAs(const EinsumParams &s, const void *in0, const void *in1,
                     void *out, cudaStream_t stream) {
  const T *x = static_cast<const T *>(in0);
  const T *y = static_cast<const T *>(in1);
  T *z = static_cast<T *>(out);
  unsigned blocks = blocksFor(s.outCount);
  if (s.numInputs == 2)
    einsumKernel<T, true><<<blocks, kThreads, 0, stream>>>(s, x, y, z);
  else
    einsumKernel<T, false><<<blocks, kThreads, 0, stream>>>(s, x, y, z);
  return cudaGetLastError();
}

//===----------------------------------------------------------------------===//
// Padded planes
//===----------------------------------------------------------------------===//

template <typename T>
__global__ void padPlanesKernel(PadPlanesParams s, const T *__restrict__ x,
                                T *__restrict__ y) {
  const int64_t outPlane = s.out[0] * s.out[1] * s.out[2];
  const int64_t total = s.planes * outPlane;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       idx < total; idx += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = idx;
    int64_t w = rest % s.out[2] - s.begin[2];
    rest /= s.out[2];
    int64_t h = rest % s.out[1] - s.begin[1];
    rest /= s.out[1];
    int64_t d = rest % s.out[0] - s.begin[0];
    int64_t plane = rest / s.out[0];
    bool inside =
        w >= 0 && w < s.in[2] && h >= 0 && h < s.in[1] && d >= 0 && d < s.in[0];
    y[idx] =
        inside ? x[((plane * s.in[0] + d) * s.in[1] + h) * s.in[2] + w] : T(0);
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Launches
//===----------------------------------------------------------------------===//

cudaError_t weft::rt::cuda::launchMatmulBiasFill(const MatmulParams &s,
                                                 const void *bias, bool scaled,
                                                 double scale, void *out,
                                                 cudaStream_t stream) {
  int64_t total = s.batch * s.m * s.n;
  bool known = visitFloat(s.dtype, [&](auto zero) {
    using T = decltype(zero);
    biasFillKernel<T><<<blocksFor(total), kThreads, 0, stream>>>(
        total, s.m, s.n, static_cast<const T *>(bias), s.biasRowStride,
        s.biasColStride, scaled, scale, static_cast<T *>(out));
  });
  return known ? cudaGetLastError() : cudaErrorInvalidValue;
}

cudaError_t weft::rt::cuda::launchIntegerMatmul(const MatmulParams &s,
                                                const void *a, const void *b,
                                                const void *bias, void *out,
                                                cudaStream_t stream) {
  // As on the CPU, a zero beta drops the bias.
  if (s.beta == 0.0)
    bias = nullptr;
  unsigned blocks = blocksFor(s.batch * s.m * s.n);
  switch (s.dtype) {
  case WEFT_RT_I32:
    integerMatmulKernel<int32_t><<<blocks, kThreads, 0, stream>>>(
        s, static_cast<const int32_t *>(a), static_cast<const int32_t *>(b),
        static_cast<const int32_t *>(bias), static_cast<int32_t *>(out));
    return cudaGetLastError();
  case WEFT_RT_I64:
    integerMatmulKernel<int64_t><<<blocks, kThreads, 0, stream>>>(
        s, static_cast<const int64_t *>(a), static_cast<const int64_t *>(b),
        static_cast<const int64_t *>(bias), static_cast<int64_t *>(out));
    return cudaGetLastError();
  default:
    return cudaErrorInvalidValue;
  }
}

cudaError_t weft::rt::cuda::launchPool(const PoolParams &s, const void *input,
                                       void *out, cudaStream_t stream) {
  switch (s.dtype) {
  case WEFT_RT_I8:
    return poolAs<int8_t>(s, input, out, stream);
  case WEFT_RT_U8:
    return poolAs<uint8_t>(s, input, out, stream);
  default:
    break;
  }
  cudaError_t error = cudaErrorInvalidValue;
  visitFloat(s.dtype, [&](auto zero) {
    error = poolAs<decltype(zero)>(s, input, out, stream);
  });
  return error;
}

cudaError_t weft::rt::cuda::launchBatchNorm(const BatchNormParams &s,
                                            const void *x, const void *scale,
                                            const void *bias, const void *mean,
                                            const void *var, void *out,
                                            cudaStream_t stream) {
  // Narrow planes get narrow blocks; the y dimension is limited to 65535.
  int threads = kThreads;
  if (s.inner < kThreads)
    threads = static_cast<int>((s.inner + 31) / 32 * 32);
  dim3 grid(blocksFor(s.inner, threads) > 1024 ? 1024
                                               : blocksFor(s.inner, threads),
            static_cast<unsigned>(s.planes < 65535 ? s.planes : 65535));
  bool known = visitFloat(s.dtype, [&](auto zero) {
    using T = decltype(zero);
    batchNormKernel<T><<<grid, threads, 0, stream>>>(
        s, static_cast<const T *>(x), static_cast<const T *>(scale),
        static_cast<const T *>(bias), static_cast<const T *>(mean),
        static_cast<const T *>(var), static_cast<T *>(out));
  });
  return known ? cudaGetLastError() : cudaErrorInvalidValue;
}

cudaError_t weft::rt::cuda::launchEinsum(const EinsumParams &s, const void *in0,
                                         const void *in1, void *out,
                                         cudaStream_t stream) {
  switch (s.dtype) {
  case WEFT_RT_I32:
    return einsumAs<int32_t>(s, in0, in1, out, stream);
  case WEFT_RT_I64:
    return einsumAs<int64_t>(s, in0, in1, out, stream);
  default:
    break;
  }
  cudaError_t error = cudaErrorInvalidValue;
  visitFloat(s.dtype, [&](auto zero) {
    error = einsumAs<decltype(zero)>(s, in0, in1, out, stream);
  });
  return error;
}

cudaError_t weft::rt::cuda::launchPadPlanes(const PadPlanesParams &s,
                                            const void *input, void *out,
                                            cudaStream_t stream) {
  unsigned blocks = blocksFor(s.planes * s.out[0] * s.out[1] * s.out[2]);
  switch (s.elemBytes) {
  case 2:
    padPlanesKernel<uint16_t><<<blocks, kThreads, 0, stream>>>(
        s, static_cast<const uint16_t *>(input), static_cast<uint16_t *>(out));
    return cudaGetLastError();
  case 4:
    padPlanesKernel<uint32_t><<<blocks, kThreads, 0, stream>>>(
        s, static_cast<const uint32_t *>(input), static_cast<uint32_t *>(out));
    return cudaGetLastError();
  case 8:
    padPlanesKernel<uint64_t><<<blocks, kThreads, 0, stream>>>(
        s, static_cast<const uint64_t *>(input), static_cast<uint64_t *>(out));
    return cudaGetLastError();
  default:
    return cudaErrorInvalidValue;
  }
}
