//===- CollectivesTest.cpp - weft_rt_collective under mpirun --------------===//
//
// Run by ctest under `mpirun -np 2` and `-np 4`: every rank runs every case
// on every mesh of the world's size (2: [2], [1,2], [2,1]; 4: [2,2], [1,4],
// [4]), over every ordered subset of mesh axes, and compares its output
// with a reference it computes from every member's (deterministic) input.
// Failures are counted over all ranks; the exit code is 1 if any failed.
// `--bench` instead times 1 MiB collectives on the world.
//
//===----------------------------------------------------------------------===//

#include "weft_rt.h"

#include "MpiChecks.h"
#include "comm/Comm.h"

#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace weft::test;

namespace {

/// The mesh a comm spans, and groups in it, computed without the runtime.
struct Mesh {
  std::vector<int64_t> dims;

  int64_t size() const {
    int64_t n = 1;
    for (int64_t d : dims)
      n *= d;
    return n;
  }
  std::vector<int64_t> coords(int64_t rank) const {
    std::vector<int64_t> c(dims.size());
    for (size_t a = dims.size(); a-- > 0;) {
      c[a] = rank % dims[a];
      rank /= dims[a];
    }
    return c;
  }
  int64_t groupSize(const std::vector<int64_t> &axes) const {
    int64_t n = 1;
    for (int64_t a : axes)
      n *= dims[a];
    return n;
  }
  int64_t groupRank(int64_t rank, const std::vector<int64_t> &axes) const {
    std::vector<int64_t> c = coords(rank);
    int64_t g = 0;
    for (int64_t a : axes)
      g = g * dims[a] + c[a];
    return g;
  }
  /// The world rank of member h of `rank`'s group.
  int64_t member(int64_t rank, const std::vector<int64_t> &axes,
                 int64_t h) const {
    for (int64_t r = 0; r < size(); ++r) {
      std::vector<int64_t> a = coords(r), b = coords(rank);
      bool same = true;
      for (size_t d = 0; d < dims.size(); ++d)
        if (std::find(axes.begin(), axes.end(), int64_t(d)) == axes.end())
          same &= a[d] == b[d];
      if (same && groupRank(r, axes) == h)
        return r;
    }
    return -1;
  }
};

/// Small integers, exact in every dtype and in sums of a few of them.
double valueOf(int64_t rank, int64_t index, weft_rt_dtype dtype) {
  if (dtype == WEFT_RT_BOOL)
    return (rank * 5 + index * 3) % 4 == 0 ? 1 : 0;
  int64_t v = (rank * 7 + index * 3) % 11;
  if (dtype == WEFT_RT_U8)
    return static_cast<double>(v);
  return static_cast<double>(v - 5);
}

void store(weft_rt_dtype dtype, std::vector<uint8_t> &buffer, int64_t index,
           double value) {
  uint8_t *at = buffer.data() + index * weft_rt_dtype_size(dtype);
  switch (dtype) {
  case WEFT_RT_F32: {
    float v = static_cast<float>(value);
    std::memcpy(at, &v, 4);
    break;
  }
  case WEFT_RT_F64:
    std::memcpy(at, &value, 8);
    break;
  case WEFT_RT_F16: {
    _Float16 v = static_cast<_Float16>(value);
    std::memcpy(at, &v, 2);
    break;
  }
  case WEFT_RT_BF16: {
    float v = static_cast<float>(value);
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    uint16_t high = static_cast<uint16_t>(bits >> 16); // Exact: small ints.
    std::memcpy(at, &high, 2);
    break;
  }
  case WEFT_RT_I32: {
    int32_t v = static_cast<int32_t>(value);
    std::memcpy(at, &v, 4);
    break;
  }
  case WEFT_RT_I64: {
    int64_t v = static_cast<int64_t>(value);
    std::memcpy(at, &v, 8);
    break;
  }
  case WEFT_RT_I8:
    *reinterpret_cast<int8_t *>(at) = static_cast<int8_t>(value);
    break;
  default: // u8, bool
    *at = static_cast<uint8_t>(value);
    break;
  }
}

double load(weft_rt_dtype dtype, const std::vector<uint8_t> &buffer,
            int64_t index) {
  const uint8_t *at = buffer.data() + index * weft_rt_dtype_size(dtype);
  switch (dtype) {
  case WEFT_RT_F32: {
    float v;
    std::memcpy(&v, at, 4);
    return v;
  }
  case WEFT_RT_F64: {
    double v;
    std::memcpy(&v, at, 8);
    return v;
  }
  case WEFT_RT_F16: {
    _Float16 v;
    std::memcpy(&v, at, 2);
    return static_cast<double>(v);
  }
  case WEFT_RT_BF16: {
    uint16_t high;
    std::memcpy(&high, at, 2);
    uint32_t bits = static_cast<uint32_t>(high) << 16;
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  }
  case WEFT_RT_I32: {
    int32_t v;
    std::memcpy(&v, at, 4);
    return v;
  }
  case WEFT_RT_I64: {
    int64_t v;
    std::memcpy(&v, at, 8);
    return static_cast<double>(v);
  }
  case WEFT_RT_I8:
    return *reinterpret_cast<const int8_t *>(at);
  default:
    return *at;
  }
}

/// A member's input, filled with valueOf.
std::vector<uint8_t> inputOf(int64_t rank, int64_t elements,
                             weft_rt_dtype dtype) {
  std::vector<uint8_t> buffer(elements * weft_rt_dtype_size(dtype) + 1);
  for (int64_t i = 0; i < elements; ++i)
    store(dtype, buffer, i, valueOf(rank, i, dtype));
  return buffer;
}

/// An output buffer filled with a value no case produces.
std::vector<uint8_t> sentinel(int64_t elements, weft_rt_dtype dtype) {
  std::vector<uint8_t> buffer(elements * weft_rt_dtype_size(dtype) + 1);
  for (int64_t i = 0; i < elements; ++i)
    store(dtype, buffer, i, dtype == WEFT_RT_BOOL ? 7 : 99);
  return buffer;
}

std::string describe(const char *kind, const Mesh &mesh,
                     const std::vector<int64_t> &axes, weft_rt_dtype dtype,
                     const std::string &extra = "") {
  std::string text = std::string(kind) + " mesh [";
  for (size_t i = 0; i < mesh.dims.size(); ++i)
    text += (i ? "," : "") + std::to_string(mesh.dims[i]);
  text += "] axes [";
  for (size_t i = 0; i < axes.size(); ++i)
    text += (i ? "," : "") + std::to_string(axes[i]);
  return text + "] " + weft_rt_dtype_name(dtype) + extra;
}

/// Compares `got` with `want` element by element; one message per case.
void compare(const std::string &what, weft_rt_dtype dtype,
             const std::vector<uint8_t> &got, const std::vector<double> &want,
             weft_rt_context *ctx, weft_rt_status status) {
  EXPECT(status == WEFT_RT_OK, "%s: status %d: %s", what.c_str(), status,
         weft_rt_context_error(ctx));
  if (status != WEFT_RT_OK)
    return;
  for (size_t i = 0; i < want.size(); ++i) {
    double g = load(dtype, got, static_cast<int64_t>(i));
    if (g != want[i]) {
      EXPECT(g == want[i], "%s: element %zu is %g, expected %g", what.c_str(),
             i, g, want[i]);
      return;
    }
  }
  ++checks;
}

/// Sizes of P members, uneven with zeros ([1,0,3,4] for P = 4), or even.
std::vector<int64_t> unevenSizes(int64_t p, int variant) {
  std::vector<int64_t> sizes(p);
  for (int64_t h = 0; h < p; ++h)
    sizes[h] = variant == 0   ? (h % 3 == 1 ? 0 : h + 1)
               : variant == 1 ? (h + 2) % 3
                              : 2;
  return sizes;
}

int64_t sum(const std::vector<int64_t> &v, int64_t end = -1) {
  int64_t s = 0;
  for (int64_t i = 0; i < (end < 0 ? int64_t(v.size()) : end); ++i)
    s += v[i];
  return s;
}

std::vector<int64_t> header(int64_t kind, weft_rt_dtype dtype,
                            const std::vector<int64_t> &axes) {
  std::vector<int64_t> params = {kind, dtype, int64_t(axes.size())};
  params.insert(params.end(), axes.begin(), axes.end());
  return params;
}

void testAllReduce(weft_rt_context *ctx, const Mesh &mesh,
                   const std::vector<int64_t> &axes, weft_rt_dtype dtype) {
  // Two blocks of 8 (vectorized f16 sums) and a tail.
  const int64_t count = 19;
  std::vector<int64_t> params = header(WEFT_RT_ALL_REDUCE_SUM, dtype, axes);
  params.push_back(count);
  std::vector<double> want(count, 0.0);
  for (int64_t h = 0; h < mesh.groupSize(axes); ++h) {
    int64_t m = mesh.member(worldRank, axes, h);
    for (int64_t i = 0; i < count; ++i)
      want[i] = dtype == WEFT_RT_BOOL ? std::max(want[i], valueOf(m, i, dtype))
                                      : want[i] + valueOf(m, i, dtype);
  }
  std::vector<uint8_t> in = inputOf(worldRank, count, dtype);
  std::vector<uint8_t> out = sentinel(count, dtype);
  weft_rt_status status =
      weft_rt_collective(ctx, params.data(), in.data(), out.data());
  compare(describe("all_reduce_sum", mesh, axes, dtype), dtype, out, want, ctx,
          status);
  status = weft_rt_collective(ctx, params.data(), in.data(), in.data());
  compare(describe("all_reduce_sum", mesh, axes, dtype, " in place"), dtype, in,
          want, ctx, status);
}

/// f16 and bf16 sums round to nearest even: on a group of two, member 0's
/// 1 + ulp plus member 1's ulp / 2 is a tie that rounds up to 1 + 2 ulp.
void testHalfRounding(weft_rt_context *ctx, const Mesh &mesh,
                      const std::vector<int64_t> &axes) {
  const int64_t count = 19;
  int64_t g = mesh.groupRank(worldRank, axes);
  for (weft_rt_dtype dtype : {WEFT_RT_F16, WEFT_RT_BF16}) {
    double ulp =
        dtype == WEFT_RT_F16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
    std::vector<uint8_t> in(count * 2 + 1), out(count * 2 + 1);
    for (int64_t i = 0; i < count; ++i)
      store(dtype, in, i, g == 0 ? 1.0 + ulp : ulp / 2);
    std::vector<int64_t> params = header(WEFT_RT_ALL_REDUCE_SUM, dtype, axes);
    params.push_back(count);
    weft_rt_status status =
        weft_rt_collective(ctx, params.data(), in.data(), out.data());
    compare(describe("all_reduce_sum rounding", mesh, axes, dtype), dtype, out,
            std::vector<double>(count, 1.0 + 2 * ulp), ctx, status);
  }
}

/// ALL_GATHER, REDUCE_SCATTER_SUM and LOCAL_SLICE over [outer, S, inner].
void testBlocks(weft_rt_context *ctx, const Mesh &mesh,
                const std::vector<int64_t> &axes, weft_rt_dtype dtype,
                int64_t kind, int variant) {
  const int64_t outer = 2, inner = 3;
  int64_t p = mesh.groupSize(axes);
  int64_t g = mesh.groupRank(worldRank, axes);
  std::vector<int64_t> sizes = unevenSizes(p, variant);
  int64_t total = sum(sizes);
  std::vector<int64_t> params = header(kind, dtype, axes);
  params.insert(params.end(), {outer, inner, p});
  params.insert(params.end(), sizes.begin(), sizes.end());
  const char *name = kind == WEFT_RT_ALL_GATHER           ? "all_gather"
                     : kind == WEFT_RT_REDUCE_SCATTER_SUM ? "reduce_scatter"
                                                          : "local_slice";
  std::string what = describe(name, mesh, axes, dtype,
                              " sizes variant " + std::to_string(variant));
  std::vector<double> want;
  std::vector<uint8_t> in, out;
  if (kind == WEFT_RT_ALL_GATHER) {
    in = inputOf(worldRank, outer * sizes[g] * inner, dtype);
    out = sentinel(outer * total * inner, dtype);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t h = 0; h < p; ++h) {
        int64_t m = mesh.member(worldRank, axes, h);
        for (int64_t j = 0; j < sizes[h]; ++j)
          for (int64_t i = 0; i < inner; ++i)
            want.push_back(valueOf(m, (o * sizes[h] + j) * inner + i, dtype));
      }
  } else {
    in = inputOf(worldRank, outer * total * inner, dtype);
    out = sentinel(outer * sizes[g] * inner, dtype);
    int64_t offset = sum(sizes, g);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < sizes[g]; ++j)
        for (int64_t i = 0; i < inner; ++i) {
          int64_t index = (o * total + offset + j) * inner + i;
          if (kind == WEFT_RT_LOCAL_SLICE) {
            want.push_back(valueOf(worldRank, index, dtype));
            continue;
          }
          double s = 0;
          for (int64_t h = 0; h < p; ++h)
            s += valueOf(mesh.member(worldRank, axes, h), index, dtype);
          want.push_back(s);
        }
  }
  weft_rt_status status =
      weft_rt_collective(ctx, params.data(), in.data(), out.data());
  compare(what, dtype, out, want, ctx, status);
}

