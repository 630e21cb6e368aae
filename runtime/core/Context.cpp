//===- Context.cpp - Runtime contexts, statuses and dtypes ----------------===//
//
// A context carries what every kernel call may need: the last error message,
// the thread count and, when profiling, the per-op event log.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "ClockSync.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <thread>

#include <sched.h>

// Weak, so that an executable whose kernels use neither (a GPU program)
// links without OpenMP and OpenBLAS; a CPU program links both.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));
extern "C" void omp_set_num_threads(int) __attribute__((weak));

using namespace weft::rt;

size_t weft_rt_dtype_size(weft_rt_dtype dtype) {
  switch (dtype) {
  case WEFT_RT_F32:
  case WEFT_RT_I32:
    return 4;
  case WEFT_RT_U8:
  case WEFT_RT_I8:
  case WEFT_RT_BOOL:
    return 1;
  case WEFT_RT_I64:
  case WEFT_RT_F64:
    return 8;
  case WEFT_RT_F16:
  case WEFT_RT_BF16:
    return 2;
  default:
    return 0;
  }
}

const char *weft_rt_dtype_name(weft_rt_dtype dtype) {
  switch (dtype) {
  case WEFT_RT_F32:
    return "f32";
  case WEFT_RT_U8:
    return "u8";
  case WEFT_RT_I8:
    return "i8";
  case WEFT_RT_I32:
    return "i32";
  case WEFT_RT_I64:
    return "i64";
  case WEFT_RT_BOOL:
    return "bool";
  case WEFT_RT_F16:
    return "f16";
  case WEFT_RT_F64:
    return "f64";
  case WEFT_RT_BF16:
    return "bf16";
  default:
    return "?";
  }
}

/// Cores this process may run on (its affinity mask), at least 1.
static int availableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0)
      return n;
  }
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

/// Thread count from WEFT_NUM_THREADS when it is a positive integer.
static int threadsFromEnvironment() {
  const char *text = std::getenv("WEFT_NUM_THREADS");
  if (!text || !*text)
    return 0;
  char *end = nullptr;
  long n = std::strtol(text, &end, 10);
  if (*end != '\0' || n < 1 || n > 4096)
    return -1;
  return static_cast<int>(n);
}

double weft::rt::nowMicroseconds() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch())
             .count() +
         testClockSkewUs();
}

weft_rt_status weft_rt_context_create(weft_rt_context **out_ctx) {
  if (!out_ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  *out_ctx = nullptr;
  auto *ctx = new (std::nothrow) weft_rt_context();
  if (!ctx)
    return WEFT_RT_OUT_OF_MEMORY;
  int threads = threadsFromEnvironment();
  if (threads < 0) {
    // Keep the context so that the caller can read why.
    *out_ctx = ctx;
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "WEFT_NUM_THREADS='%s' is not a thread count "
                        "between 1 and 4096",
                        std::getenv("WEFT_NUM_THREADS"));
  }
  *out_ctx = ctx;
  return weft_rt_context_set_num_threads(ctx, threads > 0 ? threads
                                                          : availableCores());
}

void weft_rt_context_destroy(weft_rt_context *ctx) { delete ctx; }

weft_rt_status weft_rt_context_set_num_threads(weft_rt_context *ctx,
                                               int32_t n) {
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  if (n < 1 || n > 4096)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "thread count %d is not between 1 and 4096", n);
  ctx->numThreads = n;
  // One OpenMP runtime (libgomp) serves our kernels, OpenBLAS's OpenMP build
  // and oneDNN, so this sets all three.
  if (omp_set_num_threads)
    omp_set_num_threads(n);
  if (openblas_set_num_threads)
    openblas_set_num_threads(n);
  return WEFT_RT_OK;
}

int32_t weft_rt_context_num_threads(const weft_rt_context *ctx) {
  return ctx ? ctx->numThreads : 0;
}

const char *weft_rt_context_error(const weft_rt_context *ctx) {
  return ctx ? ctx->error.c_str() : "no context";
}

weft_rt_status weft_rt_fail(weft_rt_context *ctx, weft_rt_status status,
                            const char *format, ...) {
  if (!ctx)
    return status;
  char buffer[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  ctx->error = buffer;
  return status;
}

void weft_rt_op_begin(weft_rt_context *ctx, int64_t op_id) {
  if (!ctx)
    return;
  ctx->currentOp.store(op_id, std::memory_order_relaxed);
  if (ctx->progressTransfers)
    ctx->progressTransfers(ctx);
  if (!ctx->profiling)
    return;
  // On a GPU, the op begins when the work before it has ended.
  if (ctx->waitForDevice)
    ctx->waitForDevice(ctx->cudaDeviceState);
  ctx->events.push_back({op_id, nowMicroseconds(), 0.0});
}

void weft_rt_op_end(weft_rt_context *ctx, int64_t op_id) {
  if (!ctx || !ctx->profiling || ctx->events.empty())
    return;
  if (ctx->waitForDevice)
    ctx->waitForDevice(ctx->cudaDeviceState);
  ProfileEvent &last = ctx->events.back();
  if (last.opId == op_id && last.durationUs == 0.0)
    last.durationUs = nowMicroseconds() - last.startUs;
}

weft_rt_status weft_rt_context_add_health_check(weft_rt_context *ctx,
                                                weft_rt_health_check_fn check,
                                                weft_rt_health_abort_fn abort,
                                                void *user) {
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  if (!check)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "weft_rt_context_add_health_check: check is NULL");
  std::lock_guard<std::mutex> lock(ctx->healthChecksMutex);
  ctx->healthChecks.push_back({check, abort, user});
  return WEFT_RT_OK;
}

void weft_rt_context_remove_health_checks(weft_rt_context *ctx, void *user) {
  if (!ctx)
    return;
  std::lock_guard<std::mutex> lock(ctx->healthChecksMutex);
  auto &checks = ctx->healthChecks;
  checks.erase(std::remove_if(checks.begin(), checks.end(),
                              [&](const weft::rt::HealthCheck &c) {
                                return c.user == user;
                              }),
               checks.end());
}
