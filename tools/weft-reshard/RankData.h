//===- RankData.h - The data a resharding run moves and checks --*- C++ -*-===//
//
// Plain C++ (no MPI, no runtime) for weft-reshard-rank: blocks of a tensor
// (a box of the whole tensor and its elements, row-major), the values every
// element has (a function of its global index, exact in its dtype; a
// pending partial sum's contributions are small integers, so that their sum
// is exact in every order), copies of boxes between blocks, and the bit for
// bit check of a destination block.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TOOLS_WEFT_RESHARD_RANKDATA_H
#define WEFT_TOOLS_WEFT_RESHARD_RANKDATA_H

#include "weft/Plan/Cluster.h"
#include "weft/Plan/Reshard.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace weft::reshard {

/// True for the dtypes `run` moves and checks (all but bool).
bool runSupportsDType(plan::DType dtype);

/// The dtypes runSupportsDType accepts, for messages: "f32, f16, ...".
std::string runDTypeNames();

/// A box of the tensor and its elements, row-major over the box.
struct Block {
  plan::Box box;
  int64_t elementBytes = 4;
  std::vector<uint8_t> data;
  /// One byte per element, set where a copy wrote it; empty when not
  /// tracked (a source block).
  std::vector<uint8_t> written;

  /// A zero-filled block of `box`; `track` keeps `written`.
  static Block zeros(plan::Box box, int64_t elementBytes, bool track = false);
  /// The number of elements and of bytes of the block.
  int64_t elements() const { return box.elements(); }
  int64_t bytes() const { return elements() * elementBytes; }
};

/// The box of `device`'s block (a row-major mesh position) under
/// `sharding` over `meshShape` (localOffsets and localShape).
plan::Box blockBox(llvm::ArrayRef<int64_t> shape,
                   const plan::TensorSharding &sharding,
                   llvm::ArrayRef<int64_t> meshShape, int64_t device);

/// The common part of two boxes; nullopt when it is empty.
std::optional<plan::Box> intersect(const plan::Box &a, const plan::Box &b);

/// Copies the elements of `box` from `from` to `to`; both must contain it.
/// Marks them written in `to` when it tracks that.
void copyBox(const Block &from, Block &to, const plan::Box &box);

/// How element values are made: whole values, or one member's contribution
/// to a pending partial sum of `members` contributions.
struct Values {
  llvm::ArrayRef<int64_t> shape;
  plan::DType dtype = plan::DType::F32;
  /// Members of the partial sum (1: whole values).
  int64_t members = 1;
};

/// Fills `block` with the values its elements have: whole values, or
/// member `member`'s contribution when values.members > 1.
void fillBlock(Block &block, const Values &values, int64_t member);

/// The bits of the value element `index` (global, row-major) must have
/// once every contribution is summed (the whole value when members is 1).
uint64_t expectedBits(const Values &values, int64_t index);

/// What checking a destination block found.
struct CheckResult {
  int64_t checked = 0;
  /// Elements whose bits differ or that no copy wrote.
  int64_t mismatched = 0;
  /// The first of them (global row-major index; -1 for none), its bits and
  /// the expected bits.
  int64_t firstIndex = -1;
  uint64_t got = 0, expected = 0;
};

/// Checks every element of `block` bit for bit against expectedBits.
CheckResult checkBlock(const Block &block, const Values &values);

/// "[3, 0, 17]": the coordinates of global row-major index `index`.
std::string formatIndex(llvm::ArrayRef<int64_t> shape, int64_t index);

} // namespace weft::reshard

#endif // WEFT_TOOLS_WEFT_RESHARD_RANKDATA_H
