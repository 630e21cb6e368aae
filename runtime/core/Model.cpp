//===- Model.cpp - Programs with their arena and weights ------------------===//
//
// A model binds a compiled program to memory: the arena it computes in,
// allocated once, and its weights, mapped read-only. Running it allocates
// nothing, so that benchmark numbers measure the program alone.
//
//===----------------------------------------------------------------------===//

#include "Model.h"
#include "Context.h"
#include "comm/Comm.h"

#include <cerrno>
#include <cstring>
#include <new>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace weft::rt;

/// What the weights descriptor points at when there are no weights: a valid,
/// aligned address that generated code never reads.
alignas(64) static int8_t noWeights[64];

static weft_rt_byte_buffer makeBuffer(void *data, size_t bytes) {
  weft_rt_byte_buffer buffer;
  buffer.allocated = static_cast<int8_t *>(data);
  buffer.aligned = static_cast<int8_t *>(data);
  buffer.offset = 0;
  buffer.sizes[0] = static_cast<int64_t>(bytes);
  buffer.strides[0] = 1;
  return buffer;
}

/// Maps `path` read-only into `model`, checking its size against the
/// signature's weights record.
static weft_rt_status mapWeights(weft_rt_model *model, const char *path) {
  weft_rt_context *ctx = model->ctx;
  int64_t expected = model->signature.weightsBytes;
  if (!path) {
    if (expected == 0)
      return WEFT_RT_OK;
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "the program needs a %lld-byte weights file and "
                        "none was given",
                        static_cast<long long>(expected));
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return weft_rt_fail(ctx, WEFT_RT_IO_ERROR,
                        "cannot open weights file '%s': %s", path,
                        std::strerror(errno));
  struct stat info;
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    close(fd);
    return weft_rt_fail(ctx, WEFT_RT_IO_ERROR,
                        "weights file '%s' is not a regular file", path);
  }
  if (info.st_size != expected) {
    close(fd);
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "weights file '%s' has %lld bytes; the program was "
                        "compiled with %lld bytes of weights (is it the "
                        "weights file of another model or device?)",
                        path, static_cast<long long>(info.st_size),
                        static_cast<long long>(expected));
  }
  if (expected == 0) {
    close(fd);
    return WEFT_RT_OK;
  }
  void *data = mmap(nullptr, static_cast<size_t>(expected), PROT_READ,
                    MAP_PRIVATE, fd, 0);
  int savedErrno = errno;
  close(fd);
  if (data == MAP_FAILED)
    return weft_rt_fail(ctx, WEFT_RT_IO_ERROR,
                        "cannot map weights file '%s': %s", path,
                        std::strerror(savedErrno));
  model->weights = data;
  model->weightsMapBytes = static_cast<size_t>(expected);
  return WEFT_RT_OK;
}

static weft::rt::DeviceBackendFactory cudaBackendFactory = nullptr;

void weft::rt::setCudaBackendFactory(DeviceBackendFactory factory) {
  cudaBackendFactory = factory;
}

