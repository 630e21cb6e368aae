//===- Sharding.cpp - Shardings of tensors over a device mesh -------------===//
//
// Block arithmetic of (possibly uneven) splits and the resharding planner.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/Sharding.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace weft::plan;

bool TensorSharding::isReplicated() const {
  return partial.empty() &&
         llvm::all_of(dims, [](const AxisList &axes) { return axes.empty(); });
}

AxisList TensorSharding::usedAxes() const {
  AxisList axes;
  for (const AxisList &dim : dims)
    axes.append(dim.begin(), dim.end());
  axes.append(partial.begin(), partial.end());
  return axes;
}

static void printAxes(llvm::raw_ostream &os, llvm::ArrayRef<int> axes) {
  os << "[";
  llvm::interleaveComma(axes, os);
  os << "]";
}

std::string TensorSharding::str() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[";
  llvm::interleaveComma(dims, os,
                        [&](const AxisList &axes) { printAxes(os, axes); });
  os << "]";
  if (!partial.empty()) {
    os << " partial ";
    printAxes(os, partial);
  }
  return text;
}

int64_t weft::plan::groupSize(llvm::ArrayRef<int64_t> meshShape,
                              llvm::ArrayRef<int> axes) {
  int64_t size = 1;
  for (int axis : axes)
    size *= meshShape[axis];
  return size;
}

llvm::SmallVector<int64_t>
weft::plan::meshCoords(llvm::ArrayRef<int64_t> meshShape, int64_t device) {
  llvm::SmallVector<int64_t> coords(meshShape.size());
  for (int axis = static_cast<int>(meshShape.size()) - 1; axis >= 0; --axis) {
    coords[axis] = device % meshShape[axis];
    device /= meshShape[axis];
  }
  return coords;
}

int64_t weft::plan::groupIndex(llvm::ArrayRef<int64_t> meshShape,
                               llvm::ArrayRef<int> axes, int64_t device) {
  llvm::SmallVector<int64_t> coords = meshCoords(meshShape, device);
  int64_t index = 0;
  for (int axis : axes)
    index = index * meshShape[axis] + coords[axis];
  return index;
}

std::vector<int64_t> weft::plan::blockSizes(int64_t n, int64_t parts) {
  std::vector<int64_t> sizes(parts);
  int64_t block = (n + parts - 1) / parts;
  for (int64_t i = 0; i < parts; ++i)
    sizes[i] = std::clamp<int64_t>(n - i * block, 0, block);
  return sizes;
}

int64_t weft::plan::blockOffset(int64_t n, int64_t parts, int64_t index) {
  int64_t block = (n + parts - 1) / parts;
  return std::min(n, index * block);
}

std::vector<int64_t> weft::plan::localShape(llvm::ArrayRef<int64_t> shape,
                                            const TensorSharding &sharding,
                                            llvm::ArrayRef<int64_t> meshShape,
                                            int64_t device) {
  std::vector<int64_t> local(shape.begin(), shape.end());
  for (auto [d, axes] : llvm::enumerate(sharding.dims)) {
    if (axes.empty() || d >= local.size())
      continue;
    int64_t parts = groupSize(meshShape, axes);
    local[d] = blockSizes(shape[d], parts)[groupIndex(meshShape, axes, device)];
  }
  return local;
}

std::vector<int64_t> weft::plan::localOffsets(llvm::ArrayRef<int64_t> shape,
                                              const TensorSharding &sharding,
                                              llvm::ArrayRef<int64_t> meshShape,
                                              int64_t device) {
  std::vector<int64_t> offsets(shape.size(), 0);
  for (auto [d, axes] : llvm::enumerate(sharding.dims)) {
    if (axes.empty() || d >= offsets.size())
      continue;
    offsets[d] = blockOffset(shape[d], groupSize(meshShape, axes),
                             groupIndex(meshShape, axes, device));
  }
  return offsets;
}

std::vector<int64_t>
weft::plan::largestLocalShape(llvm::ArrayRef<int64_t> shape,
                              const TensorSharding &sharding,
                              llvm::ArrayRef<int64_t> meshShape) {
  return localShape(shape, sharding, meshShape, /*device=*/0);
}

