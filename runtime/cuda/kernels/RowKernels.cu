//===- RowKernels.cu - Softmax, normalization and reductions on CUDA ------===//
//
// weft_rt_cuda_{softmax,normalize,reduce,arg_reduce}: groups of threads
// (a warp or a block) per row or output element, combined through shared
// memory, with the accumulators and edge cases of the CPU kernels.
//
//===----------------------------------------------------------------------===//

#include "cuda/kernels/SimpleDevice.cuh"
#include "weft_rt_cuda.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

using namespace weft::rt::cuda;
using namespace weft::rt::cuda::simple;

//===----------------------------------------------------------------------===//
// Group reductions
//===----------------------------------------------------------------------===//

namespace {
/// The threads of a block split into groups of `size` (a power of two)
/// threads, one group per output. When lanes are adjacent, a group is
/// neighbouring threads (they read neighbouring elements of one row);
/// otherwise neighbouring threads belong to neighbouring outputs (which
/// read neighbouring elements when the output's own elements are strided).
struct Group {
  int size, outputs, output, lane;
  bool lanesAdjacent;
  /// The shared-memory slot of lane `l` of this thread's output.
  __device__ int slot(int l) const {
    return lanesAdjacent ? output * size + l : l * outputs + output;
  }
};

/// Adds, multiplies, or keeps the larger or smaller of two partial results;
/// max and min keep NaN, as the CPU kernels' steps do.
struct AddCombine {
  template <typename A> __device__ A operator()(A a, A b) const {
    return a + b;
  }
};
struct MulCombine {
  template <typename A> __device__ A operator()(A a, A b) const {
    return a * b;
  }
};
struct MaxCombine {
  template <typename A> __device__ A operator()(A a, A b) const {
    return b > a || b != b ? b : a;
  }
};
struct MinCombine {
  template <typename A> __device__ A operator()(A a, A b) const {
    return b < a || b != b ? b : a;
  }
};
} // namespace

__device__ static Group makeGroup(int size, bool lanesAdjacent) {
  Group g;
  g.size = size;
  g.outputs = blockDim.x / size;
  g.lanesAdjacent = lanesAdjacent;
  int t = threadIdx.x;
  if (lanesAdjacent) {
    g.output = t / size;
    g.lane = t % size;
  } else {
    g.output = t % g.outputs;
    g.lane = t / g.outputs;
  }
  return g;
}

/// Combines the values of a group's lanes; every thread of the block must
/// call it (it synchronizes the block) and gets its group's result.
template <typename A, typename Combine>
__device__ static A groupReduce(A *shared, A value, const Group &g,
                                const Combine &combine) {
  shared[g.slot(g.lane)] = value;
  __syncthreads();
  for (int s = g.size / 2; s > 0; s >>= 1) {
    if (g.lane < s)
      shared[g.slot(g.lane)] =
          combine(shared[g.slot(g.lane)], shared[g.slot(g.lane + s)]);
    __syncthreads();
  }
  A result = shared[g.slot(0)];
  __syncthreads();
  return result;
}

/// The smallest power of two >= n, between 1 and kThreads.
static int groupSizeFor(int64_t n) {
  int size = 1;
  while (size < n && size < kThreads)
    size <<= 1;
  return size;
}

/// Lanes per output for outputs of `length` elements each: a warp (or
/// fewer for short ones), a whole block for long ones.
static int rowGroupSize(int64_t length) {
  return length > 1024 ? kThreads : groupSizeFor(std::min<int64_t>(length, 32));
}

/// Lanes per output when neighbouring outputs are neighbouring elements
/// (`run` of them in a row) and each output reduces `length` elements.
static int columnGroupSize(int64_t run, int64_t length) {
  int size = kThreads / groupSizeFor(std::min<int64_t>(run, 32));
  if (length < size)
    size = groupSizeFor(length);
  return size;
}

__device__ inline float expOf(float x) { return expf(x); }
__device__ inline double expOf(double x) { return exp(x); }
__device__ inline float logOf(float x) { return logf(x); }
__device__ inline double logOf(double x) { return log(x); }

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