weft_rt_status weft_rt_model_create(weft_rt_context *ctx,
                                    const weft_rt_program *program,
                                    const char *weights_path,
                                    weft_rt_model **out_model) {
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  if (!out_model)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "weft_rt_model_create: out_model is NULL");
  *out_model = nullptr;
  if (!program || !program->run)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "weft_rt_model_create: the program or its run "
                        "function is NULL");
  auto *model = new (std::nothrow) weft_rt_model();
  if (!model)
    return weft_rt_fail(ctx, WEFT_RT_OUT_OF_MEMORY, "out of memory");
  model->ctx = ctx;
  model->program = program;
  std::string error;
  if (!parseSignature(program->signature, model->signature, error)) {
    delete model;
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT, "%s", error.c_str());
  }
  if (weft_rt_status status = mapWeights(model, weights_path)) {
    delete model;
    return status;
  }
  // The signature checked that the table lies inside the weights.
  if (model->signature.peerSlots > 0) {
    ctx->peerTable = reinterpret_cast<const int64_t *>(
        static_cast<const char *>(model->weights) +
        model->signature.peerTableOffset);
    ctx->peerSlots = model->signature.peerSlots;
  }

  // An anonymous mapping is page aligned (more than the 64 bytes promised)
  // and zeroed; one page at least, so that an empty arena has an address.
  size_t arenaBytes = static_cast<size_t>(model->signature.arenaBytes);
  model->arenaMapBytes = arenaBytes ? arenaBytes : 1;
  void *arena = mmap(nullptr, model->arenaMapBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (arena == MAP_FAILED) {
    int savedErrno = errno;
    weft_rt_model_destroy(model);
    return weft_rt_fail(ctx, WEFT_RT_OUT_OF_MEMORY,
                        "cannot allocate the program's %zu-byte arena: %s",
                        arenaBytes, std::strerror(savedErrno));
  }
  model->arena = arena;
  model->arenaBuffer = makeBuffer(arena, arenaBytes);
  model->weightsBuffer =
      model->weights ? makeBuffer(model->weights, model->weightsMapBytes)
                     : makeBuffer(noWeights, 0);
  if (model->signature.target == "cuda") {
    if (!cudaBackendFactory) {
      weft_rt_model_destroy(model);
      return weft_rt_fail(ctx, WEFT_RT_UNSUPPORTED,
                          "the program was compiled for CUDA GPUs "
                          "(--target=cuda), but this executable's runtime "
                          "has no CUDA backend; run the package's own "
                          "bin/dev<k>, which has");
    }
    if (weft_rt_status status = cudaBackendFactory(model, &model->device)) {
      weft_rt_model_destroy(model);
      return status;
    }
  }
  *out_model = model;
  return WEFT_RT_OK;
}

void weft_rt_model_destroy(weft_rt_model *model) {
  if (!model)
    return;
  // The device first: its memory is freed while its stream still exists.
  model->device.reset();
  weft_rt_context *ctx = model->ctx;
  if (ctx && model->signature.peerSlots > 0 &&
      ctx->peerSlots == model->signature.peerSlots &&
      reinterpret_cast<const char *>(ctx->peerTable) ==
          static_cast<const char *>(model->weights) +
              model->signature.peerTableOffset) {
    ctx->peerTable = nullptr;
    ctx->peerSlots = 0;
  }
  if (model->arena)
    munmap(model->arena, model->arenaMapBytes);
  if (model->weights)
    munmap(model->weights, model->weightsMapBytes);
  delete model;
}

int32_t weft_rt_model_num_inputs(const weft_rt_model *model) {
  return model ? static_cast<int32_t>(model->signature.inputs.size()) : 0;
}

int32_t weft_rt_model_num_outputs(const weft_rt_model *model) {
  return model ? static_cast<int32_t>(model->signature.outputs.size()) : 0;
}

static weft_rt_status describe(const weft_rt_model *model, int32_t index,
                               bool input, weft_rt_tensor_info *out_info) {
  if (!model)
    return WEFT_RT_INVALID_ARGUMENT;
  const std::vector<TensorSpec> &specs =
      input ? model->signature.inputs : model->signature.outputs;
  const char *kind = input ? "input" : "output";
  if (!out_info)
    return weft_rt_fail(model->ctx, WEFT_RT_INVALID_ARGUMENT,
                        "weft_rt_model_%s_info: out_info is NULL", kind);
  if (index < 0 || static_cast<size_t>(index) >= specs.size())
    return weft_rt_fail(model->ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s index %d is out of range (the model has %zu)", kind,
                        index, specs.size());
  const TensorSpec &spec = specs[index];
  out_info->name = spec.name.c_str();
  out_info->dtype = spec.dtype;
  out_info->rank = static_cast<int32_t>(spec.dims.size());
  out_info->dims = spec.dims.data();
  out_info->bytes = spec.bytes;
  return WEFT_RT_OK;
}

