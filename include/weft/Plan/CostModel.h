//===- CostModel.h - Analytic time of compute and collectives ---*- C++ -*-===//
//
// Plain C++ (no IR): the analytic cost model the planner minimizes. Compute
// is a roofline against the slowest device of a mesh, with the node's shared
// cores and memory bandwidth; collectives follow the alpha-beta model with
// ring and tree algorithms over the slowest link of each group. The formulas
// are documented in docs/ClusterSpec.md.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PLAN_COSTMODEL_H
#define WEFT_PLAN_COSTMODEL_H

#include "weft/Plan/Cluster.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weft::plan {

/// The collectives the partitioner emits.
enum class CollectiveKind { AllReduce, AllGather, ReduceScatter, AllToAll };

/// The name of a collective kind, e.g. "all-reduce".
llvm::StringRef collectiveKindName(CollectiveKind kind);

/// The alpha-beta link a group of devices communicates over.
struct GroupLink {
  /// Seconds per message (the slowest link's latency).
  double alpha = 0;
  /// Bytes per second one member sends at (the slowest link, or its share
  /// of a NIC rail); infinite for a group that uses no link.
  double beta = 0;
};

/// Time estimates for one mesh of one cluster. Copies what it needs, so the
/// cluster may go away; every method is const and caches nothing, so one
/// model may be shared between threads.
class CostModel {
public:
  /// `mesh` should be one of `cluster`'s meshes (or satisfy verifyMesh);
  /// device indices out of range are ignored rather than trusted.
  CostModel(const Cluster &cluster, const Mesh &mesh);

  /// Roofline time of work done by ONE device of the mesh, taken on the
  /// slowest device since SPMD waits for it:
  /// max over devices of max(flops / (effectiveFlopPerS x the kind's rate
  /// for `kernelClass`), bytesMoved / effectiveMemoryBandwidth).
  double computeSeconds(double flops, double bytesMoved, DType dtype,
                        KernelClass kernelClass = KernelClass::Generic) const;

  /// Alpha-beta time of a collective over `meshAxes` (group = the devices
  /// differing only on those axes; empty axes, group size 1 or no bytes give
  /// 0). `bytes` is the size of the FULL (unsharded over the group) buffer:
  /// all-reduce of an n-byte buffer, all-gather producing n bytes,
  /// reduce-scatter of n bytes input, all-to-all of an n-byte buffer. The
  /// cheaper of ring and tree (tree only for all-reduce, as in NCCL); the
  /// slowest group of the mesh counts.
  double collectiveSeconds(CollectiveKind kind, double bytes,
                           llvm::ArrayRef<int> meshAxes) const;

  /// Which algorithm collectiveSeconds picked: "ring" or "tree", or "none"
  /// when the collective costs nothing (group size 1, no bytes).
  std::string collectiveAlgorithm(CollectiveKind kind, double bytes,
                                  llvm::ArrayRef<int> meshAxes) const;

  /// The time of one algorithm ("ring" or "tree") regardless of which is
  /// cheaper; "tree" for a collective other than all-reduce is its ring
  /// time.
  double collectiveSecondsWith(CollectiveKind kind, llvm::StringRef algorithm,
                               double bytes,
                               llvm::ArrayRef<int> meshAxes) const;

  /// The number of devices in one group over `meshAxes` (1 for none).
  int64_t groupSize(llvm::ArrayRef<int> meshAxes) const;

  /// The link each group over `meshAxes` uses, in meshGroups() order.
  std::vector<GroupLink> groupLinks(llvm::ArrayRef<int> meshAxes) const;

  /// True when every device of the mesh is a CPU: Weft's CPU codegen fuses
  /// a clamp into the convolution before it, the CUDA backend does not.
  bool allDevicesCpu() const;

  /// The smallest device memory of the mesh (what every device must fit).
  double deviceMemoryBytes() const;

  /// The FLOP/s of the device at mesh position `position` for `dtype`, after
  /// its node's core sharing (0 for a position out of range).
  double effectiveFlopPerS(int64_t position, DType dtype) const;

  /// The memory bandwidth of the device at mesh position `position`, after
  /// its node's sharing (0 for a position out of range).
  double effectiveMemoryBandwidth(int64_t position) const;

  /// The mesh this model is for.
  const Mesh &mesh() const { return theMesh; }

private:
  struct Choice {
    double seconds = 0;
    const char *algorithm = "none";
  };
  Choice choose(CollectiveKind kind, double bytes,
                llvm::ArrayRef<int> meshAxes) const;

  Cluster cluster;
  Mesh theMesh;
  /// Per mesh position: the fraction of its peak FLOP/s and its memory
  /// bandwidth after sharing.
  std::vector<double> coreShare;
  std::vector<double> memoryBandwidth;
};

} // namespace weft::plan

#endif // WEFT_PLAN_COSTMODEL_H
