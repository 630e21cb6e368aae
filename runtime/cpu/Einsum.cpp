//===- Einsum.cpp - ONNX Einsum over explicit index lists -----------------===//
//
// weft_rt_cpu_einsum: one operand is a strided sum; two operands are laid
// out as [batch, free, contracted] matrices, multiplied by the batched GEMM
// and permuted into the output.
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"
#include "KernelParams.h"

using namespace weft::rt::cpu;

static const char *const kEinsum = "einsum";

namespace {
/// A strided walk: out is dense over `outIndices`, each element the sum
/// over `sumIndices` of the source at the strides given per index.
struct StridedSum {
  int64_t outRank = 0, sumRank = 0;
  int64_t outSizes[kMaxEinsumIndices], outStrides[kMaxEinsumIndices];
  int64_t sumSizes[kMaxEinsumIndices], sumStrides[kMaxEinsumIndices];
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

template <typename T>
static weft_rt_status twoOperands(weft_rt_context *ctx, int64_t dtype,
                                  int64_t numIndices, const int64_t *sizes,
                                  const EinsumOperand &a,
                                  const EinsumOperand &b, const bool *inOut,
                                  const int64_t *outIndices, int64_t outRank,
                                  const T *x, const T *y, T *out) {
  // A as [batch, left, contracted], B as [batch, contracted, right], each
  // summing the indices only it has.
  StridedSum prepareA, prepareB;
  int64_t batch = 1, left = 1, right = 1, contracted = 1;
  int64_t position[kMaxEinsumIndices] = {}; // index -> position in C's layout
  int64_t cSizes[kMaxEinsumIndices], cRank = 0;
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
  int64_t cStrides[kMaxEinsumIndices], stride = 1;
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
  EinsumShape shape;
  WEFT_RT_TRY(parseEinsum(ctx, params, kNumericDtypes, shape));
  const int64_t dtype = shape.dtype, numIndices = shape.numIndices;
  const int64_t outRank = shape.outRank, numInputs = shape.numInputs;
  const int64_t *sizes = shape.sizes, *outIndices = shape.outIndices;
  const bool *inOut = shape.inOut;
  const EinsumOperand *operands = shape.operands;
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
      const EinsumOperand &a = operands[0];
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
