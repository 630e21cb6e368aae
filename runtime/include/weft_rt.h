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
  /// Communication with the other devices of a mesh failed: an MPI call
  /// returned an error (a peer died, the network broke). The driver exits 4.
  WEFT_RT_COMM_ERROR = 6,
  /// No device the program can run on: no GPU, no or too old a driver, a
  /// GPU older than the program's architectures. The driver exits 3.
  WEFT_RT_DEVICE_UNAVAILABLE = 7,
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
|* Health checks: what the failure detector polls                           *|
\*===----------------------------------------------------------------------===*/

/// A backend's check of its own device and peers (the CUDA backend's polls
/// ncclCommGetAsyncError). The failure detector calls it about once per
/// heartbeat from its own thread: it must not block. It returns 0 while all
/// is well; otherwise it writes a one-line reason (at most `size` bytes with
/// the terminating NUL) into `message` and returns non-zero.
typedef int32_t (*weft_rt_health_check_fn)(void *user, char *message,
                                           size_t size);
/// Called once, from the detector's thread, after a check failed: it makes
/// the program's blocked waits return with an error (ncclCommAbort).
typedef void (*weft_rt_health_abort_fn)(void *user);

/// Registers a check with the context's failure detector; `abort` may be
/// NULL. Checks run until weft_rt_context_remove_health_checks(ctx, user)
/// or the context's destruction.
weft_rt_status weft_rt_context_add_health_check(weft_rt_context *ctx,
                                                weft_rt_health_check_fn check,
                                                weft_rt_health_abort_fn abort,
                                                void *user);
/// Removes every check registered with `user`; it is not called after this
/// returns.
void weft_rt_context_remove_health_checks(weft_rt_context *ctx, void *user);

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
///   mesh <d0> <d1> ...                   (optional: the program is one device
///                                        of a mesh of that shape, all dims
///                                        >= 1; absent = a single device)
///   pipeline <world size> <r0> <r1> ...  (optional: the mesh is one stage of
///                                        a job of <world size> processes;
///                                        r_p is the world rank of row-major
///                                        mesh position p, one per device,
///                                        distinct, < world size; absent =
///                                        the mesh is ranks 0 .. n-1)
///   microbatches <M>                     (optional: the inputs and outputs
///                                        below are one of M blocks of the
///                                        batch, dimension 0; the driver
///                                        runs the program M times a batch)
///   collector <world rank>               (optional: the rank whose outputs
///                                        are the model's, < world size;
///                                        absent = rank 0)
///   broadcast-group <r0> <r1> ...        (optional, repeated: the k-th
///                                        record is broadcast group k, the
///                                        world ranks of a set of at least
///                                        two, increasing, < world size;
///                                        every program of a job lists the
///                                        same groups; the driver creates
///                                        them once at start-up, see
///                                        weft_rt_comm_create_broadcast_groups)
///   target cuda <sm_XX> ...              (optional: a GPU program built for
///                                        these architectures, run by the
///                                        CUDA backend; absent = cpu)
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

/// Called by generated code around each op. weft_rt_op_begin records which
/// op runs (the failure detector reports it); both record times when the
/// context profiles (see weft_rt_model_enable_profile).
void weft_rt_op_begin(weft_rt_context *ctx, int64_t op_id);
void weft_rt_op_end(weft_rt_context *ctx, int64_t op_id);

/// The body of a generated loop nest (weft-parallelize-loops): runs items
/// [begin, end). The arena and the weights come as MLIR passes a
/// memref<?xi8> to a function: allocated and aligned pointers, offset, size
/// and stride.
typedef void (*weft_rt_loop_body)(weft_rt_context *ctx, int8_t *arena_allocated,
                                  int8_t *arena_aligned, int64_t arena_offset,
                                  int64_t arena_size, int64_t arena_stride,
                                  int8_t *weights_allocated,
                                  int8_t *weights_aligned,
                                  int64_t weights_offset, int64_t weights_size,
                                  int64_t weights_stride, int64_t begin,
                                  int64_t end);

/// Called by generated code for a loop nest of `count` items of about
/// `work_per_item` operations each: runs `body` over [0, count), split into
/// one contiguous range per thread of the runtime's OpenMP team (the
/// context's thread count at most, fewer when the work is small; one inside
/// another parallel region). The items are independent, so the result does
/// not depend on the split.
void weft_rt_parallel_for(weft_rt_context *ctx, int64_t count,
                          int64_t work_per_item, weft_rt_loop_body body,
                          int8_t *arena_allocated, int8_t *arena_aligned,
                          int64_t arena_offset, int64_t arena_size,
                          int64_t arena_stride, int8_t *weights_allocated,
                          int8_t *weights_aligned, int64_t weights_offset,
                          int64_t weights_size, int64_t weights_stride);

