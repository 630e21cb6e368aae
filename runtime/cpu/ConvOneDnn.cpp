//===- ConvOneDnn.cpp - ONNX Conv on oneDNN primitives --------------------===//
//
// Builds a oneDNN convolution primitive once per op (cached in the context
// under the op's parameter block) and runs it, with reorders around it when
// the primitive prefers layouts other than the caller's (NC[D]HW, or
// channel-blocked as the layout word says); a fused clamp is an eltwise
// post-op.
//
//===----------------------------------------------------------------------===//

#include "Conv.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>

using namespace weft::rt::cpu;

namespace {
/// Values read from the start and the end of a weight buffer, to notice
/// that a cached reordered copy no longer matches it.
struct WeightProbe {
  static constexpr int kCount = 8;
  const float *source = nullptr;
  float values[2 * kCount] = {};
  int64_t count = 0;

  void take(const float *weight, int64_t size) {
    source = weight, count = std::min<int64_t>(size, kCount);
    for (int64_t i = 0; i < count; ++i) {
      values[i] = weight[i];
      values[kCount + i] = weight[size - 1 - i];
    }
  }
  bool matches(const float *weight, int64_t size) const {
    if (weight != source)
      return false;
    for (int64_t i = 0; i < count; ++i)
      if (std::memcmp(&values[i], &weight[i], sizeof(float)) ||
          std::memcmp(&values[kCount + i], &weight[size - 1 - i],
                      sizeof(float)))
        return false;
    return true;
  }
};

/// One op's oneDNN objects. Each entry has its own engine and stream: a
/// stream is not to be used by two threads at once, and contexts may run on
/// different threads.
struct OneDnnConv : CacheEntry {
  ConvAlgorithm algorithm = ConvAlgorithm::Auto;
  bool hasBias = false;
  /// The thread count the primitive was built for: oneDNN fixes a
  /// primitive's team size when it creates it.
  int threads = 0;
  std::string implementation;
  dnnl_engine_t engine = nullptr;
  dnnl_stream_t stream = nullptr;
  dnnl_primitive_t conv = nullptr;
  dnnl_primitive_t srcReorder = nullptr, weightReorder = nullptr,
                   dstReorder = nullptr;
  /// Memories over the caller's buffers (handles set per call).
  dnnl_memory_t userSrc = nullptr, userWeight = nullptr, userBias = nullptr,
                userDst = nullptr;
  /// oneDNN-owned buffers in the primitive's layouts, where they differ.
  dnnl_memory_t convSrc = nullptr, convWeight = nullptr, convDst = nullptr;
  /// The primitive's scratch memory (ours: left to oneDNN, large ones such
  /// as GEMM-based convolution's im2col buffer are mapped and faulted in
  /// again at every call).
  dnnl_memory_t scratchpad = nullptr;
  /// convSrc, convDst and scratchpad have no memory of their own: at each
  /// call they point into the context's working memory (sharedWork), at
  /// these offsets, `workBytes` in all.
  size_t srcOffset = 0, dstOffset = 0, scratchOffset = 0, workBytes = 0;
  WeightProbe probe;
  int64_t weightCount = 0;

  ~OneDnnConv() override {
    for (dnnl_primitive_t p : {conv, srcReorder, weightReorder, dstReorder})
      if (p)
        dnnl_primitive_destroy(p);
    for (dnnl_memory_t m : {userSrc, userWeight, userBias, userDst, convSrc,
                            convWeight, convDst, scratchpad})
      if (m)
        dnnl_memory_destroy(m);
    if (stream)
      dnnl_stream_destroy(stream);
    if (engine)
      dnnl_engine_destroy(engine);
  }
};

/// An op's primitives, one per thread count it ran with: the driver may
/// switch between counts from run to run (ThreadAdapter), and rebuilding a
/// primitive (and its reordered weights) at each switch would cost more
/// than the run.
struct OneDnnConvByThreads : CacheEntry {
  std::map<int, std::unique_ptr<OneDnnConv>> byThreads;
};
} // namespace

