//===- KernelParams.cpp - Parameter blocks shared with the GPU ------------===//
//
// parsePool, parseMatmul, parseEinsum, parseReduce and the rest: the checks
// of the CPU kernels' parameter blocks, which the CUDA kernels' host side
// shares.
// Nothing here may use OpenMP, OpenBLAS or oneDNN: a CUDA executable links
// this file without them.
//
//===----------------------------------------------------------------------===//

#include "KernelParams.h"
#include "ElementCopy.h"

using namespace weft::rt;
using namespace weft::rt::cpu;

//===----------------------------------------------------------------------===//
// Pool
//===----------------------------------------------------------------------===//

void weft::rt::cpu::readSpatialArrays(ParamReader &r, int64_t rank,
                                      int64_t *const fields[7]) {
  const int64_t leading[] = {1, 1, 1, 1, 0, 0, 1};
  for (int f = 0; f < 7; ++f) {
    const int64_t *values = r.array(rank);
    for (int64_t d = 0; d < 3 - rank; ++d)
      fields[f][d] = leading[f];
    for (int64_t d = 0; d < rank; ++d)
      fields[f][3 - rank + d] = values[d];
  }
}

weft_rt_status weft::rt::cpu::parsePool(weft_rt_context *ctx,
                                        const int64_t *params,
                                        uint32_t floatDtypes, PoolShape &s) {
  WEFT_RT_REQUIRE(ctx, params, "pool: parameter block is NULL");
  ParamReader r(params);
  s.dtype = r.next();
  int64_t kind = r.next(), includePad = r.next();
  WEFT_RT_REQUIRE(ctx, kind == 0 || kind == 1,
                  "pool: kind %lld is neither 0 (max) nor 1 (average)",
                  (long long)kind);
  s.isMax = kind == 0;
  WEFT_RT_TRY(checkDtype(ctx, s.isMax ? "max pool" : "average pool", s.dtype,
                         s.isMax ? floatDtypes | kByteDtypes : floatDtypes));
  WEFT_RT_REQUIRE(ctx, includePad == 0 || includePad == 1,
                  "pool: count_include_pad is %lld, not 0 or 1",
                  (long long)includePad);
  s.countIncludePad = includePad == 1;
  int64_t rank = r.next(), n = r.next(), c = r.next();
  WEFT_RT_REQUIRE(ctx, rank >= 1 && rank <= 3,
                  "pool: %lld spatial dimensions (1 to 3 are supported)",
                  (long long)rank);
  WEFT_RT_REQUIRE(ctx, checkedMul(n, c, s.planes),
                  "pool: N=%lld and C=%lld are negative or overflow",
                  (long long)n, (long long)c);
  int64_t *const fields[] = {s.in,        s.kernel,  s.strides, s.dilations,
                             s.padsBegin, s.padsEnd, s.out};
  readSpatialArrays(r, rank, fields);
  int64_t layout = r.next();
  WEFT_RT_REQUIRE(ctx, layout == 0 || layout == 1,
                  "pool: layout %lld is neither 0 (NC[D]HW) nor 1 "
                  "(channel-blocked by 16)",
                  (long long)layout);
  s.channelBlocked = layout == 1;
  if (s.channelBlocked) {
    WEFT_RT_REQUIRE(ctx, c % 16 == 0,
                    "pool: the channel-blocked layout (1) needs C to be a "
                    "multiple of 16, not %lld",
                    (long long)c);
    WEFT_RT_TRY(checkDtype(ctx, "channel-blocked pool", s.dtype,
                           dtypeBit(WEFT_RT_F32)));
  }
  for (int64_t d = 3 - rank; d < 3; ++d) {
    long long axis = d - (3 - rank);
    WEFT_RT_REQUIRE(ctx,
                    s.in[d] >= 0 && s.kernel[d] >= 1 && s.strides[d] >= 1 &&
                        s.dilations[d] >= 1 && s.padsBegin[d] >= 0 &&
                        s.padsEnd[d] >= 0,
                    "pool: spatial axis %lld has input %lld, kernel %lld, "
                    "stride %lld, dilation %lld, pads %lld and %lld",
                    axis, (long long)s.in[d], (long long)s.kernel[d],
                    (long long)s.strides[d], (long long)s.dilations[d],
                    (long long)s.padsBegin[d], (long long)s.padsEnd[d]);
    int64_t span, padded;
    WEFT_RT_REQUIRE(ctx,
                    dilatedSpan(s.in[d], s.kernel[d], s.dilations[d],
                                s.padsBegin[d], s.padsEnd[d], span, padded),
                    "pool: sizes of spatial axis %lld overflow", axis);
    WEFT_RT_REQUIRE(ctx, padded > span,
                    "pool: on spatial axis %lld the dilated window (%lld) is "
                    "larger than the padded input (%lld)",
                    axis, (long long)(span + 1), (long long)padded);
    // Floor mode or ceil mode.
    int64_t low = (padded - span - 1) / s.strides[d] + 1;
    int64_t high = ceilDiv(padded - span - 1, s.strides[d]) + 1;
    WEFT_RT_REQUIRE(ctx, s.out[d] == low || s.out[d] == high,
                    "pool: output size %lld on spatial axis %lld, expected "
                    "%lld (or %lld in ceil mode)",
                    (long long)s.out[d], axis, (long long)low, (long long)high);
  }
  int64_t count;
  const int64_t inFactors[] = {s.planes, s.in[0], s.in[1], s.in[2]};
  const int64_t outFactors[] = {s.planes, s.out[0], s.out[1], s.out[2]};
  WEFT_RT_REQUIRE(ctx,
                  checkedProduct(inFactors, 4, count) &&
                      checkedProduct(outFactors, 4, count),
                  "pool: tensor sizes overflow int64");
  return WEFT_RT_OK;
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

weft_rt_status weft::rt::cpu::parseMatmul(weft_rt_context *ctx,
                                          const int64_t *params,
                                          uint32_t dtypes, MatmulShape &s) {
  WEFT_RT_REQUIRE(ctx, params, "matmul: parameter block is NULL");
  ParamReader r(params);
  s.dtype = r.next();
  WEFT_RT_TRY(checkDtype(ctx, "matmul", s.dtype, dtypes));
  s.m = r.next();
  s.n = r.next();
  s.k = r.next();
  int64_t transA = r.next(), transB = r.next();
  s.alpha = r.nextDouble();
  s.beta = r.nextDouble();
  s.biasRowStride = r.next();
  s.biasColStride = r.next();
  s.rank = r.next();
  WEFT_RT_REQUIRE(ctx, s.m >= 0 && s.n >= 0 && s.k >= 0,
                  "matmul: negative size M=%lld N=%lld K=%lld", (long long)s.m,
                  (long long)s.n, (long long)s.k);
  WEFT_RT_REQUIRE(ctx,
                  (transA == 0 || transA == 1) && (transB == 0 || transB == 1),
                  "matmul: trans_a=%lld and trans_b=%lld must be 0 or 1",
                  (long long)transA, (long long)transB);
  s.transA = transA, s.transB = transB;
  WEFT_RT_REQUIRE(ctx, s.biasRowStride >= 0 && s.biasColStride >= 0,
                  "matmul: negative bias strides %lld, %lld",
                  (long long)s.biasRowStride, (long long)s.biasColStride);
  WEFT_RT_REQUIRE(ctx, s.rank >= 0 && s.rank <= kMaxRank,
                  "matmul: batch rank %lld is not between 0 and %lld",
                  (long long)s.rank, (long long)kMaxRank);
  s.batchDims = r.array(s.rank);
  s.aStrides = r.array(s.rank);
  s.bStrides = r.array(s.rank);
  WEFT_RT_REQUIRE(ctx, checkedProduct(s.batchDims, s.rank, s.batch),
                  "matmul: batch dimensions are negative or overflow");
  for (int64_t i = 0; i < s.rank; ++i)
    WEFT_RT_REQUIRE(ctx, s.aStrides[i] >= 0 && s.bStrides[i] >= 0,
                    "matmul: negative batch stride at batch dimension %lld",
                    (long long)i);
  int64_t mn, mk, kn, total;
  WEFT_RT_REQUIRE(ctx,
                  checkedMul(s.m, s.n, mn) && checkedMul(s.m, s.k, mk) &&
                      checkedMul(s.k, s.n, kn) &&
                      checkedMul(s.batch, mn, total),
                  "matmul: sizes overflow int64");
  return WEFT_RT_OK;
}

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

/// Reads one operand's index list and derives its strides.
static weft_rt_status readOperand(weft_rt_context *ctx, ParamReader &r,
                                  int64_t which, int64_t numIndices,
                                  const int64_t *sizes,
                                  EinsumOperand &operand) {
  operand.rank = r.next();
  WEFT_RT_REQUIRE(ctx, operand.rank >= 0 && operand.rank <= kMaxRank,
                  "einsum: input %lld has rank %lld (at most %lld)",
                  (long long)which, (long long)operand.rank,
                  (long long)kMaxRank);
  operand.indices = r.array(operand.rank);
  int64_t stride = 1;
  for (int64_t p = operand.rank - 1; p >= 0; --p) {
    int64_t l = operand.indices[p];
    WEFT_RT_REQUIRE(ctx, l >= 0 && l < numIndices,
                    "einsum: input %lld names index %lld of %lld",
                    (long long)which, (long long)l, (long long)numIndices);
    operand.strides[l] += stride;
    operand.has[l] = true;
    WEFT_RT_REQUIRE(ctx, checkedMul(stride, sizes[l], stride),
                    "einsum: the size of input %lld overflows",
                    (long long)which);
  }
  operand.count = stride;
  return WEFT_RT_OK;
}

weft_rt_status weft::rt::cpu::parseEinsum(weft_rt_context *ctx,
                                          const int64_t *params,
                                          uint32_t dtypes, EinsumShape &s) {
  WEFT_RT_REQUIRE(ctx, params, "einsum: parameter block is NULL");
  ParamReader r(params);
  s.dtype = r.next();
  WEFT_RT_TRY(checkDtype(ctx, "einsum", s.dtype, dtypes));
  s.numIndices = r.next();
  WEFT_RT_REQUIRE(ctx, s.numIndices >= 0 && s.numIndices <= kMaxEinsumIndices,
                  "einsum: %lld distinct indices (at most %lld)",
                  (long long)s.numIndices, (long long)kMaxEinsumIndices);
  s.sizes = r.array(s.numIndices);
  int64_t total;
  WEFT_RT_REQUIRE(ctx, checkedProduct(s.sizes, s.numIndices, total),
                  "einsum: index sizes are negative or their product "
                  "overflows");
  s.outRank = r.next();
  WEFT_RT_REQUIRE(ctx, s.outRank >= 0 && s.outRank <= kMaxRank,
                  "einsum: output rank %lld (at most %lld)",
                  (long long)s.outRank, (long long)kMaxRank);
  s.outIndices = r.array(s.outRank);
  for (int64_t i = 0; i < s.outRank; ++i) {
    int64_t l = s.outIndices[i];
    WEFT_RT_REQUIRE(ctx, l >= 0 && l < s.numIndices && !s.inOut[l],
                    "einsum: output index %lld at position %lld is out of "
                    "range or repeated",
                    (long long)l, (long long)i);
    s.inOut[l] = true;
  }
  s.numInputs = r.next();
  WEFT_RT_REQUIRE(ctx, s.numInputs == 1 || s.numInputs == 2,
                  "einsum: %lld inputs (1 or 2 are supported)",
                  (long long)s.numInputs);
  for (int64_t i = 0; i < s.numInputs; ++i)
    WEFT_RT_TRY(readOperand(ctx, r, i, s.numIndices, s.sizes, s.operands[i]));
  for (int64_t i = 0; i < s.outRank; ++i) {
    int64_t l = s.outIndices[i];
    WEFT_RT_REQUIRE(ctx, s.operands[0].has[l] || s.operands[1].has[l],
                    "einsum: output index %lld appears in no input",
                    (long long)l);
  }
  return WEFT_RT_OK;
}

//===----------------------------------------------------------------------===//
// Reduce
//===----------------------------------------------------------------------===//

const char *const weft::rt::cpu::kReduceNames[kLogSum + 1] = {
    "mean", "sum", "max",         "min",        "prod",
    "l1",   "l2",  "log_sum_exp", "sum_square", "log_sum"};

weft_rt_status weft::rt::cpu::parseReduce(weft_rt_context *ctx,
                                          const int64_t *params, ReduceShape &s,
                                          ReduceLayout &l) {
  WEFT_RT_REQUIRE(ctx, params, "reduce: parameter block is NULL");
  ParamReader r(params);
  s.dtype = r.next(), s.kind = r.next(), s.rank = r.next();
  WEFT_RT_REQUIRE(ctx, s.kind >= kMean && s.kind <= kLogSum,
                  "reduce: unknown kind %lld", (long long)s.kind);
  WEFT_RT_TRY(checkDtype(ctx, "reduce", s.dtype,
                         s.kind == kMax || s.kind == kMin
                             ? kNumericDtypes | kByteDtypes
                             : kNumericDtypes));
  WEFT_RT_REQUIRE(ctx, s.rank >= 0 && s.rank <= kMaxRank,
                  "reduce: rank %lld is not between 0 and %lld",
                  (long long)s.rank, (long long)kMaxRank);
  s.dims = r.array(s.rank);
  s.mask = r.array(s.rank);
  WEFT_RT_REQUIRE(ctx, checkedProduct(s.dims, s.rank, l.inCount),
                  "reduce: dimensions are negative or overflow");
  l.outCount = 1, l.reducedCount = 1;
  for (int64_t d = 0; d < s.rank; ++d) {
    WEFT_RT_REQUIRE(ctx, s.mask[d] == 0 || s.mask[d] == 1,
                    "reduce: mask entry %lld is %lld, not 0 or 1", (long long)d,
                    (long long)s.mask[d]);
    if (s.mask[d])
      l.reducedCount *= s.dims[d];
    else
      l.outCount *= s.dims[d];
  }
  return WEFT_RT_OK;
}

void weft::rt::cpu::mergeReduceDims(const ReduceShape &s, ReduceLayout &l) {
  // Row-major strides, then the dimensions that matter, merged.
  int64_t stride = 1, strides[kMaxRank];
  for (int64_t d = s.rank - 1; d >= 0; --d)
    strides[d] = stride, stride *= s.dims[d];
  l.rank = 0;
  for (int64_t d = 0; d < s.rank; ++d) {
    if (s.dims[d] == 1)
      continue;
    bool reduced = s.mask[d] == 1;
    if (l.rank > 0 && l.reduced[l.rank - 1] == reduced) {
      l.sizes[l.rank - 1] *= s.dims[d];
      l.strides[l.rank - 1] = strides[d];
      continue;
    }
    l.sizes[l.rank] = s.dims[d];
    l.strides[l.rank] = strides[d];
    l.reduced[l.rank++] = reduced;
  }
  if (l.rank == 0) {
    // One element: reduce over a size-1 dimension.
    l.rank = 1, l.sizes[0] = 1, l.strides[0] = 1, l.reduced[0] = true;
  }
}

//===----------------------------------------------------------------------===//
// Softmax, normalization and arg_reduce
//===----------------------------------------------------------------------===//

weft_rt_status weft::rt::cpu::parseSoftmax(weft_rt_context *ctx,
                                           const int64_t *params,
                                           SoftmaxShape &s) {
  WEFT_RT_REQUIRE(ctx, params, "softmax: parameter block is NULL");
  ParamReader r(params);
  s.dtype = r.next();
  WEFT_RT_TRY(checkDtype(ctx, "softmax", s.dtype, kFloatDtypes));
  s.outer = r.next();
  s.axis = r.next();
  s.inner = r.next();
  int64_t log = r.next();
  WEFT_RT_REQUIRE(ctx, log == 0 || log == 1,
                  "softmax: log flag %lld is not 0 or 1", (long long)log);
  s.log = log == 1;
  const int64_t factors[] = {s.outer, s.axis, s.inner};
  WEFT_RT_REQUIRE(ctx, checkedProduct(factors, 3, s.count),
                  "softmax: outer=%lld, axis=%lld, inner=%lld are negative "
                  "or overflow",
                  (long long)s.outer, (long long)s.axis, (long long)s.inner);
  return WEFT_RT_OK;
}

weft_rt_status weft::rt::cpu::parseNormalize(weft_rt_context *ctx,
                                             const int64_t *params,
                                             NormalizeShape &s) {
  WEFT_RT_REQUIRE(ctx, params, "normalize: parameter block is NULL");
  ParamReader r(params);
  s.dtype = r.next();
  WEFT_RT_TRY(checkDtype(ctx, "normalize", s.dtype, kFloatDtypes));
  int64_t kind = r.next();
  s.outer = r.next();
  s.size = r.next();
  s.channels = r.next();
  s.epsilon = r.nextDouble();
  WEFT_RT_REQUIRE(ctx, kind == 0 || kind == 1,
                  "normalize: kind %lld is neither 0 (layer) nor 1 "
                  "(instance)",
                  (long long)kind);
  s.instance = kind == 1;
  WEFT_RT_REQUIRE(ctx, checkedMul(s.outer, s.size, s.count),
                  "normalize: outer=%lld and size=%lld are negative or "
                  "overflow",
                  (long long)s.outer, (long long)s.size);
  WEFT_RT_REQUIRE(ctx, s.epsilon >= 0.0,
                  "normalize: epsilon %g is negative or NaN", s.epsilon);
  if (s.instance) {
    WEFT_RT_REQUIRE(ctx, s.channels >= 1 && s.outer % s.channels == 0,
                    "normalize: %lld instance rows are not a multiple of "
                    "%lld channels",
                    (long long)s.outer, (long long)s.channels);
  }
  return WEFT_RT_OK;
}

weft_rt_status weft::rt::cpu::parseBatchNorm(weft_rt_context *ctx,
                                             const int64_t *params,
                                             uint32_t dtypes,
                                             BatchNormShape &s) {
  WEFT_RT_REQUIRE(ctx, params, "batch_norm: parameter block is NULL");
  ParamReader r(params);
  s.dtype = r.next();
  WEFT_RT_TRY(checkDtype(ctx, "batch_norm", s.dtype, dtypes));
  s.n = r.next(), s.c = r.next(), s.inner = r.next();
  s.epsilon = r.nextDouble();
  WEFT_RT_REQUIRE(ctx,
                  checkedMul(s.n, s.c, s.planes) &&
                      checkedMul(s.planes, s.inner, s.count),
                  "batch_norm: N=%lld, C=%lld, inner=%lld are negative or "
                  "overflow",
                  (long long)s.n, (long long)s.c, (long long)s.inner);
  WEFT_RT_REQUIRE(ctx, s.epsilon >= 0.0,
                  "batch_norm: epsilon %g is negative or NaN", s.epsilon);
  return WEFT_RT_OK;
}

weft_rt_status weft::rt::cpu::parseArgReduce(weft_rt_context *ctx,
                                             const int64_t *params,
                                             ArgReduceShape &s) {
  WEFT_RT_REQUIRE(ctx, params, "arg_reduce: parameter block is NULL");
  ParamReader r(params);
  s.dtype = r.next(), s.kind = r.next();
  s.outer = r.next(), s.axis = r.next(), s.inner = r.next();
  int64_t selectLast = r.next();
  WEFT_RT_TRY(
      checkDtype(ctx, "arg_reduce", s.dtype, kNumericDtypes | kByteDtypes));
  WEFT_RT_REQUIRE(ctx, s.kind == 0 || s.kind == 1,
                  "arg_reduce: kind %lld is neither 0 (argmax) nor 1 "
                  "(argmin)",
                  (long long)s.kind);
  WEFT_RT_REQUIRE(ctx, selectLast == 0 || selectLast == 1,
                  "arg_reduce: select_last_index is %lld, not 0 or 1",
                  (long long)selectLast);
  s.selectLast = selectLast == 1;
  const int64_t factors[] = {s.outer, s.axis, s.inner};
  WEFT_RT_REQUIRE(ctx,
                  checkedProduct(factors, 3, s.count) &&
                      checkedMul(s.outer, s.inner, s.outCount),
                  "arg_reduce: outer=%lld, axis=%lld, inner=%lld are "
                  "negative or overflow",
                  (long long)s.outer, (long long)s.axis, (long long)s.inner);
  return WEFT_RT_OK;
}

//===----------------------------------------------------------------------===//
// Data movement and indexing
//===----------------------------------------------------------------------===//

weft_rt_status weft::rt::cpu::parseTranspose(weft_rt_context *ctx,
                                             const int64_t *params,
                                             TransposeShape &s) {
  static const char *const kernel = "transpose";
  WEFT_RT_REQUIRE(ctx, params, "transpose: parameter block is NULL");
  ParamReader r(params);
  s.elementBytes = r.next(), s.rank = r.next(), s.count = 0;
  WEFT_RT_TRY(checkElementSize(ctx, kernel, s.elementBytes));
  WEFT_RT_TRY(readDims(ctx, kernel, r, s.rank, s.dims, &s.count, "input dims"));
  s.perm = r.array(s.rank);
  bool seen[kMaxRank] = {};
  for (int64_t i = 0; i < s.rank; ++i) {
    int64_t d = s.perm[i];
    WEFT_RT_REQUIRE(ctx, d >= 0 && d < s.rank && !seen[d],
                    "transpose: perm[%lld] = %lld does not make a "
                    "permutation of %lld dimensions",
                    (long long)i, (long long)d, (long long)s.rank);
    seen[d] = true;
  }
  return WEFT_RT_OK;
}

weft_rt_status weft::rt::cpu::parseSlice(weft_rt_context *ctx,
                                         const int64_t *params, SliceShape &s) {
  static const char *const kernel = "slice";
  WEFT_RT_REQUIRE(ctx, params, "slice: parameter block is NULL");
  ParamReader r(params);
  s.elementBytes = r.next(), s.rank = r.next(), s.outCount = 0;
  WEFT_RT_TRY(checkElementSize(ctx, kernel, s.elementBytes));
  WEFT_RT_TRY(
      readDims(ctx, kernel, r, s.rank, s.inDims, nullptr, "input dims"));
  WEFT_RT_TRY(
      readDims(ctx, kernel, r, s.rank, s.outDims, &s.outCount, "output dims"));
  s.starts = r.array(s.rank), s.steps = r.array(s.rank);
  const int64_t *inDims = s.inDims, *outDims = s.outDims;
  const int64_t *starts = s.starts, *steps = s.steps;
  for (int64_t d = 0; d < s.rank; ++d) {
    WEFT_RT_REQUIRE(ctx, steps[d] != 0, "slice: step of dimension %lld is 0",
                    (long long)d);
    if (outDims[d] == 0)
      continue;
    int64_t span, last;
    bool inRange = starts[d] >= 0 && starts[d] < inDims[d] &&
                   !__builtin_mul_overflow(outDims[d] - 1, steps[d], &span) &&
                   !__builtin_add_overflow(starts[d], span, &last) &&
                   last >= 0 && last < inDims[d];
    WEFT_RT_REQUIRE(ctx, inRange,
                    "slice: dimension %lld reads %lld elements from %lld with "
                    "step %lld, outside its size %lld",
                    (long long)d, (long long)outDims[d], (long long)starts[d],
                    (long long)steps[d], (long long)inDims[d]);
  }
  return WEFT_RT_OK;
}

static const char *const kPadModes[] = {"constant", "reflect", "edge", "wrap"};

weft_rt_status weft::rt::cpu::parsePad(weft_rt_context *ctx,
                                       const int64_t *params, PadShape &s) {
  static const char *const kernel = "pad";
  WEFT_RT_REQUIRE(ctx, params, "pad: parameter block is NULL");
  ParamReader r(params);
  s.elementBytes = r.next(), s.mode = r.next(), s.rank = r.next();
  WEFT_RT_TRY(checkElementSize(ctx, kernel, s.elementBytes));
  WEFT_RT_REQUIRE(ctx, s.mode >= kConstant && s.mode <= kWrap,
                  "pad: mode %lld is not 0 (constant), 1 (reflect), 2 (edge) "
                  "or 3 (wrap)",
                  (long long)s.mode);
  s.inCount = 0;
  WEFT_RT_TRY(
      readDims(ctx, kernel, r, s.rank, s.inDims, &s.inCount, "input dims"));
  s.pads = r.array(2 * s.rank);
  const int64_t rank = s.rank, *inDims = s.inDims, *pads = s.pads;
  s.outCount = 1;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size;
    bool fits = !__builtin_add_overflow(inDims[d], pads[d], &size) &&
                !__builtin_add_overflow(size, pads[rank + d], &size) &&
                size >= 0;
    WEFT_RT_REQUIRE(ctx, fits,
                    "pad: dimension %lld of size %lld padded by %lld and %lld "
                    "has a negative or overflowing size",
                    (long long)d, (long long)inDims[d], (long long)pads[d],
                    (long long)pads[rank + d]);
    s.outDims[d] = size;
    WEFT_RT_REQUIRE(ctx, checkedMul(s.outCount, size, s.outCount),
                    "pad: the output size overflows");
    WEFT_RT_REQUIRE(ctx, s.mode == kConstant || inDims[d] > 0 || size == 0,
                    "pad: %s mode cannot pad dimension %lld, which is empty",
                    kPadModes[s.mode], (long long)d);
  }
  return WEFT_RT_OK;
}

