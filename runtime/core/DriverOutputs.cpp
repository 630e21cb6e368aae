//===- DriverOutputs.cpp - Printing, writing and checking outputs ---------===//
//
// What the driver does with a model's outputs after a run: shows a few
// values so that a demo shows results, writes them as tensor files, or
// compares them with expected ones under the contract's tolerance rule.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstring>

#include <sys/stat.h>

using namespace weft::rt;

/// How many values of each output are printed.
static constexpr int64_t kPrintedValues = 8;

/// One element, printed as its dtype reads best.
static std::string formatElement(weft_rt_dtype dtype, const void *data,
                                 int64_t index) {
  char buffer[64];
  double value = elementAsDouble(dtype, data, index);
  if (dtype == WEFT_RT_I64) {
    int64_t exact;
    std::memcpy(&exact, static_cast<const uint8_t *>(data) + index * 8, 8);
    std::snprintf(buffer, sizeof(buffer), "%" PRId64, exact);
  } else if (dtype == WEFT_RT_BOOL) {
    return value != 0 ? "true" : "false";
  } else if (isFloatDType(dtype)) {
    std::snprintf(buffer, sizeof(buffer), "%.6g", value);
  } else {
    std::snprintf(buffer, sizeof(buffer), "%.0f", value);
  }
  return buffer;
}

void weft::rt::printOutputs(FILE *out, const ProgramSignature &signature,
                            const std::vector<const void *> &outputs) {
  for (size_t i = 0; i < signature.outputs.size(); ++i) {
    const TensorSpec &spec = signature.outputs[i];
    const void *data = outputs[i];
    std::fprintf(out, "output %zu '%s': %s\n", i, spec.name.c_str(),
                 formatTensorType(spec.dtype, spec.dims).c_str());
    int64_t count = spec.numElements;
    if (count == 0) {
      std::fprintf(out, "  (no elements)\n");
      continue;
    }
    std::string values;
    for (int64_t k = 0; k < std::min(count, kPrintedValues); ++k)
      values += (k ? ", " : "") + formatElement(spec.dtype, data, k);
    if (count > kPrintedValues)
      std::fprintf(out, "  [%s, ...] (first %lld of %lld)\n", values.c_str(),
                   static_cast<long long>(kPrintedValues),
                   static_cast<long long>(count));
    else
      std::fprintf(out, "  [%s]\n", values.c_str());
    if (spec.dtype == WEFT_RT_BOOL) {
      int64_t trues = 0;
      for (int64_t k = 0; k < count; ++k)
        trues += static_cast<const uint8_t *>(data)[k] != 0;
      std::fprintf(out, "  %lld true, %lld false\n",
                   static_cast<long long>(trues),
                   static_cast<long long>(count - trues));
      continue;
    }
    double low = INFINITY, high = -INFINITY, sum = 0;
    int64_t nans = 0;
    for (int64_t k = 0; k < count; ++k) {
      double v = elementAsDouble(spec.dtype, data, k);
      if (std::isnan(v)) {
        ++nans;
        continue;
      }
      low = std::min(low, v);
      high = std::max(high, v);
      sum += v;
    }
    if (nans == count) {
      std::fprintf(out, "  all %lld values are NaN\n",
                   static_cast<long long>(count));
      continue;
    }
    std::fprintf(out, "  min %.6g  max %.6g  mean %.6g", low, high,
                 sum / static_cast<double>(count - nans));
    if (nans)
      std::fprintf(out, "  (%lld NaN)", static_cast<long long>(nans));
    std::fprintf(out, "\n");
  }
}

/// mkdir -p: creates `dir` and its missing parents.
static bool makeDirectories(const std::string &dir, std::string &error) {
  for (size_t at = 1; at <= dir.size(); ++at) {
    if (at != dir.size() && dir[at] != '/')
      continue;
    std::string prefix = dir.substr(0, at);
    if (mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST) {
      error = "cannot create folder '" + prefix + "': " + std::strerror(errno);
      return false;
    }
  }
  struct stat info;
  if (stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    error = "'" + dir + "' is not a folder";
    return false;
  }
  return true;
}

bool weft::rt::writeOutputs(const std::string &dir, TensorFormat format,
                            const ProgramSignature &signature,
                            const std::vector<const void *> &outputs,
                            std::string &error) {
  if (!makeDirectories(dir, error))
    return false;
  for (size_t i = 0; i < signature.outputs.size(); ++i) {
    const TensorSpec &spec = signature.outputs[i];
    Tensor tensor;
    tensor.name = spec.name;
    tensor.dtype = spec.dtype;
    tensor.dims = spec.dims;
    const uint8_t *data = static_cast<const uint8_t *>(outputs[i]);
    tensor.data.assign(data, data + spec.bytes);
    std::string path = dir + "/output_" + std::to_string(i) +
                       (format == TensorFormat::OnnxPb ? ".pb" : ".npy");
    if (!writeTensorFile(path, tensor, format, error))
      return false;
  }
  return true;
}

bool weft::rt::checkOutputs(FILE *out, const ProgramSignature &signature,
                            const std::vector<const void *> &outputs,
                            const std::vector<LoadedTensor> &expected,
                            const Tolerance &tolerance) {
  size_t failed = 0;
  for (size_t i = 0; i < signature.outputs.size(); ++i) {
    const TensorSpec &spec = signature.outputs[i];
    CompareResult result = compareTensors(spec.dtype, spec.dims, outputs[i],
                                          expected[i].tensor, tolerance);
    if (!result.typeMismatch.empty()) {
      ++failed;
      std::fprintf(out, "output %s: %s (%s)\n", spec.name.c_str(),
                   result.typeMismatch.c_str(), expected[i].path.c_str());
      continue;
    }
    std::fprintf(out,
                 "output %s: max abs err %.3g, max rel err %.3g, "
                 "%lld/%lld mismatched\n",
                 spec.name.c_str(), result.maxAbsError, result.maxRelError,
                 static_cast<long long>(result.numMismatches),
                 static_cast<long long>(result.numElements));
    if (result.passed())
      continue;
    ++failed;
    // Digits enough to see the difference, not the float's binary noise.
    int digits = spec.dtype == WEFT_RT_F64  ? 15
                 : isFloatDType(spec.dtype) ? 7
                                            : 19;
    for (const Mismatch &m : result.firstMismatches)
      std::fprintf(out, "  at %s: got %.*g, expected %.*g\n",
                   formatIndex(spec.dims, m.index).c_str(), digits, m.actual,
                   digits, m.expected);
    if (result.numMismatches >
        static_cast<int64_t>(result.firstMismatches.size()))
      std::fprintf(out, "  ... and %lld more\n",
                   static_cast<long long>(result.numMismatches -
                                          result.firstMismatches.size()));
  }
  if (failed)
    std::fprintf(out,
                 "check FAILED: %zu of %zu outputs differ (rtol %g, atol "
                 "%g)\n",
                 failed, signature.outputs.size(), tolerance.rtol,
                 tolerance.atol);
  else
    std::fprintf(out, "check passed: %zu outputs (rtol %g, atol %g)\n",
                 signature.outputs.size(), tolerance.rtol, tolerance.atol);
  return failed == 0;
}

std::pair<double, double> weft::rt::medianAndMin(std::vector<double> &times) {
  if (times.empty())
    return {0.0, 0.0};
  std::sort(times.begin(), times.end());
  size_t n = times.size();
  double median =
      n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
  return {median, times.front()};
}
