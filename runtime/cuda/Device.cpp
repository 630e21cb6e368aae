//===- Device.cpp - CUDA devices, the device arena and copies -------------===//
//
// openDevice turns every way a GPU can be missing into
// WEFT_RT_DEVICE_UNAVAILABLE with the driver's own words; the arena and the
// copies check their ranges before CUDA sees them.
//
//===----------------------------------------------------------------------===//

#include "cuda/Device.h"
#include "cuda/CudaStatus.h"

#include <algorithm>
#include <string>

using namespace weft::rt::cuda;

/// "sm_80, sm_90", in the order given.
static std::string formatArchitectures(const std::vector<int> &architectures) {
  std::string text;
  for (int arch : architectures) {
    if (!text.empty())
      text += ", ";
    text += "sm_" + std::to_string(arch);
  }
  return text;
}

std::string
weft::rt::cuda::checkArchitecture(int major, int minor,
                                  const std::vector<int> &architectures) {
  if (architectures.empty())
    return "the package lists no GPU architectures";
  for (int arch : architectures)
    if (arch < 10)
      return "malformed GPU architecture " + std::to_string(arch) +
             " (expected the compute capability times ten, as 80 for sm_80)";
  int device = major * 10 + minor;
  int oldest = *std::min_element(architectures.begin(), architectures.end());
  if (device >= oldest)
    return "";
  return "GPU sm_" + std::to_string(device) +
         " is older than the package's architectures (" +
         formatArchitectures(architectures) + ")";
}

/// "12.4" of 12040, CUDA's encoding (1000 * major + 10 * minor).
static std::string formatCudaVersion(int version) {
  return std::to_string(version / 1000) + "." +
         std::to_string(version % 1000 / 10);
}

/// Re-records ctx's message (from a check macro) after `prefix`.
static weft_rt_status prefixError(weft_rt_context *ctx, weft_rt_status status,
                                  const std::string &prefix) {
  std::string message = weft_rt_context_error(ctx);
  return weft_rt_fail(ctx, status, "%s%s", prefix.c_str(), message.c_str());
}

weft_rt_status weft::rt::cuda::openDevice(weft_rt_context *ctx, int ordinal,
                                          const std::vector<int> &architectures,
                                          DeviceInfo *out_info) {
  if (!out_info)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "openDevice: out_info is null");
  if (ordinal < 0)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "CUDA device ordinal %d is negative", ordinal);
  // A malformed list is the caller's bug: say so before asking CUDA.
  std::string archError = checkArchitecture(99, 9, architectures);
  if (!archError.empty())
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT, "%s", archError.c_str());

  // Without a driver (or with one older than this runtime) this is the first
  // call to fail; whatever it says, no device can be used.
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaFail(ctx, error, WEFT_RT_DEVICE_UNAVAILABLE,
             "cudaGetDeviceCount(&count)", __FILE__, __LINE__);
    std::string message = "no usable CUDA device: ";
    message += weft_rt_context_error(ctx);
    // CUDA says "insufficient" also when there is no driver at all.
    int driverVersion = 0;
    if (error == cudaErrorInsufficientDriver &&
        cudaDriverGetVersion(&driverVersion) == cudaSuccess)
      message += driverVersion == 0 ? "; no NVIDIA driver is installed"
                                    : "; the driver supports CUDA " +
                                          formatCudaVersion(driverVersion) +
                                          ", this runtime needs " +
                                          formatCudaVersion(CUDART_VERSION);
    return weft_rt_fail(ctx, WEFT_RT_DEVICE_UNAVAILABLE, "%s", message.c_str());
  }
  if (count == 0)
    return weft_rt_fail(ctx, WEFT_RT_DEVICE_UNAVAILABLE,
                        "no CUDA device: the driver reports none");
  if (ordinal >= count)
    return weft_rt_fail(ctx, WEFT_RT_DEVICE_UNAVAILABLE,
                        "CUDA device %d was asked for, but this machine has "
                        "%d (0 to %d)",
                        ordinal, count, count - 1);

  cudaDeviceProp properties;
  error = cudaGetDeviceProperties(&properties, ordinal);
  if (error != cudaSuccess) {
    cudaFail(ctx, error, WEFT_RT_DEVICE_UNAVAILABLE,
             "cudaGetDeviceProperties(&properties, ordinal)", __FILE__,
             __LINE__);
    return prefixError(ctx, WEFT_RT_DEVICE_UNAVAILABLE,
                       "cannot use CUDA device " + std::to_string(ordinal) +
                           ": ");
  }
  archError =
      checkArchitecture(properties.major, properties.minor, architectures);
  if (!archError.empty())
    return weft_rt_fail(ctx, WEFT_RT_DEVICE_UNAVAILABLE,
                        "%s: CUDA device %d is a %s", archError.c_str(),
                        ordinal, properties.name);

  // Creates the primary context: a GPU in exclusive mode that another
  // process holds fails here rather than at the first kernel.
  error = cudaSetDevice(ordinal);
  if (error != cudaSuccess) {
    cudaFail(ctx, error, WEFT_RT_DEVICE_UNAVAILABLE, "cudaSetDevice(ordinal)",
             __FILE__, __LINE__);
    return prefixError(ctx, WEFT_RT_DEVICE_UNAVAILABLE,
                       "cannot use CUDA device " + std::to_string(ordinal) +
                           ": ");
  }

  out_info->ordinal = ordinal;
  out_info->name = properties.name;
  out_info->major = properties.major;
  out_info->minor = properties.minor;
  out_info->totalMemory = properties.totalGlobalMem;
  out_info->multiProcessorCount = properties.multiProcessorCount;
  return WEFT_RT_OK;
}

