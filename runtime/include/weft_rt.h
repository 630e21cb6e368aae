/*===- weft_rt.h - The Weft runtime's C ABI ----------------------*- C -*-===*\
|*                                                                          *|
|* Everything generated code and embedding programs call: contexts and      *|
|* errors, programs and models, and the CPU kernels. Links no MLIR.         *|
|* docs/Runtime.md explains the design; this header is the contract.     *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/

#ifndef WEFT_RT_H
#define WEFT_RT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Bumped whenever a declaration below changes meaning. A program records the
/// version it was compiled against in its signature ("weft-program 1").
#define WEFT_RT_ABI_VERSION 1

/*===----------------------------------------------------------------------===*\
|* Statuses and contexts                                                    *|
\*===----------------------------------------------------------------------===*/

/// Every call returns a status; 0 is success. The message of the last failure
/// is kept in the context (weft_rt_context_error).
typedef int32_t weft_rt_status;
enum {
  WEFT_RT_OK = 0,
  /// A caller's input is wrong: a shape, a dtype, an index out of range, a
  /// malformed file.
  WEFT_RT_INVALID_ARGUMENT = 1,
  /// A file could not be opened, read, mapped or written.
  WEFT_RT_IO_ERROR = 2,
  WEFT_RT_OUT_OF_MEMORY = 3,
  /// A valid request this build cannot serve (a dtype a kernel lacks).
  WEFT_RT_UNSUPPORTED = 4,
  /// A bug in Weft or in a library under it.
  WEFT_RT_INTERNAL = 5,
};

/// Element types, numbered as ONNX's TensorProto.DataType.
typedef int32_t weft_rt_dtype;
enum {
  WEFT_RT_F32 = 1,
  WEFT_RT_U8 = 2,
  WEFT_RT_I8 = 3,
  WEFT_RT_I32 = 6,
  WEFT_RT_I64 = 7,
  WEFT_RT_BOOL = 9, /* one byte, 0 or 1 */
  WEFT_RT_F16 = 10,
  WEFT_RT_F64 = 11,
  WEFT_RT_BF16 = 16,
};

/// Bytes per element of `dtype`, 0 for an unknown code.
size_t weft_rt_dtype_size(weft_rt_dtype dtype);
/// "f32", "i64", ...; "?" for an unknown code. Static storage.
const char *weft_rt_dtype_name(weft_rt_dtype dtype);

/// Holds the error message, the thread count and the profile of one device
/// program. Opaque; not shared between threads running at the same time.
typedef struct weft_rt_context weft_rt_context;

/// Creates a context with the thread count of WEFT_NUM_THREADS, else all
/// cores available to the process. The caller owns *out_ctx.
weft_rt_status weft_rt_context_create(weft_rt_context **out_ctx);
/// Destroys a context (NULL is allowed).
void weft_rt_context_destroy(weft_rt_context *ctx);
/// Sets the threads every kernel uses (OpenMP, OpenBLAS, oneDNN); n >= 1.
weft_rt_status weft_rt_context_set_num_threads(weft_rt_context *ctx,
                                               int32_t n);
