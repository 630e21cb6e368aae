//===- CostModel.cpp - Analytic time of compute and collectives -----------===//
//
// The roofline and alpha-beta formulas of the planner's cost model, and the
// mesh groups collectives run over. docs/ClusterSpec.md states every formula;
// the comments here say where each term comes from.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/CostModel.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

using namespace llvm;

namespace weft::plan {

//===----------------------------------------------------------------------===//
// Mesh groups
//===----------------------------------------------------------------------===//

std::vector<int64_t> meshCoordinates(const Mesh &mesh, int64_t position) {
  std::vector<int64_t> coords(mesh.shape.size());
  for (size_t d = mesh.shape.size(); d-- > 0;) {
    int64_t dim = std::max<int64_t>(mesh.shape[d], 1);
    coords[d] = position % dim;
    position /= dim;
  }
  return coords;
}

std::vector<std::vector<int64_t>> meshGroups(const Mesh &mesh,
                                             ArrayRef<int> meshAxes) {
  int rank = static_cast<int>(mesh.shape.size());
  std::vector<bool> inGroup(rank);
  std::vector<int> axes, others;
  for (int axis : meshAxes)
    if (axis >= 0 && axis < rank && !inGroup[axis]) {
      inGroup[axis] = true;
      axes.push_back(axis);
    }
  for (int axis = 0; axis < rank; ++axis)
    if (!inGroup[axis])
      others.push_back(axis);
  for (int64_t dim : mesh.shape)
    if (dim < 1)
      return {};
  int64_t size = mesh.size();
  int64_t groupSize = 1;
  for (int axis : axes)
    groupSize *= mesh.shape[axis];
  std::vector<std::vector<int64_t>> groups(size / groupSize,
                                           std::vector<int64_t>(groupSize));
  for (int64_t position = 0; position < size; ++position) {
    std::vector<int64_t> coords = meshCoordinates(mesh, position);
    int64_t group = 0, member = 0;
    for (int axis : others)
      group = group * mesh.shape[axis] + coords[axis];
    for (int axis : axes)
      member = member * mesh.shape[axis] + coords[axis];
    groups[group][member] = position;
  }
  return groups;
}

//===----------------------------------------------------------------------===//
// The cost model
//===----------------------------------------------------------------------===//

StringRef collectiveKindName(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return "all-reduce";
  case CollectiveKind::AllGather:
    return "all-gather";
  case CollectiveKind::ReduceScatter:
    return "reduce-scatter";
  case CollectiveKind::AllToAll:
    return "all-to-all";
  }
  return "collective";
}

/// The device at mesh position `position`, or nullptr when the mesh names
/// no valid device there.
static const Device *deviceAt(const Cluster &cluster, const Mesh &mesh,
                              int64_t position) {
  if (position < 0 || position >= static_cast<int64_t>(mesh.devices.size()))
    return nullptr;
  int index = mesh.devices[position];
  if (index < 0 || index >= static_cast<int>(cluster.devices.size()))
    return nullptr;
  const Device &device = cluster.devices[index];
  if (device.kind < 0 ||
      device.kind >= static_cast<int>(cluster.kinds.size()) ||
      device.node < 0 || device.node >= static_cast<int>(cluster.nodes.size()))
    return nullptr;
  return &device;
}

CostModel::CostModel(const Cluster &cluster, const Mesh &mesh)
    : cluster(cluster), theMesh(mesh) {
  // The processes of cpu devices in this mesh share their node's cores and
  // host memory bandwidth; devices outside the mesh are idle and take
  // nothing. GPU devices have their own SMs and HBM.
  std::vector<double> coresWanted(cluster.nodes.size());
  std::vector<double> bandwidthWanted(cluster.nodes.size());
  size_t positions = mesh.devices.size();
  for (size_t pos = 0; pos < positions; ++pos) {
    const Device *device = deviceAt(cluster, mesh, pos);
    if (!device || !cluster.kinds[device->kind].isCpu())
      continue;
    const DeviceKind &kind = cluster.kinds[device->kind];
    coresWanted[device->node] += kind.coresPerDevice;
    bandwidthWanted[device->node] += kind.memoryBandwidthBytesPerS;
  }
  coreShare.assign(positions, 0);
  memoryBandwidth.assign(positions, 0);
  for (size_t pos = 0; pos < positions; ++pos) {
    const Device *device = deviceAt(cluster, mesh, pos);
    if (!device)
      continue;
    const DeviceKind &kind = cluster.kinds[device->kind];
    const Node &node = cluster.nodes[device->node];
    coreShare[pos] = 1;
    memoryBandwidth[pos] = kind.memoryBandwidthBytesPerS;
    if (!kind.isCpu())
      continue;
    // A node without cores or bandwidth (a hand-built cluster; specs
    // require both for cpu devices) limits nothing.
    if (node.cores > 0 && coresWanted[device->node] > 0)
      coreShare[pos] = std::min(1.0, node.cores / coresWanted[device->node]);
    if (node.memoryBandwidthBytesPerS > 0 && bandwidthWanted[device->node] > 0)
      memoryBandwidth[pos] *= std::min(1.0, node.memoryBandwidthBytesPerS /
                                                bandwidthWanted[device->node]);
  }
}

