//===- PipelineTestProgram.cpp - A hand-written two-stage pipeline --------===//
//
// Stands in for the weftc-generated devices of a pipeline of 3 processes,
// so that the driver runs stages end to end without the code generator.
// WEFT_TEST_STAGE picks the stage:
//   0: the mesh [2] at world ranks 0 and 1. Each device scales x: f32[4] by
//      its weights' w[0], sums the two (ALL_REDUCE_SUM), sends the sum to
//      world rank 2 (tag 10 + its position) and receives y back from it
//      (tag 20 + its position).
//   1: one device (no mesh record) at world rank 2. It receives both sums,
//      y = (a + b) * w[0] + x, and sends y to ranks 0 and 1.
// With weights w[0] = 1 + k/2 of device k, y = 11 x on every rank; world
// rank 0 reports it. WEFT_TEST_BAD_RECV makes stage 1 expect 3 elements
// from rank 0 instead of 4, for the driver's failure of a transfer.
//
//===----------------------------------------------------------------------===//

#include "weft_rt.h"

#include <cstdlib>
#include <cstring>
#include <initializer_list>

#if !defined(WEFT_TEST_STAGE)
#error "define WEFT_TEST_STAGE (0 or 1)"
#endif

/// Arena: x at 0, y at 64, scratch at 128.
static const char kSignature[] = "weft-program 1\n"
                                 "arena 192\n"
                                 "weights 64\n"
#if WEFT_TEST_STAGE == 0
                                 "mesh 2\n"
                                 "pipeline 3 0 1\n"
#else
                                 "pipeline 3 2\n"
#endif
                                 "input x f32 1 4 0\n"
                                 "output y f32 1 4 64\n"
                                 "op 0 Mul scale\n"
                                 "op 1 Transfer exchange\n";

static constexpr int64_t kCount = 4;

static int32_t run(weft_rt_context *ctx, weft_rt_byte_buffer *arena,
                   weft_rt_byte_buffer *weights) {
  if (arena->sizes[0] < 192 || weights->sizes[0] < 64)
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "pipeline test program: arena %lld or weights %lld "
                        "too small",
                        static_cast<long long>(arena->sizes[0]),
                        static_cast<long long>(weights->sizes[0]));
  int8_t *base = arena->aligned + arena->offset;
  float *x = reinterpret_cast<float *>(base);
  float *y = reinterpret_cast<float *>(base + 64);
  float *scratch = reinterpret_cast<float *>(base + 128);
  float w0;
  std::memcpy(&w0, weights->aligned + weights->offset, sizeof(w0));

#if WEFT_TEST_STAGE == 0
  weft_rt_op_begin(ctx, 0);
  for (int64_t i = 0; i < kCount; ++i)
    scratch[i] = x[i] * w0;
  int64_t reduce[] = {WEFT_RT_ALL_REDUCE_SUM, WEFT_RT_F32, 1, 0, kCount};
  if (weft_rt_status status = weft_rt_collective(ctx, reduce, scratch, scratch))
    return status;
  weft_rt_op_end(ctx, 0);
  // Mesh position 0 is world rank 0, position 1 world rank 1.
  int64_t position = 0;
  for (const char *name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK"})
    if (const char *text = std::getenv(name))
      position = std::atoi(text);
  weft_rt_op_begin(ctx, 1);
  int64_t send[] = {WEFT_RT_SEND, WEFT_RT_F32, 0, 2, 10 + position, kCount};
  if (weft_rt_status status = weft_rt_collective(ctx, send, scratch, scratch))
    return status;
  int64_t recv[] = {WEFT_RT_RECV, WEFT_RT_F32, 0, 2, 20 + position, kCount};
  if (weft_rt_status status = weft_rt_collective(ctx, recv, y, y))
    return status;
  weft_rt_op_end(ctx, 1);
#else
  float *a = scratch, *b = scratch + kCount;
  weft_rt_op_begin(ctx, 1);
  int64_t fromFirst = std::getenv("WEFT_TEST_BAD_RECV") ? kCount - 1 : kCount;
  int64_t recvA[] = {WEFT_RT_RECV, WEFT_RT_F32, 0, 0, 10, fromFirst};
  if (weft_rt_status status = weft_rt_collective(ctx, recvA, a, a))
    return status;
  int64_t recvB[] = {WEFT_RT_RECV, WEFT_RT_F32, 0, 1, 11, kCount};
  if (weft_rt_status status = weft_rt_collective(ctx, recvB, b, b))
    return status;
  weft_rt_op_end(ctx, 1);
  weft_rt_op_begin(ctx, 0);
  for (int64_t i = 0; i < kCount; ++i)
    y[i] = (a[i] + b[i]) * w0 + x[i];
  weft_rt_op_end(ctx, 0);
  weft_rt_op_begin(ctx, 1);
  for (int64_t peer = 0; peer < 2; ++peer) {
    int64_t send[] = {WEFT_RT_SEND, WEFT_RT_F32, 0, peer, 20 + peer, kCount};
    if (weft_rt_status status = weft_rt_collective(ctx, send, y, y))
      return status;
  }
  weft_rt_op_end(ctx, 1);
#endif
  // Scribble over the input, as a planned arena may.
  for (int64_t i = 0; i < kCount; ++i)
    x[i] = 1000.0f;
  return WEFT_RT_OK;
}

extern "C" const weft_rt_program weft_program = {kSignature, run};