// Softmax and normalization may run in place (out == input), so their
// pointers are not __restrict__: every element is read for the last time by
// the thread that then writes it.

/// Rows of n contiguous elements, one group of threads per row.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    softmaxRowsKernel(const T *x, T *y, int64_t rows, int64_t n, bool log,
                      int groupSize) {
  __shared__ alignas(16) unsigned char sharedBytes[kThreads * sizeof(T)];
  T *shared = reinterpret_cast<T *>(sharedBytes);
  const Group g = makeGroup(groupSize, true);
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * g.outputs;
       first < rows; first += static_cast<int64_t>(gridDim.x) * g.outputs) {
    const int64_t row = first + g.output;
    const bool valid = row < rows;
    const T *src = x + (valid ? row : 0) * n;
    // The CPU kernel's std::max(peak, v).
    T peak = -std::numeric_limits<T>::infinity();
    if (valid)
      for (int64_t j = g.lane; j < n; j += g.size)
        peak = peak < src[j] ? src[j] : peak;
    peak = groupReduce(shared, peak, g, MaxCombine());
    T sum = 0;
    if (valid)
      for (int64_t j = g.lane; j < n; j += g.size)
        sum += expOf(src[j] - peak);
    sum = groupReduce(shared, sum, g, AddCombine());
    if (!valid)
      continue;
    T *dst = y + row * n;
    if (log) {
      // x - max is exact where it matters; log(sum) is subtracted after.
      const T logSum = logOf(sum);
      for (int64_t j = g.lane; j < n; j += g.size)
        dst[j] = (src[j] - peak) - logSum;
    } else {
      const T inverse = T(1) / sum;
      for (int64_t j = g.lane; j < n; j += g.size)
        dst[j] = expOf(src[j] - peak) * inverse;
    }
  }
}

/// A strided axis: one thread per (outer, inner) column, neighbouring
/// threads on neighbouring columns.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    softmaxColumnsKernel(const T *x, T *y, int64_t outer, int64_t axis,
                         int64_t inner, bool log) {
  const int64_t columns = outer * inner;
  for (int64_t c = globalThread(); c < columns; c += gridThreads()) {
    const int64_t o = c / inner, i = c % inner;
    const T *src = x + o * axis * inner + i;
    T *dst = y + o * axis * inner + i;
    T peak = -std::numeric_limits<T>::infinity();
    for (int64_t a = 0; a < axis; ++a)
      peak = peak < src[a * inner] ? src[a * inner] : peak;
    T sum = 0;
    for (int64_t a = 0; a < axis; ++a)
      sum += expOf(src[a * inner] - peak);
    if (log) {
      const T logSum = logOf(sum);
      for (int64_t a = 0; a < axis; ++a)
        dst[a * inner] = (src[a * inner] - peak) - logSum;
    } else {
      const T inverse = T(1) / sum;
      for (int64_t a = 0; a < axis; ++a)
        dst[a * inner] = expOf(src[a * inner] - peak) * inverse;
    }
  }
}

template <typename T>
static weft_rt_status launchSoftmax(weft_rt_context *ctx, cudaStream_t stream,
                                    const SoftmaxPlan &p, const void *input,
                                    void *out) {
  const T *x = static_cast<const T *>(input);
  T *y = static_cast<T *>(out);
  if (p.inner == 1) {
    int size = rowGroupSize(p.axis);
    softmaxRowsKernel<T>
        <<<blocksFor(p.outer, kThreads / size), kThreads, 0, stream>>>(
            x, y, p.outer, p.axis, p.log, size);
  } else {
    softmaxColumnsKernel<T>
        <<<blocksFor(p.outer * p.inner, kThreads), kThreads, 0, stream>>>(
            x, y, p.outer, p.axis, p.inner, p.log);
  }
  WEFT_SIMPLE_CHECK_LAUNCH(ctx);
  return WEFT_RT_OK;
}

