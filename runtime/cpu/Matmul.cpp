//===- Matmul.cpp - Batched matrix products (MatMul, Gemm) ----------------===//
//
// weft_rt_cpu_matmul: numpy-style batched products with an optional scaled
// bias, on oneDNN's or OpenBLAS's GEMM for floats and plain loops for
// integers.
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"
#include "KernelParams.h"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <climits>
#include <limits>

using namespace weft::rt::cpu;

static const char *const kMatmul = "matmul";

//===----------------------------------------------------------------------===//
// GEMM backends
//===----------------------------------------------------------------------===//

/// The backend the kernels use for an f32 product of this shape. oneDNN's
/// JIT GEMM uses AVX-512 where the CPU has it, while Debian's OpenBLAS
/// 0.3.21 runs its Haswell (AVX2) kernels on current AMD and Intel cores;
/// weft-kernel-bench measured oneDNN ahead on every shape class (see
/// bench/kernels/README.md), so Auto is oneDNN.
static GemmBackend chooseBackend(int64_t m, int64_t n, int64_t k) {
  (void)m, (void)n, (void)k;
  return GemmBackend::OneDnn;
}

static bool fitsInt(int64_t value) { return value <= INT_MAX; }

/// Threads for one product: a thread costs a few microseconds to wake and
/// sync, worth it only for some 2^19 multiply-adds of work
/// (weft-kernel-bench: a 1x128x256 product took 1.6 us on one thread and
/// 5.3 us on two). A product of few rows is bound by reading B instead,
/// which takes about as long as 8 rows of multiply-adds: a classifier's
/// 1x1000x512 took 20 us on one thread and 11.5 on two with B in cache,
/// and in ResNet-18, whose other weights have pushed B out to memory, 82
/// us on one. Never more than OpenMP's current setting.
static int gemmThreads(int64_t m, int64_t n, int64_t k) {
  int allowed = omp_in_parallel() ? 1 : omp_get_max_threads();
  double work = std::max<double>(static_cast<double>(m), 8.0) *
                static_cast<double>(n) * static_cast<double>(k);
  double useful = work / static_cast<double>(1 << 19);
  if (useful < 2.0)
    return 1;
  return useful < allowed ? static_cast<int>(useful) : allowed;
}

weft_rt_status weft::rt::cpu::gemmF32(weft_rt_context *ctx, GemmBackend backend,
                                      bool transA, bool transB, int64_t m,
                                      int64_t n, int64_t k, float alpha,
                                      const float *a, int64_t lda,
                                      const float *b, int64_t ldb, float beta,
                                      float *c, int64_t ldc) {
  if (m == 0 || n == 0)
    return WEFT_RT_OK;
  if (k == 0 || alpha == 0.0f) {
    // Neither library is asked to read A or B when nothing comes of them.
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    return WEFT_RT_OK;
  }
  if (backend == GemmBackend::Auto)
    backend = chooseBackend(m, n, k);
  const int threadCount = gemmThreads(m, n, k);
  ScopedLibraryThreads threads(threadCount);
  bool intSized = fitsInt(m) && fitsInt(n) && fitsInt(k) && fitsInt(lda) &&
                  fitsInt(ldb) && fitsInt(ldc);
  if (backend == GemmBackend::OpenBlas && intSized) {
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                transB ? CblasTrans : CblasNoTrans, static_cast<int>(m),
                static_cast<int>(n), static_cast<int>(k), alpha, a,
                static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
                static_cast<int>(ldc));
    return WEFT_RT_OK;
  }
  // A classifier's one-row product with B transposed: our kernel reads B
  // faster (Gemv.cpp).
  if (m == 1 && transB && (!transA || lda == 1) &&
      gemvTransposedB(n, k, alpha, a, b, ldb, beta, c, threadCount))
    return WEFT_RT_OK;
  // oneDNN 2.6's AVX-512 sgemm takes a last column of C past a multiple of
  // 16 as if it were 16 more (a 7x7 plane's 49 cost as much as 64): one
  // column more is a product of its own, matrix times vector, for a fifth
  // less time on MobileNetV2's 7x7 pointwise layers (960x160x49: 78 -> 61
  // us; 1280x320x49: 207 -> 163) and ResNet's. Two or more extra columns
  // gain nothing (bench/kernels/README.md).
  const int64_t last = n > 16 && n % 16 == 1 ? n - 1 : n;
  dnnl_status_t status = dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', m,
                                    last, k, alpha, a, lda, b, ldb, beta, c,
                                    ldc);
  if (status == dnnl_success && last < n)
    status = dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', m, n - last,
                        k, alpha, a, lda, transB ? b + last * ldb : b + last,
                        ldb, beta, c + last, ldc);
  if (status == dnnl_success)
    return WEFT_RT_OK;
  // Batched products call this from several threads at once.
  weft_rt_status result;
