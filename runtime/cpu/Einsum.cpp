//===- Einsum.cpp - ONNX Einsum over explicit index lists -----------------===//
//
// weft_rt_cpu_einsum: one operand is a strided sum; two operands are laid
// out as [batch, free, contracted] matrices, multiplied by the batched GEMM
// and permuted into the output.
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"

using namespace weft::rt::cpu;

static const char *const kEinsum = "einsum";

/// The most distinct indices an equation may use (ONNX letters: 52).
constexpr int64_t kMaxIndices = 64;

namespace {
/// An operand's index list.
struct Operand {
  int64_t rank = 0;
  const int64_t *indices = nullptr;
  /// Element stride of each distinct index (summed where an index repeats,
  /// which walks a diagonal), 0 for indices the operand lacks.
  int64_t strides[kMaxIndices] = {};
  bool has[kMaxIndices] = {};
  int64_t count = 1;
};

/// A strided walk: out is dense over `outIndices`, each element the sum
/// over `sumIndices` of the source at the strides given per index.
struct StridedSum {
  int64_t outRank = 0, sumRank = 0;
  int64_t outSizes[kMaxIndices], outStrides[kMaxIndices];
  int64_t sumSizes[kMaxIndices], sumStrides[kMaxIndices];
  int64_t outCount = 1, sumCount = 1;

  void addOut(int64_t size, int64_t stride) {
    outSizes[outRank] = size, outStrides[outRank++] = stride;
    outCount *= size;
  }
  void addSum(int64_t size, int64_t stride) {
    sumSizes[sumRank] = size, sumStrides[sumRank++] = stride;
    sumCount *= size;
  }
};
} // namespace

template <typename T>
static void stridedSum(const StridedSum &w, const T *x, T *y, int nt) {
  // Floats sum in double; integers wrap as two's complement.
  using Acc = typename std::conditional_t<std::is_floating_point_v<T>,
                                          std::common_type<double>,
                                          std::make_unsigned<T>>::type;
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (int64_t o = 0; o < w.outCount; ++o) {
    int64_t index = o, base = 0;
    for (int64_t d = w.outRank - 1; d >= 0; --d) {
      base += (index % w.outSizes[d]) * w.outStrides[d];
      index /= w.outSizes[d];
    }
    Acc acc = 0;
    for (int64_t s = 0; s < w.sumCount; ++s) {
      int64_t rest = s, offset = base;
      for (int64_t d = w.sumRank - 1; d >= 0; --d) {
        offset += (rest % w.sumSizes[d]) * w.sumStrides[d];
        rest /= w.sumSizes[d];
      }
      acc += static_cast<Acc>(x[offset]);
    }
    y[o] = static_cast<T>(acc);
  }
}

