//===- weft-calibrate.cpp - Measure this machine, write a cluster spec ----===//
//
// weft-calibrate -o SPEC.json [--devices N] [--quick] [--no-mpi]
//
// Measures THIS machine with microbenchmarks only (no model is compiled or
// run) and writes a cluster spec of the cpu:N preset's shape (one node
// "host" with N devices cpu0..cpuN-1 of one kind "cpu-core") whose numbers
// are the measured ones:
//   - kind.flop_per_s.f32/f64: weft_rt_cpu_matmul on one thread, the median
//     rate over three GEMM sizes typical of models;
//   - kind.memory_bandwidth_bytes_per_s: a STREAM triad on one thread over
//     buffers much larger than the last-level cache;
//   - node.memory_bandwidth_bytes_per_s: the same triad on N threads at once
//     (the host bandwidth the N processes share);
//   - links.intra_node: an MPI ping-pong between two ranks of this host
//     (weft-calibrate-rank under mpirun, through lib/Launch);
//   - memory_bytes: this machine's physical memory / N; node.cores: the
//     physical cores, as the preset counts them.
//   - kernel_rates: convolutions of each kernel class (3x3 stride 1, other
//     spatial, 1x1, depthwise) at three shapes each, their median rate over the f32 GEMM
//     rate.
// The per-call overhead of a tiny kernel is measured and printed only: the
// cost model has no field for it.
// docs/Simulator.md ("Calibration") describes it.
//
//===----------------------------------------------------------------------===//

#include "weft/Launch/Launch.h"
#include "weft/Plan/Cluster.h"
#include "weft/Version.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include "weft_rt.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace llvm;

namespace {

enum ExitCode { kExitSuccess = 0, kExitBadInput = 1, kExitInternal = 70 };

constexpr int kMaxDevices = 1024;

int fail(const Twine &message, int code = kExitBadInput) {
  WithColor::error(errs(), "weft-calibrate") << message << "\n";
  return code;
}

void printHelp() {
  outs()
      << R"(usage: weft-calibrate -o SPEC.json [--devices N] [--quick] [--no-mpi]

Measures this machine with microbenchmarks (the runtime's own kernels, a
STREAM-like triad, an MPI ping-pong; no model) and writes a cluster spec of
the cpu:N preset's shape (one node "host", devices cpu0..cpuN-1 of one kind
"cpu-core") with the measured numbers, for weftc --cluster. The spec stays
the analytic cost model of docs/ClusterSpec.md; calibration fills in its
numbers. docs/Simulator.md ("Calibration") describes each measurement.

Options:
  -o, --output FILE  the spec to write (written whole or not at all)
  --devices N        the devices (one process each) of the spec, 1 to 1024
                     (default 1); the shared host bandwidth is measured
                     with N threads at once (at most one per hardware
                     thread)
  --quick            shorten every measurement (a few seconds in all; for
                     tests, not for planning)
  --no-mpi           skip the MPI ping-pong and keep the cpu:N preset's
                     intra-node link (10 GB/s, 1 us)
  -h, --help         this text
  --version          the version

What it measures (one thread unless said):
  GEMM f32, f64      weft_rt_cpu_matmul at 64x256x256, 128x768x768 and
                     512x512x512 (MxNxK); the median rate is the kind's
                     flop_per_s; f16, bf16, i8, i32 and i64 keep the preset's
                     ratios to f32, scaled by the f32 measurement
  convolutions      weft_rt_cpu_conv per kernel class at three shapes
                     (one with --quick), each call on another of up to 64
                     copies of the op (64 MiB in all: weights and input come
                     from memory, as in a network): conv3x3 (stride 1)
                     64->64 56x56, 256->256 14x14, 512->512 7x7; conv 7x7
                     stride 2
                     3->64 224x224, 3x3 stride 2 64->128 56x56 and
                     128->256 28x28; pointwise_conv 1x1 144->24
                     56x56, 384->64 14x14, 96->576 14x14; depthwise_conv
                     3x3 144 at 56x56, 384 at 14x14, 96 at 112x112 stride
                     2; counted as 2 x the direct method's multiply-adds
                     (Winograd may beat the GEMM rate); the median rate over
                     the f32 GEMM rate is the kind's kernel_rates entry
  kernel overhead    one 1x1x1 matmul call (printed only)
  memory bandwidth   a STREAM triad over 3 buffers of 256 MiB (64 MiB with
                     --quick): one thread for the kind, N threads for the
                     node
  intra-node link    weft-calibrate-rank, 2 ranks under mpirun: median
                     round trip / 2 of 8-byte messages (latency), 4-64 MiB
                     messages (bandwidth)
  memory_bytes       physical memory / N; node cores: the physical cores

Example:
  weft-calibrate -o host.json --devices 4
  weftc model.onnx --cluster host.json -o out/

Exit codes: 0 success, 1 wrong options, an unwritable -o or a failed MPI
ping-pong (mpirun missing or failing; --no-mpi skips it), 70 internal error.
)";
}