#pragma omp critical(weftMatmulError)
  result = weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "matmul: oneDNN sgemm %lldx%lldx%lld failed with "
                        "status %d",
                        static_cast<long long>(m), static_cast<long long>(n),
                        static_cast<long long>(k), static_cast<int>(status));
  return result;
}

weft_rt_status weft::rt::cpu::gemmF64(weft_rt_context *ctx, bool transA,
                                      bool transB, int64_t m, int64_t n,
                                      int64_t k, double alpha, const double *a,
                                      int64_t lda, const double *b, int64_t ldb,
                                      double beta, double *c, int64_t ldc) {
  if (m == 0 || n == 0)
    return WEFT_RT_OK;
  if (k == 0 || alpha == 0.0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = beta == 0.0 ? 0.0 : beta * c[i * ldc + j];
    return WEFT_RT_OK;
  }
  if (!(fitsInt(m) && fitsInt(n) && fitsInt(k) && fitsInt(lda) &&
        fitsInt(ldb) && fitsInt(ldc)))
    return weft_rt_fail(ctx, WEFT_RT_UNSUPPORTED,
                        "matmul: f64 product %lldx%lldx%lld exceeds "
                        "OpenBLAS's 32-bit sizes",
                        static_cast<long long>(m), static_cast<long long>(n),
                        static_cast<long long>(k));
  ScopedLibraryThreads threads(gemmThreads(m, n, k));
  cblas_dgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
  return WEFT_RT_OK;
}

//===----------------------------------------------------------------------===//
// Batches (parseMatmul, in KernelParams.cpp, reads the block)
//===----------------------------------------------------------------------===//

/// Element offsets of batch `index` in a and b.
static void batchOffsets(const MatmulShape &s, int64_t index, int64_t &aOffset,
                         int64_t &bOffset) {
  aOffset = 0, bOffset = 0;
  for (int64_t d = s.rank - 1; d >= 0; --d) {
    int64_t dim = s.batchDims[d];
    int64_t i = index % dim;
    index /= dim;
    aOffset += i * s.aStrides[d];
    bOffset += i * s.bStrides[d];
  }
}

/// True when all batches share b and a's batches lie one after another, so
/// that the whole product is a single (batch * M) x N x K GEMM.
static bool foldsIntoRows(const MatmulShape &s) {
  if (s.transA)
    return false;
  int64_t expected = s.m * s.k;
  for (int64_t d = s.rank - 1; d >= 0; --d) {
    if (s.batchDims[d] == 1)
      continue;
    if (s.bStrides[d] != 0 || s.aStrides[d] != expected)
      return false;
    expected *= s.batchDims[d];
  }
  return true;
}

/// Writes beta * bias into every batch of out (rows of N), so that the GEMM
/// can accumulate onto it.
template <typename T>
static void fillBias(const MatmulShape &s, const T *bias, T beta, T *out,
                     int nt) {
  int64_t rows = s.batch * s.m;
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t i = r % s.m;
    T *row = out + r * s.n;
    const T *source = bias + i * s.biasRowStride;
    if (s.biasColStride == 1) {
      for (int64_t j = 0; j < s.n; ++j)
        row[j] = beta * source[j];
    } else {
      for (int64_t j = 0; j < s.n; ++j)
        row[j] = beta * source[j * s.biasColStride];
    }
  }
}

