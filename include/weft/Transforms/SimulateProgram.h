//===- SimulateProgram.h - Simulator input from rank programs ---*- C++ -*-===//
//
// A thin adapter from IR to the event simulator (weft/Plan/Simulator.h):
// turns the program of one rank of a pipeline (what buildDeviceProgram
// returns) into that rank's ops of a SimProgram: compute priced by the cost
// model, collectives over the rank's group of its stage's mesh, and the
// point-to-point sends and receives of the transfers.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TRANSFORMS_SIMULATEPROGRAM_H
#define WEFT_TRANSFORMS_SIMULATEPROGRAM_H

#include "weft/Plan/Cluster.h"
#include "weft/Plan/Simulator.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <map>
#include <string>

namespace mlir::weft {

/// Where one rank runs, for appendRankSimOps.
struct RankSimInfo {
  /// The rank's world rank and the stage it serves.
  int64_t rank = 0;
  int stage = 0;
  /// The cluster device of every world rank.
  llvm::ArrayRef<int64_t> clusterDeviceOfRank;
};

/// Collective ids shared by the ranks of one SimProgram: one id per (mesh,
/// axes, group), so that the k-th collective of a group on one member meets
/// the k-th on every other member.
using SimCollectiveIds = std::map<std::string, int64_t>;

/// Appends the ops of rank `info.rank`'s program `program` (its `main`, in
/// order) to `out.devices[its cluster device]`, run once for every
/// microbatch of every request (`out.microbatchesPerRequest` x
/// `out.requests` times), each op labelled with the stage and microbatch:
/// - weft.send / weft.recv: a send / receive of the tensor's bytes to / from
///   the peer's cluster device, with the op's tag;
/// - weft.all_reduce, all_gather, reduce_scatter, all_to_all: a collective
///   over the cluster devices of the rank's group of the op's mesh, with the
///   full buffer's bytes as CostModel::collectiveSeconds takes them;
/// - each run of other ops between those: one compute op whose seconds are
///   the sum of the cost model's roofline of each op on the stage's mesh.
/// Fails, with a diagnostic, on a collective whose mesh or group does not
/// hold the rank, or a peer outside the job.
LogicalResult appendRankSimOps(ModuleOp program, const RankSimInfo &info,
                               const ::weft::plan::Cluster &cluster,
                               SimCollectiveIds &ids,
                               ::weft::plan::SimProgram &out);

} // namespace mlir::weft

#endif // WEFT_TRANSFORMS_SIMULATEPROGRAM_H