/// Maps a failing oneDNN call to a status with a message.
static weft_rt_status dnnlFailure(weft_rt_context *ctx, dnnl_status_t status,
                                  const char *what) {
  weft_rt_status code = WEFT_RT_INTERNAL;
  if (status == dnnl_unimplemented)
    code = WEFT_RT_UNSUPPORTED;
  else if (status == dnnl_out_of_memory)
    code = WEFT_RT_OUT_OF_MEMORY;
  return weft_rt_fail(ctx, code, "conv: oneDNN %s failed: %s", what,
                      dnnl_status2str(status));
}

#define DNNL_TRY(ctx, call, what)                                              \
  do {                                                                         \
    dnnl_status_t dnnlStatus = (call);                                         \
    if (dnnlStatus != dnnl_success)                                            \
      return dnnlFailure((ctx), dnnlStatus, (what));                           \
  } while (0)

/// The plain row-major layout of an n-dimensional tensor.
static dnnl_format_tag_t plainTag(int n) {
  switch (n) {
  case 1:
    return dnnl_a;
  case 2:
    return dnnl_ab;
  case 3:
    return dnnl_abc;
  case 4:
    return dnnl_abcd;
  case 5:
    return dnnl_abcde;
  default:
    return dnnl_abcdef;
  }
}

/// oneDNN's channel-blocked layout (N x C/16 x spatial... x 16) of an
/// activation of rank n (3 to 5), the same one whose tensors it calls
/// nCw16c, nChw16c and nCdhw16c.
static dnnl_format_tag_t channelBlockedTag(int n) {
  switch (n) {
  case 3:
    return dnnl_aBc16b;
  case 4:
    return dnnl_aBcd16b;
  default:
    return dnnl_aBcde16b;
  }
}

/// A reorder from `from` to `to` on one engine.
static weft_rt_status makeReorder(weft_rt_context *ctx, dnnl_engine_t engine,
                                  const dnnl_memory_desc_t *from,
                                  const dnnl_memory_desc_t *to,
                                  dnnl_primitive_t *out) {
  dnnl_primitive_desc_t pd = nullptr;
  DNNL_TRY(ctx,
           dnnl_reorder_primitive_desc_create(&pd, from, engine, to, engine,
                                              nullptr),
           "reorder descriptor");
  dnnl_status_t status = dnnl_primitive_create(out, pd);
  dnnl_primitive_desc_destroy(pd);
  DNNL_TRY(ctx, status, "reorder creation");
  return WEFT_RT_OK;
}

/// Reserves room for `md` in the op's working memory; returns its offset.
static size_t reserveWork(OneDnnConv &e, const dnnl_memory_desc_t *md) {
  size_t offset = e.workBytes;
  e.workBytes += (dnnl_memory_desc_get_size(md) + 63) / 64 * 64;
  return offset;
}

/// Memory in the primitive's layout `md` unless it equals the caller's
/// `user` one; then the user's memory serves and no reorder is needed. With
/// `workOffset`, the memory gets no buffer of its own but a place in the
/// op's working memory (see OneDnnConv::workBytes), from *workOffset on.
static weft_rt_status internalMemory(weft_rt_context *ctx, OneDnnConv &e,
                                     const dnnl_memory_desc_t *md,
                                     const dnnl_memory_desc_t *user,
                                     dnnl_memory_t *out, bool &reorder,
                                     size_t *workOffset = nullptr) {
  reorder = !dnnl_memory_desc_equal(md, user);
  if (!reorder)
    return WEFT_RT_OK;
  if (!workOffset) {
    DNNL_TRY(ctx, dnnl_memory_create(out, md, e.engine, DNNL_MEMORY_ALLOCATE),
             "memory allocation");
    return WEFT_RT_OK;
  }
  *workOffset = reserveWork(e, md);
  DNNL_TRY(ctx, dnnl_memory_create(out, md, e.engine, nullptr),
           "memory creation");
  return WEFT_RT_OK;
}