weft_rt_status weft_rt_cuda_softmax(weft_rt_context *ctx, const int64_t *params,
                                    const void *input, void *out) {
  SoftmaxPlan plan;
  WEFT_SIMPLE_TRY(planSoftmax(ctx, params, input, out, &plan));
  DeviceState *state = deviceStateOf(ctx, "softmax");
  if (!state)
    return WEFT_RT_INTERNAL;
  if (plan.count == 0)
    return WEFT_RT_OK;
  cudaStream_t stream = state->stream.get();
  if (plan.dtype == WEFT_RT_F64)
    return launchSoftmax<double>(ctx, stream, plan, input, out);
  return launchSoftmax<float>(ctx, stream, plan, input, out);
}

//===----------------------------------------------------------------------===//
// Layer and instance normalization
//===----------------------------------------------------------------------===//

/// One group per row: the mean, then the variance around it (two passes,
/// summed in double as the CPU kernel does), then the normalized row.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    normalizeKernel(const T *x, const T *scale, const T *bias, T *y, T *means,
                    T *inverses, NormalizePlan p, int groupSize) {
  __shared__ alignas(16) unsigned char sharedBytes[kThreads * sizeof(double)];
  double *shared = reinterpret_cast<double *>(sharedBytes);
  const Group g = makeGroup(groupSize, true);
  const int64_t n = p.size;
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * g.outputs;
       first < p.outer; first += static_cast<int64_t>(gridDim.x) * g.outputs) {
    const int64_t row = first + g.output;
    const bool valid = row < p.outer;
    const T *src = x + (valid ? row : 0) * n;
    double sum = 0.0;
    if (valid)
      for (int64_t j = g.lane; j < n; j += g.size)
        sum += static_cast<double>(src[j]);
    sum = groupReduce(shared, sum, g, AddCombine());
    const T center = static_cast<T>(sum / static_cast<double>(n));
    double squares = 0.0;
    if (valid)
      for (int64_t j = g.lane; j < n; j += g.size) {
        T d = src[j] - center;
        squares += static_cast<double>(d * d);
      }
    squares = groupReduce(shared, squares, g, AddCombine());
    if (!valid)
      continue;
    const T inverse = static_cast<T>(
        1.0 / sqrt(squares / static_cast<double>(n) + p.epsilon));
    if (g.lane == 0) {
      if (means)
        means[row] = center;
      if (inverses)
        inverses[row] = inverse;
    }
    T *dst = y + row * n;
    if (p.instance) {
      const int64_t channel = row % p.channels;
      const T a = scale[channel] * inverse;
      const T b = bias ? bias[channel] : T(0);
      for (int64_t j = g.lane; j < n; j += g.size)
        dst[j] = (src[j] - center) * a + b;
    } else if (bias) {
      for (int64_t j = g.lane; j < n; j += g.size)
        dst[j] = (src[j] - center) * inverse * scale[j] + bias[j];
    } else {
      for (int64_t j = g.lane; j < n; j += g.size)
        dst[j] = (src[j] - center) * inverse * scale[j];
    }
  }
}

template <typename T>
static weft_rt_status launchNormalize(weft_rt_context *ctx, cudaStream_t stream,
                                      const NormalizePlan &p, const void *x,
                                      const void *scale, const void *bias,
                                      void *out, void *means, void *inverses) {
  int size = rowGroupSize(p.size);
  normalizeKernel<T>
      <<<blocksFor(p.outer, kThreads / size), kThreads, 0, stream>>>(
          static_cast<const T *>(x), static_cast<const T *>(scale),
          static_cast<const T *>(bias), static_cast<T *>(out),
          static_cast<T *>(means), static_cast<T *>(inverses), p, size);
  WEFT_SIMPLE_CHECK_LAUNCH(ctx);
  return WEFT_RT_OK;
}