struct Options {
  std::string output;
  int devices = 1;
  bool quick = false;
  bool mpi = true;
};

/// Reads the command line; an error message names the flag.
Expected<std::optional<Options>> parseOptions(ArrayRef<const char *> args) {
  Options options;
  bool sawOutput = false, sawDevices = false;
  for (size_t i = 0; i < args.size(); ++i) {
    StringRef arg = args[i];
    if (arg == "-h" || arg == "--help") {
      printHelp();
      return std::optional<Options>();
    }
    if (arg == "--version") {
      outs() << "weft-calibrate " << WEFT_VERSION_STRING << "\n";
      return std::optional<Options>();
    }
    if (arg == "--quick") {
      options.quick = true;
      continue;
    }
    if (arg == "--no-mpi") {
      options.mpi = false;
      continue;
    }
    StringRef name = arg, value;
    bool inlineValue = false;
    if (arg.starts_with("--") && arg.contains('=')) {
      std::tie(name, value) = arg.split('=');
      inlineValue = true;
    }
    if (!name.starts_with("-"))
      return createStringError(inconvertibleErrorCode(),
                               "unexpected argument '" + arg.str() +
                                   "' (every value follows its flag, e.g. "
                                   "-o spec.json; see --help)");
    if (name != "-o" && name != "--output" && name != "--devices")
      return createStringError(
          inconvertibleErrorCode(),
          "unknown option '" + arg.str() +
              "' (options: -o, --devices, --quick, --no-mpi; see --help)");
    if (!inlineValue) {
      if (i + 1 >= args.size())
        return createStringError(inconvertibleErrorCode(),
                                 name.str() + " needs a value (see --help)");
      value = args[++i];
    }
    bool &seen = name == "--devices" ? sawDevices : sawOutput;
    if (seen)
      return createStringError(inconvertibleErrorCode(),
                               name.str() + " is given twice");
    seen = true;
    if (name == "--devices") {
      if (value.getAsInteger(10, options.devices) || options.devices < 1 ||
          options.devices > kMaxDevices)
        return createStringError(
            inconvertibleErrorCode(),
            "--devices must be a number of devices from 1 to " +
                std::to_string(kMaxDevices) + ", not '" + value.str() + "'");
      continue;
    }
    if (value.empty())
      return createStringError(inconvertibleErrorCode(),
                               name.str() + " needs a file name");
    options.output = value.str();
  }
  if (!sawOutput)
    return createStringError(inconvertibleErrorCode(),
                             "-o SPEC.json is required: the cluster spec to "
                             "write (see --help)");
  return std::optional<Options>(options);
}

//===----------------------------------------------------------------------===//
// Timing
//===----------------------------------------------------------------------===//

double now() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

/// Calls `body` (after one warm-up call) until `minSeconds` have passed and
/// it ran at least `minCalls` times; the median seconds of one call. False
/// when a call fails.
bool timeCalls(function_ref<bool()> body, double minSeconds, int minCalls,
               double &seconds) {
  if (!body())
    return false;
  std::vector<double> times;
  double start = now();
  while (static_cast<int>(times.size()) < minCalls ||
         now() - start < minSeconds) {
    double t0 = now();
    if (!body())
      return false;
    times.push_back(now() - t0);
  }
  seconds = median(std::move(times));
  return true;
}

//===----------------------------------------------------------------------===//
// Measurements
//===----------------------------------------------------------------------===//

/// One line of the printed table.
struct Row {
  std::string what, result;
  /// How long it took; < 0: measured with the row before.
  double seconds;
};

