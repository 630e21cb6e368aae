//===- GpuLauncher.cpp - The mgpu* entry points on the CUDA runtime API --===//
//
// Generated objects embed a fatbin per GPU module and call mgpuModuleLoad
// from a global constructor, before main and before any device is chosen.
// Loading is therefore lazy: the module is only registered there, and
// cudaLibraryLoadData runs at the first kernel lookup, inside a run, on the
// program's device. Streams are the program's one stream: creating,
// synchronizing and destroying them per launch (what the lowering asks for)
// would serialize the host with every kernel, so they are no-ops and the
// model synchronizes once after the run.
//
//===----------------------------------------------------------------------===//

#include "cuda/GpuLauncher.h"
#include "cuda/CudaStatus.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <vector>

using namespace weft::rt::cuda;

namespace {

/// One embedded GPU module: its image and, once loaded, the library and the
/// kernels looked up so far.
struct GpuModule {
  const void *image = nullptr;
  std::mutex mutex;
  cudaLibrary_t library = nullptr;
  std::map<std::string, cudaKernel_t> kernels;
};

/// The first failure since the launch device was set, on this thread.
struct LaunchError {
  weft_rt_status status = WEFT_RT_OK;
  std::string message;
};

/// Every module registered by mgpuModuleLoad and not yet unloaded.
std::mutex registryMutex;
std::vector<GpuModule *> &registry() {
  static std::vector<GpuModule *> modules;
  return modules;
}

thread_local DeviceState *launchDevice = nullptr;
thread_local LaunchError launchError;

void recordError(weft_rt_status status, std::string message) {
  if (launchError.status != WEFT_RT_OK)
    return;
  launchError.status = status;
  launchError.message = std::move(message);
}

void recordCudaError(cudaError_t error, const char *what) {
  recordError(statusOfCudaError(error, WEFT_RT_INTERNAL),
              std::string(what) + ": " + cudaGetErrorString(error) + " (" +
                  cudaGetErrorName(error) + ")");
}

} // namespace

ScopedLaunchDevice::ScopedLaunchDevice(DeviceState *state) {
  launchDevice = state;
  launchError = LaunchError();
}

ScopedLaunchDevice::~ScopedLaunchDevice() { launchDevice = nullptr; }