/// The widest vectors, in bits, that this CPU runs: 512 where it has
/// AVX-512 F, BW, CD, DQ and VL (what x86-64-v4 code needs), 256 with AVX2
/// and FMA, else 128. Checked once. A program compiled for x86-64-v3 asks
/// before each generated loop body it runs, which it has in both forms
/// (weftc's AVX-512 loop variants).
int32_t weft_rt_cpu_vector_bits(void);

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
/// must outlive the model. The caller owns *out_model. A program whose
/// signature has a `peers` record gets its peer table (in the weights)
/// installed in ctx, where SEND and RECV find the peers they name by slot,
/// until the model is destroyed.
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
|* Meshes and collectives                                                   *|
|*                                                                          *|
|* A multi-device program runs as one MPI process (rank) per device of a    *|
|* logical mesh; rank r is the device at row-major mesh position r. A       *|
|* pipeline holds several meshes (its stages) in one MPI world: each rank   *|
|* belongs to one mesh, at a position given by the list of the mesh's world *|
|* ranks, and sends to and receives from any rank of the world. The         *|
|* program's collectives and transfers go through the communicator attached *|
|* to its context. See docs/Runtime.md ("Meshes", "Pipelines") and          *|
|* docs/Launching.md.                                                       *|
\*===----------------------------------------------------------------------===*/

/// Communicator of one device (rank) of a logical device mesh, in a world
/// of one or several meshes. Opaque.
typedef struct weft_rt_comm weft_rt_comm;

/// Creates the MPI communicators of a mesh of shape mesh_dims[mesh_rank]
/// (1 to 8 axes, each >= 1) for this process: MPI_COMM_WORLD's size must
/// equal the mesh size, and rank r is row-major mesh position r. One
/// sub-communicator per non-empty subset of mesh axes is created here, once
/// (MPI_Comm_split); every rank must call this with the same shape (checked
/// collectively, so a mismatch fails on every rank instead of hanging).
/// Initializes MPI if needed (MPI_THREAD_FUNNELED; then MPI_COMM_WORLD
/// reports errors instead of aborting); if this call initialized MPI and
/// fails, it also finalizes it. Failures are described in ctx. The caller
/// owns *out_comm. Create and destroy communicators from one thread.
weft_rt_status weft_rt_comm_create_mpi(weft_rt_context *ctx, int32_t mesh_rank,
                                       const int64_t *mesh_dims,
                                       weft_rt_comm **out_comm);
/// Creates the communicators of one mesh (a pipeline stage) of several in
/// one MPI world: this process belongs to the mesh of shape
/// mesh_dims[mesh_rank] (1 to 8 axes, each >= 1) whose row-major position p
/// is world rank mesh_world_ranks[p] (prod(mesh_dims) distinct ranks, each
/// below world_size). world_size must equal MPI_COMM_WORLD's size, and this
/// process's world rank must be in the list: its mesh position is its index
/// there. Every rank of the world calls this once, each with its own mesh
/// (collective over the world). The ranks first share what each passed, so
/// that a mismatch fails on every rank, naming the ranks, instead of
/// hanging: two ranks that disagree on a mesh they share a member of (a
/// world rank claimed by two meshes), a world_size that differs from the
/// world's, a rank missing from its own mesh's list, bad arguments on any
/// rank. Then each mesh's communicator is split from the world
/// (MPI_Comm_split; color: the mesh's lowest world rank, key: the mesh
/// position). Collectives run over the mesh, point-to-point transfers
/// (WEFT_RT_SEND, WEFT_RT_RECV) over the world. weft_rt_comm_create_mpi is
/// the case of one mesh with mesh_world_ranks = 0 .. n-1. MPI, threads and
/// failures as weft_rt_comm_create_mpi; the caller owns *out_comm.
weft_rt_status weft_rt_comm_create_mpi_pipeline(weft_rt_context *ctx,
                                                int32_t mesh_rank,
                                                const int64_t *mesh_dims,
                                                const int32_t *mesh_world_ranks,
                                                int32_t world_size,
                                                weft_rt_comm **out_comm);
