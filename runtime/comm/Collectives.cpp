//===- Collectives.cpp - weft_rt_collective on MPI ------------------------===//
//
// Checks a collective's parameter block against the mesh, then runs it: a
// copy or slice for a group of one device, else MPI's Allreduce,
// Allgatherv, Reduce_scatter or Alltoallv on the group's communicator (split
// from the mesh's); SEND and RECV are Transfers.cpp's, BROADCAST
// Broadcast.cpp's.
// Blocks that are not contiguous in the caller's layout, or whose group
// order differs from the communicator's, are packed through scratch
// buffers kept in the communicator.
//
//===----------------------------------------------------------------------===//

#include "comm/Broadcast.h"
#include "comm/CollectiveParams.h"
#include "comm/Comm.h"
#include "comm/Transfers.h"
#include "comm/Wait.h"
#include "core/Context.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <initializer_list>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

using namespace weft::rt;

//===----------------------------------------------------------------------===//
// f16 and bf16 sums
//===----------------------------------------------------------------------===//

static float halfToFloat(uint16_t bits) {
  _Float16 value;
  std::memcpy(&value, &bits, sizeof(bits));
  return static_cast<float>(value);
}

static uint16_t floatToHalf(float value) {
  // The conversion rounds to nearest even (F16C or libgcc's soft-fp).
  _Float16 half = static_cast<_Float16>(value);
  uint16_t bits;
  std::memcpy(&bits, &half, sizeof(bits));
  return bits;
}

static float bfloat16ToFloat(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

static uint16_t floatToBfloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) // NaN: keep it a (quiet) NaN.
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u); // Round to nearest even.
  return static_cast<uint16_t>(bits >> 16);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/// Eight halves at a time with F16C: without it, _Float16 conversions are
/// library calls (~40 ns per element instead of ~1).
__attribute__((target("avx,f16c"))) static int
sumHalvesF16c(const uint16_t *a, uint16_t *b, int length) {
  int i = 0;
  for (; i + 8 <= length; i += 8) {
    __m256 x = _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(a + i)));
    __m256 y = _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(b + i)));
    _mm_storeu_si128(
        reinterpret_cast<__m128i *>(b + i),
        _mm256_cvtps_ph(_mm256_add_ps(x, y), _MM_FROUND_TO_NEAREST_INT));
  }
  return i;
}

static bool hasF16c() {
  static const bool has =
      __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
  return has;
}
#endif

void weft::rt::sumHalves(void *in, void *inout, int *length, MPI_Datatype *) {
  const auto *a = static_cast<const uint16_t *>(in);
  auto *b = static_cast<uint16_t *>(inout);
  int i = 0;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (hasF16c())
    i = sumHalvesF16c(a, b, *length);
#endif
  for (; i < *length; ++i)
    b[i] = floatToHalf(halfToFloat(a[i]) + halfToFloat(b[i]));
}

void weft::rt::sumBfloat16s(void *in, void *inout, int *length,
                            MPI_Datatype *) {
  const auto *a = static_cast<const uint16_t *>(in);
  auto *b = static_cast<uint16_t *>(inout);
  for (int i = 0; i < *length; ++i)
    b[i] = floatToBfloat16(bfloat16ToFloat(a[i]) + bfloat16ToFloat(b[i]));
}

//===----------------------------------------------------------------------===//
// Parameter blocks
//===----------------------------------------------------------------------===//

const char *weft::rt::collectiveKindName(int64_t kind) {
  switch (kind) {
  case WEFT_RT_ALL_REDUCE_SUM:
    return "all_reduce_sum";
  case WEFT_RT_ALL_GATHER:
    return "all_gather";
  case WEFT_RT_REDUCE_SCATTER_SUM:
    return "reduce_scatter_sum";
  case WEFT_RT_ALL_TO_ALL:
    return "all_to_all";
  case WEFT_RT_LOCAL_SLICE:
    return "local_slice";
  case WEFT_RT_SEND:
    return "send";
  case WEFT_RT_RECV:
    return "recv";
  case WEFT_RT_BROADCAST:
    return "broadcast";
  default:
    return "?";
  }
}

/// a * b * c ... into `out`; false on overflow.
static bool multiply(std::initializer_list<int64_t> factors, int64_t &out) {
  int64_t product = 1;
  for (int64_t f : factors)
    if (__builtin_mul_overflow(product, f, &product))
      return false;
  out = product;
  return true;
}

