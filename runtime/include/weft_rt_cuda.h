/*===- weft_rt_cuda.h - The Weft runtime's CUDA kernels ----------*- C -*-===*\
|*                                                                          *|
|* What code generated for --target=cuda calls. Every kernel takes the same *|
|* parameter block as its CPU namesake in weft_rt.h (weft_rt_cpu_<kernel>), *|
|* in host memory, and device pointers into the program's arena or weights. *|
|* Kernels check their parameters before touching the device, queue their  *|
|* work on the program's stream (attached to the context by the CUDA       *|
|* model) and return without waiting; they allocate nothing.               *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/

#ifndef WEFT_RT_CUDA_H
#define WEFT_RT_CUDA_H

#include "weft_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Dense math: cuBLAS, cuDNN (runtime/cuda/kernels). */
weft_rt_status weft_rt_cuda_matmul(weft_rt_context *ctx, const int64_t *params,
                                   const void *a, const void *b,
                                   const void *bias, void *out);
weft_rt_status weft_rt_cuda_conv(weft_rt_context *ctx, const int64_t *params,
                                 const void *input, const void *weight,
                                 const void *bias, void *out);
weft_rt_status weft_rt_cuda_pool(weft_rt_context *ctx, const int64_t *params,
                                 const void *input, void *out);
weft_rt_status weft_rt_cuda_batch_norm(weft_rt_context *ctx,
                                       const int64_t *params, const void *x,
                                       const void *scale, const void *bias,
                                       const void *mean, const void *var,
                                       void *out);
weft_rt_status weft_rt_cuda_einsum(weft_rt_context *ctx, const int64_t *params,
                                   const void *in0, const void *in1, void *out);

/* Row-wise and data-movement kernels (runtime/cuda/kernels). */
weft_rt_status weft_rt_cuda_normalize(weft_rt_context *ctx,
                                      const int64_t *params, const void *x,
                                      const void *scale, const void *bias,
                                      void *out, void *out_mean,
                                      void *out_inv_std_dev);
weft_rt_status weft_rt_cuda_softmax(weft_rt_context *ctx, const int64_t *params,
                                    const void *input, void *out);
weft_rt_status weft_rt_cuda_reduce(weft_rt_context *ctx, const int64_t *params,
                                   const void *input, void *out);
weft_rt_status weft_rt_cuda_arg_reduce(weft_rt_context *ctx,
                                       const int64_t *params, const void *input,
                                       void *out);
weft_rt_status weft_rt_cuda_transpose(weft_rt_context *ctx,
                                      const int64_t *params, const void *input,
                                      void *out);
weft_rt_status weft_rt_cuda_gather(weft_rt_context *ctx, const int64_t *params,
                                   const void *input, const void *indices,
                                   void *out);
weft_rt_status weft_rt_cuda_gather_elements(weft_rt_context *ctx,
                                            const int64_t *params,
                                            const void *input,
                                            const void *indices, void *out);
weft_rt_status weft_rt_cuda_slice(weft_rt_context *ctx, const int64_t *params,
                                  const void *input, void *out);
weft_rt_status weft_rt_cuda_pad(weft_rt_context *ctx, const int64_t *params,
                                const void *input, const void *value,
                                void *out);
weft_rt_status weft_rt_cuda_tile(weft_rt_context *ctx, const int64_t *params,
                                 const void *input, void *out);
weft_rt_status weft_rt_cuda_trilu(weft_rt_context *ctx, const int64_t *params,
                                  const void *input, void *out);
weft_rt_status weft_rt_cuda_copy2d(weft_rt_context *ctx, const int64_t *params,
                                   const void *src, void *dst);

/* Collectives on NCCL (runtime/cuda/NcclComm.cpp): weft_rt_collective's
   parameter block on device buffers, over the mesh's NCCL communicators,
   on the program's stream. SEND and RECV are ncclSend and ncclRecv over the
   world's, on a transfer stream of their own (runtime/cuda/NcclTransfer.h)
   where NCCL can order it (2.26 and later): a SEND copies `in` on the
   program's stream into a device buffer of its op (allocated at its first
   call) and sends from there, so `in` may be overwritten by the next
   kernels while the data travels; the program's stream waits on the
   device for a RECV's data before its next kernels. With an older NCCL, or
   NCCL_LAUNCH_ORDER_IMPLICIT=0, both run on the program's stream. NCCL has
   no tags, so the transfers of one pair of ranks match in the order both
   issue them (the tag is checked, not used), a receive cannot check the
   sender's count, and empty ones are skipped on both sides. */
weft_rt_status weft_rt_cuda_collective(weft_rt_context *ctx,
                                       const int64_t *params, const void *in,
                                       void *out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* WEFT_RT_CUDA_H */