/// Creates the sub-communicators that BROADCAST calls run over (see
/// weft_rt_collective): group k is the world ranks
/// group_ranks[offset_k .. offset_k + group_sizes[k]) with offset_k the sum
/// of the sizes before it; each group has at least two ranks, increasing,
/// below the world's size, and a group's communicator ranks its members in
/// that order. At most 1024 groups, created once per communicator.
/// Collective over the world: every rank calls it with the same list (the
/// ranks compare what each passed first, so that a mismatch or a bad
/// argument fails on every rank, naming a rank, instead of hanging); then
/// each group's members create its communicator (MPI_Comm_create_group,
/// groups in order, so that creations of overlapping groups cannot wait on
/// each other), and non-members skip it. A program whose signature lists
/// broadcast groups needs them: the driver calls this after creating the
/// communicator. The CUDA backend splits its NCCL communicators of the
/// same groups from these lists. Failures are described in ctx.
weft_rt_status weft_rt_comm_create_broadcast_groups(
    weft_rt_context *ctx, weft_rt_comm *comm, int32_t num_groups,
    const int32_t *group_sizes, const int32_t *group_ranks);
/// Cancels the receives still posted into RECV staging buffers, frees the
/// communicators (NULL is allowed); finalizes MPI when this is the last
/// communicator alive and weft_rt_comm_create_mpi(_pipeline) initialized
/// MPI.
void weft_rt_comm_destroy(weft_rt_comm *comm);
/// The world rank (for weft_rt_comm_create_mpi also the row-major mesh
/// position).
int32_t weft_rt_comm_rank(const weft_rt_comm *comm);
/// The number of processes in the world (MPI_COMM_WORLD's size): the
/// devices of every mesh.
int32_t weft_rt_comm_size(const weft_rt_comm *comm);
/// This device's row-major position in its mesh, and the mesh's number of
/// devices (0 for NULL).
int32_t weft_rt_comm_mesh_position(const weft_rt_comm *comm);
int32_t weft_rt_comm_mesh_size(const weft_rt_comm *comm);
/// Attaches (or detaches with NULL) the communicator the program's
/// collectives use; not owned: it must outlive its use by ctx. Detach it
/// before weft_rt_comm_destroy: while a staged receive is pending, every
/// weft_rt_op_begin of ctx tests it through the attached communicator.
/// weft_rt_model_run refuses to run a program compiled for a mesh of more
/// than one device without a communicator of the same mesh shape, and a
/// program of a pipeline without one of the same world and world ranks.
void weft_rt_context_set_comm(weft_rt_context *ctx, weft_rt_comm *comm);

/// Kinds of weft_rt_collective.
enum {
  WEFT_RT_ALL_REDUCE_SUM = 0,
  WEFT_RT_ALL_GATHER = 1,
  WEFT_RT_REDUCE_SCATTER_SUM = 2,
  WEFT_RT_ALL_TO_ALL = 3,
  WEFT_RT_LOCAL_SLICE = 4,
  WEFT_RT_SEND = 5,
  WEFT_RT_RECV = 6,
  WEFT_RT_BROADCAST = 7,
};