double CostModel::effectiveFlopPerS(int64_t position, DType dtype) const {
  const Device *device = deviceAt(cluster, theMesh, position);
  if (!device)
    return 0;
  return cluster.kinds[device->kind].peakFlopPerS(dtype) * coreShare[position];
}

double CostModel::effectiveMemoryBandwidth(int64_t position) const {
  if (!deviceAt(cluster, theMesh, position))
    return 0;
  return memoryBandwidth[position];
}

double CostModel::computeSeconds(double flops, double bytesMoved, DType dtype,
                                 KernelClass kernelClass) const {
  // Roofline per device: the op is bound by arithmetic or by memory traffic,
  // whichever takes longer; SPMD then waits for the slowest device.
  double slowest = 0;
  for (size_t pos = 0; pos < theMesh.devices.size(); ++pos) {
    const Device *device = deviceAt(cluster, theMesh, static_cast<int64_t>(pos));
    double flopRate =
        effectiveFlopPerS(pos, dtype) *
        (device ? cluster.kinds[device->kind].kernelRate(kernelClass) : 1);
    double byteRate = effectiveMemoryBandwidth(pos);
    double seconds = 0;
    if (flops > 0 && flopRate > 0)
      seconds = flops / flopRate;
    if (bytesMoved > 0 && byteRate > 0)
      seconds = std::max(seconds, bytesMoved / byteRate);
    slowest = std::max(slowest, seconds);
  }
  return slowest;
}

int64_t CostModel::groupSize(ArrayRef<int> meshAxes) const {
  int rank = static_cast<int>(theMesh.shape.size());
  std::vector<bool> seen(rank);
  int64_t size = 1;
  for (int axis : meshAxes) {
    if (axis < 0 || axis >= rank || seen[axis])
      continue;
    seen[axis] = true;
    size *= std::max<int64_t>(theMesh.shape[axis], 1);
  }
  return size;
}

std::vector<GroupLink> CostModel::groupLinks(ArrayRef<int> meshAxes) const {
  std::vector<std::vector<int64_t>> groups = meshGroups(theMesh, meshAxes);
  // A group is flat: it runs at its slowest link. Groups spanning nodes send
  // through the NICs, and as all groups run the collective at once, every
  // device of a spanning group on a node shares its rail with the others
  // on the same rail (of its own group or not).
  std::vector<bool> spans(groups.size());
  std::map<std::pair<int, int>, int> railUsers;
  for (size_t g = 0; g < groups.size(); ++g) {
    std::set<int> nodes;
    for (int64_t pos : groups[g])
      if (const Device *device = deviceAt(cluster, theMesh, pos))
        nodes.insert(device->node);
    spans[g] = nodes.size() > 1;
    if (!spans[g])
      continue;
    for (int64_t pos : groups[g]) {
      const Device *device = deviceAt(cluster, theMesh, pos);
      if (device && device->rail >= 0)
        ++railUsers[{device->node, device->rail}];
    }
  }

  std::vector<GroupLink> links;
  for (size_t g = 0; g < groups.size(); ++g) {
    std::map<int, int> membersPerNode;
    for (int64_t pos : groups[g])
      if (const Device *device = deviceAt(cluster, theMesh, pos))
        ++membersPerNode[device->node];
    GroupLink link;
    link.beta = std::numeric_limits<double>::infinity();
    if (spans[g]) {
      link.alpha = cluster.interNode.latencySeconds;
      link.beta = cluster.interNode.bandwidthBytesPerS;
    }
    for (const auto &[node, members] : membersPerNode) {
      if (members < 2)
        continue;
      const Link &intra = cluster.intraLink(node);
      link.alpha = std::max(link.alpha, intra.latencySeconds);
      link.beta = std::min(link.beta, intra.bandwidthBytesPerS);
    }
    if (spans[g])
      for (int64_t pos : groups[g]) {
        const Device *device = deviceAt(cluster, theMesh, pos);
        if (!device || device->rail < 0 ||
            device->rail >= (int)cluster.nodes[device->node].rails.size())
          continue;
        double rail =
            cluster.nodes[device->node].rails[device->rail].bandwidthBytesPerS;
        link.beta =
            std::min(link.beta, rail / railUsers[{device->node, device->rail}]);
      }
    // A group with fewer than two real devices (a hand-made mesh naming
    // devices the cluster lacks) uses no link: beta stays infinite.
    links.push_back(link);
  }
  return links;
}

