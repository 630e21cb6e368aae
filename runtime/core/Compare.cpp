//===- Compare.cpp - Comparing outputs with expected tensors --------------===//
//
// Implements the comparison rule of Weft's command-line contract. Floats of
// every width are compared as doubles; integers as integers, so that int64
// values beyond 2^53 are still exact.
//
//===----------------------------------------------------------------------===//

#include "Compare.h"
#include "Signature.h"

#include <cmath>
#include <cstring>

using namespace weft::rt;

std::string weft::rt::formatIndex(const std::vector<int64_t> &dims,
                                  int64_t index) {
  std::vector<int64_t> coords(dims.size(), 0);
  for (size_t i = dims.size(); i-- > 0;) {
    if (dims[i] <= 0)
      continue;
    coords[i] = index % dims[i];
    index /= dims[i];
  }
  std::string out = "[";
  for (size_t i = 0; i < coords.size(); ++i)
    out += (i ? ", " : "") + std::to_string(coords[i]);
  return out + "]";
}

/// Element `index` as an exact integer (integer and bool dtypes only).
static int64_t elementAsInt(weft_rt_dtype dtype, const void *data,
                            int64_t index) {
  const uint8_t *bytes = static_cast<const uint8_t *>(data);
  switch (dtype) {
  case WEFT_RT_I64: {
    int64_t v;
    std::memcpy(&v, bytes + index * 8, 8);
    return v;
  }
  case WEFT_RT_I32: {
    int32_t v;
    std::memcpy(&v, bytes + index * 4, 4);
    return v;
  }
  case WEFT_RT_I8:
    return static_cast<int8_t>(bytes[index]);
  default: // u8, bool
    return bytes[index];
  }
}

CompareResult
weft::rt::compareTensors(weft_rt_dtype dtype, const std::vector<int64_t> &dims,
                         const void *actual, const Tensor &expected,
                         const Tolerance &tolerance, size_t maxListed) {
  CompareResult result;
  if (dtype != expected.dtype || dims != expected.dims) {
    result.typeMismatch =
        "expected " + formatTensorType(expected.dtype, expected.dims) +
        ", the model produced " + formatTensorType(dtype, dims);
    return result;
  }
  int64_t count = expected.numElements();
  result.numElements = count;
  bool isFloat = isFloatDType(dtype);
  for (int64_t i = 0; i < count; ++i) {
    double a = elementAsDouble(dtype, actual, i);
    double b = elementAsDouble(dtype, expected.data.data(), i);
    bool ok;
    if (!isFloat) {
      ok = elementAsInt(dtype, actual, i) ==
           elementAsInt(dtype, expected.data.data(), i);
      double diff = std::fabs(a - b);
      result.maxAbsError = std::max(result.maxAbsError, diff);
      if (b != 0)
        result.maxRelError = std::max(result.maxRelError, diff / std::fabs(b));
    } else if (std::isnan(a) || std::isnan(b)) {
      ok = std::isnan(a) && std::isnan(b);
    } else if (a == b) {
      ok = true; // Also equal infinities, whose difference is NaN.
    } else {
      // An infinity matches only itself (with b infinite, the bound is too).
      double diff = std::fabs(a - b);
      ok = std::isfinite(b) &&
           diff <= tolerance.atol + tolerance.rtol * std::fabs(b);
      result.maxAbsError = std::max(result.maxAbsError, diff);
      if (b != 0)
        result.maxRelError = std::max(result.maxRelError, diff / std::fabs(b));
    }
    if (ok)
      continue;
    ++result.numMismatches;
    if (result.firstMismatches.size() < maxListed)
      result.firstMismatches.push_back({i, a, b});
  }
  return result;
}