namespace {
/// One context's working memory for its oneDNN convolutions (their
/// reordered inputs and outputs and their scratchpads), as large as the
/// largest needs. The convolutions run one at a time, so they share it:
/// each owning its buffers, CRNN's eight layers touched about 10 MB of them
/// per inference beside 26 MB of Winograd weights, and the weights fell out
/// of the 32 MB L3.
struct SharedWork : CacheEntry {
  ScratchBuffer buffer;
  size_t bytes = 0;
};
/// The cache key of SharedWork: an address no parameter block has, and a
/// one-word "block" to compare (an empty one would memcmp a null pointer).
const int64_t kSharedWorkKey = 0;
} // namespace

/// The context's working memory, grown to at least `bytes`; null after
/// reporting WEFT_RT_OUT_OF_MEMORY.
static void *sharedWork(weft_rt_context *ctx, size_t bytes) {
  auto *work = findCached<SharedWork>(ctx, &kSharedWorkKey, 1);
  if (!work)
    work = storeCached(ctx, &kSharedWorkKey, 1, std::make_unique<SharedWork>());
  if (work->bytes < bytes) {
    work->bytes = 0;
    if (work->buffer.allocate(ctx, "conv", static_cast<int64_t>(bytes),
                              "working memory") != WEFT_RT_OK)
      return nullptr;
    work->bytes = bytes;
  }
  return work->buffer.as<void>();
}