/// The alpha-beta time of one group of `p` devices. `n` is the full buffer's
/// size in bytes (see collectiveSeconds).
static double algorithmSeconds(CollectiveKind kind, bool tree, double p,
                               double n, const GroupLink &link) {
  // Only a hand-built cluster without the link a group needs gets here.
  if (link.beta <= 0)
    return std::numeric_limits<double>::infinity();
  double alpha = link.alpha, beta = link.beta;
  switch (kind) {
  case CollectiveKind::AllReduce:
    if (tree) {
      // Reduce up a tree and broadcast down it, pipelined in chunks: every
      // byte crosses each member's link twice, latency grows with depth.
      // A simple model of NCCL's double binary tree.
      return 2 * std::ceil(std::log2(p)) * alpha + 2 * n / beta;
    }
    // Ring: reduce-scatter then all-gather, 2(p-1) steps of n/p bytes.
    return 2 * (p - 1) * alpha + 2 * (p - 1) / p * n / beta;
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
    // Ring: p-1 steps, each member sends one n/p block per step.
    return (p - 1) * alpha + (p - 1) / p * n / beta;
  case CollectiveKind::AllToAll:
    // Pairwise exchange: each member holds n/p bytes and sends n/p^2 to
    // each of the p-1 others, p-1 messages.
    return (p - 1) * alpha + (p - 1) / (p * p) * n / beta;
  }
  return 0;
}

CostModel::Choice CostModel::choose(CollectiveKind kind, double bytes,
                                    ArrayRef<int> meshAxes) const {
  int64_t p = groupSize(meshAxes);
  if (p <= 1 || !(bytes > 0))
    return {};
  std::vector<GroupLink> links = groupLinks(meshAxes);
  // The slowest group holds everybody up; ring unless tree is strictly
  // cheaper (NCCL has a tree only for all-reduce).
  double ring = 0, tree = 0;
  for (const GroupLink &link : links) {
    ring = std::max(ring, algorithmSeconds(kind, false, p, bytes, link));
    tree = std::max(tree, algorithmSeconds(kind, true, p, bytes, link));
  }
  if (kind == CollectiveKind::AllReduce && tree < ring)
    return {tree, "tree"};
  return {ring, "ring"};
}

double CostModel::collectiveSeconds(CollectiveKind kind, double bytes,
                                    ArrayRef<int> meshAxes) const {
  return choose(kind, bytes, meshAxes).seconds;
}

std::string CostModel::collectiveAlgorithm(CollectiveKind kind, double bytes,
                                           ArrayRef<int> meshAxes) const {
  return choose(kind, bytes, meshAxes).algorithm;
}

double CostModel::collectiveSecondsWith(CollectiveKind kind,
                                        StringRef algorithm, double bytes,
                                        ArrayRef<int> meshAxes) const {
  int64_t p = groupSize(meshAxes);
  if (p <= 1 || !(bytes > 0))
    return 0;
  bool tree = algorithm == "tree" && kind == CollectiveKind::AllReduce;
  double slowest = 0;
  for (const GroupLink &link : groupLinks(meshAxes))
    slowest = std::max(slowest, algorithmSeconds(kind, tree, p, bytes, link));
  return slowest;
}

bool CostModel::allDevicesCpu() const {
  for (size_t pos = 0; pos < theMesh.devices.size(); ++pos) {
    const Device *device = deviceAt(cluster, theMesh, pos);
    if (!device || !cluster.kinds[device->kind].isCpu())
      return false;
  }
  return true;
}

double CostModel::deviceMemoryBytes() const {
  double smallest = 0;
  for (size_t pos = 0; pos < theMesh.devices.size(); ++pos) {
    const Device *device = deviceAt(cluster, theMesh, pos);
    if (!device)
      continue;
    double bytes = cluster.kinds[device->kind].memoryBytes;
    if (smallest == 0 || bytes < smallest)
      smallest = bytes;
  }
  return smallest;
}

} // namespace weft::plan