/// Reads `count` sizes at `at`, checks each >= 0 and sums them.
static bool readSizes(const int64_t *at, int64_t count, int64_t &sum) {
  sum = 0;
  for (int64_t i = 0; i < count; ++i)
    if (at[i] < 0 || __builtin_add_overflow(sum, at[i], &sum))
      return false;
  return true;
}

/// A SEND or RECV block whose peer and tag are both -1 - s names slot s of
/// the program's peer table (weftc's movePeersToTable): the pair is read
/// from there, and checked like one written in the block.
static weft_rt_status resolvePeerSlot(weft_rt_context *ctx,
                                      const CollectiveNames &names,
                                      Collective &c) {
  const char *fn = names.function;
  const char *name = collectiveKindName(c.kind);
  int64_t slot = -1 - c.peer;
  if (c.tag != c.peer)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s %s: peer %lld names peer table slot %lld, but "
                        "tag %lld does not (both are -1 - slot)",
                        fn, name, static_cast<long long>(c.peer),
                        static_cast<long long>(slot),
                        static_cast<long long>(c.tag));
  if (slot >= ctx->peerSlots)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s %s: peer table slot %lld, but the program's "
                        "table has %lld slots",
                        fn, name, static_cast<long long>(slot),
                        static_cast<long long>(ctx->peerSlots));
  c.peer = ctx->peerTable[2 * slot];
  c.tag = ctx->peerTable[2 * slot + 1];
  return WEFT_RT_OK;
}

/// The rest of a SEND or RECV block (kind and dtype are read): no axes,
/// then peer, tag, count (or a peer table slot, resolvePeerSlot).
/// Everything is checked before any communication, so that a bad block
/// fails here rather than leave the peer waiting.
static weft_rt_status parseTransfer(weft_rt_context *ctx, const int64_t *params,
                                    const CollectiveMesh &mesh,
                                    const CollectiveNames &names,
                                    Collective &c) {
  const char *fn = names.function;
  const char *name = collectiveKindName(c.kind);
  if (params[2] != 0)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s %s: A is %lld, but a transfer takes no mesh axes "
                        "(A must be 0)",
                        fn, name, static_cast<long long>(params[2]));
  c.peer = params[3];
  c.tag = params[4];
  c.count = params[5];
  if (c.peer < 0)
    if (weft_rt_status status = resolvePeerSlot(ctx, names, c))
      return status;
  if (c.count < 0)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s %s: count %lld is negative", fn, name,
                        static_cast<long long>(c.count));
  int64_t bytes = 0;
  if (!multiply({c.count, static_cast<int64_t>(c.elemBytes)}, bytes))
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s %s: the buffer has more bytes than fit in 64 bits",
                        fn, name);
  if (c.tag < 0 || c.tag >= kTransferTagLimit)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s %s: tag %lld is not from 0 to %lld", fn, name,
                        static_cast<long long>(c.tag),
                        static_cast<long long>(kTransferTagLimit - 1));
  if (mesh.worldSize <= 0)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT, "%s %s: %s", fn, name,
                        names.noCommTransfer);
  if (c.peer == mesh.worldRank)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s %s: peer %lld is this rank itself (a transfer "
                        "needs another world rank)",
                        fn, name, static_cast<long long>(c.peer));
  if (c.peer < 0 || c.peer >= mesh.worldSize)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s %s: peer %lld is not a world rank (0 to %d)", fn,
                        name, static_cast<long long>(c.peer),
                        mesh.worldSize - 1);
  if (c.kind == WEFT_RT_SEND)
    c.inElements = c.count;
  else
    c.outElements = c.count;
  return WEFT_RT_OK;
}