weft_rt_status weft_rt_model_input_info(const weft_rt_model *model,
                                        int32_t index,
                                        weft_rt_tensor_info *out_info) {
  return describe(model, index, /*input=*/true, out_info);
}

weft_rt_status weft_rt_model_output_info(const weft_rt_model *model,
                                         int32_t index,
                                         weft_rt_tensor_info *out_info) {
  return describe(model, index, /*input=*/false, out_info);
}

void *weft_rt_model_input_data(weft_rt_model *model, int32_t index) {
  if (!model || index < 0 ||
      static_cast<size_t>(index) >= model->signature.inputs.size())
    return nullptr;
  return static_cast<uint8_t *>(model->arena) +
         model->signature.inputs[index].offset;
}

const void *weft_rt_model_output_data(const weft_rt_model *model,
                                      int32_t index) {
  if (!model || index < 0 ||
      static_cast<size_t>(index) >= model->signature.outputs.size())
    return nullptr;
  return static_cast<const uint8_t *>(model->arena) +
         model->signature.outputs[index].offset;
}

weft_rt_status weft_rt_model_run(weft_rt_model *model) {
  if (!model)
    return WEFT_RT_INVALID_ARGUMENT;
  weft_rt_context *ctx = model->ctx;
  ctx->error.clear();
  // A mesh program without its communicator would wait for peers forever
  // or compute with the wrong group.
  if (weft_rt_status status =
          checkMeshComm(ctx, model->signature.mesh, model->signature.worldSize,
                        model->signature.meshWorldRanks))
    return status;
  // The run's own event brackets its ops in the trace; its slot is reserved
  // up front and filled in afterwards.
  size_t runEvent = ctx->events.size();
  if (ctx->profiling)
    ctx->events.push_back({kRunEventId, nowMicroseconds(), 0.0});
  // The descriptors are passed by pointer: hand out copies, so that a
  // program cannot change what the next run sees.
  weft_rt_byte_buffer arena = model->arenaBuffer;
  weft_rt_byte_buffer weights = model->weightsBuffer;
  weft_rt_status status = model->device
                              ? model->device->run(model)
                              : model->program->run(ctx, &arena, &weights);
  if (ctx->profiling && runEvent < ctx->events.size())
    ctx->events[runEvent].durationUs =
        nowMicroseconds() - ctx->events[runEvent].startUs;
  ++model->runCount;
  if (status == WEFT_RT_OK)
    return WEFT_RT_OK;
  if (status < WEFT_RT_OK || status > WEFT_RT_DEVICE_UNAVAILABLE)
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "the program returned status %d, which is not a "
                        "weft_rt_status%s%s",
                        status, ctx->error.empty() ? "" : ": ",
                        ctx->error.c_str());
  if (ctx->error.empty())
    return weft_rt_fail(ctx, status,
                        "the program failed with status %d and no message",
                        status);
  return status;
}

void weft_rt_model_enable_profile(weft_rt_model *model) {
  if (!model)
    return;
  model->ctx->profiling = true;
  // Room for a few runs, so that recording an event rarely allocates.
  size_t perRun = model->signature.ops.size() + 1;
  if (model->ctx->events.capacity() < 16 * perRun)
    model->ctx->events.reserve(16 * perRun);
}

weft_rt_status weft_rt_model_write_profile(const weft_rt_model *model,
                                           const char *path) {
  if (!model)
    return WEFT_RT_INVALID_ARGUMENT;
  if (!path)
    return weft_rt_fail(model->ctx, WEFT_RT_INVALID_ARGUMENT,
                        "weft_rt_model_write_profile: path is NULL");
  if (!model->ctx->profiling)
    return weft_rt_fail(model->ctx, WEFT_RT_INVALID_ARGUMENT,
                        "profiling was not enabled "
                        "(weft_rt_model_enable_profile) before the runs");
  std::string error;
  if (!writeChromeTrace(path, *model->ctx, model->signature, error))
    return weft_rt_fail(model->ctx, WEFT_RT_IO_ERROR, "%s", error.c_str());
  return WEFT_RT_OK;
}
