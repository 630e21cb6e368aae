//===- StageCut.cpp - Cutting an op sequence into balanced stages ---------===//

#include "weft/Plan/StageCut.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <algorithm>
#include <limits>

using namespace weft::plan;

/// The DP of balancedCut; `fits(from, to)` says whether ops [from, to) may
/// be one stage (memory shrinks as a run shrinks, so the scan stops at the
/// first run that does not fit). Leaves firstOp empty when no cut fits.
static StageCut cutWith(llvm::ArrayRef<double> costs, int64_t stages,
                        llvm::function_ref<bool(int64_t, int64_t)> fits) {
  int64_t n = costs.size();
  StageCut cut;
  std::vector<double> prefix(n + 1, 0);
  for (int64_t i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + std::max(costs[i], 0.0);
  auto sum = [&](int64_t from, int64_t to) { return prefix[to] - prefix[from]; };
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // best[k][i]: the smallest largest-run sum of ops [0, i) in k runs;
  // start[k][i]: where the last of those runs starts.
  std::vector<std::vector<double>> best(stages + 1,
                                        std::vector<double>(n + 1, kInf));
  std::vector<std::vector<int64_t>> start(stages + 1,
                                          std::vector<int64_t>(n + 1, 0));
  best[0][0] = 0;
  for (int64_t k = 1; k <= stages; ++k) {
    for (int64_t i = k; i <= n - (stages - k); ++i) {
      // The last run is [j, i); scanning j downwards, the run only grows,
      // so once it alone exceeds the best found, or no longer fits, nothing
      // better follows.
      for (int64_t j = i - 1; j >= k - 1; --j) {
        double last = sum(j, i);
        if (last >= best[k][i] && best[k][i] < kInf)
          break;
        if (!fits(j, i))
          break;
        if (best[k - 1][j] == kInf)
          continue;
        double value = std::max(best[k - 1][j], last);
        if (value < best[k][i]) {
          best[k][i] = value;
          start[k][i] = j;
        }
      }
    }
  }
  if (best[stages][n] == kInf)
    return cut;
  cut.firstOp.assign(stages + 1, 0);
  cut.firstOp[stages] = n;
  int64_t end = n;
  for (int64_t k = stages; k >= 1; --k) {
    int64_t begin = start[k][end];
    cut.firstOp[k - 1] = begin;
    end = begin;
  }
  for (int64_t k = 0; k < stages; ++k)
    cut.work.push_back(sum(cut.firstOp[k], cut.firstOp[k + 1]));
  return cut;
}

StageCut weft::plan::balancedCut(llvm::ArrayRef<double> costs, int64_t stages,
                                 llvm::ArrayRef<double> memory,
                                 double memoryCap) {
  int64_t n = costs.size();
  if (stages < 1 || stages > n)
    return StageCut();
  bool withMemory = memory.size() == costs.size();
  std::vector<double> memoryPrefix(n + 1, 0);
  if (withMemory)
    for (int64_t i = 0; i < n; ++i)
      memoryPrefix[i + 1] = memoryPrefix[i] + std::max(memory[i], 0.0);
  auto anything = [](int64_t, int64_t) { return true; };
  StageCut cut;
  if (withMemory)
    cut = cutWith(costs, stages, [&](int64_t from, int64_t to) {
      return memoryPrefix[to] - memoryPrefix[from] <= memoryCap;
    });
  if (cut.firstOp.empty()) {
    cut = cutWith(costs, stages, anything);
    cut.withinMemory = !withMemory;
  }
  if (withMemory)
    for (int64_t k = 0; k < stages; ++k)
      cut.memory.push_back(memoryPrefix[cut.firstOp[k + 1]] -
                           memoryPrefix[cut.firstOp[k]]);
  return cut;
}

std::vector<int64_t> weft::plan::allocateDevices(llvm::ArrayRef<double> work,
                                                 int64_t devices) {
  std::vector<int64_t> count(work.size(), 1);
  int64_t left = devices - static_cast<int64_t>(work.size());
  for (; left > 0; --left) {
    size_t pick = 0;
    double most = -1;
    for (size_t k = 0; k < work.size(); ++k) {
      double perDevice = std::max(work[k], 0.0) / count[k];
      if (perDevice > most) {
        most = perDevice;
        pick = k;
      }
    }
    ++count[pick];
  }
  return count;
}