void testAllToAll(weft_rt_context *ctx, const Mesh &mesh,
                  const std::vector<int64_t> &axes, weft_rt_dtype dtype,
                  int64_t gatherFirst) {
  const int64_t outer = 2, mid = 2, inner = 2;
  int64_t p = mesh.groupSize(axes);
  int64_t g = mesh.groupRank(worldRank, axes);
  std::vector<int64_t> split = unevenSizes(p, 0), gather = unevenSizes(p, 1);
  int64_t s = sum(split), gs = sum(gather);
  std::vector<int64_t> params = header(WEFT_RT_ALL_TO_ALL, dtype, axes);
  params.insert(params.end(), {outer, mid, inner, gatherFirst, p});
  params.insert(params.end(), split.begin(), split.end());
  params.insert(params.end(), gather.begin(), gather.end());
  std::vector<uint8_t> in =
      inputOf(worldRank, outer * s * mid * gather[g] * inner, dtype);
  std::vector<uint8_t> out =
      sentinel(outer * split[g] * mid * gs * inner, dtype);
  std::vector<double> want(outer * split[g] * mid * gs * inner);
  int64_t splitOffset = sum(split, g);
  for (int64_t h = 0, gatherOffset = 0; h < p; gatherOffset += gather[h++]) {
    int64_t m = mesh.member(worldRank, axes, h);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t a = 0; a < split[g]; ++a)
        for (int64_t k = 0; k < mid; ++k)
          for (int64_t j = 0; j < gather[h]; ++j)
            for (int64_t i = 0; i < inner; ++i) {
              // Member m's element: split index splitOffset + a, gather j.
              int64_t from, to;
              if (gatherFirst == 0) {
                from = (((o * s + splitOffset + a) * mid + k) * gather[h] + j) *
                           inner +
                       i;
                to = (((o * split[g] + a) * mid + k) * gs + gatherOffset + j) *
                         inner +
                     i;
              } else {
                from = (((o * gather[h] + j) * mid + k) * s + splitOffset + a) *
                           inner +
                       i;
                to = (((o * gs + gatherOffset + j) * mid + k) * split[g] + a) *
                         inner +
                     i;
              }
              want[to] = valueOf(m, from, dtype);
            }
  }
  weft_rt_status status =
      weft_rt_collective(ctx, params.data(), in.data(), out.data());
  compare(describe("all_to_all", mesh, axes, dtype,
                   gatherFirst ? " gather_first" : " split_first"),
          dtype, out, want, ctx, status);
}