weft_rt_status weft::rt::cpu::parseTile(weft_rt_context *ctx,
                                        const int64_t *params, TileShape &s) {
  static const char *const kernel = "tile";
  WEFT_RT_REQUIRE(ctx, params, "tile: parameter block is NULL");
  ParamReader r(params);
  s.elementBytes = r.next(), s.rank = r.next();
  WEFT_RT_TRY(checkElementSize(ctx, kernel, s.elementBytes));
  WEFT_RT_TRY(
      readDims(ctx, kernel, r, s.rank, s.inDims, nullptr, "input dims"));
  s.repeats = r.array(s.rank);
  s.outCount = 1;
  for (int64_t d = 0; d < s.rank; ++d) {
    WEFT_RT_REQUIRE(ctx,
                    checkedMul(s.inDims[d], s.repeats[d], s.outDims[d]) &&
                        checkedMul(s.outCount, s.outDims[d], s.outCount),
                    "tile: repeats[%lld] = %lld is negative or the output "
                    "size overflows",
                    (long long)d, (long long)s.repeats[d]);
  }
  return WEFT_RT_OK;
}

weft_rt_status weft::rt::cpu::parseTrilu(weft_rt_context *ctx,
                                         const int64_t *params, TriluShape &s) {
  static const char *const kernel = "trilu";
  WEFT_RT_REQUIRE(ctx, params, "trilu: parameter block is NULL");
  ParamReader r(params);
  s.elementBytes = r.next(), s.count = 0;
  WEFT_RT_TRY(checkElementSize(ctx, kernel, s.elementBytes));
  WEFT_RT_TRY(
      readDims(ctx, kernel, r, 3, s.dims, &s.count, "batch, rows and cols"));
  int64_t upper;
  s.k = r.next(), upper = r.next();
  WEFT_RT_REQUIRE(ctx, upper == 0 || upper == 1,
                  "trilu: upper is %lld, not 0 or 1", (long long)upper);
  s.upper = upper == 1;
  return WEFT_RT_OK;
}