weft_rt_status weft_rt_cuda_normalize(weft_rt_context *ctx,
                                      const int64_t *params, const void *x,
                                      const void *scale, const void *bias,
                                      void *out, void *out_mean,
                                      void *out_inv_std_dev) {
  NormalizePlan plan;
  WEFT_SIMPLE_TRY(planNormalize(ctx, params, x, scale, bias, out, &plan));
  DeviceState *state = deviceStateOf(ctx, "normalize");
  if (!state)
    return WEFT_RT_INTERNAL;
  if (plan.count == 0)
    return WEFT_RT_OK;
  cudaStream_t stream = state->stream.get();
  if (plan.dtype == WEFT_RT_F64)
    return launchNormalize<double>(ctx, stream, plan, x, scale, bias, out,
                                   out_mean, out_inv_std_dev);
  return launchNormalize<float>(ctx, stream, plan, x, scale, bias, out,
                                out_mean, out_inv_std_dev);
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

namespace {
/// weft.reduce's kinds.
enum ReduceKind : int {
  kMean = 0,
  kSum,
  kMax,
  kMin,
  kProd,
  kL1,
  kL2,
  kLogSumExp,
  kSumSquare,
  kLogSum,
};

/// How elements are combined, Acc being the accumulator type: the CPU
/// kernel's ReduceOp, plus how two partial results combine.
template <typename T, typename Acc, int kind> struct ReduceOp {
  __device__ static Acc init() {
    if constexpr (kind == kProd)
      return Acc(1);
    else if constexpr (kind == kMax)
      return std::numeric_limits<Acc>::has_infinity
                 ? -std::numeric_limits<Acc>::infinity()
                 : std::numeric_limits<Acc>::lowest();
    else if constexpr (kind == kMin)
      return std::numeric_limits<Acc>::has_infinity
                 ? std::numeric_limits<Acc>::infinity()
                 : std::numeric_limits<Acc>::max();
    else
      return Acc(0);
  }
  __device__ static Acc step(Acc acc, T x, Acc shift) {
    Acc v = static_cast<Acc>(x);
    if constexpr (kind == kMax)
      return v > acc || v != v ? v : acc;
    else if constexpr (kind == kMin)
      return v < acc || v != v ? v : acc;
    else if constexpr (kind == kProd)
      return acc * v;
    else if constexpr (kind == kL1 && std::is_signed_v<T>)
      return acc + (x < T(0) ? Acc(0) - v : v);
    else if constexpr (kind == kL2 || kind == kSumSquare)
      return acc + v * v;
    else if constexpr (kind == kLogSumExp)
      return acc + exp(v - shift);
    else
      return acc + v;
  }
  __device__ Acc operator()(Acc a, Acc b) const {
    if constexpr (kind == kMax)
      return MaxCombine()(a, b);
    else if constexpr (kind == kMin)
      return MinCombine()(a, b);
    else if constexpr (kind == kProd)
      return a * b;
    else
      return a + b;
  }
};
} // namespace

/// A double converted to an integer type without undefined behaviour:
/// saturated, NaN to 0.
template <typename T> __device__ static T toInteger(double value) {
  if (value != value)
    return T(0);
  if (value <= static_cast<double>(std::numeric_limits<T>::lowest()))
    return std::numeric_limits<T>::lowest();
  if (value >= static_cast<double>(std::numeric_limits<T>::max()))
    return std::numeric_limits<T>::max();
  return static_cast<T>(value);
}

template <typename T, typename Acc> __device__ static T finish(Acc value) {
  if constexpr (std::is_integral_v<T> && std::is_floating_point_v<Acc>)
    return toInteger<T>(value);
  else
    return static_cast<T>(value);
}

/// The result from the accumulator, the count and the shift (the CPU
/// kernel's finishReduction).
template <typename T, typename Acc, int kind>
__device__ static T finishReduction(Acc acc, int64_t count, Acc shift) {
  if constexpr (kind == kMean) {
    if constexpr (std::is_integral_v<T>)
      // Two's complement wrap of the sum, then division toward zero.
      return static_cast<T>(static_cast<int64_t>(static_cast<T>(acc)) / count);
    else
      return static_cast<T>(acc / static_cast<Acc>(count));
  } else if constexpr (kind == kL2) {
    return finish<T>(sqrt(acc));
  } else if constexpr (kind == kLogSum) {
    return finish<T>(log(acc));
  } else if constexpr (kind == kLogSumExp) {
    return finish<T>(shift + log(acc));
  } else {
    return finish<T>(acc);
  }
}

/// One group of threads per output: the output's kept index gives its
/// base, each lane walks a share of the reduced indices, and the group
/// combines the lanes. log_sum_exp first finds the maximum the same way.
template <typename T, typename Acc, int kind>
__global__ void __launch_bounds__(kThreads)
    reduceKernel(const T *__restrict__ x, T *__restrict__ y, const ReducePlan p,
                 int groupSize) {
  __shared__ alignas(16) unsigned char sharedBytes[kThreads * sizeof(Acc)];
  Acc *shared = reinterpret_cast<Acc *>(sharedBytes);
  using Op = ReduceOp<T, Acc, kind>;
  const Group g = makeGroup(groupSize, !p.tailKept);
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * g.outputs;
       first < p.outCount;
       first += static_cast<int64_t>(gridDim.x) * g.outputs) {
    const int64_t o = first + g.output;
    const bool valid = o < p.outCount;
    const T *base =
        x + (valid ? offsetOf(o, p.keptRank, p.keptSizes, p.keptStrides) : 0);
    Acc shift = Acc(0);
    if constexpr (kind == kLogSumExp) {
      using MaxOp = ReduceOp<T, Acc, kMax>;
      Acc peak = MaxOp::init();
      if (valid)
        for (int64_t r = g.lane; r < p.reducedCount; r += g.size)
          peak = MaxOp::step(peak,
                             base[offsetOf(r, p.reducedRank, p.reducedSizes,
                                           p.reducedStrides)],
                             Acc(0));
      peak = groupReduce(shared, peak, g, MaxOp());
      // Rows of infinities keep their value rather than become NaN.
      shift = isinf(peak) ? Acc(0) : peak;
    }
    Acc acc = Op::init();
    if (valid)
      for (int64_t r = g.lane; r < p.reducedCount; r += g.size)
        acc = Op::step(
            acc,
            base[offsetOf(r, p.reducedRank, p.reducedSizes, p.reducedStrides)],
            shift);
    acc = groupReduce(shared, acc, g, Op());
    if (valid && g.lane == 0)
      y[o] = finishReduction<T, Acc, kind>(acc, p.reducedCount, shift);
  }
}

