//===- SimpleDevice.cuh - Launch helpers of the row and movement kernels -===//
//
// What RowKernels.cu and MovementKernels.cu share: launch sizes, the status
// checks around a launch, and the index arithmetic of dense row-major
// tensors on the device.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CUDA_KERNELS_SIMPLEDEVICE_CUH
#define WEFT_RUNTIME_CUDA_KERNELS_SIMPLEDEVICE_CUH

#include "cuda/CudaStatus.h"
#include "cuda/DeviceState.h"
#include "cuda/kernels/SimpleParams.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace weft::rt::cuda::simple {

/// Threads of a block for every kernel here.
constexpr int kThreads = 256;
/// Blocks of a launch at most; the kernels loop over the rest (grid-stride).
constexpr int64_t kMaxBlocks = int64_t(1) << 20;

/// Blocks for `units` units of work, `perBlock` per block.
inline unsigned blocksFor(int64_t units, int64_t perBlock) {
  int64_t blocks = (units + perBlock - 1) / perBlock;
  return static_cast<unsigned>(
      std::min<int64_t>(std::max<int64_t>(blocks, 1), kMaxBlocks));
}

/// The first index of this thread in a grid-stride loop, and the stride.
__device__ inline int64_t globalThread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t gridThreads() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

/// The offset of row-major `index` over sizes[rank] with the given strides.
__device__ inline int64_t offsetOf(int64_t index, int rank,
                                   const int64_t *sizes,
                                   const int64_t *strides) {
  if (rank == 1)
    return index * strides[0];
  int64_t offset = 0;
  for (int d = rank - 1; d >= 0; --d) {
    offset += (index % sizes[d]) * strides[d];
    index /= sizes[d];
  }
  return offset;
}

} // namespace weft::rt::cuda::simple

/// Returns the status of a failing host-side step.
#define WEFT_SIMPLE_TRY(expr)                                                  \
  do {                                                                         \
    weft_rt_status weftSimpleStatus = (expr);                                  \
    if (weftSimpleStatus != WEFT_RT_OK)                                        \
      return weftSimpleStatus;                                                 \
  } while (0)

/// Checks the launch just queued: a bad configuration or a missing device
/// shows up here, not at the model's synchronization.
#define WEFT_SIMPLE_CHECK_LAUNCH(ctx)                                          \
  WEFT_CUDA_CHECK((ctx), WEFT_RT_INTERNAL, cudaGetLastError())

#endif // WEFT_RUNTIME_CUDA_KERNELS_SIMPLEDEVICE_CUH
