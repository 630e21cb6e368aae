//===- cublas_gemm_bench.cpp - cuBLAS f32 GEMM throughput baseline --------===//
//
// Times a list of f32 GEMMs on cuBLAS, back to back on one stream as a
// compiled model runs its layers, so that a model's FLOP/s can be compared
// with cuBLAS's on the same shapes (scripts/gpu-run.sh). Self-contained: it
// builds with CMake (bench/cuda) or, on a machine with only a CUDA toolkit,
// with `nvcc -O2 cublas_gemm_bench.cpp -lcublas` or g++ (see --help).
//
//===----------------------------------------------------------------------===//

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int kExitOk = 0;
constexpr int kExitUsage = 1;
constexpr int kExitNoDevice = 3;
constexpr int kExitInternal = 70;

const char *const kUsage = R"(usage: cublas_gemm_bench --shapes MxNxK[,MxNxK...] [options]

Times f32 GEMMs C[M,N] = A[M,K] * B[K,N] (row-major, as an ONNX MatMul) on
cuBLAS with CUBLAS_DEFAULT_MATH (no TF32), back to back on one stream, and
prints each GEMM's and the whole chain's median time and TFLOP/s (2*M*N*K
flops per GEMM).

Options:
  --shapes LIST      comma-separated MxNxK (repeatable; order is kept)
  --reps N           timed repetitions (default 50)
  --warmup K         untimed repetitions first (default 5)
  --io-bytes IN,OUT  also time the chain the way a compiled package's run
                     is timed: copy IN bytes host->device (pageable
                     memory), run the chain, copy OUT bytes back, wait;
                     wall clock
  --device N         the CUDA device (default 0)
  --help, --version

Examples:
  cublas_gemm_bench --shapes 2048x2048x2048
  cublas_gemm_bench --shapes 2048x2048x64,2048x2048x2048,2048x64x2048 \
                    --reps 50 --io-bytes 524288,524288

Building without CMake (a machine with only a CUDA toolkit):
  nvcc -O2 -o cublas_gemm_bench cublas_gemm_bench.cpp -lcublas
  g++ -O2 -o cublas_gemm_bench cublas_gemm_bench.cpp -I$CUDA/include \
      -L$CUDA/lib64 -lcublas -lcudart_static -ldl -lrt -lpthread

Output lines (for scripts): 'gemm MxNxK: median X ms  min Y ms  Z TFLOP/s',
'chain: ...' and, with --io-bytes, 'chain+copies: ...'.

Exit codes: 0 success, 1 bad options, 3 no usable CUDA device, 70 a CUDA
or cuBLAS call failed.
)";

struct Shape {
  int64_t m = 0, n = 0, k = 0;
  double flops() const { return 2.0 * m * n * k; }
};

struct Options {
  std::vector<Shape> shapes;
  int64_t reps = 50;
  int64_t warmup = 5;
  bool withCopies = false;
  int64_t inBytes = 0, outBytes = 0;
  int device = 0;
};

/// A parsed integer in [low, high], or false.
bool parseInt(const std::string &text, int64_t low, int64_t high,
              int64_t *out) {
  if (text.empty() || text.size() > 18)
    return false;
  for (char c : text)
    if (c < '0' || c > '9')
      return false;
  int64_t value = std::strtoll(text.c_str(), nullptr, 10);
  if (value < low || value > high)
    return false;
  *out = value;
  return true;
}

std::vector<std::string> split(const std::string &text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string::npos)
      return parts;
    start = end + 1;
  }
}

// Large enough for any GEMM worth timing, small enough that three operands
// fit a GPU and 2*M*N*K stays exact in a double.
constexpr int64_t kMaxDim = 1 << 20;
constexpr int64_t kMaxElements = int64_t(1) << 32;

bool parseShapes(const std::string &text, std::vector<Shape> *shapes,
                 std::string *error) {
  for (const std::string &item : split(text, ',')) {
    std::vector<std::string> dims = split(item, 'x');
    Shape shape;
    if (dims.size() != 3 || !parseInt(dims[0], 1, kMaxDim, &shape.m) ||
        !parseInt(dims[1], 1, kMaxDim, &shape.n) ||
        !parseInt(dims[2], 1, kMaxDim, &shape.k)) {
      *error = "--shapes: '" + item + "' is not MxNxK with each in [1, " +
               std::to_string(kMaxDim) + "]";
      return false;
    }
    if (shape.m * shape.k > kMaxElements || shape.k * shape.n > kMaxElements ||
        shape.m * shape.n > kMaxElements) {
      *error = "--shapes: '" + item + "' has an operand over 2^32 elements";
      return false;
    }
    shapes->push_back(shape);
  }
  return true;
}

