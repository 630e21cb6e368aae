//===- MemoryPlanner.h - Static placement of buffers in an arena -*- C++
//-*-===//
//
// Plain C++ (no IR): given each buffer's size and the interval of program
// steps during which it is live, assigns offsets in one arena so that
// buffers live at the same time never overlap, keeping the arena small.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_CODEGEN_MEMORYPLANNER_H
#define WEFT_CODEGEN_MEMORYPLANNER_H

#include <cstdint>
#include <vector>

namespace mlir::weft {

/// A buffer to place: live from step `firstUse` to `lastUse`, inclusive.
struct BufferLifetime {
  int64_t bytes = 0;
  int64_t firstUse = 0;
  int64_t lastUse = 0;
};

/// Where each buffer went and how large the arena must be.
struct MemoryPlan {
  /// One offset per buffer, in input order; multiples of the alignment.
  std::vector<int64_t> offsets;
  /// The arena size: the end of the highest buffer, rounded to the
  /// alignment.
  int64_t peakBytes = 0;
  /// The most bytes live at any one step (a lower bound on peakBytes).
  int64_t liveLowerBound = 0;
};

/// Greedy by size, best fit: buffers in decreasing size (ties by first use,
/// then index, so that the plan is deterministic) each take the lowest
/// aligned gap that fits among the already placed buffers whose lifetimes
/// overlap theirs. The classic heuristic of TFLite's and onnxruntime's
/// arena planners; close to the live lower bound on inference graphs.
MemoryPlan planMemory(const std::vector<BufferLifetime> &buffers,
                      int64_t alignment);

} // namespace mlir::weft

#endif // WEFT_CODEGEN_MEMORYPLANNER_H