weft_rt_status weft::rt::cpu::parseCopy2d(weft_rt_context *ctx,
                                          const int64_t *params,
                                          Copy2dShape &s) {
  WEFT_RT_REQUIRE(ctx, params, "copy2d: parameter block is NULL");
  ParamReader r(params);
  s.rows = r.next(), s.rowBytes = r.next();
  s.srcOffset = r.next(), s.srcStride = r.next();
  s.dstOffset = r.next(), s.dstStride = r.next();
  WEFT_RT_REQUIRE(ctx,
                  s.rows >= 0 && s.rowBytes >= 0 && s.srcOffset >= 0 &&
                      s.srcStride >= 0 && s.dstOffset >= 0 && s.dstStride >= 0,
                  "copy2d: negative rows, row bytes, offsets or strides");
  if (s.empty())
    return WEFT_RT_OK;
  int64_t srcEnd, dstEnd;
  WEFT_RT_REQUIRE(
      ctx,
      checkedMul(s.rows - 1, s.srcStride, srcEnd) &&
          !__builtin_add_overflow(srcEnd, s.srcOffset + s.rowBytes, &srcEnd) &&
          checkedMul(s.rows - 1, s.dstStride, dstEnd) &&
          !__builtin_add_overflow(dstEnd, s.dstOffset + s.rowBytes, &dstEnd),
      "copy2d: offsets overflow");
  WEFT_RT_REQUIRE(
      ctx,
      s.rows == 1 || (s.srcStride >= s.rowBytes && s.dstStride >= s.rowBytes),
      "copy2d: strides %lld and %lld are shorter than the rows "
      "(%lld bytes)",
      (long long)s.srcStride, (long long)s.dstStride, (long long)s.rowBytes);
  return WEFT_RT_OK;
}