/// Every ordered subset of the mesh's axes, the empty one included.
std::vector<std::vector<int64_t>> axisLists(size_t numAxes) {
  std::vector<std::vector<int64_t>> lists = {{}};
  for (size_t mask = 1; mask < (size_t(1) << numAxes); ++mask) {
    std::vector<int64_t> axes;
    for (size_t a = 0; a < numAxes; ++a)
      if (mask & (size_t(1) << a))
        axes.push_back(static_cast<int64_t>(a));
    do
      lists.push_back(axes);
    while (std::next_permutation(axes.begin(), axes.end()));
  }
  return lists;
}

bool errorMentions(weft_rt_context *ctx, const char *text) {
  return std::strstr(weft_rt_context_error(ctx), text) != nullptr;
}

/// Bad parameter blocks fail with a status and a message, before any
/// communication (every rank sees the same block, so none hangs).
void testBadParams(weft_rt_context *ctx, const Mesh &mesh) {
  float in[64] = {}, out[64] = {};
  int64_t axes = static_cast<int64_t>(mesh.dims.size());
  int64_t p0 = mesh.dims[0];
  struct Case {
    std::vector<int64_t> params;
    const char *message;
  };
  std::vector<Case> cases = {
      {{9, WEFT_RT_F32, 0, 4}, "unknown kind 9"},
      {{WEFT_RT_ALL_REDUCE_SUM, 5, 0, 4}, "unknown dtype 5"},
      {{WEFT_RT_ALL_REDUCE_SUM, WEFT_RT_F32, axes + 1, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 4},
       "axes, but the mesh has"},
      {{WEFT_RT_ALL_REDUCE_SUM, WEFT_RT_F32, 1, axes, 4}, "is not a mesh axis"},
      {{WEFT_RT_ALL_REDUCE_SUM, WEFT_RT_F32, 1, -1, 4}, "is not a mesh axis"},
      {{WEFT_RT_ALL_REDUCE_SUM, WEFT_RT_F32, 2, 0, 0, 4},
       axes > 1 ? "is given twice" : "2 axes, but the mesh has 1"},
      {{WEFT_RT_ALL_REDUCE_SUM, WEFT_RT_F32, 0, -3}, "count -3 is negative"},
      {{WEFT_RT_ALL_GATHER, WEFT_RT_F32, 1, 0, 1, 1, p0 + 1, 1, 1, 1, 1, 1, 1,
        1, 1},
       "P is"},
      {{WEFT_RT_REDUCE_SCATTER_SUM, WEFT_RT_F32, 0, 1, 1, 1, -2},
       "sizes must be >= 0"},
      {{WEFT_RT_LOCAL_SLICE, WEFT_RT_F32, 0, -1, 1, 1, 2}, "must be >= 0"},
      {{WEFT_RT_ALL_TO_ALL, WEFT_RT_F32, 0, 1, 1, 1, 2, 1, 1, 1},
       "gather_first is 2"},
      {{WEFT_RT_ALL_TO_ALL, WEFT_RT_F32, 0, 1, 1, 1, 0, 1, 1, -1},
       "gather sizes must be >= 0"},
      {{WEFT_RT_ALL_GATHER, WEFT_RT_F32, 0, INT64_MAX / 2, 4, 1, 2},
       "more bytes than fit in 64 bits"},
  };
  for (const Case &c : cases) {
    weft_rt_status status = weft_rt_collective(ctx, c.params.data(), in, out);
    EXPECT(status == WEFT_RT_INVALID_ARGUMENT && errorMentions(ctx, c.message),
           "kind %lld: status %d, message '%s', expected '%s'",
           static_cast<long long>(c.params[0]), status,
           weft_rt_context_error(ctx), c.message);
  }
  // Buffers: overlapping (only an all-reduce may work in place), NULL.
  int64_t gather[] = {WEFT_RT_ALL_GATHER, WEFT_RT_F32, 0, 1, 4, 1, 2};
  EXPECT(weft_rt_collective(ctx, gather, in, in + 2) ==
                 WEFT_RT_INVALID_ARGUMENT &&
             errorMentions(ctx, "overlap"),
         "overlap: %s", weft_rt_context_error(ctx));
  EXPECT(weft_rt_collective(ctx, gather, nullptr, out) ==
                 WEFT_RT_INVALID_ARGUMENT &&
             errorMentions(ctx, "in is NULL"),
         "null: %s", weft_rt_context_error(ctx));
  EXPECT(weft_rt_collective(ctx, nullptr, in, out) == WEFT_RT_INVALID_ARGUMENT,
         "null params");
  // An empty collective needs no buffers.
  int64_t empty[] = {WEFT_RT_ALL_REDUCE_SUM, WEFT_RT_F32, 0, 0};
  EXPECT(weft_rt_collective(ctx, empty, nullptr, nullptr) == WEFT_RT_OK,
         "empty: %s", weft_rt_context_error(ctx));
}

