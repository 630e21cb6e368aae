//===- Conv.cpp - ONNX Conv on cuDNN --------------------------------------===//
//
// weft_rt_cuda_conv: weft_rt_cpu_conv's block on cuDNN's convolution
// (legacy API), with the descriptors and the algorithm chosen once per op
// and cached in the context under the op's parameter block.
//
//===----------------------------------------------------------------------===//

#include "cpu/Conv.h"
#include "cuda/CudaStatus.h"
#include "cuda/DeviceState.h"
#include "cuda/kernels/DenseKernels.h"
#include "weft_rt_cuda.h"

#include <algorithm>
#include <climits>

using namespace weft::rt::cuda;
using namespace weft::rt::cpu;

static const char *const kConv = "conv";

/// Scratch sizes are rounded to this, so that what follows stays aligned.
static constexpr size_t kScratchAlignment = 256;

static weft_rt_status cudnnFail(weft_rt_context *ctx, cudnnStatus_t status,
                                const char *call, const char *file, int line) {
  weft_rt_status code = WEFT_RT_INTERNAL;
  if (status == CUDNN_STATUS_NOT_SUPPORTED)
    code = WEFT_RT_UNSUPPORTED;
  else if (status == CUDNN_STATUS_ALLOC_FAILED)
    code = WEFT_RT_OUT_OF_MEMORY;
  return weft_rt_fail(ctx, code, "conv: %s failed at %s:%d: %s", call, file,
                      line, cudnnGetErrorString(status));
}