static weft_rt_status buildConv(weft_rt_context *ctx, OneDnnConv &e,
                                const ConvShape &s) {
  const int rank = static_cast<int>(s.spatialRank);
  const int first = 3 - rank;
  dnnl_dims_t srcDims = {s.n, s.c}, dstDims = {s.n, s.oc}, weightDims = {};
  dnnl_dims_t strides, dilations, padsBegin, padsEnd;
  bool grouped = s.group > 1;
  int w = 0;
  if (grouped)
    weightDims[w++] = s.group;
  weightDims[w++] = s.oc / s.group;
  weightDims[w++] = s.c / s.group;
  for (int d = 0; d < rank; ++d) {
    srcDims[2 + d] = s.in[first + d];
    dstDims[2 + d] = s.out[first + d];
    weightDims[w++] = s.kernel[first + d];
    strides[d] = s.strides[first + d];
    dilations[d] = s.dilations[first + d] - 1;
    padsBegin[d] = s.padsBegin[first + d];
    padsEnd[d] = s.padsEnd[first + d];
  }
  dnnl_dims_t biasDims = {s.oc};
  // The caller's source and output are NC[D]HW or channel-blocked, as the
  // layout word says: blocked ones need no reorder where the primitive
  // prefers that layout (Winograd, most direct convolutions on AVX-512).
  const dnnl_format_tag_t srcTag =
      s.inputBlocked ? channelBlockedTag(rank + 2) : plainTag(rank + 2);
  const dnnl_format_tag_t dstTag =
      s.outputBlocked ? channelBlockedTag(rank + 2) : plainTag(rank + 2);
  dnnl_memory_desc_t userSrc, userWeight, userBias, userDst;
  DNNL_TRY(ctx,
           dnnl_memory_desc_init_by_tag(&userSrc, rank + 2, srcDims, dnnl_f32,
                                        srcTag),
           "source descriptor");
  DNNL_TRY(ctx,
           dnnl_memory_desc_init_by_tag(&userWeight, w, weightDims, dnnl_f32,
                                        plainTag(w)),
           "weight descriptor");
  DNNL_TRY(
      ctx,
      dnnl_memory_desc_init_by_tag(&userBias, 1, biasDims, dnnl_f32, dnnl_a),
      "bias descriptor");
  DNNL_TRY(ctx,
           dnnl_memory_desc_init_by_tag(&userDst, rank + 2, dstDims, dnnl_f32,
                                        dstTag),
           "destination descriptor");

  bool plain = e.algorithm == ConvAlgorithm::OneDnnPlain;
  dnnl_memory_desc_t convSrc = userSrc, convWeight = userWeight,
                     convDst = userDst;
  if (!plain) {
    DNNL_TRY(ctx,
             dnnl_memory_desc_init_by_tag(&convSrc, rank + 2, srcDims, dnnl_f32,
                                          dnnl_format_tag_any),
             "source descriptor");
    DNNL_TRY(ctx,
             dnnl_memory_desc_init_by_tag(&convWeight, w, weightDims, dnnl_f32,
                                          dnnl_format_tag_any),
             "weight descriptor");
    DNNL_TRY(ctx,
             dnnl_memory_desc_init_by_tag(&convDst, rank + 2, dstDims, dnnl_f32,
                                          dnnl_format_tag_any),
             "destination descriptor");
  }
  dnnl_primitive_attr_t attr = nullptr;
  DNNL_TRY(ctx, dnnl_primitive_attr_create(&attr), "attribute creation");
  dnnl_status_t modeStatus =
      dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  if (modeStatus != dnnl_success) {
    dnnl_primitive_attr_destroy(attr);
    return dnnlFailure(ctx, modeStatus, "scratchpad mode");
  }
  // No eltwise post-op for the fused clamp: oneDNN's relu and clip turn a
  // NaN into the lower bound (its blocked direct kernel with Relu, Winograd
  // with Relu6), where weft_rt_cpu_conv keeps NaN; convOneDnn clamps in a
  // pass of its own.
  // Winograd exists for few shapes; where it does not, fall back to the
  // direct algorithm.
  dnnl_primitive_desc_t pd = nullptr;
  dnnl_status_t status = dnnl_unimplemented;
  for (dnnl_alg_kind_t kind :
       {dnnl_convolution_winograd, dnnl_convolution_direct}) {
    if (kind == dnnl_convolution_winograd &&
        e.algorithm != ConvAlgorithm::OneDnnWinograd)
      continue;
    dnnl_convolution_desc_t desc;
    DNNL_TRY(ctx,
             dnnl_dilated_convolution_forward_desc_init(
                 &desc, dnnl_forward_inference, kind, &convSrc, &convWeight,
                 e.hasBias ? &userBias : nullptr, &convDst, strides, dilations,
                 padsBegin, padsEnd),
             "convolution descriptor");
    status = dnnl_primitive_desc_create(&pd, &desc, attr, e.engine, nullptr);
    if (status == dnnl_success)
      break;
  }
  dnnl_primitive_attr_destroy(attr);
  DNNL_TRY(ctx, status, "convolution primitive descriptor");
  const char *name = nullptr;
  if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name) ==
          dnnl_success &&
      name)
    e.implementation = name;
  const dnnl_memory_desc_t *srcMd =
      dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
  const dnnl_memory_desc_t *weightMd =
      dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  const dnnl_memory_desc_t *dstMd =
      dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
  const dnnl_memory_desc_t *scratchMd =
      dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  status = dnnl_primitive_create(&e.conv, pd);
  // The descriptors queried above live in pd: finish with them first.
  weft_rt_status result = WEFT_RT_OK;
  bool reorderSrc = false, reorderWeight = false, reorderDst = false;
  if (status != dnnl_success)
    result = dnnlFailure(ctx, status, "convolution primitive creation");
  if (result == WEFT_RT_OK)
    result = internalMemory(ctx, e, srcMd, &userSrc, &e.convSrc, reorderSrc,
                            &e.srcOffset);
  // The reordered weights are kept between calls: memory of their own.
  if (result == WEFT_RT_OK)
    result = internalMemory(ctx, e, weightMd, &userWeight, &e.convWeight,
                            reorderWeight);
  if (result == WEFT_RT_OK)
    result = internalMemory(ctx, e, dstMd, &userDst, &e.convDst, reorderDst,
                            &e.dstOffset);
  if (result == WEFT_RT_OK && scratchMd &&
      dnnl_memory_desc_get_size(scratchMd) > 0) {
    e.scratchOffset = reserveWork(e, scratchMd);
    dnnl_status_t scratchStatus =
        dnnl_memory_create(&e.scratchpad, scratchMd, e.engine, nullptr);
    if (scratchStatus != dnnl_success)
      result = dnnlFailure(ctx, scratchStatus, "scratchpad creation");
  }
  if (result == WEFT_RT_OK && reorderSrc)
    result = makeReorder(ctx, e.engine, &userSrc, srcMd, &e.srcReorder);
  if (result == WEFT_RT_OK && reorderWeight)
    result =
        makeReorder(ctx, e.engine, &userWeight, weightMd, &e.weightReorder);
  if (result == WEFT_RT_OK && reorderDst)
    result = makeReorder(ctx, e.engine, dstMd, &userDst, &e.dstReorder);
  dnnl_primitive_desc_destroy(pd);
  WEFT_RT_TRY(result);

  // Memories over the caller's buffers; their handles are set at each call.
  DNNL_TRY(ctx, dnnl_memory_create(&e.userSrc, &userSrc, e.engine, nullptr),
           "memory creation");
  DNNL_TRY(ctx,
           dnnl_memory_create(&e.userWeight, &userWeight, e.engine, nullptr),
           "memory creation");
  DNNL_TRY(ctx, dnnl_memory_create(&e.userBias, &userBias, e.engine, nullptr),
           "memory creation");
  DNNL_TRY(ctx, dnnl_memory_create(&e.userDst, &userDst, e.engine, nullptr),
           "memory creation");
  return WEFT_RT_OK;
}

