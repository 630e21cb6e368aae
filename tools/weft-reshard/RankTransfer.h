//===- RankTransfer.h - One rank's part of a resharding plan ----*- C++ -*-===//
//
// What weft-reshard-rank does between its barriers, through the runtime's
// C ABI (weft_rt_collective): the source mesh's reduction of a pending
// partial sum, the in-mesh collectives of a plan whose two sides are one
// mesh, or the plan's point-to-point messages in plan order (a broadcast
// call as one runtime broadcast), and the copy of what a device in both
// meshes keeps. Every block it makes is checked
// against the block the sharding says (localOffsets, localShape).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TOOLS_WEFT_RESHARD_RANKTRANSFER_H
#define WEFT_TOOLS_WEFT_RESHARD_RANKTRANSFER_H

#include "RankData.h"
#include "Request.h"

#include "weft_rt.h"

#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace weft::reshard {

/// A rank's failure: what went wrong and the exit code it means (4 for a
/// peer that failed, 70 for a broken invariant of the plan or the run).
class RankError : public llvm::ErrorInfo<RankError> {
public:
  static char ID;
  RankError(std::string message, int exitCode)
      : message(std::move(message)), exitCode(exitCode) {}
  void log(llvm::raw_ostream &os) const override { os << message; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }
  std::string message;
  int exitCode;
};

/// Where this rank stands in the run.
struct RankSetup {
  const PlanRequest *request = nullptr;
  weft_rt_context *ctx = nullptr;
  /// The runtime's code of the request's dtype.
  int32_t runtimeDType = WEFT_RT_F32;
  /// Cluster devices by world rank, increasing.
  std::vector<int> world;
  int worldRank = 0;
  /// This rank's cluster device and its positions in the two meshes (-1:
  /// not in that mesh).
  int device = 0;
  int sourcePosition = -1, destinationPosition = -1;

  /// The world rank of cluster device `device`; -1 when it is not in the
  /// world.
  int worldRankOf(int device) const;
  /// The values of the source's elements (members > 1 with partial sums).
  Values values() const;
};

/// The runtime's code of `dtype`.
int32_t runtimeDType(plan::DType dtype);

/// This rank's source block before any reduction, filled (with its
/// contribution when the source has partial sums); nullopt when the device
/// is not in the source mesh.
std::optional<Block> makeSourceBlock(const RankSetup &setup);

/// What a rank moved for one plan.
struct TransferCounts {
  int64_t bytesSent = 0, bytesReceived = 0;
};

/// Carries out this rank's part of `plan` from `source` (consumed) and
/// returns its destination block (nullopt when the device is not in the
/// destination), with every element it wrote marked. `groupOf` gives per
/// transfer the broadcast group a call runs over (-1: the world).
/// Errors are RankError.
llvm::Expected<std::optional<Block>>
executePlan(const RankSetup &setup, const plan::ReshardPlan &plan,
            llvm::ArrayRef<int64_t> groupOf, std::optional<Block> source,
            TransferCounts &counts);

} // namespace weft::reshard

#endif // WEFT_TOOLS_WEFT_RESHARD_RANKTRANSFER_H
