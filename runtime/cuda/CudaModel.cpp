//===- CudaModel.cpp - Running a GPU program's model ---------------------===//
//
// The device side of a "target cuda" model: the GPU, the device arena and a
// device copy of the weights, made once when the model is created. A run
// copies the inputs in, runs the generated host code (which launches the
// kernels on the program's compute stream, and a pipeline stage's transfers
// on its transfer stream), waits once for both and copies the outputs out:
// host <-> device copies happen only at the program's edges.
//
//===----------------------------------------------------------------------===//

#include "core/Context.h"
#include "core/DeviceBackend.h"
#include "core/Model.h"
#include "cuda/CudaBackend.h"
#include "cuda/CudaStatus.h"
#include "cuda/DeviceState.h"
#include "cuda/GpuLauncher.h"

#include <cstdlib>
#include <cstring>
#include <string>

using namespace weft::rt;
using namespace weft::rt::cuda;

namespace {

/// Null until installCudaMeshBackend: then mesh programs can run.
NcclMeshFactory ncclMeshFactory = nullptr;

/// "input 'x'", for copy messages.
std::string describeTensor(const char *kind, const TensorSpec &spec) {
  return std::string(kind) + " '" + spec.name + "'";
}

weft_rt_byte_buffer deviceBuffer(void *data, size_t bytes) {
  auto *base = static_cast<int8_t *>(data);
  return weft_rt_byte_buffer{base, base, 0, {static_cast<int64_t>(bytes)}, {1}};
}

/// Which GPU this process uses: WEFT_CUDA_DEVICE when set, else the rank
/// among this node's processes (mpirun's local rank) so that each rank of a
/// mesh on one machine gets its own GPU, else 0.
weft_rt_status chooseOrdinal(weft_rt_context *ctx, int *out_ordinal) {
  for (const char *name : {"WEFT_CUDA_DEVICE", "OMPI_COMM_WORLD_LOCAL_RANK",
                           "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    const char *value = std::getenv(name);
    if (!value || !*value)
      continue;
    char *end = nullptr;
    long ordinal = std::strtol(value, &end, 10);
    if (*end != '\0' || ordinal < 0 || ordinal > 1 << 20)
      return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                          "%s='%s' is not a CUDA device number", name, value);
    *out_ordinal = static_cast<int>(ordinal);
    return WEFT_RT_OK;
  }
  *out_ordinal = 0;
  return WEFT_RT_OK;
}

class CudaBackend final : public DeviceBackend {
public:
  weft_rt_status create(weft_rt_model *model);
  weft_rt_status run(weft_rt_model *model) override;
  /// The GPU, its memory and the weights: what every rank sets up alone.
  weft_rt_status setUpDevice(weft_rt_model *model);

  ~CudaBackend() override {
    // Nothing may still run when the communicators and memory go: no
    // kernel, and no send still reading its staging buffer. A destructor
    // has no context to report to.
    if (state) {
      synchronizeDeviceState(nullptr, *state);
      state->nccl = nullptr;
    }
  }

private:
  // Destroyed bottom-up: the communicators, the memory, then the device.
  std::unique_ptr<DeviceState> state;
  DeviceArena arena;
  DeviceArena weights;
  std::shared_ptr<NcclMesh> nccl;
};

weft_rt_status CudaBackend::create(weft_rt_model *model) {
  weft_rt_context *ctx = model->ctx;
  const ProgramSignature &signature = model->signature;
  // A stage of a pipeline needs NCCL even as a mesh of one device: its
  // transfers go to the other stages.
  bool inMesh = signature.multiRank();
  if (inMesh && !ncclMeshFactory)
    return weft_rt_fail(ctx, WEFT_RT_UNSUPPORTED,
                        "this CUDA program is one device of a %lld-device "
                        "mesh in a job of %lld processes, but the executable "
                        "was linked without NCCL mesh support; recompile the "
                        "package with weftc",
                        static_cast<long long>(signature.meshDevices),
                        static_cast<long long>(signature.worldSize));
  if (inMesh && !ctx->comm)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "this CUDA program is one device of a %lld-device "
                        "mesh in a job of %lld processes and needs the "
                        "mesh's communicator attached before the model is "
                        "created (launch it with weft-run or mpirun)",
                        static_cast<long long>(signature.meshDevices),
                        static_cast<long long>(signature.worldSize));
  weft_rt_status status = setUpDevice(model);
  if (!inMesh)
    return status;
  // Every rank takes part, also one that failed: the others learn of it.
  weft_rt_status meshStatus = ncclMeshFactory(
      ctx, ctx->comm, state ? state->stream.get() : nullptr,
      state ? state->transferStream.get() : nullptr, status, &nccl);
  if (meshStatus != WEFT_RT_OK)
    return meshStatus;
  state->nccl = nccl.get();
  return WEFT_RT_OK;
}