static weft_rt_status execute(weft_rt_context *ctx, OneDnnConv &e,
                              dnnl_primitive_t primitive, int count,
                              const dnnl_exec_arg_t *args, const char *what) {
  DNNL_TRY(ctx, dnnl_primitive_execute(primitive, e.stream, count, args), what);
  return WEFT_RT_OK;
}

weft_rt_status weft::rt::cpu::convOneDnn(weft_rt_context *ctx,
                                         ConvAlgorithm algorithm,
                                         const int64_t *params,
                                         const ConvShape &s, const float *input,
                                         const float *weight, const float *bias,
                                         float *out) {
  if (algorithm == ConvAlgorithm::Auto)
    algorithm = ConvAlgorithm::OneDnnBlocked;
  bool hasBias = bias != nullptr;
  auto *all = findCached<OneDnnConvByThreads>(ctx, params, s.words);
  if (!all)
    all = storeCached(ctx, params, s.words,
                      std::make_unique<OneDnnConvByThreads>());
  std::unique_ptr<OneDnnConv> &slot = all->byThreads[ctx->numThreads];
  OneDnnConv *e = slot.get();
  // oneDNN sizes a primitive's team from OpenMP's setting at creation, and
  // keeps it: set the context's count first.
  applyLibraryThreads(ctx);
  if (e && (e->algorithm != algorithm || e->hasBias != hasBias))
    e = nullptr;
  if (!e) {
    auto entry = std::make_unique<OneDnnConv>();
    entry->algorithm = algorithm;
    entry->hasBias = hasBias;
    entry->threads = ctx->numThreads;
    entry->weightCount = (s.oc / s.group) * s.c * s.kernelVolume();
    DNNL_TRY(ctx, dnnl_engine_create(&entry->engine, dnnl_cpu, 0),
             "engine creation");
    DNNL_TRY(ctx,
             dnnl_stream_create(&entry->stream, entry->engine,
                                dnnl_stream_default_flags),
             "stream creation");
    WEFT_RT_TRY(buildConv(ctx, *entry, s));
    slot = std::move(entry);
    e = slot.get();
  }

  auto handle = [](const float *p) {
    return const_cast<void *>(static_cast<const void *>(p));
  };
  DNNL_TRY(ctx, dnnl_memory_set_data_handle(e->userSrc, handle(input)),
           "set source");
  DNNL_TRY(ctx, dnnl_memory_set_data_handle(e->userWeight, handle(weight)),
           "set weights");
  DNNL_TRY(ctx, dnnl_memory_set_data_handle(e->userDst, out), "set output");
  if (hasBias)
    DNNL_TRY(ctx, dnnl_memory_set_data_handle(e->userBias, handle(bias)),
             "set bias");
  if (e->workBytes > 0) {
    auto *work = static_cast<char *>(sharedWork(ctx, e->workBytes));
    if (!work)
      return WEFT_RT_OUT_OF_MEMORY;
    if (e->convSrc)
      DNNL_TRY(ctx,
               dnnl_memory_set_data_handle(e->convSrc, work + e->srcOffset),
               "set reordered source");
    if (e->convDst)
      DNNL_TRY(ctx,
               dnnl_memory_set_data_handle(e->convDst, work + e->dstOffset),
               "set reordered output");
    if (e->scratchpad)
      DNNL_TRY(
          ctx,
          dnnl_memory_set_data_handle(e->scratchpad, work + e->scratchOffset),
          "set scratchpad");
  }

  // Weights are constant: reorder them once per buffer.
  if (e->weightReorder && !e->probe.matches(weight, e->weightCount)) {
    dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, e->userWeight},
                              {DNNL_ARG_TO, e->convWeight}};
    WEFT_RT_TRY(execute(ctx, *e, e->weightReorder, 2, args, "weight reorder"));
    e->probe.take(weight, e->weightCount);
  }
  if (e->srcReorder) {
    dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, e->userSrc},
                              {DNNL_ARG_TO, e->convSrc}};
    WEFT_RT_TRY(execute(ctx, *e, e->srcReorder, 2, args, "source reorder"));
  }
  dnnl_exec_arg_t args[5] = {
      {DNNL_ARG_SRC, e->srcReorder ? e->convSrc : e->userSrc},
      {DNNL_ARG_WEIGHTS, e->weightReorder ? e->convWeight : e->userWeight},
      {DNNL_ARG_DST, e->dstReorder ? e->convDst : e->userDst},
      {DNNL_ARG_SCRATCHPAD, e->scratchpad},
      {DNNL_ARG_BIAS, e->userBias}};
  int count = (e->scratchpad ? 4 : 3) + (hasBias ? 1 : 0);
  if (!e->scratchpad)
    args[3] = args[4];
  WEFT_RT_TRY(execute(ctx, *e, e->conv, count, args, "convolution"));
  if (e->dstReorder) {
    dnnl_exec_arg_t back[] = {{DNNL_ARG_FROM, e->convDst},
                              {DNNL_ARG_TO, e->userDst}};
    WEFT_RT_TRY(execute(ctx, *e, e->dstReorder, 2, back, "output reorder"));
  }
  DNNL_TRY(ctx, dnnl_stream_wait(e->stream), "stream wait");
  // The clamp, in any layout (see buildConv: no eltwise post-op).
  if (s.hasClamp)
    addAndClamp(s, out, nullptr, s.n * s.oc * s.outPlane(),
                threadsFor(ctx, s.n * s.oc * s.outPlane()));
  return WEFT_RT_OK;
}

/// The primitive cached for `params` at the context's thread count, or
/// null.
static const OneDnnConv *cachedConv(weft_rt_context *ctx,
                                    const int64_t *params) {
  auto it = ctx->kernelCache.find(params);
  if (it == ctx->kernelCache.end())
    return nullptr;
  auto *all = dynamic_cast<OneDnnConvByThreads *>(it->second.get());
  if (!all)
    return nullptr;
  auto byThreads = all->byThreads.find(ctx->numThreads);
  if (byThreads == all->byThreads.end())
    return nullptr;
  return byThreads->second.get();
}

std::string weft::rt::cpu::oneDnnConvImplementation(weft_rt_context *ctx,
                                                    const int64_t *params) {
  const OneDnnConv *e = cachedConv(ctx, params);
  return e ? e->implementation : "";
}

bool weft::rt::cpu::oneDnnConvReorders(weft_rt_context *ctx,
                                       const int64_t *params, bool &source,
                                       bool &output) {
  const OneDnnConv *e = cachedConv(ctx, params);
  if (!e)
    return false;
  source = e->srcReorder != nullptr;
  output = e->dstReorder != nullptr;
  return true;
}