weft_rt_status weft::rt::parseCollective(weft_rt_context *ctx,
                                         const int64_t *params,
                                         const CollectiveMesh &mesh,
                                         const CollectiveNames &names,
                                         Collective &c) {
  const char *fn = names.function;
  const bool comm = mesh.dims != nullptr;
  c.kind = params[0];
  if (c.kind < WEFT_RT_ALL_REDUCE_SUM || c.kind > WEFT_RT_BROADCAST)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s: unknown kind %lld (0 to 7)", fn,
                        static_cast<long long>(c.kind));
  const char *name = collectiveKindName(c.kind);
  if (params[1] <= 0 || params[1] > INT32_MAX ||
      weft_rt_dtype_size(static_cast<weft_rt_dtype>(params[1])) == 0)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s %s: unknown dtype %lld", fn, name,
                        static_cast<long long>(params[1]));
  c.dtype = static_cast<weft_rt_dtype>(params[1]);
  c.elemBytes = weft_rt_dtype_size(c.dtype);
  if (isTransfer(c.kind))
    return parseTransfer(ctx, params, mesh, names, c);
  if (c.kind == WEFT_RT_BROADCAST)
    return parseBroadcast(ctx, params, mesh, names, c);
  c.numAxes = params[2];
  int64_t meshAxes = comm ? static_cast<int64_t>(mesh.numAxes)
                          : static_cast<int64_t>(kMaxMeshAxes);
  if (c.numAxes < 0 || c.numAxes > meshAxes)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s %s: %lld axes, but the mesh has %lld", fn, name,
                        static_cast<long long>(c.numAxes),
                        static_cast<long long>(meshAxes));
  for (int64_t i = 0; i < c.numAxes; ++i) {
    int64_t axis = params[3 + i];
    if (axis < 0 || axis >= meshAxes)
      return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                          "%s %s: axis %lld is not a mesh axis (0 to %lld)", fn,
                          name, static_cast<long long>(axis),
                          static_cast<long long>(meshAxes - 1));
    if (c.mask & (size_t(1) << axis))
      return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                          "%s %s: axis %lld is given twice", fn, name,
                          static_cast<long long>(axis));
    c.mask |= size_t(1) << axis;
    c.axes[i] = axis;
    // Without a communicator the world is one device: every axis has size 1.
    if (comm) {
      c.groupSize *= mesh.dims[axis];
      c.groupRank = c.groupRank * mesh.dims[axis] + mesh.coords[axis];
    }
  }

  const int64_t *rest = params + 3 + c.numAxes;
  if (c.kind == WEFT_RT_ALL_REDUCE_SUM) {
    c.count = rest[0];
    if (c.count < 0)
      return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                          "%s %s: count %lld is negative", fn, name,
                          static_cast<long long>(c.count));
    c.inElements = c.outElements = c.count;
    return WEFT_RT_OK;
  }

  int64_t p = 0;
  if (c.kind == WEFT_RT_ALL_TO_ALL) {
    c.outer = rest[0];
    c.mid = rest[1];
    c.inner = rest[2];
    c.gatherFirst = rest[3];
    p = rest[4];
    rest += 5;
    if (c.gatherFirst != 0 && c.gatherFirst != 1)
      return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                          "%s %s: gather_first is %lld, not 0 or 1", fn, name,
                          static_cast<long long>(c.gatherFirst));
  } else {
    c.outer = rest[0];
    c.inner = rest[1];
    p = rest[2];
    rest += 3;
  }
  if (c.outer < 0 || c.mid < 0 || c.inner < 0)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s %s: outer %lld, mid %lld and inner %lld must be "
                        ">= 0",
                        fn, name, static_cast<long long>(c.outer),
                        static_cast<long long>(c.mid),
                        static_cast<long long>(c.inner));
  // Checked before the sizes are read: P says how many follow.
  if (p != c.groupSize)
    return weft_rt_fail(
        ctx, WEFT_RT_INVALID_ARGUMENT,
        "%s %s: P is %lld, but the group over %lld mesh axes "
        "has %lld devices%s",
        fn, name, static_cast<long long>(p), static_cast<long long>(c.numAxes),
        static_cast<long long>(c.groupSize), comm ? "" : names.noCommHint);
  c.sizes = rest;
  if (!readSizes(c.sizes, p, c.sizesSum))
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s %s: the sizes must be >= 0 and sum to at most "
                        "2^63-1",
                        fn, name);
  int64_t mySize = c.sizes[c.groupRank];
  bool fits = true;
  if (c.kind == WEFT_RT_ALL_TO_ALL) {
    c.gatherSizes = rest + p;
    if (!readSizes(c.gatherSizes, p, c.gatherSum))
      return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                          "%s %s: the gather sizes must be >= 0 and sum to at "
                          "most 2^63-1",
                          fn, name);
    int64_t myGather = c.gatherSizes[c.groupRank];
    fits =
        multiply({c.outer, c.sizesSum, c.mid, myGather, c.inner},
                 c.inElements) &&
        multiply({c.outer, mySize, c.mid, c.gatherSum, c.inner}, c.outElements);
  } else if (c.kind == WEFT_RT_ALL_GATHER) {
    fits = multiply({c.outer, mySize, c.inner}, c.inElements) &&
           multiply({c.outer, c.sizesSum, c.inner}, c.outElements);
  } else {
    fits = multiply({c.outer, c.sizesSum, c.inner}, c.inElements) &&
           multiply({c.outer, mySize, c.inner}, c.outElements);
  }
  int64_t bytes = 0;
  if (!fits || !multiply({std::max(c.inElements, c.outElements),
                          static_cast<int64_t>(c.elemBytes)},
                         bytes))
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s %s: the buffers have more bytes than fit in 64 "
                        "bits",
                        fn, name);
  return WEFT_RT_OK;
}