/// Parses argv; returns an exit code to leave with, or -1 to run.
int parseOptions(int argc, char **argv, Options *options) {
  auto fail = [](const std::string &message) {
    std::fprintf(stderr,
                 "cublas_gemm_bench: error: %s\n(cublas_gemm_bench --help "
                 "shows the options)\n",
                 message.c_str());
    return kExitUsage;
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    if (arg == "--version") {
      std::printf("cublas_gemm_bench (Weft) built with CUDA %d.%d, cuBLAS "
                  "%d.%d.%d\n",
                  CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10,
                  CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH);
      return kExitOk;
    }
    // --name VALUE or --name=VALUE.
    std::string value;
    size_t eq = arg.find('=');
    std::string name = arg.substr(0, eq);
    if (name != "--shapes" && name != "--reps" && name != "--warmup" &&
        name != "--io-bytes" && name != "--device")
      return fail("unknown option '" + arg + "'");
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else {
      if (i + 1 >= argc)
        return fail(name + " needs a value");
      value = argv[++i];
    }
    std::string error;
    int64_t number = 0;
    if (name == "--shapes") {
      if (!parseShapes(value, &options->shapes, &error))
        return fail(error);
    } else if (name == "--reps") {
      if (!parseInt(value, 1, 1000000, &number))
        return fail("--reps: '" + value + "' is not in [1, 1000000]");
      options->reps = number;
    } else if (name == "--warmup") {
      if (!parseInt(value, 0, 1000000, &number))
        return fail("--warmup: '" + value + "' is not in [0, 1000000]");
      options->warmup = number;
    } else if (name == "--io-bytes") {
      std::vector<std::string> parts = split(value, ',');
      if (parts.size() != 2 ||
          !parseInt(parts[0], 0, int64_t(1) << 40, &options->inBytes) ||
          !parseInt(parts[1], 0, int64_t(1) << 40, &options->outBytes))
        return fail("--io-bytes: '" + value +
                    "' is not IN,OUT (two byte counts)");
      options->withCopies = true;
    } else {
      if (!parseInt(value, 0, 1 << 16, &number))
        return fail("--device: '" + value + "' is not a device number");
      options->device = static_cast<int>(number);
    }
  }
  if (options->shapes.empty())
    return fail("no GEMMs: give --shapes MxNxK[,...]");
  return -1;
}

/// Reports a failed CUDA call and gives the exit code for it.
int cudaFailure(const char *what, cudaError_t error) {
  std::fprintf(stderr, "cublas_gemm_bench: error: %s failed: %s (%s)\n", what,
               cudaGetErrorString(error), cudaGetErrorName(error));
  return kExitInternal;
}

int cublasFailure(const char *what, cublasStatus_t status) {
  std::fprintf(stderr, "cublas_gemm_bench: error: %s failed: %s (%s)\n", what,
               cublasGetStatusString(status), cublasGetStatusName(status));
  return kExitInternal;
}