/// A collective over the group of devices that share every mesh coordinate
/// except those on `axes`.
/// params: kind, dtype, A, axes[A] (distinct mesh axes, major to minor: the
///   group rank g of a member is the mixed-radix number of its coordinates
///   on axes[0..A-1], axes[0] most significant), then by kind:
///   ALL_REDUCE_SUM:     count                     in, out: count elements
///                                                 (in == out allowed)
///   ALL_GATHER:         outer, inner, P, sizes[P]
///                       in [outer, sizes[g], inner]
///                   -> out [outer, sum(sizes), inner]
///   REDUCE_SCATTER_SUM: outer, inner, P, sizes[P]
///                       in [outer, sum(sizes), inner]
///                   -> out [outer, sizes[g], inner] (the sum's block g)
///   LOCAL_SLICE:        outer, inner, P, sizes[P] the shapes of
///                       REDUCE_SCATTER_SUM without communication: out =
///                       member g's block of in (offset sum(sizes[0..g)))
///   ALL_TO_ALL:         outer, mid, inner, gather_first, P, split_sizes[P],
///                       gather_sizes[P]; with S = sum(split_sizes) and
///                       G = sum(gather_sizes):
///     gather_first=0: in [outer, S, mid, gather_sizes[g], inner]
///                 -> out [outer, split_sizes[g], mid, G, inner]
///     gather_first=1: in [outer, gather_sizes[g], mid, S, inner]
///                 -> out [outer, G, mid, split_sizes[g], inner]
///     (the dim that was split becomes gathered and vice versa).
///   SEND:               peer, tag, count          in: count elements to
///                                                 world rank peer; out is
///                                                 ignored
///   RECV:               peer, tag, count          out: exactly count
///                                                 elements from world rank
///                                                 peer; in: NULL, out, or
///                                                 a staging buffer
///   SEND and RECV are point-to-point transfers between any two ranks of
///   the world (of different meshes, in a pipeline) and take no mesh axes
///   (A must be 0). peer is a world rank other than this one, 0 <= tag <
///   2^20 (and within the MPI's MPI_TAG_UB, else WEFT_RT_UNSUPPORTED),
///   count >= 0. A RECV pairs with the SEND of the same peer and tag (MPI
///   keeps the order of transfers of one pair and tag); a count of 0 still
///   pairs. A RECV whose sender sent another count fails, naming the peer,
///   the tag and both sizes in bytes. Counts of more than 2^30 bytes go in
///   pieces of 2^30 bytes, on both sides alike. The wait sleeps rather than
///   spins (a stage waiting for its input holds no core). They need a
///   communicator (there is no peer without one).
///   A RECV's staging buffer (in, count elements apart from out) double
///   buffers the transfer: when the RECV ends, the receive of the pair's
///   next message is posted into it, and ops test it as they begin, so that
///   the next run's message arrives while that run computes; the next RECV
///   with this buffer takes it from there. The buffer belongs to one pair
///   and tag, and must neither be written nor freed until
///   weft_rt_comm_destroy (which cancels what is still posted). A NULL in,
///   or in == out, receives directly. The NCCL backend ignores in.
///   BROADCAST:          group, tag, rows, row_elements, chunks, N,
///                       ranks[N]
///                       the buffer of rows x row_elements elements goes
///                       from world rank ranks[0] (the root; in: what it
///                       sends, out is ignored) to ranks[1 .. N-1] (out:
///                       where each receives it; in is ignored) as a
///                       pipelined chain in that order: the buffer is cut
///                       into `chunks` chunks of whole rows (the first
///                       rows % chunks chunks one row longer), rank
///                       ranks[i] receives each chunk from ranks[i-1] and
///                       forwards it to ranks[i+1] as soon as it has it,
///                       so that it receives chunk c + 1 while it sends
///                       chunk c (MPI_Isend and MPI_Irecv; a chunk of more
///                       than 2^30 bytes goes in pieces). Every rank of
///                       the chain calls it with the same block; the call
///                       returns on each rank once its own part is done
///                       (the root: its sends; a relay: its receives and
///                       forwards; the last: its receives). group >= 0
///                       runs it over broadcast group `group`
///                       (weft_rt_comm_create_broadcast_groups), whose
///                       ranks must be exactly those of the chain; -1 runs
///                       the same chain over the world, tagged with tag
///                       (0 <= tag < 2^20, within MPI_TAG_UB), as a job
///                       beyond its cap of groups does. 2 <= N <= world
///                       size, distinct world ranks, this rank among them;
///                       1 <= chunks <= max(rows, 1); A must be 0. A
///                       receiver whose sender's chunk has another size
///                       fails, naming both sizes. The NCCL backend runs
///                       ncclBroadcast over the group's NCCL communicator
///                       (NCCL's ring and chunks), and the chain, one
///                       ncclGroupStart/End per step, over the world's.
/// Sizes may be uneven and may be 0. P must equal the group size; A=0 is a
/// group of one (a copy or a plain slice). With no communicator attached
/// only groups of one device work (every axis counts as size 1; P > 1
/// fails). Apart from ALL_REDUCE_SUM's in == out, in and out must not
/// overlap. Except for ALL_REDUCE_SUM, SEND and RECV, in and out hold at
/// most 2^31-1 elements each (MPI's int counts; larger ones fail with
/// WEFT_RT_UNSUPPORTED). Parameters are checked before any communication;
/// the members of a group must pass the same block.
/// dtypes: f32, f16, bf16, f64, i32, i64, i8, u8, bool. Sums of f16 and bf16
/// use a user-defined MPI operation that adds each pair in f32 and rounds
/// back (one rounding per step of MPI's reduction tree); integers wrap; a
/// "sum" of bools is their logical or. The first call of a shape may grow
/// scratch buffers kept in the communicator; later calls allocate nothing.
weft_rt_status weft_rt_collective(weft_rt_context *ctx, const int64_t *params,
                                  const void *in, void *out);

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