/// Without a communicator the world is one device.
void testWithoutComm(weft_rt_context *ctx) {
  float in[6] = {1, 2, 3, 4, 5, 6}, out[6] = {};
  int64_t one[] = {WEFT_RT_ALL_GATHER, WEFT_RT_F32, 1, 0, 2, 3, 1, 1};
  EXPECT(weft_rt_collective(ctx, one, in, out) == WEFT_RT_OK && out[5] == 6.0f,
         "one device: %s", weft_rt_context_error(ctx));
  int64_t two[] = {WEFT_RT_ALL_GATHER, WEFT_RT_F32, 1, 0, 1, 3, 2, 1, 1};
  EXPECT(weft_rt_collective(ctx, two, in, out) == WEFT_RT_INVALID_ARGUMENT &&
             errorMentions(ctx, "no communicator is attached"),
         "two devices: %s", weft_rt_context_error(ctx));
  int64_t slice[] = {WEFT_RT_LOCAL_SLICE, WEFT_RT_F32, 0, 2, 1, 1, 3};
  EXPECT(weft_rt_collective(ctx, slice, in, out) == WEFT_RT_OK &&
             out[0] == 1.0f && out[2] == 3.0f && out[5] == 6.0f,
         "slice: %s", weft_rt_context_error(ctx));
}

