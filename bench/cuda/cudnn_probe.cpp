//===- cudnn_probe.cpp - Checks that cuDNN loads and runs a convolution ---===//
//
// cuDNN 9 opens its sub-libraries (libcudnn_graph, libcudnn_engines_*,
// libcudnn_cnn, ...) with dlopen when they are first needed, so `ldd` on a
// package says nothing about whether convolutions will work on a machine.
// This probe makes a handle and runs one small convolution forward, checks
// its result against a direct loop on the host, and prints the versions.
// Self-contained: it builds with CMake (bench/cuda) or with
// `nvcc -O2 cudnn_probe.cpp -lcudnn` on a machine with only a CUDA toolkit.
//
//===----------------------------------------------------------------------===//

#include <cuda_runtime.h>
#include <cudnn.h>

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

constexpr int kExitOk = 0;
constexpr int kExitUsage = 1;
constexpr int kExitNoDevice = 3;
constexpr int kExitInternal = 70;

const char *const kUsage = R"(usage: cudnn_probe [--help] [--version]

Loads cuDNN for real: creates a handle on CUDA device 0 (WEFT_CUDA_DEVICE
picks another), runs one 3x3 convolution forward (N=2, C=3, H=W=17, K=8, pad
1, f32) so that cuDNN opens its run-time sub-libraries, and compares the
result with a host loop. Prints the cuDNN and CUDA versions and the
algorithm cuDNN chose.

Examples:
  cudnn_probe
  WEFT_CUDA_DEVICE=1 cudnn_probe

Building without CMake:
  nvcc -O2 -o cudnn_probe cudnn_probe.cpp -lcudnn

Exit codes: 0 cuDNN works, 1 bad options, 3 no usable CUDA device, 70 cuDNN
or CUDA failed (a sub-library missing, a wrong result).
)";

int cudaFailure(const char *what, cudaError_t error) {
  std::fprintf(stderr, "cudnn_probe: error: %s failed: %s (%s)\n", what,
               cudaGetErrorString(error), cudaGetErrorName(error));
  return kExitInternal;
}

int cudnnFailure(const char *what, cudnnStatus_t status) {
  char detail[512] = "";
  cudnnGetLastErrorString(detail, sizeof(detail));
  std::fprintf(stderr, "cudnn_probe: error: %s failed: %s%s%s\n", what,
               cudnnGetErrorString(status), detail[0] ? ": " : "", detail);
  return kExitInternal;
}