/// ONNX Conv, S spatial dimensions (1..3), NC[D]HW or channels-last, with
/// an optional fused clamp (Relu, Relu6, Clip).
/// params: dtype, S, N, C, OC, group, in[S], kernel[S], strides[S],
///         dilations[S], pads_begin[S], pads_end[S], out[S],
///         activation, low, high, layout
/// bias (may be NULL) has OC elements.
/// activation 0: none (low and high are ignored; write 0); 1: every output
/// element is clamped to [low, high] after the bias, min(max(y, low), high)
/// with NaN kept. low and high are the bits of doubles, -inf and +inf
/// allowed (Relu: 0, +inf), neither NaN, low <= high; they are rounded to
/// the output's type. The three words are always present.
/// layout: a bit set, always present (0: every buffer as ONNX lays it out).
///   1: the input is channels-last, N x in[0] x ... x in[S-1] x C, instead
///      of N x C x in...;
///   2: the output (and conv_add's addend) is channels-last,
///      N x out[0] x ... x out[S-1] x OC, instead of N x OC x out...;
///   4: the weight is kernel-first, kernel[0] x ... x kernel[S-1] x
///      C/group x OC (TensorFlow's HWIO), instead of OC x C/group x
///      kernel...;
///   8: the input is channel-blocked by 16, N x C/16 x in[0] x ... x
///      in[S-1] x 16 (oneDNN's nCw16c, nChw16c, nCdhw16c): channel c of a
///      position is element c % 16 of its block c / 16;
///  16: the output is channel-blocked by 16, N x OC/16 x out... x 16;
///  32: conv_add's addend is channel-blocked by 16, whatever the output's
///      layout (16 without 32: a blocked output and an N x OC x out...
///      addend; 32 without 16: the other way round);
///  64: the weight of a 2-D 1x1 convolution is packed in panels of 32
///      output channels, OC/32 x C x 32 (output channel o's weight for
///      input channel c at [o / 32, c, o % 32]); only as layout 67 (with 1
///      and 2), with group 1, strides 1, no pads and OC a multiple of 32,
///      else WEFT_RT_INVALID_ARGUMENT.
/// Other bits fail with WEFT_RT_INVALID_ARGUMENT. A layout of bits 1, 2
/// and 4 is taken by 2-D 1x1 convolutions of group 1 with strides 1 and no
/// pads, and by 2-D depthwise ones (group == C == OC, any kernel, stride,
/// dilation and pads), in any combination of the three bits; other shapes
/// fail with WEFT_RT_UNSUPPORTED. Bits 8, 16 and 32 run any shape of group
/// 1 on oneDNN, in any combination; they fail with
/// WEFT_RT_INVALID_ARGUMENT together with any of bits 1, 2 and 4, with a
/// group other than 1, with bit 8 when C is not a multiple of 16, with
/// bit 16 or 32 when OC is not, and with bit 32 on weft_rt_cpu_conv
/// (which has no addend).
/// dtypes: f32.
weft_rt_status weft_rt_cpu_conv(weft_rt_context *ctx, const int64_t *params,
                                const void *input, const void *weight,
                                const void *bias, void *out);

/// weft_rt_cpu_conv with `addend` (N x OC x out..., N x out... x OC when
/// the layout word has 2 set, N x OC/16 x out... x 16 when it has 32 set:
/// the output's shape; not NULL, not overlapping out) added to every output
/// element after the bias and before the clamp: a residual Add fused into
/// the convolution, min(max(conv + bias + addend, low), high).
weft_rt_status weft_rt_cpu_conv_add(weft_rt_context *ctx,
                                    const int64_t *params, const void *input,
                                    const void *weight, const void *bias,
                                    const void *addend, void *out);

/// ONNX MaxPool / AveragePool, NC[D]HW or channel-blocked. kind: 0 max, 1
/// average.
/// params: dtype, kind, count_include_pad, S, N, C, in[S], kernel[S],
///         strides[S], dilations[S], pads_begin[S], pads_end[S], out[S],
///         layout
/// Windows that run past the padded input (ceil_mode) are clipped; average
/// divides by the window's size within the padded input when
/// count_include_pad, else by its size within the input.
/// layout, always present: 0, input and output NC[D]HW; 1, both
/// channel-blocked by 16, N x C/16 x in... x 16 and N x C/16 x out... x 16
/// (C a multiple of 16, else WEFT_RT_INVALID_ARGUMENT; f32 only, else
/// WEFT_RT_UNSUPPORTED). Other values fail with WEFT_RT_INVALID_ARGUMENT.
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