Stream::~Stream() {
  // A destructor cannot report; a failure here means the device is already
  // lost, which the last synchronize reported.
  if (stream)
    cudaStreamDestroy(stream);
}

weft_rt_status Stream::create(weft_rt_context *ctx) {
  if (stream)
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "the CUDA stream was already created");
  // Non-blocking: libraries' work on the legacy default stream must not
  // serialize with the program's.
  WEFT_CUDA_CHECK(ctx, WEFT_RT_INTERNAL,
                  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return WEFT_RT_OK;
}

weft_rt_status Stream::synchronize(weft_rt_context *ctx) {
  if (!stream)
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "synchronize on a CUDA stream never created");
  WEFT_CUDA_CHECK(ctx, WEFT_RT_INTERNAL, cudaStreamSynchronize(stream));
  return WEFT_RT_OK;
}

Event::~Event() {
  // As for streams: nothing to report to, and the device may be gone.
  if (event)
    cudaEventDestroy(event);
}

weft_rt_status Event::create(weft_rt_context *ctx) {
  if (event)
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "the CUDA event was already created");
  cudaEvent_t created = nullptr;
  WEFT_CUDA_CHECK(ctx, WEFT_RT_INTERNAL,
                  cudaEventCreateWithFlags(&created, cudaEventDisableTiming));
  event = created;
  return WEFT_RT_OK;
}

weft_rt_status weft::rt::cuda::checkArenaRange(weft_rt_context *ctx,
                                               size_t arenaBytes, size_t offset,
                                               size_t bytes, const char *what) {
  // Written so that offset + bytes cannot wrap.
  if (offset <= arenaBytes && bytes <= arenaBytes - offset)
    return WEFT_RT_OK;
  return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                      "%s: bytes [%zu, %zu + %zu) lie outside the device "
                      "arena of %zu bytes",
                      what, offset, offset, bytes, arenaBytes);
}

DeviceArena::~DeviceArena() {
  // As for streams: nothing to report to, and the device may be gone.
  if (base)
    cudaFree(base);
}

weft_rt_status DeviceArena::allocate(weft_rt_context *ctx, size_t size) {
  if (base)
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "the device arena was already allocated");
  // An empty arena still gets a distinct, non-null pointer.
  size_t request = std::max<size_t>(size, 1);
  void *memory = nullptr;
  cudaError_t error = cudaMalloc(&memory, request);
  if (error == cudaSuccess) {
    base = memory;
    bytes = size;
    return WEFT_RT_OK;
  }
  // A failed allocation is not sticky; clear it so that the query below
  // reports its own state.
  (void)cudaGetLastError();
  int device = -1;
  std::string where = " on the current CUDA device";
  if (cudaGetDevice(&device) == cudaSuccess)
    where = " on CUDA device " + std::to_string(device);
  weft_rt_status status = statusOfCudaError(error, WEFT_RT_INTERNAL);
  size_t freeBytes = 0, totalBytes = 0;
  cudaError_t infoError = cudaMemGetInfo(&freeBytes, &totalBytes);
  if (infoError != cudaSuccess)
    return weft_rt_fail(ctx, status,
                        "cannot allocate the device arena of %zu bytes%s: "
                        "%s (%s); cudaMemGetInfo failed too: %s",
                        size, where.c_str(), cudaGetErrorString(error),
                        cudaGetErrorName(error), cudaGetErrorString(infoError));
  return weft_rt_fail(ctx, status,
                      "cannot allocate the device arena of %zu bytes%s: %s "
                      "(%s); the device has %zu bytes free of %zu",
                      size, where.c_str(), cudaGetErrorString(error),
                      cudaGetErrorName(error), freeBytes, totalBytes);
}

/// The checks both copies share.
static weft_rt_status checkCopy(weft_rt_context *ctx, const DeviceArena &arena,
                                const Stream &stream, const void *host,
                                size_t offset, size_t bytes, const char *what) {
  if (!arena.data())
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "%s: the device arena is not allocated", what);
  if (!stream.get())
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "%s: the CUDA stream was never created", what);
  if (!host && bytes > 0)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s: the host buffer is null", what);
  return checkArenaRange(ctx, arena.size(), offset, bytes, what);
}

weft_rt_status DeviceArena::copyToDevice(weft_rt_context *ctx, Stream &stream,
                                         size_t offset, const void *src,
                                         size_t size, const char *what) {
  if (weft_rt_status status =
          checkCopy(ctx, *this, stream, src, offset, size, what))
    return status;
  if (size == 0)
    return WEFT_RT_OK;
  WEFT_CUDA_CHECK(ctx, WEFT_RT_INTERNAL,
                  cudaMemcpyAsync(static_cast<char *>(base) + offset, src, size,
                                  cudaMemcpyHostToDevice, stream.get()));
  return stream.synchronize(ctx);
}

weft_rt_status DeviceArena::copyToHost(weft_rt_context *ctx, Stream &stream,
                                       void *dst, size_t offset, size_t size,
                                       const char *what) {
  if (weft_rt_status status =
          checkCopy(ctx, *this, stream, dst, offset, size, what))
    return status;
  if (size == 0)
    return WEFT_RT_OK;
  WEFT_CUDA_CHECK(ctx, WEFT_RT_INTERNAL,
                  cudaMemcpyAsync(dst, static_cast<char *>(base) + offset, size,
                                  cudaMemcpyDeviceToHost, stream.get()));
  return stream.synchronize(ctx);
}