weft_rt_status weft::rt::checkCollectiveBuffers(weft_rt_context *ctx,
                                                const CollectiveNames &names,
                                                const Collective &c,
                                                const void *in, void *out) {
  const char *fn = names.function;
  const char *name = collectiveKindName(c.kind);
  size_t inBytes = static_cast<size_t>(c.inElements) * c.elemBytes;
  size_t outBytes = static_cast<size_t>(c.outElements) * c.elemBytes;
  if ((inBytes && !in) || (outBytes && !out))
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT, "%s %s: %s is NULL", fn,
                        name, inBytes && !in ? "in" : "out");
  if (!inBytes || !outBytes)
    return WEFT_RT_OK;
  if (c.kind == WEFT_RT_ALL_REDUCE_SUM && in == out)
    return WEFT_RT_OK;
  auto inStart = reinterpret_cast<uintptr_t>(in);
  auto outStart = reinterpret_cast<uintptr_t>(out);
  if (inStart < outStart + outBytes && outStart < inStart + inBytes)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s %s: in (%zu bytes) and out (%zu bytes) overlap", fn,
                        name, inBytes, outBytes);
  return WEFT_RT_OK;
}

int64_t weft::rt::collectiveBlockOffset(const int64_t *sizes, int64_t h) {
  int64_t offset = 0;
  for (int64_t i = 0; i < h; ++i)
    offset += sizes[i];
  return offset;
}

bool weft::rt::collectiveGroupRanks(const int64_t *dims, size_t numAxes,
                                    const Collective &c, int64_t *groupRankOf) {
  bool inOrder = true;
  for (int64_t r = 0; r < c.groupSize; ++r) {
    // Communicator rank r: its coordinates on the group's axes, the last
    // axis fastest.
    int64_t rest = r, coords[kMaxMeshAxes] = {};
    for (size_t a = numAxes; a-- > 0;)
      if (c.mask & (size_t(1) << a)) {
        coords[a] = rest % dims[a];
        rest /= dims[a];
      }
    int64_t g = 0;
    for (int64_t i = 0; i < c.numAxes; ++i)
      g = g * dims[c.axes[i]] + coords[c.axes[i]];
    groupRankOf[r] = g;
    inOrder &= g == r;
  }
  return inOrder;
}

//===----------------------------------------------------------------------===//
// Running collectives
//===----------------------------------------------------------------------===//

/// Copies `rows` rows of `rowElems` elements from src (rows srcStride
/// elements apart) to dst (dstStride apart).
static void copyRows(uint8_t *dst, int64_t dstStride, const uint8_t *src,
                     int64_t srcStride, int64_t rows, int64_t rowElems,
                     size_t elemBytes) {
  size_t rowBytes = static_cast<size_t>(rowElems) * elemBytes;
  if (rowBytes == 0)
    return;
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(dst + static_cast<size_t>(r * dstStride) * elemBytes,
                src + static_cast<size_t>(r * srcStride) * elemBytes, rowBytes);
}

/// A collective of a group of one device, and every LOCAL_SLICE: no
/// communication, only copies.
static void runLocally(const Collective &c, const void *in, void *out) {
  if (c.outElements == 0)
    return;
  auto *dst = static_cast<uint8_t *>(out);
  const auto *src = static_cast<const uint8_t *>(in);
  if (c.kind == WEFT_RT_LOCAL_SLICE) {
    int64_t size = c.sizes[c.groupRank];
    int64_t offset = collectiveBlockOffset(c.sizes, c.groupRank);
    copyRows(dst, size * c.inner, src + offset * c.inner * c.elemBytes,
             c.sizesSum * c.inner, c.outer, size * c.inner, c.elemBytes);
    return;
  }
  // One member: the output is the input.
  if (dst != src)
    std::memmove(dst, src, static_cast<size_t>(c.outElements) * c.elemBytes);
}

