//===- DriverStream.cpp - Streams of requests (--stream N) ----------------===//
//
// The pieces of `--stream N` that need no communicator: the request folders
// of --inputs and --check (request_<i>/, ONNX test-data layout each), the
// per-request store of the outputs, the throughput and latency summary, and
// the check and writing of every request's outputs on the collector rank.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include <dirent.h>
#include <sys/stat.h>

using namespace weft::rt;

static constexpr const char *kRequestPrefix = "request_";

bool weft::rt::listRequestFolders(const std::string &dir,
                                  std::vector<std::string> &out,
                                  std::string &error) {
  out.clear();
  DIR *handle = opendir(dir.c_str());
  if (!handle) {
    error = "cannot open folder '" + dir + "': " + std::strerror(errno);
    return false;
  }
  size_t prefixSize = std::strlen(kRequestPrefix);
  std::vector<int64_t> ids;
  while (struct dirent *entry = readdir(handle)) {
    std::string name = entry->d_name;
    if (name.compare(0, prefixSize, kRequestPrefix) != 0)
      continue;
    std::string digits = name.substr(prefixSize);
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      continue;
    struct stat info;
    std::string path = dir + "/" + name;
    if (stat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
      continue;
    ids.push_back(std::stoll(digits));
  }
  closedir(handle);
  std::sort(ids.begin(), ids.end());
  for (size_t i = 0; i < ids.size(); ++i) {
    // request_1 and request_01 are the same request.
    if (i > 0 && ids[i] == ids[i - 1]) {
      error = "'" + dir + "' holds two folders for request " +
              std::to_string(ids[i]);
      return false;
    }
    if (ids[i] != static_cast<int64_t>(i)) {
      error = "'" + dir + "' has request folders up to " + kRequestPrefix +
              std::to_string(ids.back()) + " but no " + kRequestPrefix +
              std::to_string(i) + " (number them from 0 without gaps)";
      return false;
    }
    out.push_back(dir + "/" + kRequestPrefix + std::to_string(i));
  }
  return true;
}

bool weft::rt::loadRequests(const DriverOptions &options,
                            const ProgramSignature &signature,
                            bool loadExpected, RequestData &out,
                            std::vector<std::string> &notes,
                            std::string &error) {
  out = RequestData();
  std::vector<std::string> folders;
  if (!options.inputsDir.empty() &&
      !listRequestFolders(options.inputsDir, folders, error))
    return false;
  if (folders.empty()) {
    out.inputs.emplace_back();
    if (!loadInputs(options, signature, out.inputs.back(), notes, error))
      return false;
  }
  for (const std::string &folder : folders) {
    DriverOptions one = options;
    one.inputsDir = folder;
    out.inputs.emplace_back();
    if (!loadInputs(one, signature, out.inputs.back(), notes, error))
      return false;
  }
  if (!loadExpected || options.checkDir.empty())
    return true;
  std::vector<std::string> expectedFolders;
  if (!listRequestFolders(options.checkDir, expectedFolders, error))
    return false;
  if (expectedFolders.empty())
    expectedFolders.push_back(options.checkDir);
  // Request i is checked against folder i mod J: J must be 1 or follow the
  // inputs' folders one for one.
  if (expectedFolders.size() > 1 && expectedFolders.size() != out.inputs.size()) {
    error = "--check '" + options.checkDir + "' has " +
            std::to_string(expectedFolders.size()) +
            " request folders, but --inputs gives " +
            std::to_string(out.inputs.size()) +
            " (give one expected folder per input folder, or a single one)";
    return false;
  }
  for (const std::string &folder : expectedFolders) {
    out.expected.emplace_back();
    if (!loadExpectedOutputs(folder, signature, out.expected.back(), notes,
                             error))
      return false;
  }
  return true;
}

RequestOutputs::RequestOutputs(const ProgramSignature &signature,
                               int64_t requests) {
  for (const TensorSpec &spec : signature.outputs) {
    offsets.push_back(bytesPerRequest);
    // Aligned as the arena aligns them: a request's tensors are read as
    // their dtype.
    bytesPerRequest += (spec.bytes + 63) / 64 * 64;
  }
  sizes.reserve(signature.outputs.size());
  for (const TensorSpec &spec : signature.outputs)
    sizes.push_back(spec.bytes);
  data.assign(static_cast<size_t>(requests) * bytesPerRequest, 0);
}

std::vector<void *> RequestOutputs::slots(int64_t request) {
  uint8_t *base = data.data() + static_cast<size_t>(request) * bytesPerRequest;
  std::vector<void *> out;
  for (size_t offset : offsets)
    out.push_back(base + offset);
  return out;
}

std::vector<const void *> RequestOutputs::of(int64_t request) const {
  const uint8_t *base =
      data.data() + static_cast<size_t>(request) * bytesPerRequest;
  std::vector<const void *> out;
  for (size_t offset : offsets)
    out.push_back(base + offset);
  return out;
}

/// The nearest-rank percentile `p` (0 < p <= 100) of sorted `values`.
static double percentile(const std::vector<double> &sorted, double p) {
  if (sorted.empty())
    return 0;
  size_t rank = static_cast<size_t>(
      std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

StreamSummary weft::rt::summarizeStream(const std::vector<double> &startMs,
                                        const std::vector<double> &endMs) {
  StreamSummary summary;
  summary.requests = static_cast<int64_t>(startMs.size());
  if (startMs.empty())
    return summary;
  std::vector<double> latencies;
  for (size_t i = 0; i < startMs.size(); ++i)
    latencies.push_back(endMs[i] - startMs[i]);
  std::sort(latencies.begin(), latencies.end());
  summary.p50Ms = percentile(latencies, 50);
  summary.p99Ms = percentile(latencies, 99);
  double first = *std::min_element(startMs.begin(), startMs.end());
  double last = *std::max_element(endMs.begin(), endMs.end());
  summary.seconds = (last - first) / 1000.0;
  summary.requestsPerSecond =
      summary.seconds > 0 ? static_cast<double>(summary.requests) /
                                summary.seconds
                          : 0;
  return summary;
}

std::string weft::rt::formatThroughputLine(const StreamSummary &summary) {
  char line[256];
  std::snprintf(line, sizeof(line),
                "throughput: %.4g requests/s (%lld requests, p50 %.4g ms, "
                "p99 %.4g ms)",
                summary.requestsPerSecond,
                static_cast<long long>(summary.requests), summary.p50Ms,
                summary.p99Ms);
  return line;
}

bool weft::rt::writeRequestOutputs(const std::string &dir, TensorFormat format,
                                   const ProgramSignature &signature,
                                   const RequestOutputs &outputs,
                                   int64_t requests, std::string &error) {
  for (int64_t r = 0; r < requests; ++r)
    if (!writeOutputs(dir + "/" + kRequestPrefix + std::to_string(r), format,
                      signature, outputs.of(r), error))
      return false;
  return true;
}

/// Requests whose check fails are printed in full up to this many.
static constexpr int64_t kPrintedFailedRequests = 3;

bool weft::rt::checkRequestOutputs(FILE *out, const ProgramSignature &signature,
                                   const RequestOutputs &outputs,
                                   int64_t requests,
                                   const RequestData &requestData,
                                   const Tolerance &tolerance) {
  int64_t failed = 0;
  const auto &expected = requestData.expected;
  for (int64_t r = 0; r < requests; ++r) {
    const std::vector<LoadedTensor> &want =
        expected[static_cast<size_t>(r) % expected.size()];
    // Each request's lines are kept, and printed only when it fails: 200
    // passing requests need one line, not 200 blocks.
    char *text = nullptr;
    size_t size = 0;
    FILE *buffer = open_memstream(&text, &size);
    bool passed = checkOutputs(buffer ? buffer : stdout, signature,
                               outputs.of(r), want, tolerance);
    if (buffer)
      std::fclose(buffer);
    if (!passed && ++failed <= kPrintedFailedRequests && text)
      std::fprintf(out, "request %lld:\n%s", static_cast<long long>(r), text);
    std::free(text);
  }
  if (failed)
    std::fprintf(out,
                 "check FAILED: %lld of %lld requests differ (rtol %g, atol "
                 "%g)\n",
                 static_cast<long long>(failed),
                 static_cast<long long>(requests), tolerance.rtol,
                 tolerance.atol);
  else
    std::fprintf(out,
                 "check passed: %lld requests, %zu outputs each (rtol %g, "
                 "atol %g)\n",
                 static_cast<long long>(requests), signature.outputs.size(),
                 tolerance.rtol, tolerance.atol);
  return failed == 0;
}