/// Fails unless `dtype` is i32 or i64.
static weft_rt_status checkIndexDtype(weft_rt_context *ctx, const char *kernel,
                                      int64_t dtype) {
  if (dtype == WEFT_RT_I32 || dtype == WEFT_RT_I64)
    return WEFT_RT_OK;
  return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                      "%s: index dtype %s (code %lld) is not i32 or i64",
                      kernel,
                      weft_rt_dtype_name(static_cast<weft_rt_dtype>(dtype)),
                      static_cast<long long>(dtype));
}

weft_rt_status weft::rt::cpu::parseGather(weft_rt_context *ctx,
                                          const int64_t *params,
                                          GatherShape &s) {
  static const char *const kernel = "gather";
  WEFT_RT_REQUIRE(ctx, params, "gather: parameter block is NULL");
  ParamReader r(params);
  s.elementBytes = r.next();
  int64_t indexDtype = r.next();
  s.outer = r.next(), s.axis = r.next(), s.inner = r.next();
  s.count = r.next();
  WEFT_RT_TRY(checkElementSize(ctx, kernel, s.elementBytes));
  WEFT_RT_TRY(checkIndexDtype(ctx, kernel, indexDtype));
  s.wideIndices = indexDtype == WEFT_RT_I64;
  const int64_t inFactors[] = {s.outer, s.axis, s.inner};
  const int64_t outFactors[] = {s.outer, s.count, s.inner, s.elementBytes};
  int64_t inCount;
  WEFT_RT_REQUIRE(ctx,
                  checkedProduct(inFactors, 3, inCount) &&
                      checkedProduct(outFactors, 4, s.outBytes),
                  "gather: outer=%lld, axis=%lld, inner=%lld, count=%lld "
                  "are negative or overflow",
                  (long long)s.outer, (long long)s.axis, (long long)s.inner,
                  (long long)s.count);
  return WEFT_RT_OK;
}

