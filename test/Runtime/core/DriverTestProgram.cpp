//===- DriverTestProgram.cpp - A hand-written device program -------------===//
//
// Stands in for a weftc-generated object so that the driver can be tested
// end to end without the code generator:
//   y = x * 2 + w[0]        (x: f32[2,3], w: the 64-byte weights, w[0] 0.5)
//   "n plus 1" = n + 1      (n: i64[3])
// n[0] selects failures: -1 a kernel error, -7 an internal error, -11 a
// crash (SIGABRT), for the exit code tests.
//
//===----------------------------------------------------------------------===//

#include "weft_rt.h"

#include <cstdlib>
#include <cstring>

static const char kSignature[] = "weft-program 1\n"
                                 "arena 256\n"
                                 "weights 64\n"
                                 "input x 1 2 2 3 0\n"
                                 "input n i64 1 3 64\n"
                                 "output y f32 2 2 3 128\n"
                                 "output n%20plus%201 7 1 3 192\n"
                                 "op 0 Mul scale%20x\n"
                                 "op 1 Add add%20w0\n"
                                 "op 2 Add increment\n";

static int32_t run(weft_rt_context *ctx, weft_rt_byte_buffer *arena,
                   weft_rt_byte_buffer *weights) {
  if (arena->sizes[0] < 256 || weights->sizes[0] < 64)
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "test program: arena %lld or weights %lld too small",
                        static_cast<long long>(arena->sizes[0]),
                        static_cast<long long>(weights->sizes[0]));
  int8_t *base = arena->aligned + arena->offset;
  float *x = reinterpret_cast<float *>(base);
  int64_t *n = reinterpret_cast<int64_t *>(base + 64);
  float *y = reinterpret_cast<float *>(base + 128);
  int64_t *z = reinterpret_cast<int64_t *>(base + 192);
  float w0;
  std::memcpy(&w0, weights->aligned + weights->offset, sizeof(w0));

  if (n[0] == -7)
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "test program: a deliberate internal error");
  if (n[0] == -11)
    std::abort();
  if (n[0] < 0)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "test program: n[0] = %lld is negative",
                        static_cast<long long>(n[0]));

  weft_rt_op_begin(ctx, 0);
  for (int i = 0; i < 6; ++i)
    y[i] = x[i] * 2.0f;
  weft_rt_op_end(ctx, 0);
  weft_rt_op_begin(ctx, 1);
  for (int i = 0; i < 6; ++i)
    y[i] += w0;
  weft_rt_op_end(ctx, 1);
  weft_rt_op_begin(ctx, 2);
  for (int i = 0; i < 3; ++i)
    z[i] = n[i] + 1;
  weft_rt_op_end(ctx, 2);
  // Use the input's bytes as scratch, as a planned arena may: the driver
  // must copy the inputs in again before every run.
  for (int i = 0; i < 6; ++i)
    x[i] = 1000.0f;
  return WEFT_RT_OK;
}

extern "C" const weft_rt_program weft_program = {kSignature, run};
