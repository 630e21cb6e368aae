//===- StageCut.cpp - Cutting an op sequence into balanced stages ---------===//

#include "weft/Plan/StageCut.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <deque>
#include <limits>

using namespace weft::plan;

static constexpr double kInf = std::numeric_limits<double>::infinity();

/// The op after which `tensor` is no longer needed: the end (numOps) for a
/// model output, else its last reader, or its producer when nothing reads
/// it.
static int64_t lastNeed(const HeldTensor &tensor, int64_t numOps) {
  if (tensor.isModelOutput)
    return numOps;
  if (tensor.readers.empty())
    return tensor.producer;
  return std::max(tensor.readers.back(), tensor.producer);
}

/// What a run holds of `tensor` when it reads it from outside: a tensor of
/// an earlier stage also has its receive's staging buffer.
static double heldFromOutside(const HeldTensor &tensor) {
  if (tensor.producer == HeldTensor::kFromOutside)
    return tensor.bytes;
  return 2 * tensor.bytes;
}

StageMemory weft::plan::stageMemory(llvm::ArrayRef<HeldTensor> tensors,
                                    int64_t numOps, int64_t from, int64_t to) {
  StageMemory memory;
  // The run's own tensors that live only inside it: bytes that start at
  // each op and stop after it.
  std::vector<double> change(to - from + 1, 0);
  for (const HeldTensor &tensor : tensors) {
    if (tensor.producer >= to)
      continue;
    if (tensor.producer < from) {
      auto reader = std::lower_bound(tensor.readers.begin(),
                                     tensor.readers.end(), from);
      // Read before the run only, or passing by it.
      if (reader == tensor.readers.end() || *reader >= to)
        continue;
      memory.total += heldFromOutside(tensor);
      if (tensor.isWeight)
        memory.weights += tensor.bytes;
      continue;
    }
    int64_t last = lastNeed(tensor, numOps);
    if (last >= to) {
      memory.total += tensor.bytes;
      continue;
    }
    change[tensor.producer - from] += tensor.bytes;
    change[last + 1 - from] -= tensor.bytes;
  }
  double live = 0, peak = 0;
  for (int64_t op = from; op < to; ++op) {
    live += change[op - from];
    peak = std::max(peak, live);
  }
  memory.total += peak;
  return memory;
}

namespace {
/// Adding to ranges of positions and the largest value: a segment tree in
/// which each node keeps what was added to its whole range and its largest
/// value with that (no push-down needed, as only the root is read).
class RangeAddMax {
public:
  explicit RangeAddMax(int64_t size)
      : size(std::max<int64_t>(size, 1)), largest(4 * this->size, 0),
        added(4 * this->size, 0) {}
  /// Adds `value` to positions [first, last].
  void add(int64_t first, int64_t last, double value) {
    add(1, 0, size - 1, first, last, value);
  }
  /// The largest value at any position (0 after clear()).
  double max() const { return largest[1]; }
  /// Every position back to 0, in the time the adds since the last clear
  /// took.
  void clear() {
    for (int64_t node : touched)
      largest[node] = added[node] = 0;
    touched.clear();
  }

private:
  void add(int64_t node, int64_t lo, int64_t hi, int64_t first, int64_t last,
           double value) {
    if (last < lo || hi < first)
      return;
    touched.push_back(node);
    if (first <= lo && hi <= last) {
      largest[node] += value;
      added[node] += value;
      return;
    }
    int64_t mid = lo + (hi - lo) / 2;
    add(2 * node, lo, mid, first, last, value);
    add(2 * node + 1, mid + 1, hi, first, last, value);
    largest[node] =
        added[node] + std::max(largest[2 * node], largest[2 * node + 1]);
  }