int64_t doubleBits(double value) {
  int64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

/// The runtime context all kernels run in: one thread.
struct Context {
  weft_rt_context *ctx = nullptr;
  ~Context() { weft_rt_context_destroy(ctx); }
};

/// The parameter block of a plain MxK x KxN matmul (test/Runtime/cpu/
/// MatmulTest.cpp): no transposes, alpha 1, beta 0, no bias or batch.
std::vector<int64_t> matmulParams(int32_t dtype, int64_t m, int64_t n,
                                  int64_t k) {
  return {dtype, m, n, k, 0, 0, doubleBits(1.0), doubleBits(0.0), 0, 0, 0};
}

struct Gemm {
  int64_t m, n, k;
};

/// FLOP/s of weft_rt_cpu_matmul on one thread at `gemm` in `dtype`.
template <typename T>
Expected<double> gemmRate(weft_rt_context *ctx, int32_t dtype, Gemm gemm,
                          double minSeconds) {
  std::vector<T> a(gemm.m * gemm.k, T(0.5)), b(gemm.k * gemm.n, T(0.25)),
      out(gemm.m * gemm.n);
  std::vector<int64_t> params = matmulParams(dtype, gemm.m, gemm.n, gemm.k);
  double seconds = 0;
  if (!timeCalls(
          [&] {
            return weft_rt_cpu_matmul(ctx, params.data(), a.data(), b.data(),
                                      nullptr, out.data()) == WEFT_RT_OK;
          },
          minSeconds, 3, seconds))
    return createStringError(inconvertibleErrorCode(),
                             "internal: weft_rt_cpu_matmul failed: %s",
                             weft_rt_context_error(ctx));
  return 2.0 * gemm.m * gemm.n * gemm.k / seconds;
}

/// A 2-d convolution to time: `in` -> `out` channels in `group` groups,
/// a k x k window (pad k / 2) at `size` x `size` with `stride`.
struct ConvShape {
  int64_t in, out, group, kernel, size, stride;
};

/// The shapes each kernel class is measured at: ResNet- and MobileNet-like
/// layers (the calibration's own choice; no model is run).
struct ConvClassShapes {
  weft::plan::KernelClass kernelClass;
  std::vector<ConvShape> shapes;
};
const ConvClassShapes kConvClassShapes[] = {
    {weft::plan::KernelClass::Conv,
     {{3, 64, 1, 7, 224, 2}, {64, 128, 1, 3, 56, 2}, {128, 256, 1, 3, 28, 2}}},
    {weft::plan::KernelClass::Conv3x3,
     {{64, 64, 1, 3, 56, 1}, {256, 256, 1, 3, 14, 1}, {512, 512, 1, 3, 7, 1}}},
    {weft::plan::KernelClass::PointwiseConv,
     {{144, 24, 1, 1, 56, 1}, {384, 64, 1, 1, 14, 1}, {96, 576, 1, 1, 14, 1}}},
    {weft::plan::KernelClass::DepthwiseConv,
     {{144, 144, 144, 3, 56, 1}, {384, 384, 384, 3, 14, 1},
      {96, 96, 96, 3, 112, 2}}},
};

/// The bytes a convolution's rotating copies fill: twice a large last-level
/// cache, so that each call finds its weights and input in memory, as a
/// layer of a network does (the network's other layers ran in between).
constexpr size_t kConvCopiesBytes = size_t(64) << 20;

/// FLOP/s of convolution `c` on one thread, no bias, no activation,
/// counted as 2 x the direct method's multiply-adds (a Winograd kernel may
/// beat the GEMM rate). The calls cycle through copies of the op (its own
/// parameter block, weights and input each, as distinct layers have), so
/// that neither the weights, nor their packed form the kernel keeps per op,
/// nor the input are still in cache: timed on one buffer, a layer looks up
/// to 1.5x faster than it runs inside a network.
Expected<double> convRate(weft_rt_context *ctx, const ConvShape &c,
                          double minSeconds) {
  int64_t pad = c.kernel / 2;
  int64_t outSize = (c.size + 2 * pad - c.kernel) / c.stride + 1;
  std::vector<int64_t> params = {WEFT_RT_F32, 2,       1,       c.in,
                                 c.out,       c.group, c.size,  c.size, // in
                                 c.kernel,    c.kernel,                 // kernel
                                 c.stride,    c.stride,                 // strides
                                 1,           1,                // dilations
                                 pad,         pad,              // pads begin
                                 pad,         pad,              // pads end
                                 outSize,     outSize,          // out
                                 0,           0,       0,       // activation
                                 0};                            // layout
  int64_t window = c.in / c.group * c.kernel * c.kernel;
  size_t inputCount = c.in * c.size * c.size, weightCount = c.out * window;
  size_t copyBytes = (inputCount + weightCount) * sizeof(float);
  size_t copies = std::clamp<size_t>(kConvCopiesBytes / copyBytes, 1, 64);
  std::vector<std::vector<int64_t>> paramCopies(copies, params);
  std::vector<std::vector<float>> inputs(copies,
                                         std::vector<float>(inputCount, 0.5f));
  std::vector<std::vector<float>> weights(
      copies, std::vector<float>(weightCount, 0.25f));
  std::vector<float> out(c.out * outSize * outSize);
  auto call = [&](size_t k) {
    return weft_rt_cpu_conv(ctx, paramCopies[k].data(), inputs[k].data(),
                            weights[k].data(), nullptr,
                            out.data()) == WEFT_RT_OK;
  };
  // Every copy once untimed: the kernel prepares each op on its first call.
  bool ok = true;
  for (size_t k = 0; k < copies && ok; ++k)
    ok = call(k);
  size_t next = 0;
  double seconds = 0;
  if (!ok || !timeCalls([&] { return call(next++ % copies); }, minSeconds,
                        static_cast<int>(std::max<size_t>(copies, 3)),
                        seconds))
    return createStringError(inconvertibleErrorCode(),
                             "internal: weft_rt_cpu_conv failed: %s",
                             weft_rt_context_error(ctx));
  return 2.0 * c.out * outSize * outSize * window / seconds;
}

/// Seconds of one 1x1x1 f32 matmul call: the runtime's fixed cost per op.
Expected<double> kernelOverhead(weft_rt_context *ctx, int calls) {
  float a = 1, b = 2, out = 0;
  std::vector<int64_t> params = matmulParams(WEFT_RT_F32, 1, 1, 1);
  for (int i = 0; i < 10; ++i)
    weft_rt_cpu_matmul(ctx, params.data(), &a, &b, nullptr, &out);
  double start = now();
  for (int i = 0; i < calls; ++i)
    if (weft_rt_cpu_matmul(ctx, params.data(), &a, &b, nullptr, &out) !=
        WEFT_RT_OK)
      return createStringError(inconvertibleErrorCode(),
                               "internal: weft_rt_cpu_matmul failed: %s",
                               weft_rt_context_error(ctx));
  return (now() - start) / calls;
}

/// STREAM copy and triad over three arrays of `bytes` each on `threads`
/// OpenMP threads (each touching its own part first); the best of `reps`
/// passes, in bytes/s (STREAM's counting: copy moves 2 arrays, triad 3).
struct Stream {
  double copy = 0, triad = 0;
};

Stream streamBandwidth(size_t bytes, int threads, int reps) {
  const int64_t n = static_cast<int64_t>(bytes / sizeof(double));
  std::unique_ptr<double[]> a(new double[n]), b(new double[n]),
      c(new double[n]);
  double *pa = a.get(), *pb = b.get(), *pc = c.get();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    pa[i] = 1.0;
    pb[i] = 2.0;
    pc[i] = 0.0;
  }
  Stream best;
  const double scalar = 3.0;
  for (int rep = 0; rep < reps; ++rep) {
    double t0 = now();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; ++i)
      pc[i] = pa[i];
    double t1 = now();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; ++i)
      pa[i] = pb[i] + scalar * pc[i];
    double t2 = now();
    best.copy = std::max(best.copy, 2.0 * n * sizeof(double) / (t1 - t0));
    best.triad = std::max(best.triad, 3.0 * n * sizeof(double) / (t2 - t1));
  }
  // Keep the loops: a result the compiler cannot drop.
  if (pa[n / 2] == 42.0)
    outs() << "";
  return best;
}