#define CHECK_CUDA(call)                                                       \
  do {                                                                         \
    cudaError_t error_ = (call);                                               \
    if (error_ != cudaSuccess)                                                 \
      return cudaFailure(#call, error_);                                       \
  } while (0)

#define CHECK_CUBLAS(call)                                                     \
  do {                                                                         \
    cublasStatus_t status_ = (call);                                           \
    if (status_ != CUBLAS_STATUS_SUCCESS)                                      \
      return cublasFailure(#call, status_);                                    \
  } while (0)

/// Device memory freed on every exit path.
struct DeviceBuffer {
  void *data = nullptr;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  DeviceBuffer(DeviceBuffer &&other) noexcept : data(other.data) {
    other.data = nullptr;
  }
  ~DeviceBuffer() {
    if (data)
      cudaFree(data);
  }
};

struct Operands {
  DeviceBuffer a, b, c;
};

/// Fills with seeded values in [-1, 1): a GEMM on zeros draws less power
/// and runs faster than one on real data.
int fillRandom(void *device, int64_t count, uint32_t seed) {
  std::vector<float> host(static_cast<size_t>(count));
  uint32_t state = seed * 2654435761u + 1;
  for (float &v : host) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(state >> 8) / static_cast<float>(1 << 23) - 1.0f;
  }
  CHECK_CUDA(cudaMemcpy(device, host.data(), host.size() * sizeof(float),
                        cudaMemcpyHostToDevice));
  return kExitOk;
}

/// Queues one row-major GEMM: C = A B is, column-major, C^T = B^T A^T.
cublasStatus_t queueGemm(cublasHandle_t handle, const Shape &s,
                         const Operands &ops) {
  const float one = 1.0f, zero = 0.0f;
  return cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(s.n),
                      static_cast<int>(s.m), static_cast<int>(s.k), &one,
                      ops.b.data, CUDA_R_32F, static_cast<int>(s.n), ops.a.data,
                      CUDA_R_32F, static_cast<int>(s.k), &zero, ops.c.data,
                      CUDA_R_32F, static_cast<int>(s.n), CUBLAS_COMPUTE_32F,
                      CUBLAS_GEMM_DEFAULT);
}

struct Timing {
  double medianMs = 0, minMs = 0;
};

Timing summarize(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  size_t n = times.size();
  Timing t;
  t.medianMs = n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
  t.minMs = times.front();
  return t;
}

void printTiming(const std::string &label, const Timing &t, double flops) {
  std::printf("%s: median %.4f ms  min %.4f ms  %.2f TFLOP/s\n", label.c_str(),
              t.medianMs, t.minMs, flops / (t.medianMs * 1e-3) / 1e12);
}

