//===- DenseOps.cpp - Pool, batch norm and einsum on CUDA -----------------===//
//
// The entry points weft_rt_cuda_pool, _batch_norm and _einsum: check the
// block and the buffers as the CPU kernels do, find the program's stream and
// queue DenseKernels.cu's kernel on it.
//
//===----------------------------------------------------------------------===//

#include "cpu/KernelSupport.h"
#include "cuda/CudaStatus.h"
#include "cuda/DeviceState.h"
#include "cuda/kernels/DenseKernels.h"
#include "weft_rt_cuda.h"

using namespace weft::rt::cuda;
using weft::rt::cpu::requireBuffer;

weft_rt_status weft_rt_cuda_pool(weft_rt_context *ctx, const int64_t *params,
                                 const void *input, void *out) {
  static const char *const kernel = "pool";
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  PoolParams s;
  WEFT_RT_TRY(parsePoolParams(ctx, params, s));
  const bool empty = s.outCount() == 0;
  if (!empty) {
    WEFT_RT_TRY(requireBuffer(ctx, kernel, out, "out"));
    if (s.planes * s.inPlane() > 0)
      WEFT_RT_TRY(requireBuffer(ctx, kernel, input, "input"));
  }
  DeviceState *state = deviceStateOf(ctx, kernel);
  if (!state)
    return WEFT_RT_INTERNAL;
  if (empty)
    return WEFT_RT_OK;
  WEFT_CUDA_CHECK(ctx, WEFT_RT_INTERNAL,
                  launchPool(s, input, out, state->stream.get()));
  return WEFT_RT_OK;
}

weft_rt_status weft_rt_cuda_batch_norm(weft_rt_context *ctx,
                                       const int64_t *params, const void *x,
                                       const void *scale, const void *bias,
                                       const void *mean, const void *var,
                                       void *out) {
  static const char *const kernel = "batch_norm";
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  BatchNormParams s;
  WEFT_RT_TRY(parseBatchNormParams(ctx, params, s));
  if (s.count > 0) {
    const void *buffers[] = {x, scale, bias, mean, var, out};
    const char *names[] = {"x", "scale", "bias", "mean", "var", "out"};
    for (int i = 0; i < 6; ++i)
      WEFT_RT_TRY(requireBuffer(ctx, kernel, buffers[i], names[i]));
  }
  DeviceState *state = deviceStateOf(ctx, kernel);
  if (!state)
    return WEFT_RT_INTERNAL;
  if (s.count == 0)
    return WEFT_RT_OK;
  WEFT_CUDA_CHECK(
      ctx, WEFT_RT_INTERNAL,
      launchBatchNorm(s, x, scale, bias, mean, var, out, state->stream.get()));
  return WEFT_RT_OK;
}

weft_rt_status weft_rt_cuda_einsum(weft_rt_context *ctx, const int64_t *params,
                                   const void *in0, const void *in1,
                                   void *out) {
  static const char *const kernel = "einsum";
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  EinsumParams s;
  WEFT_RT_TRY(parseEinsumParams(ctx, params, s));
  if (s.outCount > 0) {
    WEFT_RT_TRY(requireBuffer(ctx, kernel, out, "out"));
    const void *inputs[] = {in0, in1};
    const char *names[] = {"in0", "in1"};
    for (int i = 0; i < s.numInputs; ++i)
      if (s.inCount[i] > 0)
        WEFT_RT_TRY(requireBuffer(ctx, kernel, inputs[i], names[i]));
  }
  DeviceState *state = deviceStateOf(ctx, kernel);
  if (!state)
    return WEFT_RT_INTERNAL;
  if (s.outCount == 0)
    return WEFT_RT_OK;
  WEFT_CUDA_CHECK(ctx, WEFT_RT_INTERNAL,
                  launchEinsum(s, in0, in1, out, state->stream.get()));
  return WEFT_RT_OK;
}