//===----------------------------------------------------------------------===//
// Float products
//===----------------------------------------------------------------------===//

template <typename T>
static weft_rt_status gemm(weft_rt_context *ctx, GemmBackend backend,
                           const MatmulShape &s, int64_t m, const T *a,
                           const T *b, T beta, T *c) {
  int64_t lda = s.transA ? m : s.k;
  int64_t ldb = s.transB ? s.k : s.n;
  if constexpr (std::is_same_v<T, float>)
    return gemmF32(ctx, backend, s.transA, s.transB, m, s.n, s.k,
                   static_cast<float>(s.alpha), a, lda, b, ldb, beta, c, s.n);
  else
    return gemmF64(ctx, s.transA, s.transB, m, s.n, s.k, s.alpha, a, lda, b,
                   ldb, beta, c, s.n);
}

template <typename T>
static weft_rt_status floatMatmul(weft_rt_context *ctx, GemmBackend backend,
                                  const MatmulShape &s, const T *a, const T *b,
                                  const T *bias, T *out) {
  bool withBias = bias && s.beta != 0.0;
  T beta = withBias ? T(1) : T(0);
  int64_t outCount = s.batch * s.m * s.n;
  if (withBias)
    fillBias(s, bias, static_cast<T>(s.beta), out, threadsFor(ctx, outCount));
  applyLibraryThreads(ctx);
  if (s.batch == 1 || foldsIntoRows(s))
    return gemm(ctx, backend, s, s.batch * s.m, a, b, beta, out);

  // Many small products (attention heads): one per thread beats splitting
  // each product over the threads.
  int threads = ctx->numThreads;
  int64_t flops = s.batch * s.m * s.n * std::max<int64_t>(s.k, 1);
  if (threads > 1 && s.batch >= threads && flops >= (1 << 16)) {
    weft_rt_status status = WEFT_RT_OK;
#pragma omp parallel num_threads(threads)
    {
      // Nested calls into the libraries must stay on this thread.
      omp_set_num_threads(1);
      weft_rt_status local = WEFT_RT_OK;
#pragma omp for schedule(static)
      for (int64_t i = 0; i < s.batch; ++i) {
        if (local != WEFT_RT_OK)
          continue;
        int64_t aOffset, bOffset;
        batchOffsets(s, i, aOffset, bOffset);
        local = gemm(ctx, backend, s, s.m, a + aOffset, b + bOffset, beta,
                     out + i * s.m * s.n);
      }
      if (local != WEFT_RT_OK) {
#pragma omp critical(weftMatmulStatus)
        status = local;
      }
    }
    return status;
  }
  for (int64_t i = 0; i < s.batch; ++i) {
    int64_t aOffset, bOffset;
    batchOffsets(s, i, aOffset, bOffset);
    WEFT_RT_TRY(gemm(ctx, backend, s, s.m, a + aOffset, b + bOffset, beta,
                     out + i * s.m * s.n));
  }
  return WEFT_RT_OK;
}

//===----------------------------------------------------------------------===//
// Integer products
//===----------------------------------------------------------------------===//