weft_rt_status weft::rt::cpu::parseGatherElements(weft_rt_context *ctx,
                                                  const int64_t *params,
                                                  GatherElementsShape &s) {
  static const char *const kernel = "gather_elements";
  WEFT_RT_REQUIRE(ctx, params, "gather_elements: parameter block is NULL");
  ParamReader r(params);
  s.elementBytes = r.next();
  int64_t indexDtype = r.next();
  s.rank = r.next(), s.axis = r.next();
  WEFT_RT_TRY(checkElementSize(ctx, kernel, s.elementBytes));
  WEFT_RT_TRY(checkIndexDtype(ctx, kernel, indexDtype));
  s.wideIndices = indexDtype == WEFT_RT_I64;
  s.count = 0;
  WEFT_RT_TRY(
      readDims(ctx, kernel, r, s.rank, s.inDims, nullptr, "input dims"));
  WEFT_RT_TRY(
      readDims(ctx, kernel, r, s.rank, s.indexDims, &s.count, "index dims"));
  WEFT_RT_REQUIRE(ctx, s.axis >= 0 && s.axis < s.rank,
                  "gather_elements: axis %lld is not in [0, %lld)",
                  (long long)s.axis, (long long)s.rank);
  for (int64_t d = 0; d < s.rank; ++d)
    WEFT_RT_REQUIRE(ctx, d == s.axis || s.indexDims[d] <= s.inDims[d],
                    "gather_elements: indices have %lld entries along "
                    "dimension %lld, the input only %lld",
                    (long long)s.indexDims[d], (long long)d,
                    (long long)s.inDims[d]);
  return WEFT_RT_OK;
}