/// The ping-pong's latency and its bandwidth per message size (bytes,
/// bytes/s), smallest first; the spec takes the largest message's (64 MiB,
/// beyond the last-level cache, as a model's tensors are).
struct LinkMeasure {
  double latency = -1;
  std::vector<std::pair<double, double>> bandwidths;
  double bandwidth() const {
    return bandwidths.empty() ? 0 : bandwidths.back().second;
  }
};

/// The MPI ping-pong between two ranks of this host; the exit code of the
/// launch on failure (lib/Launch has said why).
Expected<LinkMeasure> pingPong(bool quick, int &exitCode) {
  std::string rank = weft::run::findSiblingProgram("weft-calibrate-rank");
  if (rank.empty()) {
    exitCode = kExitInternal;
    return createStringError(inconvertibleErrorCode(),
                             "weft-calibrate-rank is not installed beside "
                             "weft-calibrate");
  }
  SmallString<128> resultPath;
  if (std::error_code ec = sys::fs::createTemporaryFile(
          "weft-calibrate-pingpong", "txt", resultPath)) {
    exitCode = kExitInternal;
    return createStringError(ec, "cannot create a temporary file: %s",
                             ec.message().c_str());
  }
  FileRemover removeResult(resultPath);
  std::vector<std::string> argv = {rank, "--out", resultPath.str().str()};
  if (quick)
    argv.push_back("--quick");
  weft::run::MpiJob job;
  job.ranks.assign(2, argv);
  job.threads = "1";
  job.purpose = "weft-calibrate measures the intra-node link with an MPI "
                "ping-pong between 2 processes (--no-mpi skips it)";
  weft::run::LaunchOptions launch;
  launch.timeoutSeconds = quick ? 60 : 300;
  launch.timeoutGiven = true;
  launch.detectAfterSeconds = 0; // the ranks send no heartbeats
  launch.toolName = "weft-calibrate";
  int code = weft::run::runMpiJob(job, launch);
  if (code != 0) {
    exitCode = code;
    return createStringError(inconvertibleErrorCode(),
                             "the MPI ping-pong failed (exit %d); no spec "
                             "written (--no-mpi keeps the cpu:N preset's "
                             "link numbers)",
                             code);
  }
  LinkMeasure link;
  ErrorOr<std::unique_ptr<MemoryBuffer>> text =
      MemoryBuffer::getFile(resultPath);
  bool ok = bool(text);
  if (ok) {
    SmallVector<StringRef> lines;
    (*text)->getBuffer().split(lines, '\n', -1, false);
    for (StringRef line : lines) {
      auto [key, rest] = line.split(' ');
      double first = 0, second = 0;
      if (key == "latency_seconds") {
        ok &= !rest.trim().getAsDouble(first);
        link.latency = first;
      } else if (key == "bandwidth") {
        auto [bytes, rate] = rest.split(' ');
        ok &= !bytes.getAsDouble(first) && !rate.trim().getAsDouble(second) &&
              second > 0;
        link.bandwidths.push_back({first, second});
      } else {
        ok = false;
      }
    }
    llvm::sort(link.bandwidths);
  }
  if (!ok || !(link.bandwidth() > 0) || !(link.latency >= 0)) {
    exitCode = kExitInternal;
    return createStringError(inconvertibleErrorCode(),
                             "internal: weft-calibrate-rank wrote no "
                             "usable result");
  }
  return link;
}