  int64_t size;
  std::vector<double> largest, added;
  std::vector<int64_t> touched;
};

/// The memory stageMemory counts for runs [from, to) of one end, grown one
/// op to the left at a time, as the DP scans them: each step looks only at
/// the tensors the new op touches. Growing to the left, a tensor the run
/// computes keeps whether it leaves the run (its readers after `to` do not
/// change), so its interval of ops goes into the range maximum once; the
/// held tensors are a sum.
///
/// Why not per-op figures and an O(1) range query (prefix sums of weights,
/// a sparse table of each op's live bytes in the whole model): those count
/// a tensor that passes a stage by, and miss that the stage's planner holds
/// what a stage receives (twice) and sends on for the whole stage, which is
/// what makes it refuse a stage cut next to a large activation. What a run
/// holds depends on both of its ends, so it is not a range query over
/// per-op numbers; growing a run by one op changes only the tensors that op
/// touches, so the scan pays O(those tensors * log n) per step instead.
class LeftwardRunMemory {
public:
  LeftwardRunMemory(llvm::ArrayRef<HeldTensor> tensors, int64_t numOps);
  /// Starts the empty run [end, end).
  void restart(int64_t end);
  /// Adds the op before the run.
  void growLeft();
  double total() const { return held + ownLive.max(); }
  /// For each end `to` (0 to numOps), the smallest `from` whose run
  /// [from, to) may fit `cap` by a lower bound of its memory: the weights
  /// it reads and the activations any one of its ops reads or computes,
  /// which the run holds at that op. The bound only grows as a run grows,
  /// so no run that starts earlier fits, and for a later end the answer is
  /// no smaller (two pointers, O(n)). `to` when not even [to - 1, to) may.
  std::vector<int64_t> earliestStarts(double cap) const;

private:
  /// A tensor an op reads, and its next reader after the op (numOps for
  /// none).
  struct Read {
    size_t tensor;
    int64_t nextReader;
  };
  llvm::ArrayRef<HeldTensor> tensors;
  int64_t numOps;
  /// Per op: the tensors it computes, those it reads (each once), and the
  /// bytes of the activations among both.
  std::vector<std::vector<size_t>> computes;
  std::vector<std::vector<Read>> reads;
  std::vector<double> footprint;
  RangeAddMax ownLive;
  int64_t from = 0, to = 0;
  /// Held for the whole run: read from outside it, or leaving it.
  double held = 0;
};
} // namespace

LeftwardRunMemory::LeftwardRunMemory(llvm::ArrayRef<HeldTensor> tensors,
                                     int64_t numOps)
    : tensors(tensors), numOps(numOps), computes(numOps), reads(numOps),
      footprint(numOps, 0), ownLive(numOps) {
  for (auto [id, tensor] : llvm::enumerate(tensors)) {
    double activation = tensor.isWeight ? 0 : tensor.bytes;
    if (tensor.producer != HeldTensor::kFromOutside) {
      computes[tensor.producer].push_back(id);
      footprint[tensor.producer] += activation;
    }
    const std::vector<int64_t> &readers = tensor.readers;
    for (size_t r = 0; r < readers.size(); ++r) {
      if (r > 0 && readers[r] == readers[r - 1])
        continue;
      size_t next = r + 1;
      while (next < readers.size() && readers[next] == readers[r])
        ++next;
      reads[readers[r]].push_back(
          {id, next < readers.size() ? readers[next] : numOps});
      footprint[readers[r]] += activation;
    }
  }
}

void LeftwardRunMemory::restart(int64_t end) {
  from = to = end;
  held = 0;
  ownLive.clear();
}

std::vector<int64_t> LeftwardRunMemory::earliestStarts(double cap) const {
  std::vector<int64_t> earliest(numOps + 1, 0);
  // The window [first, to): how many of its ops read each weight, the
  // bytes of those read, and its ops of decreasing footprint (the largest
  // in front).
  std::vector<int64_t> readsInWindow(tensors.size(), 0);
  double weights = 0;
  std::deque<int64_t> largest;
  int64_t first = 0;
  for (int64_t to = 1; to <= numOps; ++to) {
    int64_t op = to - 1;
    for (const Read &read : reads[op])
      if (tensors[read.tensor].isWeight && readsInWindow[read.tensor]++ == 0)
        weights += tensors[read.tensor].bytes;
    while (!largest.empty() && footprint[largest.back()] <= footprint[op])
      largest.pop_back();
    largest.push_back(op);
    while (first < to && weights + footprint[largest.front()] > cap) {
      for (const Read &read : reads[first])
        if (tensors[read.tensor].isWeight &&
            --readsInWindow[read.tensor] == 0)
          weights -= tensors[read.tensor].bytes;
      if (largest.front() == first)
        largest.pop_front();
      ++first;
    }
    earliest[to] = first;
  }
  return earliest;
}

void LeftwardRunMemory::growLeft() {
  int64_t op = --from;
  for (const Read &read : reads[op]) {
    // A later op of the run reads it too: held already.
    if (read.nextReader < to)
      continue;
    held += heldFromOutside(tensors[read.tensor]);
  }
  for (size_t id : computes[op]) {
    const HeldTensor &tensor = tensors[id];
    // The run no longer receives it.
    if (!tensor.readers.empty() && tensor.readers.front() < to)
      held -= heldFromOutside(tensor);
    int64_t last = lastNeed(tensor, numOps);
    if (last >= to)
      held += tensor.bytes;
    else
      ownLive.add(op, last, tensor.bytes);
  }
}