/// Times GEMMs [first, last) as one unit with events on the stream.
int timeWithEvents(cublasHandle_t handle, cudaStream_t stream,
                   const std::vector<Shape> &shapes,
                   const std::vector<Operands> &ops, size_t first, size_t last,
                   const Options &options, Timing *out) {
  cudaEvent_t start = nullptr, stop = nullptr;
  CHECK_CUDA(cudaEventCreate(&start));
  cudaError_t created = cudaEventCreate(&stop);
  if (created != cudaSuccess) {
    cudaEventDestroy(start);
    return cudaFailure("cudaEventCreate(&stop)", created);
  }
  std::vector<double> times;
  int code = kExitOk;
  for (int64_t rep = 0; rep < options.warmup + options.reps && !code; ++rep) {
    cudaError_t error = cudaEventRecord(start, stream);
    for (size_t i = first; i < last && error == cudaSuccess && !code; ++i)
      if (cublasStatus_t status = queueGemm(handle, shapes[i], ops[i]))
        code = cublasFailure("cublasGemmEx", status);
    if (code)
      break;
    if (error == cudaSuccess)
      error = cudaEventRecord(stop, stream);
    if (error == cudaSuccess)
      error = cudaEventSynchronize(stop);
    float ms = 0;
    if (error == cudaSuccess)
      error = cudaEventElapsedTime(&ms, start, stop);
    if (error != cudaSuccess) {
      code = cudaFailure("timing the GEMMs with CUDA events", error);
      break;
    }
    if (rep >= options.warmup)
      times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (!code)
    *out = summarize(times);
  return code;
}

/// Times the chain as a package's run is timed: pageable copies in and out
/// around it, a wait at the end, the host's clock.
int timeWithCopies(cublasHandle_t handle, cudaStream_t stream,
                   const std::vector<Shape> &shapes,
                   const std::vector<Operands> &ops, const Options &options,
                   Timing *out) {
  std::vector<char> hostIn(static_cast<size_t>(options.inBytes), 1);
  std::vector<char> hostOut(static_cast<size_t>(options.outBytes));
  DeviceBuffer deviceIn, deviceOut;
  CHECK_CUDA(cudaMalloc(&deviceIn.data, std::max<int64_t>(options.inBytes, 1)));
  CHECK_CUDA(
      cudaMalloc(&deviceOut.data, std::max<int64_t>(options.outBytes, 1)));
  std::vector<double> times;
  for (int64_t rep = 0; rep < options.warmup + options.reps; ++rep) {
    auto start = std::chrono::steady_clock::now();
    if (options.inBytes) {
      CHECK_CUDA(cudaMemcpyAsync(deviceIn.data, hostIn.data(),
                                 hostIn.size(), cudaMemcpyHostToDevice,
                                 stream));
      CHECK_CUDA(cudaStreamSynchronize(stream));
    }
    for (size_t i = 0; i < shapes.size(); ++i)
      CHECK_CUBLAS(queueGemm(handle, shapes[i], ops[i]));
    if (options.outBytes)
      CHECK_CUDA(cudaMemcpyAsync(hostOut.data(), deviceOut.data,
                                 hostOut.size(), cudaMemcpyDeviceToHost,
                                 stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    auto end = std::chrono::steady_clock::now();
    if (rep >= options.warmup)
      times.push_back(
          std::chrono::duration<double, std::milli>(end - start).count());
  }
  *out = summarize(times);
  return kExitOk;
}

int run(const Options &options) {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess || count == 0) {
    std::fprintf(stderr,
                 "cublas_gemm_bench: error: no usable CUDA device: %s\n",
                 error != cudaSuccess ? cudaGetErrorString(error)
                                      : "cudaGetDeviceCount found none");
    return kExitNoDevice;
  }
  if (options.device >= count) {
    std::fprintf(stderr,
                 "cublas_gemm_bench: error: --device %d: this machine has "
                 "%d CUDA device(s)\n",
                 options.device, count);
    return kExitUsage;
  }
  CHECK_CUDA(cudaSetDevice(options.device));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, options.device));
  int cublasVersion = 0;

  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cublasHandle_t handle = nullptr;
  cublasStatus_t created = cublasCreate(&handle);
  if (created != CUBLAS_STATUS_SUCCESS) {
    cudaStreamDestroy(stream);
    return cublasFailure("cublasCreate", created);
  }
  // Everything below returns through here, so the handle and stream go.
  auto body = [&]() -> int {
    CHECK_CUBLAS(cublasGetVersion(handle, &cublasVersion));
    CHECK_CUBLAS(cublasSetStream(handle, stream));
    // As the runtime's handle: f32 GEMMs in f32, never TF32.
    CHECK_CUBLAS(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
    std::printf("cublas_gemm_bench: %s (sm_%d%d, %d SMs), cuBLAS %d, f32 "
                "CUBLAS_DEFAULT_MATH (no TF32), %" PRId64 " reps after %" PRId64
                " warm-up\n",
                prop.name, prop.major, prop.minor, prop.multiProcessorCount,
                cublasVersion, options.reps, options.warmup);
    std::vector<Operands> ops(options.shapes.size());
    for (size_t i = 0; i < options.shapes.size(); ++i) {
      const Shape &s = options.shapes[i];
      CHECK_CUDA(cudaMalloc(&ops[i].a.data, s.m * s.k * sizeof(float)));
      CHECK_CUDA(cudaMalloc(&ops[i].b.data, s.k * s.n * sizeof(float)));
      CHECK_CUDA(cudaMalloc(&ops[i].c.data, s.m * s.n * sizeof(float)));
      if (int code = fillRandom(ops[i].a.data, s.m * s.k, 2 * i + 1))
        return code;
      if (int code = fillRandom(ops[i].b.data, s.k * s.n, 2 * i + 2))
        return code;
    }
    double total = 0;
    for (size_t i = 0; i < options.shapes.size(); ++i) {
      const Shape &s = options.shapes[i];
      Timing t;
      if (int code = timeWithEvents(handle, stream, options.shapes, ops, i,
                                    i + 1, options, &t))
        return code;
      printTiming("gemm " + std::to_string(s.m) + "x" + std::to_string(s.n) +
                      "x" + std::to_string(s.k),
                  t, s.flops());
      total += s.flops();
    }
    Timing chain;
    if (int code = timeWithEvents(handle, stream, options.shapes, ops, 0,
                                  options.shapes.size(), options, &chain))
      return code;
    printTiming("chain", chain, total);
    if (options.withCopies) {
      Timing copies;
      if (int code = timeWithCopies(handle, stream, options.shapes, ops,
                                    options, &copies))
        return code;
      printTiming("chain+copies", copies, total);
    }
    std::printf("total: %zu GEMMs, %.4g GFLOP per chain\n",
                options.shapes.size(), total / 1e9);
    return kExitOk;
  };
  int code = body();
  cublasDestroy(handle);
  cudaStreamDestroy(stream);
  return code;
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  int code = parseOptions(argc, argv, &options);
  if (code >= 0)
    return code;
  return run(options);
}