template <typename T, typename Acc, int kind>
static weft_rt_status launchReduceAs(weft_rt_context *ctx, cudaStream_t stream,
                                     const ReducePlan &p, const void *input,
                                     void *out) {
  int size = p.tailKept ? columnGroupSize(p.tail, p.reducedCount)
                        : rowGroupSize(p.reducedCount);
  reduceKernel<T, Acc, kind>
      <<<blocksFor(p.outCount, kThreads / size), kThreads, 0, stream>>>(
          static_cast<const T *>(input), static_cast<T *>(out), p, size);
  WEFT_SIMPLE_CHECK_LAUNCH(ctx);
  return WEFT_RT_OK;
}

/// The accumulator types of the CPU kernel: T for max/min, double for
/// floats and for integer reductions with a logarithm or root, uint64 for
/// integer sums and products (which wrap).
template <typename T, int kind>
static weft_rt_status launchReduceKind(weft_rt_context *ctx,
                                       cudaStream_t stream, const ReducePlan &p,
                                       const void *input, void *out) {
  if constexpr (kind == kMax || kind == kMin)
    return launchReduceAs<T, T, kind>(ctx, stream, p, input, out);
  else if constexpr (std::is_floating_point_v<T> || kind == kL2 ||
                     kind == kLogSum || kind == kLogSumExp)
    return launchReduceAs<T, double, kind>(ctx, stream, p, input, out);
  else
    return launchReduceAs<T, uint64_t, kind>(ctx, stream, p, input, out);
}