#define WEFT_CUDNN_CHECK(ctx, call)                                            \
  do {                                                                         \
    cudnnStatus_t weftCudnnStatus = (call);                                    \
    if (weftCudnnStatus != CUDNN_STATUS_SUCCESS)                               \
      return cudnnFail((ctx), weftCudnnStatus, #call, __FILE__, __LINE__);     \
  } while (0)

namespace {
/// One op's cuDNN descriptors and algorithm.
struct CudnnConv : CacheEntry {
  /// The handle the algorithm was chosen with.
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t algoBytes = 0;
  /// Pads cuDNN cannot express are applied by copying the input into a
  /// padded one at the start of the workspace, `padBytes` long.
  bool explicitPad = false;
  PadPlanesParams pad;
  size_t padBytes = 0;

  ~CudnnConv() override {
    for (cudnnTensorDescriptor_t t : {x, y, bias})
      if (t)
        cudnnDestroyTensorDescriptor(t);
    if (w)
      cudnnDestroyFilterDescriptor(w);
    if (conv)
      cudnnDestroyConvolutionDescriptor(conv);
  }
};
} // namespace

static cudnnDataType_t cudnnTypeOf(int64_t dtype) {
  switch (dtype) {
  case WEFT_RT_F64:
    return CUDNN_DATA_DOUBLE;
  case WEFT_RT_F16:
    return CUDNN_DATA_HALF;
  case WEFT_RT_BF16:
    return CUDNN_DATA_BFLOAT16;
  default:
    return CUDNN_DATA_FLOAT;
  }
}

/// Reads the block with parseConv, which knows f32 only: the dtype word is
/// checked here and parseConv reads a copy that says f32. A fused clamp
/// (activation 1) and channels-last layouts (a non-zero layout word) are
/// refused: the compiler asks for neither on this backend.
static weft_rt_status parseGpuConv(weft_rt_context *ctx, const int64_t *params,
                                   int64_t &dtype, ConvShape &s) {
  WEFT_RT_REQUIRE(ctx, params, "conv: parameter block is NULL");
  dtype = params[0];
  WEFT_RT_TRY(checkDtype(ctx, kConv, dtype,
                         kFloatDtypes | dtypeBit(WEFT_RT_F16) |
                             dtypeBit(WEFT_RT_BF16)));
  int64_t rank = params[1];
  WEFT_RT_REQUIRE(ctx, rank >= 1 && rank <= 3,
                  "conv: %lld spatial dimensions (1 to 3 are supported)",
                  (long long)rank);
  // The header, seven spatial arrays, the three activation words and the
  // layout word.
  int64_t copy[6 + 7 * 3 + 4];
  std::copy(params, params + 6 + 7 * rank + 4, copy);
  copy[0] = WEFT_RT_F32;
  WEFT_RT_TRY(parseConv(ctx, copy, s));
  if (s.hasClamp)
    return weft_rt_fail(ctx, WEFT_RT_UNSUPPORTED,
                        "conv: a fused clamp is not supported by the CUDA "
                        "backend");
  if (s.layout != 0)
    return weft_rt_fail(ctx, WEFT_RT_UNSUPPORTED,
                        "conv: layout %lld is not supported by the CUDA "
                        "backend, which takes NC[D]HW inputs and outputs and "
                        "OIHW weights only (layout 0)",
                        (long long)s.layout);
  return WEFT_RT_OK;
}

/// Fails unless every value fits cuDNN's int dimensions and strides.
static weft_rt_status checkIntSizes(weft_rt_context *ctx, const ConvShape &s,
                                    const int64_t padded[3]) {
  const int64_t cg = s.c / s.group;
  const int64_t counts[] = {s.n * s.c * padded[0] * padded[1] * padded[2],
                            s.n * s.oc * s.outPlane(),
                            s.oc * cg * s.kernelVolume()};
  for (int64_t count : counts)
    if (count > INT_MAX)
      return weft_rt_fail(ctx, WEFT_RT_UNSUPPORTED,
                          "conv: a tensor of %lld elements exceeds cuDNN's "
                          "32-bit sizes",
                          (long long)count);
  for (int d = 0; d < 3; ++d)
    if (s.padsBegin[d] > INT_MAX || s.dilations[d] > INT_MAX ||
        s.strides[d] > INT_MAX)
      return weft_rt_fail(ctx, WEFT_RT_UNSUPPORTED,
                          "conv: pads, strides or dilations exceed cuDNN's "
                          "32-bit sizes");
  return WEFT_RT_OK;
}

/// Dense NC[D]HW strides of `dims`.
static void denseStrides(const int *dims, int count, int *strides) {
  int stride = 1;
  for (int i = count - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= dims[i];
  }
}

static weft_rt_status setTensor(weft_rt_context *ctx,
                                cudnnTensorDescriptor_t desc,
                                cudnnDataType_t type, const int *dims,
                                int count) {
  int strides[5];
  denseStrides(dims, count, strides);
  WEFT_CUDNN_CHECK(
      ctx, cudnnSetTensorNdDescriptor(desc, type, count, dims, strides));
  return WEFT_RT_OK;
}

/// Builds the descriptors and picks the fastest algorithm by cuDNN's
/// heuristics whose scratch fits what the workspace leaves.
static weft_rt_status buildConv(weft_rt_context *ctx, DeviceState &state,
                                cudnnHandle_t handle, int64_t dtype,
                                const ConvShape &s, CudnnConv &e) {
  e.handle = handle;
  // cuDNN pads symmetrically. Any pads whose output count matches the
  // symmetric pads_begin give the same windows (the rest is zeros either
  // way); others get an explicitly padded copy of the input.
  int64_t padded[3] = {s.in[0], s.in[1], s.in[2]};
  for (int d = 0; d < 3; ++d) {
    int64_t span = (s.kernel[d] - 1) * s.dilations[d];
    int64_t symmetric = s.in[d] + 2 * s.padsBegin[d] - span - 1;
    if (symmetric < 0 || symmetric / s.strides[d] + 1 != s.out[d])
      e.explicitPad = true;
  }
  if (e.explicitPad)
    for (int d = 0; d < 3; ++d)
      padded[d] = s.in[d] + s.padsBegin[d] + s.padsEnd[d];
  WEFT_RT_TRY(checkIntSizes(ctx, s, padded));
  const size_t elem = weft_rt_dtype_size(static_cast<weft_rt_dtype>(dtype));
  if (e.explicitPad) {
    e.pad.planes = s.n * s.c;
    e.pad.elemBytes = static_cast<int64_t>(elem);
    for (int d = 0; d < 3; ++d) {
      e.pad.in[d] = s.in[d];
      e.pad.out[d] = padded[d];
      e.pad.begin[d] = s.padsBegin[d];
    }
    size_t bytes =
        static_cast<size_t>(e.pad.planes * padded[0] * padded[1] * padded[2]) *
        elem;
    e.padBytes =
        (bytes + kScratchAlignment - 1) / kScratchAlignment * kScratchAlignment;
    if (e.padBytes > state.workspaceBytes)
      return weft_rt_fail(ctx, WEFT_RT_UNSUPPORTED,
                          "conv: pads (begin and end differ) that cuDNN cannot "
                          "express need %zu bytes of scratch for a padded "
                          "input, more than the %zu-byte CUDA workspace",
                          bytes, state.workspaceBytes);
  }

  // 1-D and 2-D convolutions as 4-D tensors (NCHW, H = 1 for 1-D), 3-D as
  // 5-D ones.
  const int spatial = s.spatialRank == 3 ? 3 : 2;
  const int first = 3 - spatial, nb = spatial + 2;
  int xDims[5], yDims[5], wDims[5], bDims[5];
  int pads[3], strides[3], dilations[3];
  xDims[0] = static_cast<int>(s.n), xDims[1] = static_cast<int>(s.c);
  yDims[0] = static_cast<int>(s.n), yDims[1] = static_cast<int>(s.oc);
  wDims[0] = static_cast<int>(s.oc), wDims[1] = static_cast<int>(s.c / s.group);
  bDims[0] = 1, bDims[1] = static_cast<int>(s.oc);
  for (int i = 0; i < spatial; ++i) {
    int d = first + i;
    xDims[2 + i] = static_cast<int>(padded[d]);
    yDims[2 + i] = static_cast<int>(s.out[d]);
    wDims[2 + i] = static_cast<int>(s.kernel[d]);
    bDims[2 + i] = 1;
    pads[i] = e.explicitPad ? 0 : static_cast<int>(s.padsBegin[d]);
    strides[i] = static_cast<int>(s.strides[d]);
    dilations[i] = static_cast<int>(s.dilations[d]);
  }
  const cudnnDataType_t type = cudnnTypeOf(dtype);
  WEFT_CUDNN_CHECK(ctx, cudnnCreateTensorDescriptor(&e.y));
  WEFT_CUDNN_CHECK(ctx, cudnnCreateTensorDescriptor(&e.bias));
  WEFT_RT_TRY(setTensor(ctx, e.y, type, yDims, nb));
  WEFT_RT_TRY(setTensor(ctx, e.bias, type, bDims, nb));
  // Without input channels only the bias is added (cuDNN refuses C = 0).
  if (s.c == 0)
    return WEFT_RT_OK;
  WEFT_CUDNN_CHECK(ctx, cudnnCreateTensorDescriptor(&e.x));
  WEFT_CUDNN_CHECK(ctx, cudnnCreateFilterDescriptor(&e.w));
  WEFT_CUDNN_CHECK(ctx, cudnnCreateConvolutionDescriptor(&e.conv));
  WEFT_RT_TRY(setTensor(ctx, e.x, type, xDims, nb));
  WEFT_CUDNN_CHECK(
      ctx, cudnnSetFilterNdDescriptor(e.w, type, CUDNN_TENSOR_NCHW, nb, wDims));
  // f64 computes in f64, the others in f32.
  const cudnnDataType_t computeType =
      dtype == WEFT_RT_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  WEFT_CUDNN_CHECK(ctx, cudnnSetConvolutionNdDescriptor(
                            e.conv, spatial, pads, strides, dilations,
                            CUDNN_CROSS_CORRELATION, computeType));
  WEFT_CUDNN_CHECK(
      ctx, cudnnSetConvolutionGroupCount(e.conv, static_cast<int>(s.group)));
  // CUDNN_DEFAULT_MATH lets cuDNN use TF32 tensor cores for f32 on Ampere
  // and newer; CUDNN_FMA_MATH keeps f32 (and f64) exact-ish. The half types
  // may use tensor cores.
  const bool halfType = dtype == WEFT_RT_F16 || dtype == WEFT_RT_BF16;
  const cudnnMathType_t mathType =
      halfType ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
  WEFT_CUDNN_CHECK(ctx, cudnnSetConvolutionMathType(e.conv, mathType));

  const size_t available = state.workspaceBytes - e.padBytes;
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int returned = 0;
  WEFT_CUDNN_CHECK(ctx, cudnnGetConvolutionForwardAlgorithm_v7(
                            handle, e.x, e.w, e.conv, e.y,
                            CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf));
  for (int i = 0; i < returned; ++i) {
    const cudnnConvolutionFwdAlgoPerf_t &p = perf[i];
    if (p.status != CUDNN_STATUS_SUCCESS || p.memory > available)
      continue;
    if (!halfType && (p.mathType == CUDNN_TENSOR_OP_MATH ||
                      p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
      continue;
    // The algorithm must run under the math type that will be set.
    if (halfType &&
        cudnnSetConvolutionMathType(e.conv, p.mathType) != CUDNN_STATUS_SUCCESS)
      continue;
    size_t bytes = 0;
    if (cudnnGetConvolutionForwardWorkspaceSize(handle, e.x, e.w, e.conv, e.y,
                                                p.algo, &bytes) !=
            CUDNN_STATUS_SUCCESS ||
        bytes > available)
      continue;
    e.algo = p.algo;
    e.algoBytes = bytes;
    return WEFT_RT_OK;
  }
  return weft_rt_fail(ctx, WEFT_RT_UNSUPPORTED,
                      "conv: cuDNN has no forward algorithm for this "
                      "convolution (%lld spatial dims, N=%lld C=%lld OC=%lld "
                      "group=%lld) that fits the %zu bytes of scratch left",
                      (long long)s.spatialRank, (long long)s.n, (long long)s.c,
                      (long long)s.oc, (long long)s.group, available);
}

/// Adds the per-channel bias onto y.
static weft_rt_status addBias(weft_rt_context *ctx, cudnnHandle_t handle,
                              int64_t dtype, cudnnTensorDescriptor_t biasDesc,
                              const void *bias, cudnnTensorDescriptor_t yDesc,
                              void *y) {
  const double oneD = 1.0;
  const float oneF = 1.0f;
  const void *one = dtype == WEFT_RT_F64 ? static_cast<const void *>(&oneD)
                                         : static_cast<const void *>(&oneF);
  WEFT_CUDNN_CHECK(ctx,
                   cudnnAddTensor(handle, one, biasDesc, bias, one, yDesc, y));
  return WEFT_RT_OK;
}

weft_rt_status weft_rt_cuda_conv(weft_rt_context *ctx, const int64_t *params,
                                 const void *input, const void *weight,
                                 const void *bias, void *out) {
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  int64_t dtype = 0;
  ConvShape s;
  WEFT_RT_TRY(parseGpuConv(ctx, params, dtype, s));
  const int64_t outCount = s.n * s.oc * s.outPlane();
  if (outCount > 0) {
    WEFT_RT_TRY(requireBuffer(ctx, kConv, out, "out"));
    if (s.c > 0) {
      WEFT_RT_TRY(requireBuffer(ctx, kConv, input, "input"));
      WEFT_RT_TRY(requireBuffer(ctx, kConv, weight, "weight"));
    }
  }
  DeviceState *state = deviceStateOf(ctx, kConv);
  if (!state)
    return WEFT_RT_INTERNAL;
  if (outCount == 0)
    return WEFT_RT_OK;
  cudnnHandle_t handle;
  WEFT_RT_TRY(cudnnHandleOf(ctx, *state, &handle));

  auto *e = findCached<CudnnConv>(ctx, params, s.words);
  if (!e || e->handle != handle) {
    auto entry = std::make_unique<CudnnConv>();
    WEFT_RT_TRY(buildConv(ctx, *state, handle, dtype, s, *entry));
    e = storeCached(ctx, params, s.words, std::move(entry));
  }
  if (s.c == 0) {
    // Nothing to convolve (cuDNN refuses empty channels): bias or zero.
    size_t bytes = static_cast<size_t>(outCount) *
                   weft_rt_dtype_size(static_cast<weft_rt_dtype>(dtype));
    WEFT_CUDA_CHECK(ctx, WEFT_RT_INTERNAL,
                    cudaMemsetAsync(out, 0, bytes, state->stream.get()));
    if (bias)
      return addBias(ctx, handle, dtype, e->bias, bias, e->y, out);
    return WEFT_RT_OK;
  }
  const void *x = input;
  char *scratch = static_cast<char *>(state->workspace);
  if (e->explicitPad) {
    WEFT_CUDA_CHECK(
        ctx, WEFT_RT_INTERNAL,
        launchPadPlanes(e->pad, input, scratch, state->stream.get()));
    x = scratch;
  }
  const double oneD = 1.0, zeroD = 0.0;
  const float oneF = 1.0f, zeroF = 0.0f;
  const bool f64 = dtype == WEFT_RT_F64;
  const void *alpha =
      f64 ? static_cast<const void *>(&oneD) : static_cast<const void *>(&oneF);
  const void *beta = f64 ? static_cast<const void *>(&zeroD)
                         : static_cast<const void *>(&zeroF);
  WEFT_CUDNN_CHECK(ctx,
                   cudnnConvolutionForward(
                       handle, alpha, e->x, x, e->w, weight, e->conv, e->algo,
                       e->algoBytes ? scratch + e->padBytes : nullptr,
                       e->algoBytes, beta, e->y, out));
  if (bias)
    return addBias(ctx, handle, dtype, e->bias, bias, e->y, out);
  return WEFT_RT_OK;
}