/// The cores the processes share, as the cpu:N preset counts them.
int hostCores() {
  int physical = get_physical_cores();
  if (physical > 0)
    return physical;
  unsigned threads = std::thread::hardware_concurrency();
  return threads > 0 ? static_cast<int>(threads) : 1;
}

std::string rate(double flopPerS) {
  return formatv("{0:F2} GFLOP/s", flopPerS / 1e9).str();
}
std::string bandwidth(double bytesPerS) {
  return formatv("{0:F2} GB/s", bytesPerS / 1e9).str();
}
std::string duration(double seconds) {
  if (seconds < 1e-6)
    return formatv("{0:F1} ns", seconds * 1e9).str();
  if (seconds < 1e-3)
    return formatv("{0:F2} us", seconds * 1e6).str();
  if (seconds < 1)
    return formatv("{0:F2} ms", seconds * 1e3).str();
  return formatv("{0:F2} s", seconds).str();
}

/// The cpu:N preset's per-dtype rates relative to its f32 rate (32e9):
/// f16 and bf16 convert to f32 (1/2), i8 2x, i32 1/2, i64 1/4. Only f32 and
/// f64 are measured; the others keep these ratios to the measured f32.
struct Ratio {
  const char *dtype;
  double toF32;
};
constexpr Ratio kPresetRatios[] = {
    {"f16", 0.5}, {"bf16", 0.5}, {"i8", 2.0}, {"i32", 0.5}, {"i64", 0.25}};

