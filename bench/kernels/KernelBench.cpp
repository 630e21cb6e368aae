//===- KernelBench.cpp - Times the CPU kernels' alternatives --------------===//
//
// weft-kernel-bench: GEMM on OpenBLAS vs oneDNN for the shapes of the MLP,
// BERT and ResNet-18, convolution on oneDNN (plain, blocked, Winograd) vs
// im2col + GEMM for ResNet-18's layers, and our depthwise kernel vs oneDNN
// blocked for MobileNetV2's, at the requested thread counts. The kernels'
// Auto choices follow its tables (bench/kernels/README.md). MobileNetV2's
// pointwise (1x1) convolutions: one sgemm + a bias pass vs oneDNN's conv.
// Its depthwise and pointwise layers in channels-last layouts as well, and
// ResNet-18's layers between channel-blocked tensors (nChw16c).
//
//===----------------------------------------------------------------------===//

#include "Conv.h"
#include "Gemm.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace weft::rt::cpu;

namespace {
const char *const kUsage =
    "usage: weft-kernel-bench [--threads=1,2]\n"
    "                         [--only=gemm|conv|blocked|stem|depthwise|\n"
    "                                 pointwise|other]\n"
    "                         [--min-time=SECONDS] [--stat=median|min]\n"
    "\n"
    "Times the alternatives behind the CPU kernels and prints a table per\n"
    "kind, one column per thread count (microseconds). --stat=min reports\n"
    "the fastest run, steadier than the median on a busy machine.\n"
    "\n"
    "examples:\n"
    "  weft-kernel-bench                   # everything at 1 and 2 threads\n"
    "  weft-kernel-bench --only=conv --threads=1\n"
    "  weft-kernel-bench --min-time=1      # steadier figures, slower\n";

struct Options {
  std::vector<int> threads = {1, 2};
  std::string only;
  double minTime = 0.3;
  bool useMin = false;
};

/// Exit codes of Weft's command-line contract.
enum ExitCode { kOk = 0, kUsageError = 1, kInternalError = 70 };

bool parseOptions(int argc, char **argv, Options &options, int &exitCode) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      exitCode = kOk;
      return false;
    }
    if (arg == "--version") {
      std::printf("weft-kernel-bench %s\n", WEFT_KERNEL_BENCH_VERSION);
      exitCode = kOk;
      return false;
    }
    if (arg.rfind("--threads=", 0) == 0) {
      options.threads.clear();
      std::string list = arg.substr(10);
      size_t start = 0;
      while (start <= list.size()) {
        size_t comma = list.find(',', start);
        std::string item = list.substr(start, comma - start);
        char *end = nullptr;
        long n = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end || n < 1 || n > 4096) {
          std::fprintf(stderr,
                       "weft-kernel-bench: '%s' in --threads is not a thread "
                       "count (1 to 4096)\n",
                       item.c_str());
          exitCode = kUsageError;
          return false;
        }
        options.threads.push_back(static_cast<int>(n));
        if (comma == std::string::npos)
          break;
        start = comma + 1;
      }
      continue;
    }
    if (arg.rfind("--only=", 0) == 0) {
      options.only = arg.substr(7);
      if (options.only != "gemm" && options.only != "conv" &&
          options.only != "blocked" && options.only != "stem" &&
          options.only != "depthwise" && options.only != "pointwise" &&
          options.only != "other") {
        std::fprintf(stderr,
                     "weft-kernel-bench: --only takes gemm, conv, blocked, "
                     "stem, depthwise, pointwise or other, not '%s'\n",
                     options.only.c_str());
        exitCode = kUsageError;
        return false;
      }
      continue;
    }
    if (arg == "--stat=min" || arg == "--stat=median") {
      options.useMin = arg == "--stat=min";
      continue;
    }
    if (arg.rfind("--min-time=", 0) == 0) {
      char *end = nullptr;
      options.minTime = std::strtod(arg.c_str() + 11, &end);
      if (*end || !(options.minTime > 0 && options.minTime <= 60)) {
        std::fprintf(stderr,
                     "weft-kernel-bench: --min-time takes seconds in (0, "
                     "60], not '%s'\n",
                     arg.c_str() + 11);
        exitCode = kUsageError;
        return false;
      }
      continue;
    }
    std::fprintf(stderr, "weft-kernel-bench: unknown option '%s'\n%s",
                 arg.c_str(), kUsage);
    exitCode = kUsageError;
    return false;
  }
  return true;
}

double seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