/// The DP of balancedCut; with `memory`, a run is a stage only when its
/// memory is at most `memoryCap`. Leaves firstOp empty when no cut fits.
static StageCut cutWith(llvm::ArrayRef<double> costs, int64_t stages,
                        LeftwardRunMemory *memory, double memoryCap) {
  int64_t n = costs.size();
  StageCut cut;
  std::vector<double> prefix(n + 1, 0);
  for (int64_t i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + std::max(costs[i], 0.0);
  auto sum = [&](int64_t from, int64_t to) { return prefix[to] - prefix[from]; };
  // best[k][i]: the smallest largest-run sum of ops [0, i) in k runs;
  // start[k][i]: where the last of those runs starts.
  std::vector<std::vector<double>> best(stages + 1,
                                        std::vector<double>(n + 1, kInf));
  std::vector<std::vector<int64_t>> start(stages + 1,
                                          std::vector<int64_t>(n + 1, 0));
  best[0][0] = 0;
  // The first and last i of each level whose best is finite: a last run
  // [j, i) needs such a j.
  int64_t firstCut = 0, lastCut = 0;
  std::vector<int64_t> earliest =
      memory ? memory->earliestStarts(memoryCap) : std::vector<int64_t>();
  for (int64_t k = 1; k <= stages; ++k) {
    int64_t nextFirst = n + 1, nextLast = -1;
    // The last level needs only the whole sequence.
    for (int64_t i = k == stages ? n : k; i <= n - (stages - k); ++i) {
      int64_t lowest = std::max(k - 1, firstCut);
      if (memory)
        lowest = std::max(lowest, earliest[i]);
      if (lowest > std::min(lastCut, i - 1))
        continue; // No run ending at i fits after a cut of k - 1 runs.
      if (memory)
        memory->restart(i);
      // The last run is [j, i); scanning j downwards, the run only grows,
      // so once it alone exceeds the best found nothing better follows.
      for (int64_t j = i - 1; j >= lowest; --j) {
        double last = sum(j, i);
        if (last >= best[k][i] && best[k][i] < kInf)
          break;
        if (memory) {
          memory->growLeft();
          // Not a break: a longer run may hold less, when the op it adds
          // computes a tensor the run would otherwise receive.
          if (memory->total() > memoryCap)
            continue;
        }
        if (best[k - 1][j] == kInf)
          continue;
        double value = std::max(best[k - 1][j], last);
        if (value < best[k][i]) {
          best[k][i] = value;
          start[k][i] = j;
        }
      }
      if (best[k][i] < kInf) {
        nextFirst = std::min(nextFirst, i);
        nextLast = i;
      }
    }
    firstCut = nextFirst;
    lastCut = nextLast;
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

StageCut weft::plan::balancedCut(llvm::ArrayRef<double> costs, int64_t stages) {
  if (stages < 1 || stages > static_cast<int64_t>(costs.size()))
    return StageCut();
  return cutWith(costs, stages, nullptr, 0);
}

/// Fills `cut`'s memory figures; returns whether every stage fits.
static bool countMemory(StageCut &cut, llvm::ArrayRef<HeldTensor> tensors,
                        int64_t numOps, double memoryCap) {
  cut.memory.clear();
  cut.weightMemory.clear();
  bool fits = true;
  for (size_t k = 0; k + 1 < cut.firstOp.size(); ++k) {
    StageMemory memory =
        stageMemory(tensors, numOps, cut.firstOp[k], cut.firstOp[k + 1]);
    cut.memory.push_back(memory.total);
    cut.weightMemory.push_back(memory.weights);
    fits = fits && memory.total <= memoryCap;
  }
  return fits;
}

StageCut weft::plan::balancedCut(llvm::ArrayRef<double> costs, int64_t stages,
                                 llvm::ArrayRef<HeldTensor> tensors,
                                 double memoryCap) {
  int64_t n = costs.size();
  if (stages < 1 || stages > n)
    return StageCut();
  // Most often the fastest cut fits, and it is then also the answer of the
  // DP with memory (which breaks ties the same way).
  StageCut fastest = cutWith(costs, stages, nullptr, 0);
  if (countMemory(fastest, tensors, n, memoryCap))
    return fastest;
  LeftwardRunMemory memory(tensors, n);
  StageCut cut = cutWith(costs, stages, &memory, memoryCap);
  if (cut.firstOp.empty()) {
    fastest.withinMemory = false;
    return fastest;
  }
  countMemory(cut, tensors, n, memoryCap);
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