static MPI_Datatype mpiType(weft_rt_dtype dtype) {
  switch (dtype) {
  case WEFT_RT_F32:
    return MPI_FLOAT;
  case WEFT_RT_F64:
    return MPI_DOUBLE;
  case WEFT_RT_I32:
    return MPI_INT32_T;
  case WEFT_RT_I64:
    return MPI_INT64_T;
  case WEFT_RT_I8:
    return MPI_INT8_T;
  case WEFT_RT_F16:
  case WEFT_RT_BF16:
    return MPI_UINT16_T;
  default: // u8, bool
    return MPI_UINT8_T;
  }
}

static MPI_Op sumOp(const weft_rt_comm &comm, weft_rt_dtype dtype) {
  if (dtype == WEFT_RT_F16)
    return comm.halfSum;
  if (dtype == WEFT_RT_BF16)
    return comm.bfloat16Sum;
  // Bools are 0 or 1: their "sum" stays a bool.
  if (dtype == WEFT_RT_BOOL)
    return MPI_LOR;
  return MPI_SUM;
}

/// Runs a parsed collective of a group of more than one device.
static weft_rt_status runOnMpi(weft_rt_context *ctx, const Collective &c,
                               const void *in, void *out) {
  weft_rt_comm &comm = *ctx->comm;
  const char *name = collectiveKindName(c.kind);
  MPI_Comm group = MPI_COMM_NULL;
  if (weft_rt_status status = groupComm(ctx, comm, c.mask, group))
    return status;
  MPI_Datatype type = mpiType(c.dtype);
  size_t eb = c.elemBytes;
  auto *dst = static_cast<uint8_t *>(out);
  const auto *src = static_cast<const uint8_t *>(in);

  if (c.kind == WEFT_RT_ALL_REDUCE_SUM) {
    // MPI counts are ints: large buffers go in pieces.
    MPI_Op op = sumOp(comm, c.dtype);
    for (int64_t done = 0; done < c.count; done += INT_MAX) {
      int n = static_cast<int>(std::min<int64_t>(c.count - done, INT_MAX));
      const void *send =
          in == out ? MPI_IN_PLACE : static_cast<const void *>(src + done * eb);
      MPI_Request request;
      WEFT_MPI_CHECK(ctx, MPI_Iallreduce(send, dst + done * eb, n, type, op,
                                         group, &request));
      WEFT_MPI_CHECK(ctx, waitFor(&request));
    }
    return WEFT_RT_OK;
  }
  if (c.inElements > INT_MAX || c.outElements > INT_MAX)
    return weft_rt_fail(ctx, WEFT_RT_UNSUPPORTED,
                        "weft_rt_collective %s: %lld elements in and %lld out; "
                        "MPI's int counts limit this collective to 2^31-1 "
                        "elements per buffer",
                        name, static_cast<long long>(c.inElements),
                        static_cast<long long>(c.outElements));

  // The communicator ranks its members by their coordinates in ascending
  // axis order; the caller's group rank g follows `axes`' order.
  int p = static_cast<int>(c.groupSize);
  int groupSize = 0;
  WEFT_MPI_CHECK(ctx, MPI_Comm_size(group, &groupSize));
  if (groupSize != p)
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "weft_rt_collective %s: the communicator of the group "
                        "has %d members, not %d",
                        name, groupSize, p);
  comm.groupRankOf.resize(p);
  comm.blockOffsets.resize(p + 1);
  bool inOrder = collectiveGroupRanks(comm.dims.data(), comm.dims.size(), c,
                                      comm.groupRankOf.data());
  for (int64_t h = 0; h < p; ++h)
    comm.blockOffsets[h + 1] = comm.blockOffsets[h] + c.sizes[h];
  const std::vector<int64_t> &offsets = comm.blockOffsets;
  comm.sendCounts.resize(p);
  comm.sendDispls.resize(p);
  comm.recvCounts.resize(p);
  comm.recvDispls.resize(p);
  int *recvCounts = comm.recvCounts.data();
  int *recvDispls = comm.recvDispls.data();
  int64_t g = c.groupRank;
  int64_t rowElems = c.sizesSum * c.inner;

  if (c.kind == WEFT_RT_ALL_GATHER) {
    if (c.outElements == 0)
      return WEFT_RT_OK;
    // One row: the blocks land in place. Else they arrive one after the
    // other and are spread over the rows afterwards.
    bool direct = c.outer == 1;
    int64_t packed = 0;
    for (int r = 0; r < p; ++r) {
      int64_t h = comm.groupRankOf[r];
      recvCounts[r] = static_cast<int>(c.outer * c.sizes[h] * c.inner);
      recvDispls[r] = static_cast<int>(direct ? offsets[h] * c.inner : 0);
    }
    if (!direct)
      for (int64_t h = 0; h < p; ++h)
        for (int r = 0; r < p; ++r)
          if (comm.groupRankOf[r] == h) {
            recvDispls[r] = static_cast<int>(packed);
            packed += recvCounts[r];
          }
    uint8_t *recv = dst;
    if (!direct) {
      recv = comm.recvScratch.reserve(static_cast<size_t>(c.outElements) * eb);
      if (!recv)
        return weft_rt_fail(ctx, WEFT_RT_OUT_OF_MEMORY,
                            "weft_rt_collective %s: out of memory", name);
    }
    MPI_Request request;
    WEFT_MPI_CHECK(ctx, MPI_Iallgatherv(in, static_cast<int>(c.inElements),
                                        type, recv, recvCounts, recvDispls,
                                        type, group, &request));
    WEFT_MPI_CHECK(ctx, waitFor(&request));
    if (direct)
      return WEFT_RT_OK;
    // Packed in group order: member h's block is outer rows of its size.
    int64_t at = 0;
    for (int64_t h = 0; h < p; ++h) {
      int64_t blockRow = c.sizes[h] * c.inner;
      copyRows(dst + offsets[h] * c.inner * eb, rowElems, recv + at * eb,
               blockRow, c.outer, blockRow, eb);
      at += c.outer * blockRow;
    }
    return WEFT_RT_OK;
  }

  if (c.kind == WEFT_RT_REDUCE_SCATTER_SUM) {
    if (c.inElements == 0)
      return WEFT_RT_OK;
    // MPI scatters the sum's blocks in communicator rank order, each
    // contiguous: pack them so unless they already are.
    const uint8_t *send = src;
    bool pack = c.outer != 1 || !inOrder;
    uint8_t *packed = nullptr;
    if (pack) {
      packed = comm.sendScratch.reserve(static_cast<size_t>(c.inElements) * eb);
      if (!packed)
        return weft_rt_fail(ctx, WEFT_RT_OUT_OF_MEMORY,
                            "weft_rt_collective %s: out of memory", name);
      send = packed;
    }
    int64_t at = 0;
    for (int r = 0; r < p; ++r) {
      int64_t h = comm.groupRankOf[r];
      int64_t blockRow = c.sizes[h] * c.inner;
      recvCounts[r] = static_cast<int>(c.outer * blockRow);
      if (pack)
        copyRows(packed + at * eb, blockRow, src + offsets[h] * c.inner * eb,
                 rowElems, c.outer, blockRow, eb);
      at += c.outer * blockRow;
    }
    MPI_Request request;
    WEFT_MPI_CHECK(ctx, MPI_Ireduce_scatter(send, dst, recvCounts, type,
                                            sumOp(comm, c.dtype), group,
                                            &request));
    WEFT_MPI_CHECK(ctx, waitFor(&request));
    return WEFT_RT_OK;
  }

  // ALL_TO_ALL: member g sends member h the h-th block of its split dim and
  // receives h's g-th block, which lands at h's place in the gathered dim.
  // Skipped only when every member's blocks are empty: a member that
  // skipped alone would leave the others waiting.
  if (c.outer == 0 || c.mid == 0 || c.inner == 0 || c.sizesSum == 0 ||
      c.gatherSum == 0)
    return WEFT_RT_OK;
  const int64_t *split = c.sizes, *gather = c.gatherSizes;
  uint8_t *sendBuf =
      comm.sendScratch.reserve(static_cast<size_t>(c.inElements) * eb);
  uint8_t *recvBuf =
      comm.recvScratch.reserve(static_cast<size_t>(c.outElements) * eb);
  if (!sendBuf || !recvBuf)
    return weft_rt_fail(ctx, WEFT_RT_OUT_OF_MEMORY,
                        "weft_rt_collective %s: out of memory", name);
  int *sendCounts = comm.sendCounts.data();
  int *sendDispls = comm.sendDispls.data();
  int64_t gatherOffset = 0;
  int64_t sendAt = 0, recvAt = 0;
  for (int r = 0; r < p; ++r) {
    int64_t h = comm.groupRankOf[r];
    int64_t splitOffset = offsets[h];
    // Box to h: [outer, split[h], mid, gather[g], inner] (or the gather
    // dim first); from h: [outer, split[g], mid, gather[h], inner].
    int64_t toH = c.outer * split[h] * c.mid * gather[g] * c.inner;
    int64_t fromH = c.outer * split[g] * c.mid * gather[h] * c.inner;
    if (c.gatherFirst == 0)
      copyRows(sendBuf + sendAt * eb, split[h] * c.mid * gather[g] * c.inner,
               src + splitOffset * c.mid * gather[g] * c.inner * eb,
               c.sizesSum * c.mid * gather[g] * c.inner, c.outer,
               split[h] * c.mid * gather[g] * c.inner, eb);
    else
      copyRows(sendBuf + sendAt * eb, split[h] * c.inner,
               src + splitOffset * c.inner * eb, c.sizesSum * c.inner,
               c.outer * gather[g] * c.mid, split[h] * c.inner, eb);
    sendCounts[r] = static_cast<int>(toH);
    sendDispls[r] = static_cast<int>(sendAt);
    recvCounts[r] = static_cast<int>(fromH);
    recvDispls[r] = static_cast<int>(recvAt);
    sendAt += toH;
    recvAt += fromH;
  }
  MPI_Request request;
  WEFT_MPI_CHECK(ctx, MPI_Ialltoallv(sendBuf, sendCounts, sendDispls, type,
                                     recvBuf, recvCounts, recvDispls, type,
                                     group, &request));
  WEFT_MPI_CHECK(ctx, waitFor(&request));
  for (int64_t h = 0; h < p; ++h) {
    int r = 0;
    while (comm.groupRankOf[r] != h)
      ++r;
    const uint8_t *block = recvBuf + static_cast<size_t>(recvDispls[r]) * eb;
    if (c.gatherFirst == 0)
      copyRows(dst + gatherOffset * c.inner * eb, c.gatherSum * c.inner, block,
               gather[h] * c.inner, c.outer * split[g] * c.mid,
               gather[h] * c.inner, eb);
    else
      copyRows(dst + gatherOffset * c.mid * split[g] * c.inner * eb,
               c.gatherSum * c.mid * split[g] * c.inner, block,
               gather[h] * c.mid * split[g] * c.inner, c.outer,
               gather[h] * c.mid * split[g] * c.inner, eb);
    gatherOffset += gather[h];
  }
  return WEFT_RT_OK;
}