int32_t runNothing(weft_rt_context *, weft_rt_byte_buffer *,
                   weft_rt_byte_buffer *) {
  return WEFT_RT_OK;
}

/// weft_rt_model_run refuses a mesh program without the right communicator.
void testModelNeedsComm(weft_rt_context *ctx, weft_rt_comm *comm,
                        const Mesh &mesh) {
  std::string signature = "weft-program 1\narena 0\nweights 0\nmesh";
  for (int64_t d : mesh.dims)
    signature += " " + std::to_string(d);
  weft_rt_program program = {signature.c_str(), runNothing};
  weft_rt_model *model = nullptr;
  weft_rt_context_set_comm(ctx, nullptr);
  EXPECT(weft_rt_model_create(ctx, &program, nullptr, &model) == WEFT_RT_OK,
         "create: %s", weft_rt_context_error(ctx));
  EXPECT(weft_rt_model_run(model) == WEFT_RT_INVALID_ARGUMENT &&
             errorMentions(ctx, "needs a communicator"),
         "no comm: %s", weft_rt_context_error(ctx));
  weft_rt_context_set_comm(ctx, comm);
  EXPECT(weft_rt_model_run(model) == WEFT_RT_OK, "with comm: %s",
         weft_rt_context_error(ctx));
  weft_rt_model_destroy(model);
  // The same devices in another shape.
  weft_rt_program flat = {mesh.dims.size() == 1
                              ? "weft-program 1\narena 0\nweights 0\nmesh 1 2"
                              : "weft-program 1\narena 0\nweights 0\nmesh 99",
                          runNothing};
  EXPECT(weft_rt_model_create(ctx, &flat, nullptr, &model) == WEFT_RT_OK,
         "create: %s", weft_rt_context_error(ctx));
  EXPECT(weft_rt_model_run(model) == WEFT_RT_INVALID_ARGUMENT &&
             errorMentions(ctx, "but the context's communicator spans"),
         "other mesh: %s", weft_rt_context_error(ctx));
  weft_rt_model_destroy(model);
}

