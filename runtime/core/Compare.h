//===- Compare.h - Comparing outputs with expected tensors ------*- C++ -*-===//
//
// The element rule of `--check`: |actual - expected| <= atol + rtol *
// |expected| for floats, NaN only where NaN, integers and bools exact.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CORE_COMPARE_H
#define WEFT_RUNTIME_CORE_COMPARE_H

#include "TensorIO.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weft::rt {

/// Tolerances of a float comparison.
struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-5;
};

/// One element that differs.
struct Mismatch {
  int64_t index;
  double actual;
  double expected;
};

/// What comparing one output found.
struct CompareResult {
  /// Set when dtypes or shapes differ; then no element is compared.
  std::string typeMismatch;
  /// Largest |a - b| over elements where both are finite or equal (inf
  /// when an infinity meets a finite value).
  double maxAbsError = 0.0;
  /// Largest |a - b| / |b| over elements with b != 0.
  double maxRelError = 0.0;
  int64_t numMismatches = 0;
  int64_t numElements = 0;
  /// The first few mismatching elements, by flat index.
  std::vector<Mismatch> firstMismatches;

  bool passed() const { return typeMismatch.empty() && numMismatches == 0; }
};

/// Compares `actual` (dtype and dims) with `expected` element by element,
/// keeping up to `maxListed` mismatches.
CompareResult compareTensors(weft_rt_dtype dtype,
                             const std::vector<int64_t> &dims,
                             const void *actual, const Tensor &expected,
                             const Tolerance &tolerance, size_t maxListed = 5);

/// "[1, 0, 3]": the multi-index of flat `index` in `dims`.
std::string formatIndex(const std::vector<int64_t> &dims, int64_t index);

} // namespace weft::rt

#endif // WEFT_RUNTIME_CORE_COMPARE_H
