//===- MeshTestProgram.cpp - A hand-written mesh device program ----------===//
//
// Stands in for a weftc-generated device of a mesh (WEFT_TEST_MESH, "2" or
// "2 2"), so that the driver and weft-run are tested end to end on several
// ranks without the code generator. Every device gets x: f32[4,6] and
//   takes its block of x's columns     (LOCAL_SLICE over WEFT_TEST_AXES)
//   scales it by its weights' w[0]     (each device has its own weights)
//   y = the blocks gathered            (ALL_GATHER over the same axes)
//   total = the row sums of y          (ALL_REDUCE_SUM of partial sums)
// The environment picks failures for the exit code tests, on the rank it
// names: WEFT_TEST_FAIL_RANK a kernel error, WEFT_TEST_CRASH_RANK a crash
// (SIGABRT), WEFT_TEST_SLEEP_RANK a hang of 60 s, each before the first
// collective, so that the other ranks wait for that one.
//
//===----------------------------------------------------------------------===//

#include "weft_rt.h"

#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include <unistd.h>

#if !defined(WEFT_TEST_MESH) || !defined(WEFT_TEST_AXES) ||                    \
    !defined(WEFT_TEST_DEVICES)
#error "define WEFT_TEST_MESH, WEFT_TEST_AXES and WEFT_TEST_DEVICES"
#endif

/// Arena: x at 0, y at 128, total at 256; scratch: the block at 320, the
/// partial row sums at 384.
static const char kSignature[] = "weft-program 1\n"
                                 "arena 448\n"
                                 "weights 64\n"
                                 "mesh " WEFT_TEST_MESH "\n"
                                 "input x f32 2 4 6 0\n"
                                 "output y f32 2 4 6 128\n"
                                 "output total f32 1 4 256\n"
                                 "op 0 LocalSlice slice%20x\n"
                                 "op 1 Mul scale\n"
                                 "op 2 AllGather gather%20y\n"
                                 "op 3 AllReduce total\n";

/// The mesh axes of every collective, major to minor.
static const int64_t kAxes[] = {WEFT_TEST_AXES};
static constexpr int64_t kNumAxes = sizeof(kAxes) / sizeof(kAxes[0]);
static constexpr int64_t kRows = 4, kCols = 6;
/// Every collective's group is the whole mesh.
static constexpr int64_t kDevices = WEFT_TEST_DEVICES;

/// This process's rank, from the launcher (the test hooks only).
static int launcherRank() {
  for (const char *name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK"})
    if (const char *text = std::getenv(name))
      return std::atoi(text);
  return -1;
}

static bool hookIsMe(const char *name) {
  const char *text = std::getenv(name);
  return text && *text && std::atoi(text) == launcherRank();
}

/// Parameters of a LOCAL_SLICE or ALL_GATHER of `rows` rows of kCols
/// columns split over every device: ceil(6 / P) each, the last ones short
/// (P = 4: 2, 2, 2, 0).
static void blockParams(int64_t kind, int64_t rows, int64_t *params) {
  int64_t *at = params;
  *at++ = kind;
  *at++ = WEFT_RT_F32;
  *at++ = kNumAxes;
  for (int64_t a : kAxes)
    *at++ = a;
  *at++ = rows; // outer
  *at++ = 1;    // inner
  *at++ = kDevices;
  int64_t chunk = (kCols + kDevices - 1) / kDevices;
  for (int64_t h = 0; h < kDevices; ++h) {
    int64_t start = h * chunk;
    int64_t end = start + chunk < kCols ? start + chunk : kCols;
    *at++ = end > start ? end - start : 0;
  }
}

static int32_t run(weft_rt_context *ctx, weft_rt_byte_buffer *arena,
                   weft_rt_byte_buffer *weights) {
  if (arena->sizes[0] < 448 || weights->sizes[0] < 64)
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "mesh test program: arena %lld or weights %lld too "
                        "small",
                        static_cast<long long>(arena->sizes[0]),
                        static_cast<long long>(weights->sizes[0]));
  if (hookIsMe("WEFT_TEST_FAIL_RANK"))
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "mesh test program: a deliberate failure on rank %d",
                        launcherRank());
  if (hookIsMe("WEFT_TEST_CRASH_RANK"))
    std::abort();
  if (hookIsMe("WEFT_TEST_SLEEP_RANK"))
    sleep(60);

  int8_t *base = arena->aligned + arena->offset;
  float *x = reinterpret_cast<float *>(base);
  float *y = reinterpret_cast<float *>(base + 128);
  float *total = reinterpret_cast<float *>(base + 256);
  float *block = reinterpret_cast<float *>(base + 320);
  float *partial = reinterpret_cast<float *>(base + 384);
  float w0;
  std::memcpy(&w0, weights->aligned + weights->offset, sizeof(w0));

  int64_t params[32];
  weft_rt_op_begin(ctx, 0);
  blockParams(WEFT_RT_LOCAL_SLICE, kRows, params);
  if (weft_rt_status status = weft_rt_collective(ctx, params, x, block))
    return status;
  weft_rt_op_end(ctx, 0);

  // The block's width: slice a row of ones the same way.
  float ones[kCols], mine[kCols] = {};
  for (float &one : ones)
    one = 1.0f;
  blockParams(WEFT_RT_LOCAL_SLICE, 1, params);
  if (weft_rt_status status = weft_rt_collective(ctx, params, ones, mine))
    return status;
  int64_t width = 0;
  for (float one : mine)
    width += one == 1.0f;

  weft_rt_op_begin(ctx, 1);
  for (int64_t i = 0; i < kRows * width; ++i)
    block[i] *= w0;
  weft_rt_op_end(ctx, 1);

  weft_rt_op_begin(ctx, 2);
  blockParams(WEFT_RT_ALL_GATHER, kRows, params);
  if (weft_rt_status status = weft_rt_collective(ctx, params, block, y))
    return status;
  weft_rt_op_end(ctx, 2);

  weft_rt_op_begin(ctx, 3);
  for (int64_t r = 0; r < kRows; ++r) {
    partial[r] = 0.0f;
    for (int64_t c = 0; c < width; ++c)
      partial[r] += block[r * width + c];
  }
  int64_t *at = params;
  *at++ = WEFT_RT_ALL_REDUCE_SUM;
  *at++ = WEFT_RT_F32;
  *at++ = kNumAxes;
  for (int64_t a : kAxes)
    *at++ = a;
  *at++ = kRows;
  if (weft_rt_status status = weft_rt_collective(ctx, params, partial, total))
    return status;
  weft_rt_op_end(ctx, 3);
  // Scribble over the input, as a planned arena may: every run must start
  // from the files' values again.
  for (int64_t i = 0; i < kRows * kCols; ++i)
    x[i] = 1000.0f;
  return WEFT_RT_OK;
}

extern "C" const weft_rt_program weft_program = {kSignature, run};