void testCreateErrors(weft_rt_context *ctx) {
  weft_rt_comm *comm = nullptr;
  int64_t three[] = {worldSize + 1};
  EXPECT(weft_rt_comm_create_mpi(ctx, 1, three, &comm) ==
                 WEFT_RT_INVALID_ARGUMENT &&
             errorMentions(ctx, "launch one process per device") && !comm,
         "size: %s", weft_rt_context_error(ctx));
  int64_t zero[] = {0, 2};
  EXPECT(weft_rt_comm_create_mpi(ctx, 2, zero, &comm) ==
                 WEFT_RT_INVALID_ARGUMENT &&
             errorMentions(ctx, "dims must be >= 1"),
         "zero: %s", weft_rt_context_error(ctx));
  EXPECT(weft_rt_comm_create_mpi(ctx, 0, zero, &comm) ==
                 WEFT_RT_INVALID_ARGUMENT &&
             errorMentions(ctx, "1 to 8 axes"),
         "rank 0: %s", weft_rt_context_error(ctx));
  // Ranks that disagree on the shape all fail instead of hanging.
  int64_t flat[] = {worldSize}, tall[] = {1, worldSize};
  EXPECT(weft_rt_comm_create_mpi(ctx, worldRank == 0 ? 1 : 2,
                                 worldRank == 0 ? flat : tall,
                                 &comm) == WEFT_RT_INVALID_ARGUMENT &&
             errorMentions(ctx, "every rank must run a program of the same "
                                "mesh"),
         "disagree: %s", weft_rt_context_error(ctx));
}