int32_t weft_rt_context_num_threads(const weft_rt_context *ctx);
/// The message of the last failure ("" if none). Owned by the context, valid
/// until its next failing call.
const char *weft_rt_context_error(const weft_rt_context *ctx);
/// Records a failure (printf-style message) and returns `status`, so that a
/// kernel can `return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT, ...)`.
weft_rt_status weft_rt_fail(weft_rt_context *ctx, weft_rt_status status,
                            const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/*===----------------------------------------------------------------------===*\
|* Programs: what weftc generates for one device                            *|
\*===----------------------------------------------------------------------===*/

/// MLIR's descriptor of a 1-D byte buffer (memref<?xi8>), as generated code
/// receives the arena and the weights.
typedef struct weft_rt_byte_buffer {
  int8_t *allocated;
  int8_t *aligned;
  int64_t offset;
  int64_t sizes[1];
  int64_t strides[1];
} weft_rt_byte_buffer;

/// One device's compiled program. Generated object files define
/// `const weft_rt_program weft_program`.
///
/// `signature` is text, one record per line, fields separated by one space;
/// names are escaped as %XX for bytes <= 0x20, '%' and >= 0x7f:
///   weft-program 1                       (ABI version)
///   arena <bytes>                        (planned peak, 64-byte aligned)
///   weights <bytes>                      (size of weights/dev<k>.bin)
///   input <name> <dtype> <rank> <d0> ... <arena offset>
///                                        (dtype: a weft_rt_dtype code)
///   output <name> <dtype> <rank> <d0> ... <arena offset>
///   op <id> <kind> <name>                (for --profile; id from 0)
/// Inputs and outputs are dense row-major tensors inside the arena.
///
/// `run` executes the program once. It reads the inputs from and writes the
/// outputs into `arena` (`arena` bytes, 64-byte aligned), reads `weights`,
/// allocates nothing and returns a status (with the message in ctx).
typedef struct weft_rt_program {
  const char *signature;
  int32_t (*run)(weft_rt_context *ctx, weft_rt_byte_buffer *arena,
                 weft_rt_byte_buffer *weights);
} weft_rt_program;

/// Called by generated code around each op when the context profiles (see
/// weft_rt_model_enable_profile); cheap no-ops otherwise.
void weft_rt_op_begin(weft_rt_context *ctx, int64_t op_id);
void weft_rt_op_end(weft_rt_context *ctx, int64_t op_id);

/*===----------------------------------------------------------------------===*\
|* Models: a program with its arena and weights, for embedding programs     *|
\*===----------------------------------------------------------------------===*/

typedef struct weft_rt_model weft_rt_model;

/// A tensor's description; `name` and `dims` are owned by the model.
typedef struct weft_rt_tensor_info {
  const char *name;
  weft_rt_dtype dtype;
  int32_t rank;
  const int64_t *dims;
  size_t bytes;
} weft_rt_tensor_info;

/// Parses `program`'s signature, maps `weights_path` read-only (its size
/// must match) and allocates the arena. Failures are described in ctx, which
/// must outlive the model. The caller owns *out_model.
weft_rt_status weft_rt_model_create(weft_rt_context *ctx,
                                    const weft_rt_program *program,
                                    const char *weights_path,
                                    weft_rt_model **out_model);
void weft_rt_model_destroy(weft_rt_model *model);
int32_t weft_rt_model_num_inputs(const weft_rt_model *model);
int32_t weft_rt_model_num_outputs(const weft_rt_model *model);
/// Describes input/output `index`; fails on an index out of range.
weft_rt_status weft_rt_model_input_info(const weft_rt_model *model,
                                        int32_t index,
                                        weft_rt_tensor_info *out_info);
weft_rt_status weft_rt_model_output_info(const weft_rt_model *model,
                                         int32_t index,
                                         weft_rt_tensor_info *out_info);
/// Where input `index` lives: write it there (no copy is made). NULL on an
/// index out of range. Owned by the model.
void *weft_rt_model_input_data(weft_rt_model *model, int32_t index);
/// Where output `index` is after a run. Owned by the model.
const void *weft_rt_model_output_data(const weft_rt_model *model,
                                      int32_t index);
/// Runs the program once.
weft_rt_status weft_rt_model_run(weft_rt_model *model);
/// Records per-op times of later runs; weft_rt_model_write_profile writes
/// them as a Chrome trace (chrome://tracing, Perfetto).
void weft_rt_model_enable_profile(weft_rt_model *model);
weft_rt_status weft_rt_model_write_profile(const weft_rt_model *model,
                                           const char *path);

/// The command-line driver linked into bin/dev<k> (see `dev0 --help`).
/// Returns the process exit code of Weft's command-line contract.
int weft_rt_driver_main(const weft_rt_program *program, int argc,
                        char **argv);

/*===----------------------------------------------------------------------===*\
|* CPU kernels                                                              *|
|*                                                                          *|
|* Called by generated code. Every kernel takes the context, a pointer to   *|
|* an int64_t parameter block laid out as its comment says (floats are the  *|
|* bits of a double), and dense row-major buffers. Kernels check what they  *|
|* are given and fail with a status rather than crash.                      *|
\*===----------------------------------------------------------------------===*/

/// out[b] = alpha * op(a[b]) x op(b[b]) + beta * bias, batched, numpy-style.
/// params: dtype, M, N, K, trans_a, trans_b, alpha, beta,
///         bias_row_stride, bias_col_stride, R,
///         out_batch_dims[R], a_batch_strides[R], b_batch_strides[R]
/// op(a) is MxK (a stored KxM when trans_a), op(b) KxN. Batch strides are in
/// elements, 0 where an operand broadcasts. bias (may be NULL) element (i, j)
/// is bias[i * bias_row_stride + j * bias_col_stride] for every batch.
/// dtypes: f32, f64, i32, i64.
weft_rt_status weft_rt_cpu_matmul(weft_rt_context *ctx, const int64_t *params,
                                  const void *a, const void *b,
                                  const void *bias, void *out);

/// ONNX Conv, NC[D]HW, S spatial dimensions (1..3).
/// params: dtype, S, N, C, OC, group, in[S], kernel[S], strides[S],
///         dilations[S], pads_begin[S], pads_end[S], out[S]
/// weight is OC x C/group x kernel...; bias (may be NULL) has OC elements.
/// dtypes: f32.
weft_rt_status weft_rt_cpu_conv(weft_rt_context *ctx, const int64_t *params,
                                const void *input, const void *weight,
                                const void *bias, void *out);

/// ONNX MaxPool / AveragePool, NC[D]HW. kind: 0 max, 1 average.
/// params: dtype, kind, count_include_pad, S, N, C, in[S], kernel[S],
///         strides[S], dilations[S], pads_begin[S], pads_end[S], out[S]
/// Windows that run past the padded input (ceil_mode) are clipped; average
/// divides by the window's size within the padded input when
/// count_include_pad, else by its size within the input.
/// dtypes: f32, f64 (max also i8, u8).
weft_rt_status weft_rt_cpu_pool(weft_rt_context *ctx, const int64_t *params,
                                const void *input, void *out);

/// BatchNormalization at inference over x viewed as N x C x inner.
/// params: dtype, N, C, inner, epsilon
/// dtypes: f32, f64.
weft_rt_status weft_rt_cpu_batch_norm(weft_rt_context *ctx,
                                      const int64_t *params, const void *x,
                                      const void *scale, const void *bias,
                                      const void *mean, const void *var,
                                      void *out);

/// Layer (kind 0) or instance (kind 1) normalization of x viewed as
/// outer x size: each row is normalized by its own mean and variance.
/// params: dtype, kind, outer, size, channels, epsilon
/// Layer: scale and bias have `size` elements. Instance: rows are
/// (n, c) pairs, scale and bias have `channels` elements (row r uses
/// element r % channels). bias may be NULL. out_mean and out_inv_std_dev
/// (each may be NULL) receive every row's mean and 1/sqrt(var + epsilon),
/// `outer` values of the dtype (LayerNormalization's optional outputs).
/// dtypes: f32, f64.
weft_rt_status weft_rt_cpu_normalize(weft_rt_context *ctx,
                                     const int64_t *params, const void *x,
                                     const void *scale, const void *bias,
                                     void *out, void *out_mean,
                                     void *out_inv_std_dev);

/// (Log)softmax of x viewed as outer x axis x inner, along axis.
/// params: dtype, outer, axis, inner, log
/// dtypes: f32, f64.
weft_rt_status weft_rt_cpu_softmax(weft_rt_context *ctx, const int64_t *params,
                                   const void *input, void *out);

/// Reduces the dimensions whose mask entry is 1; out is dense over the
/// others. kind as weft.reduce: 0 mean, 1 sum, 2 max, 3 min, 4 prod, 5 l1,
/// 6 l2, 7 log_sum_exp, 8 sum_square, 9 log_sum.
/// params: dtype, kind, rank, dims[rank], mask[rank]
/// dtypes: f32, f64, i32, i64 (max/min also i8, u8).
weft_rt_status weft_rt_cpu_reduce(weft_rt_context *ctx, const int64_t *params,
                                  const void *input, void *out);

/// ArgMax (kind 0) / ArgMin (kind 1) of x viewed as outer x axis x inner;
/// out holds int64 indices, outer x inner.
/// params: dtype, kind, outer, axis, inner, select_last_index
/// dtypes: f32, f64, i8, u8, i32, i64.
weft_rt_status weft_rt_cpu_arg_reduce(weft_rt_context *ctx,
                                      const int64_t *params,
                                      const void *input, void *out);

/// out = permute(input): out dimension i is input dimension perm[i].
/// params: elem_bytes, rank, in_dims[rank], perm[rank]
weft_rt_status weft_rt_cpu_transpose(weft_rt_context *ctx,
                                     const int64_t *params, const void *input,
                                     void *out);

/// ONNX Gather of x viewed as outer x axis x inner with `count` indices of
/// index_dtype (i32 or i64); out is outer x count x inner. Negative indices
/// count from the end; others out of range fail.
/// params: elem_bytes, index_dtype, outer, axis, inner, count
weft_rt_status weft_rt_cpu_gather(weft_rt_context *ctx, const int64_t *params,
                                  const void *input, const void *indices,
                                  void *out);

/// ONNX GatherElements; out has the shape of indices.
/// params: elem_bytes, index_dtype, rank, axis, in_dims[rank],
///         index_dims[rank]
weft_rt_status weft_rt_cpu_gather_elements(weft_rt_context *ctx,
                                           const int64_t *params,
                                           const void *input,
                                           const void *indices, void *out);

/// out[i...] = input[starts + i * steps ...] (steps may be negative).
/// params: elem_bytes, rank, in_dims[rank], out_dims[rank], starts[rank],
///         steps[rank]
weft_rt_status weft_rt_cpu_slice(weft_rt_context *ctx, const int64_t *params,
                                 const void *input, void *out);

/// ONNX Pad. mode: 0 constant, 1 reflect, 2 edge, 3 wrap. pads[i] before
/// and pads[rank + i] after dimension i, negative ones crop. value (may be
/// NULL: zero) is one element.
/// params: elem_bytes, mode, rank, in_dims[rank], pads[2 * rank]
weft_rt_status weft_rt_cpu_pad(weft_rt_context *ctx, const int64_t *params,
                               const void *input, const void *value,
                               void *out);

/// ONNX Tile. params: elem_bytes, rank, in_dims[rank], repeats[rank]
weft_rt_status weft_rt_cpu_tile(weft_rt_context *ctx, const int64_t *params,
                                const void *input, void *out);

/// ONNX Trilu over batch x rows x cols. upper: 1 keeps j - i >= k, 0 keeps
/// j - i <= k; the rest is zero.
/// params: elem_bytes, batch, rows, cols, k, upper
weft_rt_status weft_rt_cpu_trilu(weft_rt_context *ctx, const int64_t *params,
                                 const void *input, void *out);

/// Copies `rows` rows of row_bytes bytes from src + src_offset (rows
/// src_stride bytes apart) to dst + dst_offset (dst_stride apart): the
/// pieces of Concat and Split.
/// params: rows, row_bytes, src_offset, src_stride, dst_offset, dst_stride
weft_rt_status weft_rt_cpu_copy2d(weft_rt_context *ctx, const int64_t *params,
                                  const void *src, void *dst);

/// ONNX Einsum with one or two operands, as explicit index lists over L
/// distinct indices (sizes given); indices absent from the output are
/// summed.
/// params: dtype, L, sizes[L], out_rank, out_idx[out_rank], num_inputs,
///         then per input: rank, idx[rank]
/// dtypes: f32, f64, i32, i64.
weft_rt_status weft_rt_cpu_einsum(weft_rt_context *ctx, const int64_t *params,
                                  const void *in0, const void *in1, void *out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* WEFT_RT_H */