/// What one calibration measured, in the spec's units.
struct Calibration {
  int devices = 1;
  double f32Rate = 0, f64Rate = 0;
  /// Per convolution class, its rate over f32Rate.
  std::map<weft::plan::KernelClass, double> kernelRates;
  Stream single, shared;
  int sharedThreads = 1;
  /// One process alone cannot stream more than all of them together.
  double nodeBandwidth = 0;
  double linkBandwidth = 10e9, linkLatency = 1e-6;
  std::string linkNote = "cpu:N preset (--no-mpi)";
  double memoryBytes = 0;
  bool memoryKnown = false;
  int cores = 1;
};

/// GEMMs on one thread (f32 and f64, the spec's rates), then the printed
/// only convolution rate and per-call overhead.
Error measureCompute(weft_rt_context *ctx, const Options &options,
                     Calibration &c, std::vector<Row> &rows) {
  const double minSeconds = options.quick ? 0.02 : 0.5;
  const Gemm gemms[] = {{64, 256, 256}, {128, 768, 768}, {512, 512, 512}};
  for (int32_t dtype : {WEFT_RT_F32, WEFT_RT_F64}) {
    const char *name = dtype == WEFT_RT_F32 ? "f32" : "f64";
    std::vector<double> rates;
    for (const Gemm &gemm : gemms) {
      double start = now();
      Expected<double> r = dtype == WEFT_RT_F32
                               ? gemmRate<float>(ctx, dtype, gemm, minSeconds)
                               : gemmRate<double>(ctx, dtype, gemm, minSeconds);
      if (!r)
        return r.takeError();
      rates.push_back(*r);
      rows.push_back(
          {formatv("matmul {0} {1}x{2}x{3}", name, gemm.m, gemm.n, gemm.k)
               .str(),
           rate(*r), now() - start});
    }
    (dtype == WEFT_RT_F32 ? c.f32Rate : c.f64Rate) = median(rates);
  }
  // Each convolution class at the median of its shapes' rates, as a factor
  // of the f32 GEMM rate (the spec's kernel_rates).
  for (const ConvClassShapes &cls : kConvClassShapes) {
    std::vector<double> rates;
    for (const ConvShape &shape : cls.shapes) {
      double start = now();
      Expected<double> r = convRate(ctx, shape, minSeconds);
      if (!r)
        return r.takeError();
      rates.push_back(*r);
      rows.push_back({formatv("{0} f32 {1}->{2} {3}x{3} k{4}{5}",
                              weft::plan::kernelClassName(cls.kernelClass),
                              shape.in, shape.out, shape.size, shape.kernel,
                              shape.stride > 1 ? " s2" : "")
                          .str(),
                      rate(*r) + " nominal", now() - start});
      if (options.quick)
        break;
    }
    c.kernelRates[cls.kernelClass] = median(rates) / c.f32Rate;
  }
  double start = now();
  Expected<double> overhead =
      kernelOverhead(ctx, options.quick ? 2000 : 100000);
  if (!overhead)
    return overhead.takeError();
  rows.push_back({"kernel call 1x1x1 matmul",
                  duration(*overhead) + " per op (printed only)",
                  now() - start});
  return Error::success();
}

/// Memory bandwidth: one thread (one process alone), then N threads at once
/// (capped at the hardware threads: more only share them).
void measureMemory(const Options &options, Calibration &c,
                   std::vector<Row> &rows) {
  const size_t kMiB = size_t(1) << 20;
  const size_t streamBytes = (options.quick ? 64 : 256) * kMiB;
  const int streamReps = options.quick ? 2 : 10;
  double start = now();
  c.single = streamBandwidth(streamBytes, 1, streamReps);
  rows.push_back({"triad 1 thread (copy " + bandwidth(c.single.copy) + ")",
                  bandwidth(c.single.triad), now() - start});
  unsigned hardwareThreads = std::max(1u, std::thread::hardware_concurrency());
  c.sharedThreads = std::min<int>(c.devices, static_cast<int>(hardwareThreads));
  start = now();
  c.shared = c.sharedThreads == 1
                 ? c.single
                 : streamBandwidth(streamBytes, c.sharedThreads, streamReps);
  rows.push_back({formatv("triad {0} threads (copy {1})", c.sharedThreads,
                          bandwidth(c.shared.copy))
                      .str(),
                  bandwidth(c.shared.triad), now() - start});
  c.nodeBandwidth = std::max(c.shared.triad, c.single.triad);
}