std::optional<std::string>
weft::plan::validate(const TensorSharding &sharding, unsigned rank,
                     llvm::ArrayRef<int64_t> meshShape) {
  if (sharding.dims.size() != rank)
    return "the sharding has " + std::to_string(sharding.dims.size()) +
           " dimension(s) but the tensor has rank " + std::to_string(rank);
  std::vector<bool> seen(meshShape.size(), false);
  for (int axis : sharding.usedAxes()) {
    if (axis < 0 || axis >= static_cast<int>(meshShape.size()))
      return "mesh axis " + std::to_string(axis) + " does not exist (the " +
             "mesh has " + std::to_string(meshShape.size()) + " axes)";
    if (seen[axis])
      return "mesh axis " + std::to_string(axis) + " is used twice";
    seen[axis] = true;
  }
  return std::nullopt;
}

const char *weft::plan::reshardKindName(ReshardKind kind) {
  switch (kind) {
  case ReshardKind::AllReduce:
    return "all_reduce";
  case ReshardKind::ReduceScatter:
    return "reduce_scatter";
  case ReshardKind::AllGather:
    return "all_gather";
  case ReshardKind::AllToAll:
    return "all_to_all";
  case ReshardKind::LocalSlice:
    return "local_slice";
  }
  return "?";
}

static bool isPrefix(llvm::ArrayRef<int> prefix, llvm::ArrayRef<int> axes) {
  return prefix.size() <= axes.size() &&
         std::equal(prefix.begin(), prefix.end(), axes.begin());
}

std::optional<std::vector<ReshardStep>>
weft::plan::planReshard(llvm::ArrayRef<int64_t> shape,
                        const TensorSharding &from, const TensorSharding &to,
                        llvm::ArrayRef<int64_t> meshShape) {
  for (int axis : to.partial)
    if (!llvm::is_contained(from.partial, axis))
      return std::nullopt;
  std::vector<ReshardStep> steps;
  TensorSharding cur = from;
  unsigned rank = shape.size();
  auto push = [&](ReshardKind kind, AxisList axes, int dim, int splitDim) {
    steps.push_back({kind, std::move(axes), dim, splitDim, cur});
  };

  // 1. Pending sums the target does not keep.
  AxisList resolve;
  for (int axis : cur.partial)
    if (!llvm::is_contained(to.partial, axis))
      resolve.push_back(axis);
  if (!resolve.empty()) {
    AxisList kept;
    for (int axis : cur.partial)
      if (llvm::is_contained(to.partial, axis))
        kept.push_back(axis);
    cur.partial = kept;
    AxisList sortedResolve = resolve;
    llvm::sort(sortedResolve);
    int scatterDim = -1;
    for (unsigned d = 0; d < rank && scatterDim < 0; ++d) {
      AxisList target = to.dims[d];
      llvm::sort(target);
      if (cur.dims[d].empty() && !to.dims[d].empty() && target == sortedResolve)
        scatterDim = d;
    }
    if (scatterDim >= 0) {
      cur.dims[scatterDim] = to.dims[scatterDim];
      push(ReshardKind::ReduceScatter, to.dims[scatterDim], scatterDim, -1);
    } else {
      push(ReshardKind::AllReduce, resolve, -1, -1);
    }
  }

  // 2. A split moving whole from one dimension to another: all-to-all.
  for (unsigned d = 0; d < rank; ++d) {
    if (cur.dims[d].empty() || !to.dims[d].empty())
      continue;
    for (unsigned e = 0; e < rank; ++e) {
      if (e == d || !cur.dims[e].empty() || to.dims[e] != cur.dims[d])
        continue;
      AxisList axes = cur.dims[d];
      cur.dims[e] = axes;
      cur.dims[d].clear();
      push(ReshardKind::AllToAll, axes, d, e);
      break;
    }
  }

  // 3. Gather every dimension whose split changes, unless the target only
  // refines it evenly (then step 4 slices the local block further).
  for (unsigned d = 0; d < rank; ++d) {
    const AxisList &axes = cur.dims[d];
    if (axes.empty() || axes == to.dims[d])
      continue;
    if (isPrefix(axes, to.dims[d]) &&
        shape[d] % groupSize(meshShape, to.dims[d]) == 0)
      continue;
    AxisList gathered = axes;
    cur.dims[d].clear();
    push(ReshardKind::AllGather, gathered, d, -1);
  }

  // 4. Slice to the target's splits.
  for (unsigned d = 0; d < rank; ++d) {
    if (cur.dims[d] == to.dims[d])
      continue;
    AxisList extra(to.dims[d].begin() + cur.dims[d].size(), to.dims[d].end());
    cur.dims[d] = to.dims[d];
    push(ReshardKind::LocalSlice, extra, d, -1);
  }
  return steps;
}