/// Median (or fastest) microseconds of `run` over at least 5 runs and
/// `minTime` seconds, after 3 warm-up runs; negative if a run fails.
double timeIt(const std::function<weft_rt_status()> &run,
              const Options &options) {
  const double minTime = options.minTime;
  for (int i = 0; i < 3; ++i)
    if (run() != WEFT_RT_OK)
      return -1;
  std::vector<double> samples;
  double start = seconds();
  while (samples.size() < 5 || seconds() - start < minTime) {
    double t0 = seconds();
    if (run() != WEFT_RT_OK)
      return -1;
    samples.push_back((seconds() - t0) * 1e6);
    if (samples.size() >= 10000)
      break;
  }
  std::sort(samples.begin(), samples.end());
  return options.useMin ? samples.front() : samples[samples.size() / 2];
}

std::vector<float> randomFloats(size_t count, unsigned seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float &v : values)
    v = dist(engine);
  return values;
}

int64_t doubleBits(double value) {
  int64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

/// One context per thread count, shared by all measurements.
struct Contexts {
  std::vector<weft_rt_context *> all;
  ~Contexts() {
    for (weft_rt_context *ctx : all)
      weft_rt_context_destroy(ctx);
  }
};

void printHeader(const char *title, const std::vector<std::string> &variants,
                 const Options &options) {
  std::printf("\n%s (%s us; GFLOP/s in brackets)\n", title,
              options.useMin ? "fastest" : "median");
  std::printf("%-28s", "shape");
  for (int threads : options.threads)
    for (const std::string &variant : variants)
      std::printf(" %16s", (variant + " t" + std::to_string(threads)).c_str());
  std::printf("\n");
}

//===----------------------------------------------------------------------===//
// GEMM
//===----------------------------------------------------------------------===//

struct GemmShape {
  const char *name;
  int64_t batch, m, n, k;
  bool transB;
};

int benchGemm(Contexts &contexts, const Options &options) {
  const GemmShape shapes[] = {
      {"mlp fc1 1x256x784 tB", 1, 1, 256, 784, true},
      {"mlp fc2 1x128x256 tB", 1, 1, 128, 256, true},
      {"mlp fc1 4x256x784 tB", 1, 4, 256, 784, true},
      {"bert qkv 128x384x128", 1, 128, 384, 128, false},
      {"bert proj 128x128x128 tB", 1, 128, 128, 128, true},
      {"bert ffn1 128x512x128", 1, 128, 512, 128, false},
      {"bert ffn2 128x128x512", 1, 128, 128, 512, false},
      {"bert qk 2x128x128x64", 2, 128, 128, 64, false},
      {"bert pv 2x128x64x128", 2, 128, 64, 128, false},
      {"rn conv1 64x12544x147", 1, 64, 12544, 147, false},
      {"rn l1 64x3136x576", 1, 64, 3136, 576, false},
      {"rn l2 128x784x1152", 1, 128, 784, 1152, false},
      {"rn l3 256x196x2304", 1, 256, 196, 2304, false},
      {"rn l4 512x49x4608", 1, 512, 49, 4608, false},
      {"rn ds2 128x784x64", 1, 128, 784, 64, false},
      {"rn fc 1x1000x512 tB", 1, 1, 1000, 512, true},
  };
  const GemmBackend backends[] = {GemmBackend::OpenBlas, GemmBackend::OneDnn};
  printHeader("GEMM: OpenBLAS vs oneDNN", {"openblas", "onednn"}, options);
  for (const GemmShape &s : shapes) {
    auto a = randomFloats(s.batch * s.m * s.k, 1);
    auto b = randomFloats(s.batch * s.k * s.n, 2);
    std::vector<float> out(s.batch * s.m * s.n);
    const int64_t params[] = {
        WEFT_RT_F32,   s.m, s.n, s.k, 0,       s.transB,  doubleBits(1),
        doubleBits(0), 0,   1,   1,   s.batch, s.m * s.k, s.k * s.n};
    double flops = 2.0 * s.batch * s.m * s.n * s.k;
    std::printf("%-28s", s.name);
    for (weft_rt_context *ctx : contexts.all)
      for (GemmBackend backend : backends) {
        double us = timeIt(
            [&] {
              return matmulWith(ctx, backend, params, a.data(), b.data(),
                                nullptr, out.data());
            },
            options);
        if (us < 0) {
          std::fprintf(stderr, "weft-kernel-bench: %s failed: %s\n", s.name,
                       weft_rt_context_error(ctx));
          return kInternalError;
        }
        std::printf(" %8.1f [%5.0f]", us, flops / us / 1e3);
      }
    std::printf("\n");
    std::fflush(stdout);
  }
  return kOk;
}

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

/// The buffers of one convolution shape.
struct ConvBuffers {
  const float *x, *w, *bias;
  float *y;
};

/// One column of a convolution table: an algorithm, for the depthwise
/// kernel the path it is forced onto, and the layout word (weft_rt.h; the
/// buffers' sizes do not change with it, and their contents do not matter
/// to the time).
struct ConvColumn {
  ConvColumn(ConvAlgorithm algorithm, DepthwisePath path = DepthwisePath::Auto,
             int64_t layout = 0)
      : algorithm(algorithm), path(path), layout(layout) {}
  ConvAlgorithm algorithm;
  DepthwisePath path;
  int64_t layout;
};

/// One row of a convolution table: every algorithm on every context,
/// printed as "us [GFLOP/s]"; adds `count` x each time to its column of
/// `totals` and names oneDNN's implementation of the algorithms in `named`.
/// `params` (`words` words, the layout word last) is copied with each
/// column's layout. Drops the cached primitives afterwards: the next row
/// reuses the parameter block's address.
int timeConvRow(Contexts &contexts, const Options &options, const char *name,
                const std::vector<ConvColumn> &columns,
                const std::vector<ConvAlgorithm> &named, const int64_t *params,
                size_t words, const ConvBuffers &buffers, double flops,
                int count, std::vector<double> &totals,
                std::vector<std::string> &implementations) {
  std::printf("%-28s", name);
  size_t column = 0;
  for (weft_rt_context *ctx : contexts.all)
    for (const ConvColumn &columnSpec : columns) {
      const ConvAlgorithm algorithm = columnSpec.algorithm;
      std::vector<int64_t> block(params, params + words);
      block.back() = columnSpec.layout;
      forceDepthwisePath(columnSpec.path);
      double us = timeIt(
          [&] {
            return convWith(ctx, algorithm, block.data(), buffers.x, buffers.w,
                            buffers.bias, buffers.y);
          },
          options);
      if (us < 0) {
        std::fprintf(stderr, "weft-kernel-bench: %s failed: %s\n", name,
                     weft_rt_context_error(ctx));
        return kInternalError;
      }
      if (ctx == contexts.all.front() &&
          std::find(named.begin(), named.end(), algorithm) != named.end())
        implementations.push_back(std::string(name) + ": " +
                                  oneDnnConvImplementation(ctx, block.data()));
      forceDepthwisePath(DepthwisePath::Auto);
      totals[column++] += us * count;
      std::printf(" %8.1f [%5.0f]", us, flops / us / 1e3);
    }
  std::printf("\n");
  std::fflush(stdout);
  for (weft_rt_context *ctx : contexts.all)
    ctx->kernelCache.clear();
  return kOk;
}

/// A convolution table's last row and the oneDNN implementations it used.
void printConvTotals(const char *label, const std::vector<double> &totals,
                     const char *implementationsHeading,
                     const std::vector<std::string> &implementations) {
  std::printf("%-28s", label);
  for (double total : totals)
    std::printf(" %8.0f        ", total);
  std::printf("\n");
  if (implementations.empty())
    return;
  std::printf("\noneDNN implementations (%s):\n", implementationsHeading);
  for (const std::string &line : implementations)
    std::printf("  %s\n", line.c_str());
}

struct ConvLayer {
  const char *name;
  int64_t c, oc, size, kernel, stride, pad;
  /// How many times ResNet-18 runs this shape.
  int count;
};

int benchConv(Contexts &contexts, const Options &options) {
  const ConvLayer layers[] = {
      {"conv1 3>64 224 k7s2", 3, 64, 224, 7, 2, 3, 1},
      {"l1 64>64 56 k3", 64, 64, 56, 3, 1, 1, 4},
      {"l2a 64>128 56 k3s2", 64, 128, 56, 3, 2, 1, 1},
      {"l2ds 64>128 56 k1s2", 64, 128, 56, 1, 2, 0, 1},
      {"l2 128>128 28 k3", 128, 128, 28, 3, 1, 1, 3},
      {"l3a 128>256 28 k3s2", 128, 256, 28, 3, 2, 1, 1},
      {"l3ds 128>256 28 k1s2", 128, 256, 28, 1, 2, 0, 1},
      {"l3 256>256 14 k3", 256, 256, 14, 3, 1, 1, 3},
      {"l4a 256>512 14 k3s2", 256, 512, 14, 3, 2, 1, 1},
      {"l4ds 256>512 14 k1s2", 256, 512, 14, 1, 2, 0, 1},
      {"l4 512>512 7 k3", 512, 512, 7, 3, 1, 1, 3},
  };
  // The last column is what weft_rt_cpu_conv picks (Auto).
  const std::vector<ConvColumn> algorithms = {
      ConvAlgorithm::OneDnnPlain,    ConvAlgorithm::OneDnnBlocked,
      ConvAlgorithm::OneDnnWinograd, ConvAlgorithm::Im2colOneDnnGemm,
      ConvAlgorithm::Im2colOpenBlas, ConvAlgorithm::Auto};
  printHeader("Convolution: oneDNN vs im2col + GEMM (ResNet-18, batch 1)",
              {"dnnl-plain", "dnnl-blocked", "dnnl-wino", "i2c+dnnl",
               "i2c+oblas", "kept"},
              options);
  const size_t columns = contexts.all.size() * std::size(algorithms);
  std::vector<double> totals(columns, 0.0);
  std::vector<std::string> implementations;
  for (const ConvLayer &l : layers) {
    int64_t out = (l.size + 2 * l.pad - l.kernel) / l.stride + 1;
    auto x = randomFloats(l.c * l.size * l.size, 3);
    auto w = randomFloats(l.oc * l.c * l.kernel * l.kernel, 4);
    auto bias = randomFloats(l.oc, 5);
    std::vector<float> y(l.oc * out * out);
    const int64_t params[] = {
        WEFT_RT_F32, 2,        1,        l.c,      l.oc, 1, l.size, l.size,
        l.kernel,    l.kernel, l.stride, l.stride, 1,    1, l.pad,  l.pad,
        l.pad,       l.pad,    out,      out,      0,    0, 0,
        0}; // layout 0: NCHW
    double flops = 2.0 * l.oc * out * out * l.c * l.kernel * l.kernel;
    if (int code = timeConvRow(contexts, options, l.name, algorithms,
                               {ConvAlgorithm::OneDnnPlain,
                                ConvAlgorithm::OneDnnBlocked,
                                ConvAlgorithm::OneDnnWinograd},
                               params, std::size(params),
                               {x.data(), w.data(), bias.data(), y.data()},
                               flops, l.count, totals, implementations))
      return code;
  }
  printConvTotals("ResNet-18 convs, total", totals, "plain, blocked, winograd",
                  implementations);
  return kOk;
}

/// ResNet-18's layers after the stem as weft_rt_cpu_conv runs them (Auto)
/// with NCHW buffers and with channel-blocked ones (layout bits 8 and 16,
/// N x C/16 x H x W x 16), where oneDNN reorders less or not at all.
int benchBlockedConv(Contexts &contexts, const Options &options) {
  const ConvLayer layers[] = {
      {"l1 64>64 56 k3", 64, 64, 56, 3, 1, 1, 4},
      {"l2a 64>128 56 k3s2", 64, 128, 56, 3, 2, 1, 1},
      {"l2ds 64>128 56 k1s2", 64, 128, 56, 1, 2, 0, 1},
      {"l2 128>128 28 k3", 128, 128, 28, 3, 1, 1, 3},
      {"l3a 128>256 28 k3s2", 128, 256, 28, 3, 2, 1, 1},
      {"l3ds 128>256 28 k1s2", 128, 256, 28, 1, 2, 0, 1},
      {"l3 256>256 14 k3", 256, 256, 14, 3, 1, 1, 3},
      {"l4a 256>512 14 k3s2", 256, 512, 14, 3, 2, 1, 1},
      {"l4ds 256>512 14 k1s2", 256, 512, 14, 1, 2, 0, 1},
      {"l4 512>512 7 k3", 512, 512, 7, 3, 1, 1, 3},
  };
  const std::vector<ConvColumn> layouts = {
      {ConvAlgorithm::Auto, DepthwisePath::Auto, 0},
      {ConvAlgorithm::Auto, DepthwisePath::Auto, 8 | 16},
      {ConvAlgorithm::Auto, DepthwisePath::Auto, 8},
      {ConvAlgorithm::Auto, DepthwisePath::Auto, 16}};
  printHeader("Convolution between channel-blocked tensors (ResNet-18, batch "
              "1, Auto)",
              {"nchw", "blocked", "blk>nchw", "nchw>blk"}, options);
  std::vector<double> totals(contexts.all.size() * layouts.size(), 0.0);
  std::vector<std::string> implementations;
  for (const ConvLayer &l : layers) {
    int64_t out = (l.size + 2 * l.pad - l.kernel) / l.stride + 1;
    auto x = randomFloats(l.c * l.size * l.size, 3);
    auto w = randomFloats(l.oc * l.c * l.kernel * l.kernel, 4);
    auto bias = randomFloats(l.oc, 5);
    std::vector<float> y(l.oc * out * out);
    const int64_t params[] = {
        WEFT_RT_F32, 2,        1,        l.c,      l.oc,     1,   l.size,
        l.size,      l.kernel, l.kernel, l.stride, l.stride, 1,   1,
        l.pad,       l.pad,    l.pad,    l.pad,    out,      out, 0,
        0,           0,        0}; // layout: each column's
    double flops = 2.0 * l.oc * out * out * l.c * l.kernel * l.kernel;
    if (int code = timeConvRow(contexts, options, l.name, layouts, {}, params,
                               std::size(params),
                               {x.data(), w.data(), bias.data(), y.data()},
                               flops, l.count, totals, implementations))
      return code;
  }
  printConvTotals("ResNet-18 convs, total", totals, "", implementations);
  return kOk;
}

//===----------------------------------------------------------------------===//
// First layers (few input channels)
//===----------------------------------------------------------------------===//

struct StemLayer {
  const char *name;
  int64_t c, oc, height, width, kernel, stride, pad;
  /// Activation word: 0 none, 1 clamp to [0, 6] (Relu6), 2 clamp to
  /// [0, inf) (Relu); the compiler fuses the activation that follows.
  int activation;
};

int benchStem(Contexts &contexts, const Options &options) {
  const StemLayer layers[] = {
      {"ResNet 3>64 224 k7s2", 3, 64, 224, 224, 7, 2, 3, 2},
      {"MobileNetV2 3>32 224 k3s2", 3, 32, 224, 224, 3, 2, 1, 1},
      {"CRNN 1>64 32x128 k3", 1, 64, 32, 128, 3, 1, 1, 2},
  };
  // The last column is what weft_rt_cpu_conv picks (Auto).
  const std::vector<ConvColumn> algorithms = {
      ConvAlgorithm::OneDnnBlocked, ConvAlgorithm::OneDnnWinograd,
      ConvAlgorithm::Im2colOneDnnGemm, ConvAlgorithm::Direct,
      ConvAlgorithm::Auto};
  printHeader("First layers: oneDNN vs our direct convolution (batch 1, "
              "with the fused activation)",
              {"dnnl-blocked", "dnnl-wino", "i2c+dnnl", "direct", "kept"},
              options);
  const size_t columns = contexts.all.size() * std::size(algorithms);
  std::vector<double> totals(columns, 0.0);
  std::vector<std::string> implementations;
  for (const StemLayer &l : layers) {
    int64_t oh = (l.height + 2 * l.pad - l.kernel) / l.stride + 1;
    int64_t ow = (l.width + 2 * l.pad - l.kernel) / l.stride + 1;
    auto x = randomFloats(l.c * l.height * l.width, 3);
    auto w = randomFloats(l.oc * l.c * l.kernel * l.kernel, 4);
    auto bias = randomFloats(l.oc, 5);
    std::vector<float> y(l.oc * oh * ow);
    const int64_t high = l.activation == 1 ? doubleBits(6.0)
                                           : doubleBits(HUGE_VAL);
    const int64_t params[] = {
        WEFT_RT_F32, 2,        1,        l.c,      l.oc, 1, l.height, l.width,
        l.kernel,    l.kernel, l.stride, l.stride, 1,    1, l.pad,    l.pad,
        l.pad,       l.pad,    oh,       ow,       l.activation ? 1 : 0,
        doubleBits(0.0),       high,     0}; // layout 0: NCHW
    double flops = 2.0 * l.oc * oh * ow * l.c * l.kernel * l.kernel;
    if (int code = timeConvRow(
            contexts, options, l.name, algorithms,
            {ConvAlgorithm::OneDnnBlocked, ConvAlgorithm::OneDnnWinograd},
            params, std::size(params),
            {x.data(), w.data(), bias.data(), y.data()}, flops, 1, totals,
            implementations))
      return code;
  }
  printConvTotals("3 first layers, total", totals, "blocked, winograd",
                  implementations);
  return kOk;
}

//===----------------------------------------------------------------------===//
// Depthwise convolution
//===----------------------------------------------------------------------===//

struct DepthwiseLayer {
  const char *name;
  int64_t c, size, stride;
  /// How many times MobileNetV2 runs this shape.
  int count;
};

/// Floats at a 64-byte boundary, as generated code allocates its buffers
/// (kBufferAlignment).
class AlignedFloats {
public:
  explicit AlignedFloats(const std::vector<float> &values)
      : values(static_cast<float *>(std::aligned_alloc(
            64, (values.size() * sizeof(float) + 63) / 64 * 64))) {
    std::copy(values.begin(), values.end(), this->values);
  }
  AlignedFloats(const AlignedFloats &) = delete;
  AlignedFloats &operator=(const AlignedFloats &) = delete;
  ~AlignedFloats() { std::free(values); }
  float *data() const { return values; }

private:
  float *values;
};

int benchDepthwise(Contexts &contexts, const Options &options) {
  // MobileNetV2's 17 depthwise 3x3 layers (pads 1), each followed by a
  // Relu6 that the compiler fuses: timed with the clamp to [0, 6].
  const DepthwiseLayer layers[] = {
      {"dw 32 112 s1", 32, 112, 1, 1},
      {"dw 96 112 s2", 96, 112, 2, 1},
      {"dw 144 56 s1", 144, 56, 1, 1},
      {"dw 144 56 s2", 144, 56, 2, 1},
      {"dw 192 28 s1 (x2)", 192, 28, 1, 2},
      {"dw 192 28 s2", 192, 28, 2, 1},
      {"dw 384 14 s1 (x4)", 384, 14, 1, 4},
      {"dw 576 14 s1 (x2)", 576, 14, 1, 2},
      {"dw 576 14 s2", 576, 14, 2, 1},
      {"dw 960 7 s1 (x3)", 960, 7, 1, 3},
  };
  // `kept` is what weft_rt_cpu_conv picks (Auto) in NCHW, `nhwc` in
  // layout 7: channels-last input and output, HWIO weights.
  const std::vector<ConvColumn> algorithms = {
      {ConvAlgorithm::Depthwise, DepthwisePath::Planes},
      {ConvAlgorithm::Depthwise, DepthwisePath::ChannelBlocked},
      ConvAlgorithm::OneDnnBlocked,
      ConvAlgorithm::Auto,
      {ConvAlgorithm::Auto, DepthwisePath::Auto, 7}};
  printHeader("Depthwise 3x3 + Relu6: ours (planes, channel-blocked, "
              "channels-last) vs oneDNN blocked (MobileNetV2, batch 1)",
              {"dw-planes", "dw-blocked", "dnnl-blocked", "kept", "nhwc"},
              options);
  const size_t columns = contexts.all.size() * std::size(algorithms);
  std::vector<double> totals(columns, 0.0);
  std::vector<std::string> implementations;
  for (const DepthwiseLayer &l : layers) {
    int64_t out = (l.size + 2 - 3) / l.stride + 1;
    AlignedFloats x(randomFloats(l.c * l.size * l.size, 3));
    AlignedFloats w(randomFloats(l.c * 9, 4));
    AlignedFloats bias(randomFloats(l.c, 5));
    AlignedFloats y(std::vector<float>(l.c * out * out));
    // Relu6: activation 1, clamp to [0, 6].
    const int64_t low = doubleBits(0.0), high = doubleBits(6.0);
    const int64_t params[] = {WEFT_RT_F32, 2,      1, l.c, l.c,      l.c,
                              l.size,      l.size, 3, 3,   l.stride, l.stride,
                              1,           1,      1, 1,   1,        1,
                              out,         out,    1, low, high,
                              0}; // layout 0: NCHW
    double flops = 2.0 * l.c * out * out * 9;
    if (int code = timeConvRow(contexts, options, l.name, algorithms,
                               {ConvAlgorithm::OneDnnBlocked}, params,
                               std::size(params),
                               {x.data(), w.data(), bias.data(), y.data()},
                               flops, l.count, totals, implementations))
      return code;
  }
  printConvTotals("MobileNetV2 dw, total", totals, "blocked", implementations);
  return kOk;
}

//===----------------------------------------------------------------------===//
// Pointwise convolution
//===----------------------------------------------------------------------===//

struct PointwiseLayer {
  const char *name;
  int64_t oc, c, size;
  /// How many times MobileNetV2 runs this shape.
  int count;
};

int benchPointwise(Contexts &contexts, const Options &options) {
  // MobileNetV2's pointwise layers (34 with the repeats): the expansions
  // (OC > C) are followed by a Relu6 that the compiler fuses, timed with
  // the clamp to [0, 6]; the projections have a bias alone.
  const PointwiseLayer layers[] = {
      {"pw 16x32 112", 16, 32, 112, 1},   {"pw 96x16 112", 96, 16, 112, 1},
      {"pw 24x96 56", 24, 96, 56, 1},     {"pw 144x24 56", 144, 24, 56, 2},
      {"pw 24x144 56", 24, 144, 56, 1},   {"pw 32x144 28", 32, 144, 28, 1},
      {"pw 192x32 28", 192, 32, 28, 3},   {"pw 32x192 28", 32, 192, 28, 2},
      {"pw 64x192 14", 64, 192, 14, 1},   {"pw 384x64 14", 384, 64, 14, 4},
      {"pw 64x384 14", 64, 384, 14, 3},   {"pw 96x384 14", 96, 384, 14, 1},
      {"pw 576x96 14", 576, 96, 14, 3},   {"pw 96x576 14", 96, 576, 14, 2},
      {"pw 160x576 7", 160, 576, 7, 1},   {"pw 960x160 7", 960, 160, 7, 3},
      {"pw 160x960 7", 160, 960, 7, 2},   {"pw 320x960 7", 320, 960, 7, 1},
      {"pw 1280x320 7", 1280, 320, 7, 1},
  };
  // `kept` is what weft_rt_cpu_conv picks (Auto) in NCHW; `nhwc` is
  // layout 7 (channels-last input and output, HWIO weights), `nchw>nhwc`
  // layout 6 (NCHW input, channels-last output, HWIO weights), `nhwc>nchw`
  // layout 1 (channels-last input, NCHW output, OIHW weights).
  const std::vector<ConvColumn> algorithms = {
      ConvAlgorithm::Im2colOneDnnGemm,
      ConvAlgorithm::OneDnnPlain,
      ConvAlgorithm::Auto,
      {ConvAlgorithm::Auto, DepthwisePath::Auto, 7},
      {ConvAlgorithm::Auto, DepthwisePath::Auto, 6},
      {ConvAlgorithm::Auto, DepthwisePath::Auto, 1}};
  printHeader("Pointwise 1x1: sgemm + bias pass vs oneDNN, NCHW and "
              "channels-last (MobileNetV2, batch 1)",
              {"i2c+dnnl", "dnnl-plain", "kept", "nhwc", "nchw>nhwc",
               "nhwc>nchw"},
              options);
  const size_t columns = contexts.all.size() * std::size(algorithms);
  std::vector<double> totals(columns, 0.0);
  std::vector<std::string> implementations;
  for (const PointwiseLayer &l : layers) {
    const int64_t plane = l.size * l.size;
    AlignedFloats x(randomFloats(l.c * plane, 3));
    AlignedFloats w(randomFloats(l.oc * l.c, 4));
    AlignedFloats bias(randomFloats(l.oc, 5));
    AlignedFloats y(std::vector<float>(l.oc * plane));
    // Relu6 (activation 1, clamp to [0, 6]) after the expansions only.
    const int64_t activation = l.oc > l.c ? 1 : 0;
    const int64_t low = activation ? doubleBits(0.0) : 0;
    const int64_t high = activation ? doubleBits(6.0) : 0;
    const int64_t params[] = {WEFT_RT_F32, 2,      1,          l.c, l.oc, 1,
                              l.size,      l.size, 1,          1,   1,    1,
                              1,           1,      0,          0,   0,    0,
                              l.size,      l.size, activation, low, high,
                              0}; // layout 0: NCHW
    double flops = 2.0 * l.oc * l.c * plane;
    if (int code =
            timeConvRow(contexts, options, l.name, algorithms,
                        {ConvAlgorithm::OneDnnPlain}, params, std::size(params),
                        {x.data(), w.data(), bias.data(), y.data()}, flops,
                        l.count, totals, implementations))
      return code;
  }
  printConvTotals("MobileNetV2 pw, total", totals, "plain", implementations);
  return kOk;
}

//===----------------------------------------------------------------------===//
// Other kernels
//===----------------------------------------------------------------------===//

int benchOther(Contexts &contexts, const Options &options) {
  std::printf("\nOther kernels (%s us)\n%-28s",
              options.useMin ? "fastest" : "median", "kernel");
  for (int threads : options.threads)
    std::printf(" %8s", ("t" + std::to_string(threads)).c_str());
  std::printf("\n");
  auto x = randomFloats(64 * 112 * 112, 6);
  auto scale = randomFloats(512, 7), bias = randomFloats(512, 8);
  std::vector<float> y(x.size());
  std::vector<int64_t> softmax = {WEFT_RT_F32, 2 * 128, 128, 1, 0};
  std::vector<int64_t> layerNorm = {WEFT_RT_F32, 0, 128,
                                    128,         0, doubleBits(1e-12)};
  // The pools' last word is the layout: 0 NCHW, 1 channel-blocked by 16.
  std::vector<int64_t> maxPool = {WEFT_RT_F32, 0, 0, 2, 1,  64, 112,
                                  112,         3, 3, 2, 2,  1,  1,
                                  1,           1, 1, 1, 56, 56, 0};
  std::vector<int64_t> blockedMaxPool = maxPool;
  blockedMaxPool.back() = 1;
  std::vector<int64_t> globalPool = {WEFT_RT_F32, 1, 0, 2, 1, 512, 7,
                                     7,           7, 7, 1, 1, 1,   1,
                                     0,           0, 0, 0, 1, 1,   0};
  std::vector<int64_t> blockedGlobalPool = globalPool;
  blockedGlobalPool.back() = 1;
  // MobileNetV2's GlobalAveragePool, which the importer writes as a
  // ReduceMean over the spatial axes: {dtype, kind (mean), rank, dims,
  // reduced mask}.
  std::vector<int64_t> reduceMean = {WEFT_RT_F32, 0, 4, 1, 1280, 7, 7,
                                     0,           0, 1, 1};
  std::vector<int64_t> transpose = {4, 3, 128, 2, 64, 1, 2, 0};
  struct Case {
    const char *name;
    std::function<weft_rt_status(weft_rt_context *)> run;
  } cases[] = {
      {"softmax 2x128x128",
       [&](weft_rt_context *ctx) {
         return weft_rt_cpu_softmax(ctx, softmax.data(), x.data(), y.data());
       }},
      {"layer norm 128x128",
       [&](weft_rt_context *ctx) {
         return weft_rt_cpu_normalize(ctx, layerNorm.data(), x.data(),
                                      scale.data(), bias.data(), y.data(),
                                      nullptr, nullptr);
       }},
      {"max pool 64x112x112 k3s2",
       [&](weft_rt_context *ctx) {
         return weft_rt_cpu_pool(ctx, maxPool.data(), x.data(), y.data());
       }},
      {"max pool blocked 64x112x112",
       [&](weft_rt_context *ctx) {
         return weft_rt_cpu_pool(ctx, blockedMaxPool.data(), x.data(),
                                 y.data());
       }},
      {"global avg pool 512x7x7",
       [&](weft_rt_context *ctx) {
         return weft_rt_cpu_pool(ctx, globalPool.data(), x.data(), y.data());
       }},
      {"global avg pool blocked",
       [&](weft_rt_context *ctx) {
         return weft_rt_cpu_pool(ctx, blockedGlobalPool.data(), x.data(),
                                 y.data());
       }},
      {"reduce mean 1280x7x7 (2,3)",
       [&](weft_rt_context *ctx) {
         return weft_rt_cpu_reduce(ctx, reduceMean.data(), x.data(), y.data());
       }},
      {"transpose 128x2x64 (1,2,0)",
       [&](weft_rt_context *ctx) {
         return weft_rt_cpu_transpose(ctx, transpose.data(), x.data(),
                                      y.data());
       }},
  };
  for (const Case &c : cases) {
    std::printf("%-28s", c.name);
    for (weft_rt_context *ctx : contexts.all) {
      double us = timeIt([&] { return c.run(ctx); }, options);
      if (us < 0) {
        std::fprintf(stderr, "weft-kernel-bench: %s failed: %s\n", c.name,
                     weft_rt_context_error(ctx));
        return kInternalError;
      }
      std::printf(" %8.1f", us);
    }
    std::printf("\n");
  }
  return kOk;
}
} // namespace