/// Integer products wrap around like ONNX Runtime's (two's complement), done
/// in the unsigned type so that overflow is defined.
template <typename T>
static weft_rt_status intMatmul(weft_rt_context *ctx, const MatmulShape &s,
                                const T *a, const T *b, const T *bias, T *out) {
  using U = std::make_unsigned_t<T>;
  // alpha 1 and beta 0 or 1 stay in integers; other scales go through
  // double and saturate.
  if (s.beta == 0.0)
    bias = nullptr;
  bool exactScale = s.alpha == 1.0 && (s.beta == 1.0 || !bias);
  int64_t work = s.batch * s.m * s.n * std::max<int64_t>(s.k, 1);
  int nt = threadsFor(ctx, work);
  int64_t rows = s.batch * s.m;
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    std::vector<U> acc(static_cast<size_t>(s.n));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      int64_t batchIndex = r / s.m, i = r % s.m;
      int64_t aOffset, bOffset;
      batchOffsets(s, batchIndex, aOffset, bOffset);
      const T *x = a + aOffset;
      const T *y = b + bOffset;
      std::fill(acc.begin(), acc.end(), U(0));
      for (int64_t p = 0; p < s.k; ++p) {
        U scale = static_cast<U>(s.transA ? x[p * s.m + i] : x[i * s.k + p]);
        if (s.transB) {
          for (int64_t j = 0; j < s.n; ++j)
            acc[j] += scale * static_cast<U>(y[j * s.k + p]);
        } else {
          const T *row = y + p * s.n;
          for (int64_t j = 0; j < s.n; ++j)
            acc[j] += scale * static_cast<U>(row[j]);
        }
      }
      T *o = out + r * s.n;
      for (int64_t j = 0; j < s.n; ++j) {
        T biasValue =
            bias ? bias[i * s.biasRowStride + j * s.biasColStride] : T(0);
        if (exactScale) {
          o[j] = static_cast<T>(acc[j] + static_cast<U>(biasValue));
          continue;
        }
        double value = s.alpha * static_cast<double>(static_cast<T>(acc[j])) +
                       s.beta * static_cast<double>(biasValue);
        o[j] = toInteger<T>(value);
      }
    }
  }
  return WEFT_RT_OK;
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

weft_rt_status weft::rt::cpu::matmulWith(weft_rt_context *ctx,
                                         GemmBackend backend,
                                         const int64_t *params, const void *a,
                                         const void *b, const void *bias,
                                         void *out) {
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  MatmulShape s;
  WEFT_RT_TRY(parseMatmul(ctx, params, kNumericDtypes, s));
  if (s.batch * s.m * s.n == 0)
    return WEFT_RT_OK;
  WEFT_RT_TRY(requireBuffer(ctx, kMatmul, out, "out"));
  if (s.k > 0) {
    WEFT_RT_TRY(requireBuffer(ctx, kMatmul, a, "a"));
    WEFT_RT_TRY(requireBuffer(ctx, kMatmul, b, "b"));
  }
  return visitDtype(s.dtype, [&](auto zero) -> weft_rt_status {
    using T = decltype(zero);
    if constexpr (std::is_floating_point_v<T>)
      return floatMatmul(ctx, backend, s, static_cast<const T *>(a),
                         static_cast<const T *>(b),
                         static_cast<const T *>(bias), static_cast<T *>(out));
    else if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>)
      return intMatmul(ctx, s, static_cast<const T *>(a),
                       static_cast<const T *>(b), static_cast<const T *>(bias),
                       static_cast<T *>(out));
    else
      return WEFT_RT_INTERNAL;
  });
}

weft_rt_status weft::rt::cpu::batchedMatmul(weft_rt_context *ctx, int64_t dtype,
                                            int64_t batch, int64_t m, int64_t n,
                                            int64_t k, const void *x,
                                            const void *y, void *out) {
  double one = 1.0, zero = 0.0;
  int64_t oneBits, zeroBits;
  std::memcpy(&oneBits, &one, sizeof(one));
  std::memcpy(&zeroBits, &zero, sizeof(zero));
  const int64_t params[] = {dtype,    m, n, k, 0,     0,     oneBits,
                            zeroBits, 0, 0, 1, batch, m * k, k * n};
  return matmulWith(ctx, GemmBackend::Auto, params, x, y, nullptr, out);
}

weft_rt_status weft_rt_cpu_matmul(weft_rt_context *ctx, const int64_t *params,
                                  const void *a, const void *b,
                                  const void *bias, void *out) {
  return matmulWith(ctx, weft::rt::cpu::GemmBackend::Auto, params, a, b, bias,
                    out);
}