/// Reads one operand's index list and derives its strides.
static weft_rt_status readOperand(weft_rt_context *ctx, ParamReader &r,
                                  int64_t which, int64_t numIndices,
                                  const int64_t *sizes, Operand &operand) {
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

template <typename T>
static weft_rt_status
twoOperands(weft_rt_context *ctx, int64_t dtype, int64_t numIndices,
            const int64_t *sizes, const Operand &a, const Operand &b,
            const bool *inOut, const int64_t *outIndices, int64_t outRank,
            const T *x, const T *y, T *out) {
  // A as [batch, left, contracted], B as [batch, contracted, right], each
  // summing the indices only it has.
  StridedSum prepareA, prepareB;
  int64_t batch = 1, left = 1, right = 1, contracted = 1;
  int64_t position[kMaxIndices] = {}; // index -> position in C's layout
  int64_t cSizes[kMaxIndices], cRank = 0;
  auto kindOf = [&](int64_t l) {
    if (a.has[l] && b.has[l])
      return inOut[l] ? 0 : 2; // batch : contracted
    if (inOut[l])
      return a.has[l] ? 1 : 3;                // left : right
    return a.has[l] ? 4 : (b.has[l] ? 5 : 6); // summed in A, in B, unused
  };
  for (int64_t l = 0; l < numIndices; ++l)
    if (kindOf(l) == 0) {
      prepareA.addOut(sizes[l], a.strides[l]);
      prepareB.addOut(sizes[l], b.strides[l]);
      batch *= sizes[l], position[l] = cRank, cSizes[cRank++] = sizes[l];
    }
  for (int64_t l = 0; l < numIndices; ++l)
    if (kindOf(l) == 1) {
      prepareA.addOut(sizes[l], a.strides[l]);
      left *= sizes[l], position[l] = cRank, cSizes[cRank++] = sizes[l];
    }
  for (int64_t l = 0; l < numIndices; ++l)
    if (kindOf(l) == 2) {
      prepareA.addOut(sizes[l], a.strides[l]);
      prepareB.addOut(sizes[l], b.strides[l]);
      contracted *= sizes[l];
    }
  for (int64_t l = 0; l < numIndices; ++l) {
    int kind = kindOf(l);
    if (kind == 3) {
      prepareB.addOut(sizes[l], b.strides[l]);
      right *= sizes[l], position[l] = cRank, cSizes[cRank++] = sizes[l];
    } else if (kind == 4) {
      prepareA.addSum(sizes[l], a.strides[l]);
    } else if (kind == 5) {
      prepareB.addSum(sizes[l], b.strides[l]);
    }
  }
  ScratchBuffer bufferA, bufferB, bufferC;
  WEFT_RT_TRY(bufferA.allocate(ctx, kEinsum, prepareA.outCount * sizeof(T),
                               "the first operand"));
  WEFT_RT_TRY(bufferB.allocate(ctx, kEinsum, prepareB.outCount * sizeof(T),
                               "the second operand"));
  WEFT_RT_TRY(bufferC.allocate(ctx, kEinsum, batch * left * right * sizeof(T),
                               "the product"));
  stridedSum(prepareA, x, bufferA.as<T>(),
             threadsFor(ctx, prepareA.outCount * prepareA.sumCount));
  stridedSum(prepareB, y, bufferB.as<T>(),
             threadsFor(ctx, prepareB.outCount * prepareB.sumCount));
  WEFT_RT_TRY(batchedMatmul(ctx, dtype, batch, left, right, contracted,
                            bufferA.as<T>(), bufferB.as<T>(), bufferC.as<T>()));
  // Permute C into the output's index order.
  int64_t cStrides[kMaxIndices], stride = 1;
  for (int64_t p = cRank - 1; p >= 0; --p)
    cStrides[p] = stride, stride *= cSizes[p];
  StridedSum permute;
  for (int64_t i = 0; i < outRank; ++i) {
    int64_t l = outIndices[i];
    permute.addOut(sizes[l], cStrides[position[l]]);
  }
  stridedSum(permute, bufferC.as<T>(), out, threadsFor(ctx, permute.outCount));
  return WEFT_RT_OK;
}

weft_rt_status weft_rt_cpu_einsum(weft_rt_context *ctx, const int64_t *params,
                                  const void *in0, const void *in1, void *out) {
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  WEFT_RT_REQUIRE(ctx, params, "einsum: parameter block is NULL");
  ParamReader r(params);
  int64_t dtype = r.next();
  WEFT_RT_TRY(checkDtype(ctx, kEinsum, dtype, kNumericDtypes));
  int64_t numIndices = r.next();
  WEFT_RT_REQUIRE(ctx, numIndices >= 0 && numIndices <= kMaxIndices,
                  "einsum: %lld distinct indices (at most %lld)",
                  (long long)numIndices, (long long)kMaxIndices);
  const int64_t *sizes = r.array(numIndices);
  int64_t total;
  WEFT_RT_REQUIRE(ctx, checkedProduct(sizes, numIndices, total),
                  "einsum: index sizes are negative or their product "
                  "overflows");
  int64_t outRank = r.next();
  WEFT_RT_REQUIRE(ctx, outRank >= 0 && outRank <= kMaxRank,
                  "einsum: output rank %lld (at most %lld)", (long long)outRank,
                  (long long)kMaxRank);
  const int64_t *outIndices = r.array(outRank);
  bool inOut[kMaxIndices] = {};
  for (int64_t i = 0; i < outRank; ++i) {
    int64_t l = outIndices[i];
    WEFT_RT_REQUIRE(ctx, l >= 0 && l < numIndices && !inOut[l],
                    "einsum: output index %lld at position %lld is out of "
                    "range or repeated",
                    (long long)l, (long long)i);
    inOut[l] = true;
  }
  int64_t numInputs = r.next();
  WEFT_RT_REQUIRE(ctx, numInputs == 1 || numInputs == 2,
                  "einsum: %lld inputs (1 or 2 are supported)",
                  (long long)numInputs);
  Operand operands[2];
  for (int64_t i = 0; i < numInputs; ++i)
    WEFT_RT_TRY(readOperand(ctx, r, i, numIndices, sizes, operands[i]));
  for (int64_t i = 0; i < outRank; ++i) {
    int64_t l = outIndices[i];
    WEFT_RT_REQUIRE(ctx, operands[0].has[l] || operands[1].has[l],
                    "einsum: output index %lld appears in no input",
                    (long long)l);
  }
  int64_t outCount = 1;
  for (int64_t i = 0; i < outRank; ++i)
    outCount *= sizes[outIndices[i]];
  if (outCount == 0)
    return WEFT_RT_OK;
  WEFT_RT_TRY(requireBuffer(ctx, kEinsum, out, "out"));
  const void *inputs[] = {in0, in1};
  const char *names[] = {"in0", "in1"};
  for (int64_t i = 0; i < numInputs; ++i)
    if (operands[i].count > 0)
      WEFT_RT_TRY(requireBuffer(ctx, kEinsum, inputs[i], names[i]));
  return visitDtype(dtype, [&](auto zero) -> weft_rt_status {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                  std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
      const T *x = static_cast<const T *>(in0);
      T *y = static_cast<T *>(out);
      if (numInputs == 2)
        return twoOperands(ctx, dtype, numIndices, sizes, operands[0],
                           operands[1], inOut, outIndices, outRank, x,
                           static_cast<const T *>(in1), y);
      const Operand &a = operands[0];
      StridedSum walk;
      for (int64_t i = 0; i < outRank; ++i)
        walk.addOut(sizes[outIndices[i]], a.strides[outIndices[i]]);
      for (int64_t l = 0; l < numIndices; ++l)
        if (a.has[l] && !inOut[l])
          walk.addSum(sizes[l], a.strides[l]);
      stridedSum(walk, x, y, threadsFor(ctx, walk.outCount * walk.sumCount));
      return WEFT_RT_OK;
    }
    return WEFT_RT_INTERNAL;
  });
}
