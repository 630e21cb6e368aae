//===- Gemv.cpp - A row vector times a transposed matrix ------------------===//
//
// gemmF32's one-row products with B transposed (a classifier's Gemm: 1 x K
// times N x K^T): oneDNN 2.6 reads B at a rate well below the memory's, and
// such a B (5 MB for MobileNetV2's classifier) is rarely still in cache when
// the last layer runs. Four rows of B at a time, each with its own
// accumulator, with software prefetch a few lines ahead of each row's
// stream: 1x1000x1280 after 24 MB of other reads 96 -> 73 us on one thread
// (49.7 -> 42.7 us with B in cache); bench/kernels/README.md.
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"
#include "KernelSupport.h"
#include "VectorIsa.h"

#include <omp.h>

#include <algorithm>

using namespace weft::rt::cpu;

#define WEFT_RT_ISA_KERNEL "GemvKernel.inc"
#include "VectorIsaKernels.inc"

bool weft::rt::cpu::gemvTransposedB(int64_t n, int64_t k, float alpha,
                                    const float *x, const float *b,
                                    int64_t ldb, float beta, float *y,
                                    int threads) {
#ifdef WEFT_RT_VECTOR_ISA
  if (cpuVectors() == CpuVectors::None)
    return false;
  auto run = cpuVectors() == CpuVectors::Avx512 ? onAvx512::gemvRows
                                                 : onAvx2::gemvRows;
  const int team = static_cast<int>(std::min<int64_t>(threads, (n + 3) / 4));
#pragma omp parallel num_threads(team) if (team > 1)
  {
    // Blocks of four rows, split evenly.
    const int64_t size = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t blocks = (n + 3) / 4;
    const int64_t begin = std::min(n, blocks * t / size * 4);
    const int64_t end = std::min(n, blocks * (t + 1) / size * 4);
    if (begin < end)
      run(x, b, ldb, k, alpha, beta, y, begin, end);
  }
  return true;
#else
  (void)n, (void)k, (void)alpha, (void)x, (void)b, (void)ldb, (void)beta,
      (void)y, (void)threads;
  return false;
#endif
}