weft_rt_status CudaBackend::setUpDevice(weft_rt_model *model) {
  weft_rt_context *ctx = model->ctx;
  const ProgramSignature &signature = model->signature;
  int ordinal = 0;
  if (weft_rt_status status = chooseOrdinal(ctx, &ordinal))
    return status;
  if (weft_rt_status status =
          createDeviceState(ctx, ordinal, signature.gpuArchitectures,
                            kDefaultWorkspaceBytes, &state))
    return status;
  // The program's own kernels, now that the device is chosen.
  if (weft_rt_status status = loadGpuModules(ctx, state->info))
    return status;
  if (weft_rt_status status =
          arena.allocate(ctx, static_cast<size_t>(signature.arenaBytes)))
    return status;
  size_t weightBytes = static_cast<size_t>(signature.weightsBytes);
  if (weft_rt_status status = weights.allocate(ctx, weightBytes))
    return status;
  if (weightBytes > 0)
    return weights.copyToDevice(ctx, state->stream, 0, model->weights,
                                weightBytes, "the weights");
  return WEFT_RT_OK;
}

weft_rt_status CudaBackend::run(weft_rt_model *model) {
  weft_rt_context *ctx = model->ctx;
  const ProgramSignature &signature = model->signature;
  // The thread that runs may not be the one that created the model.
  WEFT_CUDA_CHECK(ctx, WEFT_RT_INTERNAL, cudaSetDevice(state->info.ordinal));
  auto *host = static_cast<const uint8_t *>(model->arena);
  for (const TensorSpec &input : signature.inputs)
    if (weft_rt_status status = arena.copyToDevice(
            ctx, state->stream, static_cast<size_t>(input.offset),
            host + input.offset, input.bytes,
            describeTensor("input", input).c_str()))
      return status;

  weft_rt_byte_buffer arenaBuffer = deviceBuffer(arena.data(), arena.size());
  weft_rt_byte_buffer weightsBuffer =
      deviceBuffer(weights.data(), weights.size());
  weft_rt_status status;
  {
    attachDeviceState(ctx, state.get());
    ScopedLaunchDevice launching(state.get());
    status = model->program->run(ctx, &arenaBuffer, &weightsBuffer);
    if (status == WEFT_RT_OK)
      status = takeLaunchError(ctx);
    attachDeviceState(ctx, nullptr);
  }
  // Wait even after a failure: nothing may still write the arena when the
  // caller reads it or the model is destroyed. Both streams: a run is done
  // when its sends are, as on the CPU, where a send returns once its data
  // has left.
  weft_rt_status synced = synchronizeDeviceState(ctx, *state);
  if (status != WEFT_RT_OK)
    return status;
  if (synced != WEFT_RT_OK)
    return synced;

  auto *hostOut = static_cast<uint8_t *>(model->arena);
  for (const TensorSpec &output : signature.outputs)
    if (weft_rt_status status =
            arena.copyToHost(ctx, state->stream, hostOut + output.offset,
                             static_cast<size_t>(output.offset), output.bytes,
                             describeTensor("output", output).c_str()))
      return status;
  return WEFT_RT_OK;
}

weft_rt_status createCudaBackend(weft_rt_model *model,
                                 std::unique_ptr<DeviceBackend> *out_backend) {
  auto backend = std::make_unique<CudaBackend>();
  if (weft_rt_status status = backend->create(model))
    return status;
  *out_backend = std::move(backend);
  return WEFT_RT_OK;
}

} // namespace

void weft::rt::cuda::installCudaBackend() {
  setCudaBackendFactory(createCudaBackend);
}

void weft::rt::cuda::setNcclMeshFactory(NcclMeshFactory factory) {
  ncclMeshFactory = factory;
}
