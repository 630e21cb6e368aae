//===- KernelSupport.h - Shared helpers of the CPU kernels ------*- C++ -*-===//
//
// Reading and validating parameter blocks, checked size arithmetic, dtype
// dispatch, thread counts and the per-op cache; private to runtime/cpu.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CPU_KERNELSUPPORT_H
#define WEFT_RUNTIME_CPU_KERNELSUPPORT_H

#include "../core/Context.h"

#include <omp.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

namespace weft::rt::cpu {

/// The largest rank a kernel accepts. ONNX models stay far below; the bound
/// keeps a corrupt rank from making a kernel read far past its block.
constexpr int64_t kMaxRank = 16;

/// Fails the calling kernel with WEFT_RT_INVALID_ARGUMENT when `cond` is
/// false; the message names the kernel and what is wrong.
#define WEFT_RT_REQUIRE(ctx, cond, ...)                                        \
  do {                                                                         \
    if (!(cond))                                                               \
      return weft_rt_fail((ctx), WEFT_RT_INVALID_ARGUMENT, __VA_ARGS__);       \
  } while (0)

/// Returns from the calling function when `expr` yields a failing status.
#define WEFT_RT_TRY(expr)                                                      \
  do {                                                                         \
    weft_rt_status weftStatus = (expr);                                        \
    if (weftStatus != WEFT_RT_OK)                                              \
      return weftStatus;                                                       \
  } while (0)

/// Reads a parameter block front to back. The block carries no length, so
/// callers validate each count (a rank, a number of inputs) before reading
/// the arrays it sizes.
class ParamReader {
public:
  explicit ParamReader(const int64_t *params) : begin(params), cursor(params) {}
  int64_t next() { return *cursor++; }
  double nextDouble() {
    double value;
    int64_t bits = next();
    std::memcpy(&value, &bits, sizeof(value));
    return value;
  }
  const int64_t *array(int64_t count) {
    const int64_t *start = cursor;
    cursor += count;
    return start;
  }
  /// How many int64 words were read so far.
  size_t consumed() const { return static_cast<size_t>(cursor - begin); }

private:
  const int64_t *begin;
  const int64_t *cursor;
};

/// a * b, or false when it overflows int64 or either factor is negative.
inline bool checkedMul(int64_t a, int64_t b, int64_t &out) {
  if (a < 0 || b < 0)
    return false;
  return !__builtin_mul_overflow(a, b, &out);
}

/// The product of dims[0..count), or false on a negative dim or overflow.
inline bool checkedProduct(const int64_t *dims, int64_t count, int64_t &out) {
  int64_t product = 1;
  for (int64_t i = 0; i < count; ++i)
    if (!checkedMul(product, dims[i], product))
      return false;
  out = product;
  return true;
}

/// Element sizes the byte-moving kernels accept.
inline bool isElementSize(int64_t bytes) {
  return bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8 || bytes == 16;
}

/// Dtype sets, as masks of 1 << dtype code.
constexpr uint32_t dtypeBit(weft_rt_dtype dtype) { return 1u << dtype; }
constexpr uint32_t kFloatDtypes = dtypeBit(WEFT_RT_F32) | dtypeBit(WEFT_RT_F64);
constexpr uint32_t kNumericDtypes =
    kFloatDtypes | dtypeBit(WEFT_RT_I32) | dtypeBit(WEFT_RT_I64);
constexpr uint32_t kByteDtypes = dtypeBit(WEFT_RT_I8) | dtypeBit(WEFT_RT_U8);

/// Fails unless `dtype` (a parameter-block word) is in `allowed`: unknown
/// codes are invalid arguments, known ones this kernel lacks unsupported.
weft_rt_status checkDtype(weft_rt_context *ctx, const char *kernel,
                          int64_t dtype, uint32_t allowed);

/// Calls fn(T{}) with the C++ type of `dtype`, which checkDtype accepted.
template <typename Fn> weft_rt_status visitDtype(int64_t dtype, Fn &&fn) {
  switch (dtype) {
  case WEFT_RT_F32:
    return fn(float{});
  case WEFT_RT_F64:
    return fn(double{});
  case WEFT_RT_I32:
    return fn(int32_t{});
  case WEFT_RT_I64:
    return fn(int64_t{});
  case WEFT_RT_I8:
    return fn(int8_t{});
  case WEFT_RT_U8:
  case WEFT_RT_BOOL:
    return fn(uint8_t{});
  default:
    return WEFT_RT_INTERNAL;
  }
}

/// Fails when a buffer that must hold data is NULL.
inline weft_rt_status requireBuffer(weft_rt_context *ctx, const char *kernel,
                                    const void *buffer, const char *name) {
  if (buffer)
    return WEFT_RT_OK;
  return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT, "%s: %s is NULL", kernel,
                      name);
}

/// Units of cheap work (about an element touched each) a thread needs
/// before a second one pays for waking it. libgomp's fork and join of two
/// threads costs about 0.4 us here while they spin (GOMP_SPINCOUNT), and
/// 8192 elements take one thread 1 to 2 us: at 2^13, two threads took the
/// 16K-element LayerNorms, transposes and masks of attention that 2^15 left
/// to one (GPT-2-style decoder 1.57-1.59 -> 1.53-1.57 ms on two threads,
/// bert_tiny 0.370 -> 0.350; MobileNetV2, ResNet-18, CRNN and the mlp the
/// same within noise).
constexpr int64_t kCheapWorkGrain = 1 << 13;