/// Communicators of mesh axes that exist now.
int liveGroups(const weft_rt_comm &comm) {
  int n = 0;
  for (MPI_Comm group : comm.groups)
    n += group != MPI_COMM_NULL;
  return n;
}

/// A mesh of 8 axes has 255 subsets of axes; only those that collectives
/// use get a communicator, when they are first used.
void testGroupsOnFirstUse(weft_rt_context *ctx) {
  int64_t dims[8] = {worldSize, 1, 1, 1, 1, 1, 1, 1};
  weft_rt_comm *comm = nullptr;
  if (weft_rt_comm_create_mpi(ctx, 8, dims, &comm) != WEFT_RT_OK) {
    EXPECT(false, "8 axes: %s", weft_rt_context_error(ctx));
    return;
  }
  EXPECT(liveGroups(*comm) == 0, "%d communicators before any collective",
         liveGroups(*comm));
  weft_rt_context_set_comm(ctx, comm);
  float in[4] = {1, 2, 3, 4}, out[4] = {0};
  int64_t reduce[] = {WEFT_RT_ALL_REDUCE_SUM, WEFT_RT_F32, 1, 0, 4};
  for (int round = 0; round < 2; ++round)
    EXPECT(weft_rt_collective(ctx, reduce, in, out) == WEFT_RT_OK &&
               out[3] == 4.0f * worldSize,
           "all-reduce over axis 0: %s", weft_rt_context_error(ctx));
  EXPECT(liveGroups(*comm) == 1, "%d communicators after two all-reduces "
                                 "over axis 0",
         liveGroups(*comm));
  weft_rt_context_set_comm(ctx, nullptr);
  weft_rt_comm_destroy(comm);
}

void runMesh(weft_rt_context *ctx, const Mesh &mesh) {
  weft_rt_comm *comm = nullptr;
  weft_rt_status status = weft_rt_comm_create_mpi(
      ctx, static_cast<int32_t>(mesh.dims.size()), mesh.dims.data(), &comm);
  EXPECT(status == WEFT_RT_OK, "comm %s: %s",
         describe("create", mesh, {}, WEFT_RT_F32).c_str(),
         weft_rt_context_error(ctx));
  if (status != WEFT_RT_OK)
    return;
  EXPECT(weft_rt_comm_rank(comm) == worldRank, "rank %d",
         weft_rt_comm_rank(comm));
  EXPECT(weft_rt_comm_size(comm) == worldSize, "size %d",
         weft_rt_comm_size(comm));
  weft_rt_context_set_comm(ctx, comm);
  for (const std::vector<int64_t> &axes : axisLists(mesh.dims.size())) {
    for (weft_rt_dtype dtype :
         {WEFT_RT_F32, WEFT_RT_F16, WEFT_RT_BF16, WEFT_RT_F64, WEFT_RT_I32,
          WEFT_RT_I64, WEFT_RT_I8, WEFT_RT_U8, WEFT_RT_BOOL})
      testAllReduce(ctx, mesh, axes, dtype);
    if (mesh.groupSize(axes) == 2)
      testHalfRounding(ctx, mesh, axes);
    for (weft_rt_dtype dtype : {WEFT_RT_F32, WEFT_RT_F16, WEFT_RT_I64}) {
      for (int variant = 0; variant < 3; ++variant) {
        testBlocks(ctx, mesh, axes, dtype, WEFT_RT_ALL_GATHER, variant);
        testBlocks(ctx, mesh, axes, dtype, WEFT_RT_REDUCE_SCATTER_SUM, variant);
        testBlocks(ctx, mesh, axes, dtype, WEFT_RT_LOCAL_SLICE, variant);
      }
      testAllToAll(ctx, mesh, axes, dtype, 0);
      testAllToAll(ctx, mesh, axes, dtype, 1);
    }
  }
  testBadParams(ctx, mesh);
  testModelNeedsComm(ctx, comm, mesh);
  weft_rt_context_set_comm(ctx, nullptr);
  weft_rt_comm_destroy(comm);
}