int main(int argc, char **argv) {
  Options options;
  int exitCode = kOk;
  if (!parseOptions(argc, argv, options, exitCode))
    return exitCode;
  Contexts contexts;
  for (int threads : options.threads) {
    weft_rt_context *ctx = nullptr;
    if (weft_rt_context_create(&ctx) != WEFT_RT_OK ||
        weft_rt_context_set_num_threads(ctx, threads) != WEFT_RT_OK) {
      std::fprintf(stderr, "weft-kernel-bench: cannot make a context: %s\n",
                   weft_rt_context_error(ctx));
      weft_rt_context_destroy(ctx);
      return kInternalError;
    }
    contexts.all.push_back(ctx);
  }
  std::printf("weft-kernel-bench %s, threads:", WEFT_KERNEL_BENCH_VERSION);
  for (int threads : options.threads)
    std::printf(" %d", threads);
  std::printf("\n");
  if (options.only.empty() || options.only == "gemm")
    if (int code = benchGemm(contexts, options))
      return code;
  if (options.only.empty() || options.only == "conv")
    if (int code = benchConv(contexts, options))
      return code;
  if (options.only.empty() || options.only == "conv" ||
      options.only == "blocked")
    if (int code = benchBlockedConv(contexts, options))
      return code;
  if (options.only.empty() || options.only == "stem")
    if (int code = benchStem(contexts, options))
      return code;
  if (options.only.empty() || options.only == "depthwise")
    if (int code = benchDepthwise(contexts, options))
      return code;
  if (options.only.empty() || options.only == "pointwise")
    if (int code = benchPointwise(contexts, options))
      return code;
  if (options.only.empty() || options.only == "other")
    if (int code = benchOther(contexts, options))
      return code;
  return kOk;
}