/// Threads worth using for `work` units of cheap work: 1 below twice
/// `grain`, so that small ops never start a team.
inline int threadsFor(const weft_rt_context *ctx, int64_t work,
                      int64_t grain = kCheapWorkGrain) {
  int threads = ctx->numThreads < 1 ? 1 : ctx->numThreads;
  if (threads == 1 || work < 2 * grain)
    return 1;
  int64_t useful = work / grain;
  return useful < threads ? static_cast<int>(useful) : threads;
}

/// OpenBLAS (OpenMP build) and oneDNN size their teams from OpenMP's
/// max-threads setting at each call; make it the context's count.
inline void applyLibraryThreads(const weft_rt_context *ctx) {
  int threads = ctx->numThreads < 1 ? 1 : ctx->numThreads;
  if (omp_get_max_threads() != threads)
    omp_set_num_threads(threads);
}

/// Sets OpenMP's max-threads setting, which the libraries follow, for one
/// scope and restores it after.
class ScopedLibraryThreads {
public:
  explicit ScopedLibraryThreads(int threads) : previous(omp_get_max_threads()) {
    if (threads != previous)
      omp_set_num_threads(threads);
  }
  ScopedLibraryThreads(const ScopedLibraryThreads &) = delete;
  ScopedLibraryThreads &operator=(const ScopedLibraryThreads &) = delete;
  ~ScopedLibraryThreads() {
    if (omp_get_max_threads() != previous)
      omp_set_num_threads(previous);
  }

private:
  int previous;
};

/// Storage for a kernel's temporaries, freed on scope exit; allocation
/// failure is reported instead of aborting.
class ScratchBuffer {
public:
  ScratchBuffer() = default;
  ScratchBuffer(const ScratchBuffer &) = delete;
  ScratchBuffer &operator=(const ScratchBuffer &) = delete;
  ~ScratchBuffer() { std::free(data); }
  /// Allocates `bytes` (64-byte aligned); fails with a message naming
  /// `what` when the memory is not there.
  weft_rt_status allocate(weft_rt_context *ctx, const char *kernel,
                          int64_t bytes, const char *what);
  template <typename T> T *as() const { return static_cast<T *>(data); }

private:
  void *data = nullptr;
};

/// The cache entry of a kernel: a copy of the parameter block it was built
/// for, so that a block that changed (which generated code never does, but a
/// freed and reused address can) is noticed and the entry rebuilt.
struct CacheEntry : CachedKernel {
  std::vector<int64_t> params;
  bool matches(const int64_t *block, size_t words) const {
    return params.size() == words &&
           std::memcmp(params.data(), block, words * sizeof(int64_t)) == 0;
  }
};

/// The entry of type T cached for `params` if its block is unchanged.
template <typename T>
T *findCached(weft_rt_context *ctx, const int64_t *params, size_t words) {
  auto it = ctx->kernelCache.find(params);
  if (it == ctx->kernelCache.end())
    return nullptr;
  auto *entry = dynamic_cast<T *>(it->second.get());
  if (!entry || !entry->matches(params, words))
    return nullptr;
  return entry;
}

/// Stores `entry` for `params`, replacing what was there; returns it.
template <typename T>
T *storeCached(weft_rt_context *ctx, const int64_t *params, size_t words,
               std::unique_ptr<T> entry) {
  entry->params.assign(params, params + words);
  T *raw = entry.get();
  ctx->kernelCache[params] = std::move(entry);
  return raw;
}

/// An op's scratch floats, kept between its calls (cached for its
/// parameter block): a buffer of a few hundred KB allocated at every call
/// is mapped and faulted in each time (an im2col matrix, the direct
/// convolution's phase rows).
struct CachedScratch : CacheEntry {
  std::vector<float> data;
};

/// The op's scratch, grown to at least `floats`; null after reporting
/// WEFT_RT_OUT_OF_MEMORY (naming `kernel` and `what`) when it cannot grow.
float *cachedScratch(weft_rt_context *ctx, const int64_t *params,
                     size_t words, int64_t floats, const char *kernel,
                     const char *what);

/// Asks for the `bytes` at `data` to be brought into this core's caches
/// (nothing when `data` is null). For small operands that a kernel reads in
/// an order the hardware prefetcher does not follow (a depthwise weight,
/// tap rows C floats apart read 16 channels at a time): their lines are
/// then fetched side by side instead of one wait after another.
inline void prefetchForRead(const void *data, int64_t bytes) {
  if (!data)
    return;
  const char *p = static_cast<const char *>(data);
  for (int64_t offset = 0; offset < bytes; offset += 64)
    __builtin_prefetch(p + offset, 0, 3);
}

/// Copies `count` elements of `bytes` each from src to dst (no overlap).
inline void copyElements(void *dst, const void *src, int64_t count,
                         int64_t bytes) {
  std::memcpy(dst, src, static_cast<size_t>(count * bytes));
}

} // namespace weft::rt::cpu

#endif // WEFT_RUNTIME_CPU_KERNELSUPPORT_H
