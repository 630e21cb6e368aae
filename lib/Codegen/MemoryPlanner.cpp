//===- MemoryPlanner.cpp - Static placement of buffers in an arena --------===//
//
// Greedy-by-size placement: see MemoryPlanner.h.
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/MemoryPlanner.h"

#include <algorithm>
#include <map>
#include <numeric>

using namespace mlir::weft;

static int64_t alignUp(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

MemoryPlan mlir::weft::planMemory(const std::vector<BufferLifetime> &buffers,
                                  int64_t alignment) {
  if (alignment < 1)
    alignment = 1;
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);

  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buffers[a].bytes != buffers[b].bytes)
      return buffers[a].bytes > buffers[b].bytes;
    return buffers[a].firstUse < buffers[b].firstUse;
  });

  struct Placed {
    int64_t begin, end; // [begin, end) in bytes
    int64_t firstUse, lastUse;
  };
  std::vector<Placed> placed;
  for (size_t index : order) {
    const BufferLifetime &buffer = buffers[index];
    int64_t size = alignUp(std::max<int64_t>(buffer.bytes, 1), alignment);
    // Byte ranges taken by buffers live at the same time, by start.
    std::vector<std::pair<int64_t, int64_t>> taken;
    for (const Placed &p : placed)
      if (p.firstUse <= buffer.lastUse && buffer.firstUse <= p.lastUse)
        taken.emplace_back(p.begin, p.end);
    std::sort(taken.begin(), taken.end());
    // Best fit: the smallest gap that holds the buffer; else the end.
    int64_t best = -1, bestGap = INT64_MAX, cursor = 0;
    for (auto [begin, end] : taken) {
      if (begin > cursor) {
        int64_t gap = begin - cursor;
        if (gap >= size && gap < bestGap) {
          best = cursor;
          bestGap = gap;
        }
      }
      cursor = std::max(cursor, end);
    }
    int64_t offset = best >= 0 ? best : cursor;
    plan.offsets[index] = offset;
    placed.push_back({offset, offset + size, buffer.firstUse, buffer.lastUse});
    plan.peakBytes = std::max(plan.peakBytes, offset + size);
  }

  // The live lower bound: the most aligned bytes live at any step.
  std::map<int64_t, int64_t> delta;
  for (const BufferLifetime &buffer : buffers) {
    int64_t size = alignUp(std::max<int64_t>(buffer.bytes, 1), alignment);
    delta[buffer.firstUse] += size;
    delta[buffer.lastUse + 1] -= size;
  }
  int64_t live = 0;
  for (auto [step, change] : delta) {
    live += change;
    plan.liveLowerBound = std::max(plan.liveLowerBound, live);
  }
  return plan;
}