template <typename T>
static weft_rt_status launchReduce(weft_rt_context *ctx, cudaStream_t stream,
                                   const ReducePlan &p, const void *input,
                                   void *out) {
  // Bytes only reduce by max and min (planReduce refuses the rest).
  if constexpr (sizeof(T) == 1) {
    if (p.kind == kMax)
      return launchReduceKind<T, kMax>(ctx, stream, p, input, out);
    if (p.kind == kMin)
      return launchReduceKind<T, kMin>(ctx, stream, p, input, out);
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "reduce: kind %lld reached the byte kernels",
                        static_cast<long long>(p.kind));
  } else {
    switch (p.kind) {
    case kMean:
      return launchReduceKind<T, kMean>(ctx, stream, p, input, out);
    case kSum:
      return launchReduceKind<T, kSum>(ctx, stream, p, input, out);
    case kMax:
      return launchReduceKind<T, kMax>(ctx, stream, p, input, out);
    case kMin:
      return launchReduceKind<T, kMin>(ctx, stream, p, input, out);
    case kProd:
      return launchReduceKind<T, kProd>(ctx, stream, p, input, out);
    case kL1:
      return launchReduceKind<T, kL1>(ctx, stream, p, input, out);
    case kL2:
      return launchReduceKind<T, kL2>(ctx, stream, p, input, out);
    case kLogSumExp:
      return launchReduceKind<T, kLogSumExp>(ctx, stream, p, input, out);
    case kSumSquare:
      return launchReduceKind<T, kSumSquare>(ctx, stream, p, input, out);
    default:
      return launchReduceKind<T, kLogSum>(ctx, stream, p, input, out);
    }
  }
}

/// Writes `value` into count elements (reductions over nothing).
template <typename E>
__global__ void __launch_bounds__(kThreads)
    fillKernel(E *__restrict__ y, int64_t count, E value) {
  for (int64_t i = globalThread(); i < count; i += gridThreads())
    y[i] = value;
}

template <typename E>
static weft_rt_status launchFill(weft_rt_context *ctx, cudaStream_t stream,
                                 void *out, int64_t count,
                                 const unsigned char *bytes) {
  E value;
  std::memcpy(&value, bytes, sizeof(E));
  fillKernel<E><<<blocksFor(count, kThreads), kThreads, 0, stream>>>(
      static_cast<E *>(out), count, value);
  WEFT_SIMPLE_CHECK_LAUNCH(ctx);
  return WEFT_RT_OK;
}

weft_rt_status weft_rt_cuda_reduce(weft_rt_context *ctx, const int64_t *params,
                                   const void *input, void *out) {
  ReducePlan plan;
  WEFT_SIMPLE_TRY(planReduce(ctx, params, input, out, &plan));
  DeviceState *state = deviceStateOf(ctx, "reduce");
  if (!state)
    return WEFT_RT_INTERNAL;
  if (plan.outCount == 0)
    return WEFT_RT_OK;
  cudaStream_t stream = state->stream.get();
  if (plan.fill) {
    switch (weft_rt_dtype_size(static_cast<weft_rt_dtype>(plan.dtype))) {
    case 1:
      return launchFill<uint8_t>(ctx, stream, out, plan.outCount,
                                 plan.fillBytes);
    case 4:
      return launchFill<uint32_t>(ctx, stream, out, plan.outCount,
                                  plan.fillBytes);
    default:
      return launchFill<uint64_t>(ctx, stream, out, plan.outCount,
                                  plan.fillBytes);
    }
  }
  switch (plan.dtype) {
  case WEFT_RT_F32:
    return launchReduce<float>(ctx, stream, plan, input, out);
  case WEFT_RT_F64:
    return launchReduce<double>(ctx, stream, plan, input, out);
  case WEFT_RT_I32:
    return launchReduce<int32_t>(ctx, stream, plan, input, out);
  case WEFT_RT_I64:
    return launchReduce<int64_t>(ctx, stream, plan, input, out);
  case WEFT_RT_I8:
    return launchReduce<int8_t>(ctx, stream, plan, input, out);
  default:
    return launchReduce<uint8_t>(ctx, stream, plan, input, out);
  }
}

//===----------------------------------------------------------------------===//
// ArgMax / ArgMin
//===----------------------------------------------------------------------===//