/// The intra-node link by MPI ping-pong; `exitCode` says how a failure
/// ends the tool.
Error measureLink(const Options &options, Calibration &c,
                  std::vector<Row> &rows, int &exitCode) {
  double start = now();
  Expected<LinkMeasure> link = pingPong(options.quick, exitCode);
  if (!link)
    return link.takeError();
  c.linkBandwidth = link->bandwidth();
  c.linkLatency = link->latency;
  c.linkNote =
      formatv("MPI ping-pong, 2 ranks, {0} MiB messages",
              static_cast<int64_t>(link->bandwidths.back().first) >> 20)
          .str();
  rows.push_back({"MPI ping-pong 8 B", duration(c.linkLatency) + " latency",
                  now() - start});
  // One launch measures every size: its time is on the first row.
  for (auto [bytes, perS] : link->bandwidths)
    rows.push_back(
        {formatv("MPI ping-pong {0} MiB", static_cast<int64_t>(bytes) >> 20)
             .str(),
         bandwidth(perS), -1});
  return Error::success();
}

/// The spec, in the cpu:N preset's shape.
json::Value buildSpec(const Calibration &c) {
  json::Object flops{{"f32", c.f32Rate}, {"f64", c.f64Rate}};
  for (const Ratio &ratio : kPresetRatios)
    flops[ratio.dtype] = ratio.toF32 * c.f32Rate;
  // The spec accepts rates up to 16; a measurement beyond is an outlier
  // the cost model is better off without.
  json::Object kernelRates;
  for (auto [kernelClass, factor] : c.kernelRates)
    kernelRates[weft::plan::kernelClassName(kernelClass)] =
        std::min(std::max(factor, 1e-3), 16.0);
  json::Array devices, meshDevices;
  for (int i = 0; i < c.devices; ++i) {
    std::string name = "cpu" + std::to_string(i);
    devices.push_back(json::Object{{"name", name}, {"kind", "cpu-core"}});
    meshDevices.push_back(name);
  }
  json::Object link{{"bandwidth_bytes_per_s", c.linkBandwidth},
                    {"latency_seconds", c.linkLatency}};
  return json::Object{
      {"name", "calibrated-cpu:" + std::to_string(c.devices)},
      {"device_kinds", json::Array{json::Object{
                           {"name", "cpu-core"},
                           {"backend", "cpu"},
                           {"cores_per_device", 1},
                           {"flop_per_s", std::move(flops)},
                           {"kernel_rates", std::move(kernelRates)},
                           {"memory_bytes", c.memoryBytes},
                           {"memory_bandwidth_bytes_per_s", c.single.triad}}}},
      {"nodes", json::Array{json::Object{
                    {"name", "host"},
                    {"cores", c.cores},
                    {"memory_bandwidth_bytes_per_s", c.nodeBandwidth},
                    {"devices", std::move(devices)}}}},
      {"links", json::Object{{"intra_node", std::move(link)}}},
      {"meshes",
       json::Array{json::Object{{"name", "mesh"},
                                {"shape", json::Array{c.devices}},
                                {"devices", std::move(meshDevices)}}}}};
}

/// Writes the spec into `tempPath`, checks that weftc's loader accepts it,
/// then renames it over the output.
int writeSpec(const Options &options, StringRef tempPath, json::Value spec) {
  {
    std::error_code ec;
    raw_fd_ostream file(tempPath, ec);
    if (ec)
      return fail("-o " + options.output + ": cannot write there (" +
                  ec.message() + ")");
    file << formatv("{0:2}", std::move(spec)) << "\n";
    file.close();
    if (file.has_error())
      return fail("-o " + options.output + ": cannot write there (" +
                  file.error().message() + ")");
  }
  Expected<weft::plan::Cluster> check = weft::plan::loadCluster(tempPath);
  if (!check)
    return fail("internal: the calibrated spec does not load: " +
                    toString(check.takeError()),
                kExitInternal);
  if (std::error_code ec = sys::fs::rename(tempPath, options.output))
    return fail("-o " + options.output + ": cannot write there (" +
                ec.message() + ")");
  return kExitSuccess;
}

