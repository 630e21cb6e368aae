//===- ReshardTestSupport.h - Helpers of the resharding tests ---*- C++ -*-===//
//
// Small clusters, meshes, sides and plans that ReshardTest.cpp and
// ReshardBroadcastTest.cpp build their cases from.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TEST_UNIT_RESHARDTESTSUPPORT_H
#define WEFT_TEST_UNIT_RESHARDTESTSUPPORT_H

#include "weft/Plan/Reshard.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace weft::plan::testing {

/// `nodes` nodes of `perNode` devices; `rails` NICs per node (devices
/// round-robin over them), each of `railBandwidth`.
inline Cluster makeCluster(int nodes, int perNode, int rails = 0,
                           double railBandwidth = 10e9) {
  Cluster cluster;
  cluster.name = "test";
  DeviceKind kind;
  kind.name = "gpu";
  kind.backend = "cuda";
  kind.flopPerS[DType::F32] = 1e13;
  kind.memoryBytes = 16e9;
  kind.memoryBandwidthBytesPerS = 1e12;
  cluster.kinds.push_back(kind);
  for (int n = 0; n < nodes; ++n) {
    Node node;
    node.name = "n" + std::to_string(n);
    for (int r = 0; r < rails; ++r)
      node.rails.push_back(Rail{railBandwidth});
    cluster.nodes.push_back(node);
    for (int i = 0; i < perNode; ++i) {
      Device device;
      device.name = "d" + std::to_string(cluster.devices.size());
      device.node = n;
      device.rail = rails > 0 ? i % rails : -1;
      cluster.devices.push_back(device);
    }
  }
  cluster.intraNode = Link{100e9, 2e-6};
  cluster.interNode = Link{25e9, 10e-6};
  return cluster;
}

inline Mesh makeMesh(std::vector<int64_t> shape, std::vector<int> devices) {
  Mesh mesh;
  mesh.name = "m";
  mesh.shape = std::move(shape);
  mesh.devices = std::move(devices);
  return mesh;
}

inline ReshardSide side(std::vector<int64_t> shape, std::vector<int> devices,
                        std::vector<AxisList> dims, AxisList partial = {}) {
  ReshardSide s;
  s.mesh = makeMesh(std::move(shape), std::move(devices));
  s.sharding.mesh = s.mesh.name;
  s.sharding.dims = std::move(dims);
  s.sharding.partial = std::move(partial);
  return s;
}

inline ReshardPlan mustPlan(const Cluster &cluster,
                            const ReshardProblem &problem, ReshardMethod method,
                            const ReshardOptions &options = {}) {
  llvm::Expected<ReshardPlan> plan =
      planResharding(cluster, problem, method, options);
  if (!plan) {
    ADD_FAILURE() << llvm::toString(plan.takeError());
    return ReshardPlan();
  }
  return std::move(*plan);
}

} // namespace weft::plan::testing

#endif // WEFT_TEST_UNIT_RESHARDTESTSUPPORT_H