namespace {
/// A candidate of an arg reduction; `any` is false for lanes that saw
/// nothing.
template <typename T> struct ArgBest {
  T value;
  int64_t index;
  bool nan, any;
};

/// Picks the better of two candidates so that the result is the CPU
/// kernel's sequential one in any order of combination: the first (or with
/// selectLast the last) NaN if there is one, else the first (last) index of
/// the extreme.
template <typename T, bool isMax> struct ArgCombine {
  bool selectLast;
  __device__ bool earlier(const ArgBest<T> &a, const ArgBest<T> &b) const {
    return selectLast ? a.index > b.index : a.index < b.index;
  }
  __device__ ArgBest<T> operator()(ArgBest<T> a, ArgBest<T> b) const {
    if (!a.any)
      return b;
    if (!b.any)
      return a;
    if (a.nan || b.nan) {
      if (a.nan && b.nan)
        return earlier(a, b) ? a : b;
      return a.nan ? a : b;
    }
    if (a.value == b.value)
      return earlier(a, b) ? a : b;
    bool aBetter = isMax ? a.value > b.value : a.value < b.value;
    return aBetter ? a : b;
  }
};
} // namespace

template <typename T, bool isMax>
__global__ void __launch_bounds__(kThreads)
    argReduceKernel(const T *__restrict__ x, int64_t *__restrict__ y,
                    int64_t outer, int64_t axis, int64_t inner, bool selectLast,
                    int groupSize) {
  __shared__ alignas(
      16) unsigned char sharedBytes[kThreads * sizeof(ArgBest<T>)];
  ArgBest<T> *shared = reinterpret_cast<ArgBest<T> *>(sharedBytes);
  const ArgCombine<T, isMax> combine{selectLast};
  const Group g = makeGroup(groupSize, inner == 1);
  const int64_t count = outer * inner;
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * g.outputs;
       first < count; first += static_cast<int64_t>(gridDim.x) * g.outputs) {
    const int64_t o = first + g.output;
    const bool valid = o < count;
    ArgBest<T> best{T(), 0, false, false};
    if (valid) {
      const T *column = x + (o / inner) * axis * inner + o % inner;
      for (int64_t a = g.lane; a < axis; a += g.size) {
        T v = column[a * inner];
        best = combine(best, ArgBest<T>{v, a, v != v, true});
      }
    }
    best = groupReduce(shared, best, g, combine);
    if (valid && g.lane == 0)
      y[o] = best.index;
  }
}

template <typename T>
static weft_rt_status launchArgReduce(weft_rt_context *ctx, cudaStream_t stream,
                                      const ArgReducePlan &p, const void *input,
                                      void *out) {
  int size =
      p.inner == 1 ? rowGroupSize(p.axis) : columnGroupSize(p.inner, p.axis);
  unsigned blocks = blocksFor(p.count, kThreads / size);
  const T *x = static_cast<const T *>(input);
  int64_t *y = static_cast<int64_t *>(out);
  if (p.kind == 0)
    argReduceKernel<T, true><<<blocks, kThreads, 0, stream>>>(
        x, y, p.outer, p.axis, p.inner, p.selectLast, size);
  else
    argReduceKernel<T, false><<<blocks, kThreads, 0, stream>>>(
        x, y, p.outer, p.axis, p.inner, p.selectLast, size);
  WEFT_SIMPLE_CHECK_LAUNCH(ctx);
  return WEFT_RT_OK;
}

weft_rt_status weft_rt_cuda_arg_reduce(weft_rt_context *ctx,
                                       const int64_t *params, const void *input,
                                       void *out) {
  ArgReducePlan plan;
  WEFT_SIMPLE_TRY(planArgReduce(ctx, params, input, out, &plan));
  DeviceState *state = deviceStateOf(ctx, "arg_reduce");
  if (!state)
    return WEFT_RT_INTERNAL;
  if (plan.count == 0)
    return WEFT_RT_OK;
  cudaStream_t stream = state->stream.get();
  switch (plan.dtype) {
  case WEFT_RT_F32:
    return launchArgReduce<float>(ctx, stream, plan, input, out);
  case WEFT_RT_F64:
    return launchArgReduce<double>(ctx, stream, plan, input, out);
  case WEFT_RT_I32:
    return launchArgReduce<int32_t>(ctx, stream, plan, input, out);
  case WEFT_RT_I64:
    return launchArgReduce<int64_t>(ctx, stream, plan, input, out);
  case WEFT_RT_I8:
    return launchArgReduce<int8_t>(ctx, stream, plan, input, out);
  default:
    return launchArgReduce<uint8_t>(ctx, stream, plan, input, out);
  }
}
