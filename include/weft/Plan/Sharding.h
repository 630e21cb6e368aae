//===- Sharding.h - Shardings of tensors over a device mesh -----*- C++ -*-===//
//
// Plain C++ form of a tensor's sharding (the weft.sharding attribute without
// the IR), the block arithmetic of uneven splits, and the resharding planner
// that turns one sharding into another with collectives. The cost model, the
// SPMD partitioner and plan.json all use these, so the collectives a plan
// predicts are the ones the partitioned program performs.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PLAN_SHARDING_H
#define WEFT_PLAN_SHARDING_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace weft::plan {

/// Mesh axes, major to minor.
using AxisList = llvm::SmallVector<int, 2>;

/// A tensor's sharding over a named mesh: for each tensor dimension the
/// mesh axes it is split over, and the axes over which the value is a
/// pending partial sum. The axes are those of `mesh`, so a sharding names it
/// as the weft.sharding attribute does.
struct TensorSharding {
  /// The mesh's symbol: the weft.mesh sym_name, as plan::Mesh::name.
  std::string mesh;
  std::vector<AxisList> dims;
  AxisList partial;

  /// Every dimension whole on `mesh`.
  static TensorSharding replicated(llvm::StringRef mesh, unsigned rank) {
    TensorSharding s;
    s.mesh = mesh.str();
    s.dims.resize(rank);
    return s;
  }
  /// The same dims and partial axes on mesh `name`: a re-targeting, for a
  /// caller that knows the axes mean the same there.
  TensorSharding onMesh(llvm::StringRef name) const {
    TensorSharding s = *this;
    s.mesh = name.str();
    return s;
  }
  bool isReplicated() const;
  /// Every axis used (split or partial).
  AxisList usedAxes() const;
  /// "[[0], [], [1]] partial [1]": the layout, without the mesh (plan.json,
  /// reports and messages print shardings of one mesh).
  std::string str() const;
  /// Equal shardings lay the tensor out alike on the same mesh: the same
  /// split on two meshes is two shardings (moving from one to the other is
  /// a transfer, not nothing).
  bool operator==(const TensorSharding &other) const {
    return mesh == other.mesh && dims == other.dims && partial == other.partial;
  }
  bool operator!=(const TensorSharding &other) const {
    return !(*this == other);
  }
};

/// Number of devices in the group of `axes` (product of their sizes).
int64_t groupSize(llvm::ArrayRef<int64_t> meshShape, llvm::ArrayRef<int> axes);
/// Mesh coordinates of device `device` (row-major position).
llvm::SmallVector<int64_t> meshCoords(llvm::ArrayRef<int64_t> meshShape,
                                      int64_t device);
/// Group index of `device` among the members of its `axes` group: the
/// mixed-radix number of its coordinates on `axes`, the first most
/// significant.
int64_t groupIndex(llvm::ArrayRef<int64_t> meshShape,
                   llvm::ArrayRef<int> axes, int64_t device);

/// Sizes of the `parts` blocks of a dimension of size `n`: ceil(n / parts)
/// each, the last ones smaller or empty.
std::vector<int64_t> blockSizes(int64_t n, int64_t parts);
/// Offset of block `index` of `parts`.
int64_t blockOffset(int64_t n, int64_t parts, int64_t index);

/// The shape of `device`'s local part of a tensor of `shape`.
std::vector<int64_t> localShape(llvm::ArrayRef<int64_t> shape,
                                const TensorSharding &sharding,
                                llvm::ArrayRef<int64_t> meshShape,
                                int64_t device);
/// Where `device`'s local part starts in the whole tensor.
std::vector<int64_t> localOffsets(llvm::ArrayRef<int64_t> shape,
                                  const TensorSharding &sharding,
                                  llvm::ArrayRef<int64_t> meshShape,
                                  int64_t device);
/// The largest local shape over the devices (that of device 0, whose blocks
/// are the first and so the largest): what memory and costs are sized for.
std::vector<int64_t> largestLocalShape(llvm::ArrayRef<int64_t> shape,
                                       const TensorSharding &sharding,
                                       llvm::ArrayRef<int64_t> meshShape);

/// Checks that axes exist in the mesh, are used once and that the rank
/// matches; the message says what is wrong.
std::optional<std::string> validate(const TensorSharding &sharding,
                                    unsigned rank,
                                    llvm::ArrayRef<int64_t> meshShape);

enum class ReshardKind { AllReduce, ReduceScatter, AllGather, AllToAll,
                         LocalSlice };
const char *reshardKindName(ReshardKind kind);

/// One step of a resharding. `dim` is the dimension gathered, scattered or
/// sliced (for all-to-all: the dimension that becomes whole, and `splitDim`
/// the one that becomes split). `after` is the sharding once it is done.
struct ReshardStep {
  ReshardKind kind;
  AxisList axes;
  int dim = -1;
  int splitDim = -1;
  TensorSharding after;
};

/// The collectives that turn `from` into `to` for a tensor of `shape`, in
/// order: partial sums resolved first (reduce-scatter where the target
/// splits a dimension over exactly those axes, else all-reduce), then splits
/// moved between dimensions (all-to-all), then dimensions gathered, then
/// sliced. Every step is correct for uneven blocks. Returns nullopt when `to`
/// has partial axes that `from` lacks (no op creates partial sums out of
/// whole values). The steps run on `from`'s mesh and their `after` names
/// it; `to`'s layout is read on that mesh, whatever mesh `to` names (the
/// resharding planner calls this for two sides of the same devices, which
/// may go by two names).
std::optional<std::vector<ReshardStep>>
planReshard(llvm::ArrayRef<int64_t> shape, const TensorSharding &from,
            const TensorSharding &to, llvm::ArrayRef<int64_t> meshShape);

} // namespace weft::plan

#endif // WEFT_PLAN_SHARDING_H