/// Median milliseconds of `runs` calls of one collective, slowest rank.
double timeCollective(weft_rt_context *ctx, const int64_t *params,
                      const void *in, void *out, int runs) {
  std::vector<double> times;
  for (int i = 0; i < runs + 3; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    auto start = std::chrono::steady_clock::now();
    if (weft_rt_collective(ctx, params, in, out) != WEFT_RT_OK) {
      std::fprintf(stderr, "bench: %s\n", weft_rt_context_error(ctx));
      return -1;
    }
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    double slowest = 0;
    MPI_Allreduce(&ms, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (i >= 3)
      times.push_back(slowest);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

int bench(weft_rt_context *ctx) {
  int64_t dims[] = {worldSize};
  weft_rt_comm *comm = nullptr;
  if (weft_rt_comm_create_mpi(ctx, 1, dims, &comm) != WEFT_RT_OK) {
    std::fprintf(stderr, "%s\n", weft_rt_context_error(ctx));
    return 1;
  }
  weft_rt_context_set_comm(ctx, comm);
  const int64_t floats = (1 << 20) / 4; // 1 MiB of f32 per rank.
  std::vector<float> in(floats * worldSize, 1.0f), out(floats * worldSize);
  int64_t p = worldSize;
  std::vector<int64_t> reduce = {WEFT_RT_ALL_REDUCE_SUM, WEFT_RT_F32, 1, 0,
                                 floats};
  std::vector<int64_t> gatherParams = {
      WEFT_RT_ALL_GATHER, WEFT_RT_F32, 1, 0, 1, 1, p};
  std::vector<int64_t> toAll = {
      WEFT_RT_ALL_TO_ALL, WEFT_RT_F32, 1, 0, 1, 1, 1, 0, p};
  for (int64_t h = 0; h < p; ++h) {
    gatherParams.push_back(floats);
    toAll.push_back(floats / p);
  }
  for (int64_t h = 0; h < p; ++h)
    toAll.push_back(1);
  // f16 all-reduce: the same 1 MiB as 512 Ki halves.
  std::vector<int64_t> reduceHalf = {WEFT_RT_ALL_REDUCE_SUM, WEFT_RT_F16, 1, 0,
                                     floats * 2};
  std::vector<uint16_t> halves(floats * 2, 0x3c00), halvesOut(floats * 2);
  double r = timeCollective(ctx, reduce.data(), in.data(), out.data(), 50);
  double rh = timeCollective(ctx, reduceHalf.data(), halves.data(),
                             halvesOut.data(), 50);
  double g =
      timeCollective(ctx, gatherParams.data(), in.data(), out.data(), 50);
  double a = timeCollective(ctx, toAll.data(), in.data(), out.data(), 50);
  if (worldRank == 0)
    std::printf("%d ranks, 1 MiB per rank, median of 50 (slowest rank):\n"
                "  all_reduce_sum f32  %.3f ms\n"
                "  all_reduce_sum f16  %.3f ms\n"
                "  all_gather f32      %.3f ms (out %d MiB)\n"
                "  all_to_all f32      %.3f ms\n",
                worldSize, r, rh, g, worldSize, a);
  weft_rt_context_set_comm(ctx, nullptr);
  weft_rt_comm_destroy(comm);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  weft_rt_context *ctx = nullptr;
  if (weft_rt_context_create(&ctx) != WEFT_RT_OK) {
    std::fprintf(stderr, "cannot create a context\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (argc > 1 && std::strcmp(argv[1], "--bench") == 0) {
    int code = bench(ctx);
    weft_rt_context_destroy(ctx);
    MPI_Finalize();
    return code;
  }

  std::vector<Mesh> meshes;
  if (worldSize == 2)
    meshes = {{{2}}, {{1, 2}}, {{2, 1}}};
  else if (worldSize == 4)
    meshes = {{{2, 2}}, {{1, 4}}, {{4}}};
  else
    meshes = {{{worldSize}}};
  for (const Mesh &mesh : meshes)
    runMesh(ctx, mesh);
  testWithoutComm(ctx);
  testCreateErrors(ctx);
  testGroupsOnFirstUse(ctx);

  int code = finishMpiChecks(MPI_COMM_WORLD);
  weft_rt_context_destroy(ctx);
  MPI_Finalize();
  return code;
}