void printReport(raw_ostream &os, const Options &options, const Calibration &c,
                 const std::vector<Row> &rows) {
  size_t width = 0;
  for (const Row &row : rows)
    width = std::max(width, row.what.size());
  os << "\n"
     << left_justify("measurement", width) << "  " << left_justify("result", 40)
     << "  took\n";
  for (const Row &row : rows)
    os << left_justify(row.what, width) << "  " << left_justify(row.result, 40)
       << "  " << (row.seconds < 0 ? "(same run)" : duration(row.seconds))
       << "\n";
  const int n = c.devices;
  os << "\nspec (" << options.output << "):\n"
     << "  flop_per_s f32   " << rate(c.f32Rate)
     << " (median of the 3 GEMMs, 1 thread)\n"
     << "  flop_per_s f64   " << rate(c.f64Rate) << " (median, 1 thread)\n"
     << "  flop_per_s other f16, bf16 x0.5, i8 x2, i32 x0.5, i64 x0.25 of f32 "
        "(the cpu:N preset's ratios; not measured)\n"
     << "  kernel_rates    ";
  for (auto [kernelClass, factor] : c.kernelRates)
    os << formatv(" {0} x{1:F2}", weft::plan::kernelClassName(kernelClass),
                  factor);
  os << " (of the f32 GEMM rate)\n"
     << "  device bandwidth " << bandwidth(c.single.triad)
     << " (triad, 1 thread)\n"
     << "  node bandwidth   " << bandwidth(c.nodeBandwidth) << " (triad, "
     << c.sharedThreads << (c.sharedThreads == 1 ? " thread" : " threads")
     << ", shared by " << n << (n == 1 ? " device" : " devices") << ")\n"
     << "  node cores       " << c.cores << "\n"
     << "  memory_bytes     "
     << formatv("{0:F2} GiB", c.memoryBytes / (1 << 30))
     << (c.memoryKnown ? " (physical memory / " + std::to_string(n) + ")"
                       : std::string(" (physical memory unknown: the cpu:N "
                                     "preset's 8 GiB)"))
     << "\n"
     << "  intra_node link  " << bandwidth(c.linkBandwidth) << ", "
     << duration(c.linkLatency) << " latency (" << c.linkNote << ")\n"
     << "\nuse it: weftc model.onnx --cluster " << options.output
     << " -o out/\n";
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  Expected<std::optional<Options>> parsed =
      parseOptions(ArrayRef<const char *>(argv + 1, argv + argc));
  if (!parsed)
    return fail(toString(parsed.takeError()));
  if (!*parsed)
    return kExitSuccess;
  const Options &options = **parsed;

  // The output must be writable before anything is measured: a temporary
  // file beside it, renamed over it at the end (nothing written half).
  SmallString<256> tempPath;
  {
    SmallString<256> model(options.output);
    model += ".tmp-%%%%%%";
    int fd = -1;
    if (std::error_code ec = sys::fs::createUniqueFile(model, fd, tempPath))
      return fail("-o " + options.output + ": cannot write there (" +
                  ec.message() + ")");
    sys::Process::SafelyCloseFileDescriptor(fd);
  }
  FileRemover removeTemp(tempPath);

  raw_ostream &os = outs();
  Calibration c;
  c.devices = options.devices;
  os << "weft-calibrate: measuring this machine for " << c.devices
     << (c.devices == 1 ? " device" : " devices")
     << (options.quick ? " (--quick: short measurements, not for planning)"
                       : "")
     << "\n";
  os.flush();

  std::vector<Row> rows;
  Context context;
  if (weft_rt_context_create(&context.ctx) != WEFT_RT_OK ||
      weft_rt_context_set_num_threads(context.ctx, 1) != WEFT_RT_OK)
    return fail("internal: cannot create a runtime context", kExitInternal);
  if (Error e = measureCompute(context.ctx, options, c, rows))
    return fail(toString(std::move(e)), kExitInternal);
  measureMemory(options, c, rows);
  if (options.mpi) {
    os.flush();
    int exitCode = kExitBadInput;
    if (Error e = measureLink(options, c, rows, exitCode))
      return fail(toString(std::move(e)), exitCode);
  }
  double physical = weft::plan::hostMemoryBytes();
  c.memoryKnown = physical > 0;
  c.memoryBytes =
      c.memoryKnown ? std::floor(physical / c.devices) : 8.0 * (1 << 30);
  c.cores = hostCores();

  if (int code = writeSpec(options, tempPath, buildSpec(c)))
    return code;
  removeTemp.releaseFile();
  printReport(os, options, c, rows);
  return kExitSuccess;
}
