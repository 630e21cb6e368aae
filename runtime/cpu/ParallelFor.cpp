//===- ParallelFor.cpp - Generated loop nests on the kernels' threads ------===//
//
// weft_rt_parallel_for runs a generated loop nest's outlined body on the same
// OpenMP team (libgomp) that our kernels, OpenBLAS and oneDNN use, so that a
// program has one pool of threads, sized by the context's thread count.
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.h"

#include <omp.h>

#include <algorithm>
#include <limits>

using namespace weft::rt::cpu;

namespace {
int64_t totalWork(int64_t count, int64_t workPerItem) {
  workPerItem = std::max<int64_t>(workPerItem, 1);
  if (count > std::numeric_limits<int64_t>::max() / workPerItem)
    return std::numeric_limits<int64_t>::max();
  return count * workPerItem;
}
} // namespace

void weft_rt_parallel_for(weft_rt_context *ctx, int64_t count,
                          int64_t work_per_item, weft_rt_loop_body body,
                          int8_t *arena_allocated, int8_t *arena_aligned,
                          int64_t arena_offset, int64_t arena_size,
                          int64_t arena_stride, int8_t *weights_allocated,
                          int8_t *weights_aligned, int64_t weights_offset,
                          int64_t weights_size, int64_t weights_stride) {
  if (count <= 0)
    return;
  int threads = 1;
  if (ctx && !omp_in_parallel())
    threads = threadsFor(ctx, totalWork(count, work_per_item));
  threads = static_cast<int>(std::min<int64_t>(threads, count));
  auto run = [&](int64_t begin, int64_t end) {
    body(ctx, arena_allocated, arena_aligned, arena_offset, arena_size,
         arena_stride, weights_allocated, weights_aligned, weights_offset,
         weights_size, weights_stride, begin, end);
  };
  if (threads <= 1) {
    run(0, count);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    // Contiguous ranges, sizes differing by at most one item.
    int64_t team = omp_get_num_threads(), t = omp_get_thread_num();
    int64_t begin = count / team * t + std::min<int64_t>(t, count % team);
    int64_t end = begin + count / team + (t < count % team ? 1 : 0);
    if (begin < end)
      run(begin, end);
  }
}

int32_t weft_rt_cpu_vector_bits(void) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  static const int32_t bits = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512cd") &&
        __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
      return 512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
      return 256;
    return 128;
  }();
  return bits;
#else
  return 128;
#endif
}