/// Loads `module`'s library if it is not loaded; the caller holds its mutex.
static cudaError_t loadLibrary(GpuModule &module) {
  if (module.library)
    return cudaSuccess;
  cudaError_t error = cudaLibraryLoadData(
      &module.library, module.image, nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (error != cudaSuccess)
    module.library = nullptr;
  return error;
}

weft_rt_status weft::rt::cuda::loadGpuModules(weft_rt_context *ctx,
                                              const DeviceInfo &device) {
  std::lock_guard<std::mutex> registryLock(registryMutex);
  for (GpuModule *module : registry()) {
    if (!module->image)
      continue;
    std::lock_guard<std::mutex> lock(module->mutex);
    cudaError_t error = loadLibrary(*module);
    if (error == cudaErrorNoKernelImageForDevice ||
        error == cudaErrorInvalidPtx || error == cudaErrorUnsupportedPtxVersion)
      return weft_rt_fail(ctx, WEFT_RT_DEVICE_UNAVAILABLE,
                          "the package has no GPU code that CUDA device %d "
                          "(%s, sm_%d%d) can run: %s; recompile it with "
                          "weftc --gpu-arch=sm_%d%d",
                          device.ordinal, device.name.c_str(), device.major,
                          device.minor, cudaGetErrorString(error), device.major,
                          device.minor);
    if (error != cudaSuccess)
      return cudaFail(ctx, error, WEFT_RT_INTERNAL,
                      "cudaLibraryLoadData (the program's GPU code)", __FILE__,
                      __LINE__);
  }
  return WEFT_RT_OK;
}

weft_rt_status weft::rt::cuda::takeLaunchError(weft_rt_context *ctx) {
  LaunchError error = std::move(launchError);
  launchError = LaunchError();
  if (error.status == WEFT_RT_OK)
    return WEFT_RT_OK;
  return weft_rt_fail(ctx, error.status, "generated GPU kernel: %s",
                      error.message.c_str());
}

extern "C" {

/// A fatbin (or cubin) of `size` bytes; registered now, loaded on first use.
void *mgpuModuleLoad(void *data, size_t size) {
  (void)size; // a fatbin carries its own size
  auto *module = new (std::nothrow) GpuModule();
  if (!module)
    return nullptr;
  module->image = data;
  std::lock_guard<std::mutex> lock(registryMutex);
  registry().push_back(module);
  return module;
}

/// PTX text (what gpu-module-to-binary's "isa" format embeds): the CUDA
/// runtime compiles it for the device at load time.
void *mgpuModuleLoadJIT(void *data, int optLevel) {
  (void)optLevel;
  return mgpuModuleLoad(data, 0);
}

void mgpuModuleUnload(void *handle) {
  auto *module = static_cast<GpuModule *>(handle);
  if (!module)
    return;
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    auto &modules = registry();
    modules.erase(std::remove(modules.begin(), modules.end(), module),
                  modules.end());
  }
  // At exit the CUDA runtime may already be gone; nothing to report to.
  if (module->library)
    cudaLibraryUnload(module->library);
  delete module;
}

void *mgpuModuleGetFunction(void *handle, const char *name) {
  auto *module = static_cast<GpuModule *>(handle);
  if (!module || !module->image) {
    recordError(WEFT_RT_OUT_OF_MEMORY,
                "no memory to register the program's GPU module");
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(module->mutex);
  auto it = module->kernels.find(name);
  if (it != module->kernels.end())
    return reinterpret_cast<void *>(it->second);
  if (!module->library) {
    cudaError_t error =
        cudaLibraryLoadData(&module->library, module->image, nullptr, nullptr,
                            0, nullptr, nullptr, 0);
    if (error != cudaSuccess) {
      module->library = nullptr;
      // A fatbin without code for this GPU is "no kernel image".
      recordCudaError(error, "cannot load the program's GPU code on this "
                             "device (cudaLibraryLoadData)");
      return nullptr;
    }
  }
  cudaKernel_t kernel = nullptr;
  cudaError_t error = cudaLibraryGetKernel(&kernel, module->library, name);
  if (error != cudaSuccess) {
    recordCudaError(error, (std::string("GPU kernel '") + name +
                            "' is missing from the program's GPU code")
                               .c_str());
    return nullptr;
  }
  module->kernels.emplace(name, kernel);
  return reinterpret_cast<void *>(kernel);
}

void *mgpuStreamCreate() {
  if (!launchDevice) {
    recordError(WEFT_RT_INTERNAL,
                "a GPU kernel was launched outside a CUDA model's run");
    return nullptr;
  }
  return launchDevice->stream.get();
}

void mgpuStreamSynchronize(void *) {}

void mgpuStreamDestroy(void *) {}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t paramsCount) {
  (void)extra;
  (void)paramsCount;
  // After a failure the run's results are void; launching more would only
  // bury the first message.
  if (!function || !stream || launchError.status != WEFT_RT_OK)
    return;
  dim3 grid(static_cast<unsigned>(gridX), static_cast<unsigned>(gridY),
            static_cast<unsigned>(gridZ));
  dim3 block(static_cast<unsigned>(blockX), static_cast<unsigned>(blockY),
             static_cast<unsigned>(blockZ));
  cudaError_t error = cudaLaunchKernel(
      static_cast<const void *>(function), grid, block, params,
      static_cast<size_t>(smem), static_cast<cudaStream_t>(stream));
  if (error != cudaSuccess)
    recordCudaError(error, "cudaLaunchKernel");
}

} // extern "C"