#define CHECK_CUDA(call)                                                       \
  do {                                                                         \
    cudaError_t error_ = (call);                                               \
    if (error_ != cudaSuccess)                                                 \
      return cudaFailure(#call, error_);                                       \
  } while (0)

#define CHECK_CUDNN(call)                                                      \
  do {                                                                         \
    cudnnStatus_t status_ = (call);                                            \
    if (status_ != CUDNN_STATUS_SUCCESS)                                       \
      return cudnnFailure(#call, status_);                                     \
  } while (0)

/// Everything the probe creates, released on every exit path.
struct Resources {
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  void *dx = nullptr, *dw = nullptr, *dy = nullptr, *workspace = nullptr;
  ~Resources() {
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(dy);
    cudaFree(workspace);
    if (conv)
      cudnnDestroyConvolutionDescriptor(conv);
    if (w)
      cudnnDestroyFilterDescriptor(w);
    if (y)
      cudnnDestroyTensorDescriptor(y);
    if (x)
      cudnnDestroyTensorDescriptor(x);
    if (handle)
      cudnnDestroy(handle);
  }
};

int probe() {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess || count == 0) {
    std::fprintf(stderr, "cudnn_probe: error: no usable CUDA device: %s\n",
                 error != cudaSuccess ? cudaGetErrorString(error)
                                      : "cudaGetDeviceCount found none");
    return kExitNoDevice;
  }
  int device = 0;
  if (const char *env = std::getenv("WEFT_CUDA_DEVICE")) {
    char *end = nullptr;
    long value = std::strtol(env, &end, 10);
    if (!*env || *end || value < 0 || value >= count) {
      std::fprintf(stderr,
                   "cudnn_probe: error: WEFT_CUDA_DEVICE='%s' is not a "
                   "device of this machine (it has %d)\n",
                   env, count);
      return kExitUsage;
    }
    device = static_cast<int>(value);
  }
  CHECK_CUDA(cudaSetDevice(device));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  int runtimeVersion = 0, driverVersion = 0;
  CHECK_CUDA(cudaRuntimeGetVersion(&runtimeVersion));
  CHECK_CUDA(cudaDriverGetVersion(&driverVersion));

  const int n = 2, c = 3, h = 17, wd = 17, k = 8, r = 3, s = 3, pad = 1;
  std::vector<float> x(n * c * h * wd), w(k * c * r * s);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>((i * 37 % 23)) / 23.0f - 0.5f;
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<float>((i * 11 % 13)) / 13.0f - 0.5f;

  Resources res;
  CHECK_CUDNN(cudnnCreate(&res.handle));
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&res.x));
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&res.y));
  CHECK_CUDNN(cudnnCreateFilterDescriptor(&res.w));
  CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&res.conv));
  CHECK_CUDNN(cudnnSetTensor4dDescriptor(res.x, CUDNN_TENSOR_NCHW,
                                         CUDNN_DATA_FLOAT, n, c, h, wd));
  CHECK_CUDNN(cudnnSetFilter4dDescriptor(res.w, CUDNN_DATA_FLOAT,
                                         CUDNN_TENSOR_NCHW, k, c, r, s));
  CHECK_CUDNN(cudnnSetConvolution2dDescriptor(res.conv, pad, pad, 1, 1, 1, 1,
                                              CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT));
  // As the runtime: f32 convolutions in f32, no TF32.
  CHECK_CUDNN(cudnnSetConvolutionMathType(res.conv, CUDNN_FMA_MATH));
  int on = 0, oc = 0, oh = 0, ow = 0;
  CHECK_CUDNN(cudnnGetConvolution2dForwardOutputDim(res.conv, res.x, res.w,
                                                    &on, &oc, &oh, &ow));
  if (on != n || oc != k || oh != h || ow != wd) {
    std::fprintf(stderr,
                 "cudnn_probe: error: cuDNN says the output is %dx%dx%dx%d, "
                 "expected %dx%dx%dx%d\n",
                 on, oc, oh, ow, n, k, h, wd);
    return kExitInternal;
  }
  CHECK_CUDNN(cudnnSetTensor4dDescriptor(res.y, CUDNN_TENSOR_NCHW,
                                         CUDNN_DATA_FLOAT, n, k, h, wd));

  cudnnConvolutionFwdAlgoPerf_t perf[8];
  int found = 0;
  CHECK_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(
      res.handle, res.x, res.w, res.conv, res.y, 8, &found, perf));
  int chosen = -1;
  for (int i = 0; i < found && chosen < 0; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS)
      chosen = i;
  if (chosen < 0) {
    std::fprintf(stderr, "cudnn_probe: error: cuDNN offers no forward "
                         "convolution algorithm for a plain f32 3x3 "
                         "convolution (its engine libraries may be missing)\n");
    return kExitInternal;
  }
  size_t workspaceBytes = perf[chosen].memory;
  std::vector<float> y(static_cast<size_t>(n) * k * h * wd);
  CHECK_CUDA(cudaMalloc(&res.dx, x.size() * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&res.dw, w.size() * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&res.dy, y.size() * sizeof(float)));
  if (workspaceBytes)
    CHECK_CUDA(cudaMalloc(&res.workspace, workspaceBytes));
  CHECK_CUDA(cudaMemcpy(res.dx, x.data(), x.size() * sizeof(float),
                        cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(res.dw, w.data(), w.size() * sizeof(float),
                        cudaMemcpyHostToDevice));
  const float one = 1.0f, zero = 0.0f;
  CHECK_CUDNN(cudnnConvolutionForward(
      res.handle, &one, res.x, res.dx, res.w, res.dw, res.conv,
      perf[chosen].algo, res.workspace, workspaceBytes, &zero, res.y, res.dy));
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(y.data(), res.dy, y.size() * sizeof(float),
                        cudaMemcpyDeviceToHost));

  double maxError = 0;
  for (int in = 0; in < n; ++in)
    for (int ik = 0; ik < k; ++ik)
      for (int oy = 0; oy < h; ++oy)
        for (int ox = 0; ox < wd; ++ox) {
          double sum = 0;
          for (int ic = 0; ic < c; ++ic)
            for (int ry = 0; ry < r; ++ry)
              for (int rx = 0; rx < s; ++rx) {
                int iy = oy + ry - pad, ix = ox + rx - pad;
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd)
                  continue;
                sum += double(x[((in * c + ic) * h + iy) * wd + ix]) *
                       w[((ik * c + ic) * r + ry) * s + rx];
              }
          double got = y[((in * k + ik) * h + oy) * wd + ox];
          maxError = std::fmax(maxError, std::fabs(got - sum));
        }
  size_t version = cudnnGetVersion();
  std::printf("cudnn_probe: %s (sm_%d%d), driver CUDA %d.%d, runtime CUDA "
              "%d.%d, cuDNN %zu.%zu.%zu (built against %d.%d.%d)\n",
              prop.name, prop.major, prop.minor, driverVersion / 1000,
              driverVersion % 1000 / 10, runtimeVersion / 1000,
              runtimeVersion % 1000 / 10, version / 10000,
              version % 10000 / 100, version % 100, CUDNN_MAJOR, CUDNN_MINOR,
              CUDNN_PATCHLEVEL);
  std::printf("cudnn_probe: convolution forward 2x3x17x17 * 8x3x3x3: "
              "algorithm %d, %zu bytes of workspace, max abs err %.3g\n",
              static_cast<int>(perf[chosen].algo), workspaceBytes, maxError);
  // Sums of 27 products of values under 0.5 in f32: far under 1e-4.
  if (!(maxError <= 1e-4)) {
    std::fprintf(stderr, "cudnn_probe: error: the convolution is wrong (max "
                         "abs err %.3g against the host loop)\n",
                 maxError);
    return kExitInternal;
  }
  std::printf("cudnn_probe: cuDNN works\n");
  return kExitOk;
}

} // namespace

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    if (!std::strcmp(argv[i], "--version")) {
      std::printf("cudnn_probe (Weft) built with CUDA %d.%d, cuDNN %d.%d.%d\n",
                  CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10,
                  CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL);
      return kExitOk;
    }
    std::fprintf(stderr,
                 "cudnn_probe: error: unknown option '%s' (cudnn_probe "
                 "--help shows the options)\n",
                 argv[i]);
    return kExitUsage;
  }
  return probe();
}
