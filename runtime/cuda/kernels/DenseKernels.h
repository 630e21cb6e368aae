//===- DenseKernels.h - Launches of hand-written dense kernels --*- C++ -*-===//
//
// The host functions DenseKernels.cu defines: each queues one kernel on a
// stream for a checked parameter block and returns cudaGetLastError().
// Device pointers only; nothing here synchronizes or allocates.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CUDA_KERNELS_DENSEKERNELS_H
#define WEFT_RUNTIME_CUDA_KERNELS_DENSEKERNELS_H

#include "cuda/kernels/DenseParams.h"

#include <cuda_runtime_api.h>

namespace weft::rt::cuda {

/// Writes scale * bias[i * biasRowStride + j * biasColStride] (or the bias
/// itself when !scaled, or zero when bias is null) into element (i, j) of
/// every one of the batch's M x N products in out. Float dtypes.
cudaError_t launchMatmulBiasFill(const MatmulParams &params, const void *bias,
                                 bool scaled, double scale, void *out,
                                 cudaStream_t stream);

/// The whole of an i32 or i64 matmul, with the CPU kernel's wrap-around and
/// saturation rules; one thread per output element.
cudaError_t launchIntegerMatmul(const MatmulParams &params, const void *a,
                                const void *b, const void *bias, void *out,
                                cudaStream_t stream);

/// Max or average pooling, one thread per output element.
cudaError_t launchPool(const PoolParams &params, const void *input, void *out,
                       cudaStream_t stream);

/// out = x * a[c] + b[c] with a = scale / sqrt(var + epsilon) and
/// b = bias - mean * a computed in double, as on the CPU.
cudaError_t launchBatchNorm(const BatchNormParams &params, const void *x,
                            const void *scale, const void *bias,
                            const void *mean, const void *var, void *out,
                            cudaStream_t stream);

/// Einsum, one thread per output element summing over the summed indices
/// (floats in double, f16 and bf16 in f32, integers wrapping).
cudaError_t launchEinsum(const EinsumParams &params, const void *in0,
                         const void *in1, void *out, cudaStream_t stream);

/// Writes the zero-padded copy of PadPlanesParams.
cudaError_t launchPadPlanes(const PadPlanesParams &params, const void *input,
                            void *out, cudaStream_t stream);

} // namespace weft::rt::cuda

#endif // WEFT_RUNTIME_CUDA_KERNELS_DENSEKERNELS_H
