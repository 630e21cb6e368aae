//===- KernelSupport.cpp - Shared helpers of the CPU kernels --------------===//
//
// The out-of-line parts of KernelSupport.h: dtype checks and scratch memory.
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.h"

#include <new>

using namespace weft::rt::cpu;

weft_rt_status weft::rt::cpu::checkDtype(weft_rt_context *ctx,
                                         const char *kernel, int64_t dtype,
                                         uint32_t allowed) {
  if (dtype < 0 || dtype > 31 || weft_rt_dtype_size(dtype) == 0)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s: unknown dtype code %lld", kernel,
                        static_cast<long long>(dtype));
  if (allowed & dtypeBit(static_cast<weft_rt_dtype>(dtype)))
    return WEFT_RT_OK;
  std::string names;
  for (int code = 0; code < 32; ++code) {
    if (!(allowed & (1u << code)))
      continue;
    if (!names.empty())
      names += ", ";
    names += weft_rt_dtype_name(code);
  }
  return weft_rt_fail(ctx, WEFT_RT_UNSUPPORTED,
                      "%s: dtype %s is not supported (supported: %s)", kernel,
                      weft_rt_dtype_name(static_cast<weft_rt_dtype>(dtype)),
                      names.c_str());
}

weft_rt_status ScratchBuffer::allocate(weft_rt_context *ctx, const char *kernel,
                                       int64_t bytes, const char *what) {
  std::free(data);
  data = nullptr;
  if (bytes < 0)
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL, "%s: negative size for %s",
                        kernel, what);
  // aligned_alloc wants a multiple of the alignment.
  size_t rounded = (static_cast<size_t>(bytes) + 63) & ~static_cast<size_t>(63);
  if (rounded == 0)
    rounded = 64;
  data = std::aligned_alloc(64, rounded);
  if (!data)
    return weft_rt_fail(ctx, WEFT_RT_OUT_OF_MEMORY,
                        "%s: cannot allocate %lld bytes for %s", kernel,
                        static_cast<long long>(bytes), what);
  return WEFT_RT_OK;
}

float *weft::rt::cpu::cachedScratch(weft_rt_context *ctx,
                                    const int64_t *params, size_t words,
                                    int64_t floats, const char *kernel,
                                    const char *what) {
  CachedScratch *entry = findCached<CachedScratch>(ctx, params, words);
  if (!entry)
    entry = storeCached(ctx, params, words, std::make_unique<CachedScratch>());
  if (static_cast<int64_t>(entry->data.size()) < floats) {
    try {
      entry->data.resize(static_cast<size_t>(floats));
    } catch (const std::bad_alloc &) {
      weft_rt_fail(ctx, WEFT_RT_OUT_OF_MEMORY,
                   "%s: cannot allocate %lld bytes for %s", kernel,
                   static_cast<long long>(floats) * 4, what);
      return nullptr;
    }
  }
  return entry->data.data();
}