weft_rt_status weft_rt_collective(weft_rt_context *ctx, const int64_t *params,
                                  const void *in, void *out) {
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  if (!params)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "weft_rt_collective: params is NULL");
  static const CollectiveNames names = {
      "weft_rt_collective",
      " (no communicator is attached: only groups of one device work; see "
      "weft_rt_context_set_comm)",
      "no communicator is attached (weft_rt_context_set_comm), and a "
      "transfer to or from another rank needs one"};
  CollectiveMesh mesh;
  if (const weft_rt_comm *comm = ctx->comm) {
    mesh.dims = comm->dims.data();
    mesh.coords = comm->coords.data();
    mesh.numAxes = comm->dims.size();
    mesh.worldRank = comm->rank;
    mesh.worldSize = comm->size;
  }
  Collective c;
  if (weft_rt_status status = parseCollective(ctx, params, mesh, names, c))
    return status;
  if (weft_rt_status status = checkCollectiveBuffers(ctx, names, c, in, out))
    return status;
  if (isTransfer(c.kind))
    return runTransfer(ctx, c, in, out);
  if (c.kind == WEFT_RT_BROADCAST)
    return runBroadcast(ctx, c, in, out);
  if (c.groupSize == 1 || c.kind == WEFT_RT_LOCAL_SLICE) {
    runLocally(c, in, out);
    return WEFT_RT_OK;
  }
  return runOnMpi(ctx, c, in, out);
}
