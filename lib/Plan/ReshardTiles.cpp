//===- ReshardTiles.cpp - Tiles and the lower bound of a resharding -------===//
//
// Cuts the tensor at every source and destination block boundary, finds for
// each cell who holds it and who needs it, and bounds from below the time
// any plan needs to deliver those cells.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/Reshard.h"

#include <algorithm>
#include <map>
#include <set>

using namespace weft::plan;
using llvm::ArrayRef;

int64_t Box::elements() const {
  int64_t n = 1;
  for (int64_t size : sizes)
    n *= size;
  return n;
}

bool Box::contains(const Box &inner) const {
  if (inner.offsets.size() != offsets.size())
    return false;
  for (size_t k = 0; k < offsets.size(); ++k)
    if (inner.offsets[k] < offsets[k] ||
        inner.offsets[k] + inner.sizes[k] > offsets[k] + sizes[k])
      return false;
  return true;
}

std::string Box::str() const {
  std::string text = "[";
  for (size_t k = 0; k < offsets.size(); ++k)
    text += (k ? ", " : "") + std::to_string(offsets[k]) + ":" +
            std::to_string(offsets[k] + sizes[k]);
  return text + "]";
}

llvm::StringRef weft::plan::reshardMethodName(ReshardMethod method) {
  switch (method) {
  case ReshardMethod::SendRecv:
    return "send-recv";
  case ReshardMethod::SendRecvAllGather:
    return "send-recv-allgather";
  case ReshardMethod::Broadcast:
    return "broadcast";
  case ReshardMethod::Balanced:
    return "balanced";
  }
  return "?";
}

std::optional<ReshardMethod>
weft::plan::parseReshardMethod(llvm::StringRef name) {
  for (ReshardMethod method :
       {ReshardMethod::SendRecv, ReshardMethod::SendRecvAllGather,
        ReshardMethod::Broadcast, ReshardMethod::Balanced})
    if (name == reshardMethodName(method))
      return method;
  return std::nullopt;
}

llvm::StringRef weft::plan::transferKindName(TransferKind kind) {
  switch (kind) {
  case TransferKind::Send:
    return "send";
  case TransferKind::Broadcast:
    return "broadcast";
  case TransferKind::AllGather:
    return "allgather";
  }
  return "?";
}

static llvm::Error problemError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

static llvm::Error verifySide(const Cluster &cluster, const ReshardSide &side,
                              unsigned rank, llvm::StringRef what) {
  if (llvm::Error error = verifyMesh(cluster, side.mesh))
    return problemError("the " + what + " mesh: " +
                        llvm::toString(std::move(error)));
  if (side.sharding.mesh != side.mesh.name)
    return problemError("the " + what + " sharding " + side.sharding.str() +
                        " is on mesh '" + side.sharding.mesh +
                        "', not on the " + what + " mesh '" + side.mesh.name +
                        "'");
  if (std::optional<std::string> message =
          validate(side.sharding, rank, side.mesh.shape))
    return problemError("the " + what + " sharding " + side.sharding.str() +
                        ": " + *message);
  return llvm::Error::success();
}

llvm::Error weft::plan::verifyReshardProblem(const Cluster &cluster,
                                             const ReshardProblem &problem) {
  for (int64_t size : problem.shape)
    if (size <= 0)
      return problemError("the tensor's dimensions must be positive, got " +
                          std::to_string(size));
  if (problem.elementBytes <= 0)
    return problemError("the element size must be positive");
  unsigned rank = problem.shape.size();
  if (llvm::Error error = verifySide(cluster, problem.source, rank, "source"))
    return error;
  if (llvm::Error error =
          verifySide(cluster, problem.destination, rank, "destination"))
    return error;
  if (!problem.destination.sharding.partial.empty())
    return problemError("the destination sharding " +
                        problem.destination.sharding.str() +
                        " has pending partial sums: a resharding delivers "
                        "whole values");
  return llvm::Error::success();
}

std::vector<Box> weft::plan::gridCells(ArrayRef<std::vector<int64_t>> cuts) {
  std::vector<Box> cells;
  for (const std::vector<int64_t> &c : cuts)
    if (c.size() < 2)
      return cells;
  size_t rank = cuts.size();
  std::vector<size_t> index(rank, 0);
  while (true) {
    Box cell;
    for (size_t k = 0; k < rank; ++k) {
      cell.offsets.push_back(cuts[k][index[k]]);
      cell.sizes.push_back(cuts[k][index[k] + 1] - cuts[k][index[k]]);
    }
    cells.push_back(std::move(cell));
    int k = static_cast<int>(rank) - 1;
    for (; k >= 0; --k) {
      if (++index[k] + 1 < cuts[k].size())
        break;
      index[k] = 0;
    }
    if (k < 0)
      return cells;
  }
}

std::vector<DeviceTraffic>
weft::plan::devicesWithTraffic(const ReshardPlan &plan) {
  std::vector<DeviceTraffic> out;
  size_t devices = std::max(plan.bytesSent.size(), plan.bytesReceived.size());
  for (size_t d = 0; d < devices; ++d) {
    DeviceTraffic traffic;
    traffic.device = static_cast<int>(d);
    traffic.bytesSent = d < plan.bytesSent.size() ? plan.bytesSent[d] : 0;
    traffic.bytesReceived =
        d < plan.bytesReceived.size() ? plan.bytesReceived[d] : 0;
    if (traffic.bytesSent || traffic.bytesReceived)
      out.push_back(traffic);
  }
  return out;
}

/// The block index of `device` (mesh position) along every dimension and
/// its box.
static Box blockOf(ArrayRef<int64_t> shape, const ReshardSide &side,
                   int64_t position) {
  Box box;
  box.offsets = localOffsets(shape, side.sharding, side.mesh.shape, position);
  box.sizes = localShape(shape, side.sharding, side.mesh.shape, position);
  return box;
}

std::vector<ReshardTile>
weft::plan::reshardTiles(ArrayRef<int64_t> shape, const ReshardSide &source,
                         const ReshardSide &destination) {
  unsigned rank = shape.size();
  // The cuts along each dimension: every block start of both layouts.
  std::vector<std::vector<int64_t>> cuts(rank);
  for (unsigned k = 0; k < rank; ++k) {
    std::set<int64_t> points = {0, shape[k]};
    for (const ReshardSide *side : {&source, &destination}) {
      int64_t parts = groupSize(side->mesh.shape, side->sharding.dims[k]);
      for (int64_t i = 0; i < parts; ++i)
        points.insert(std::min(shape[k], blockOffset(shape[k], parts, i)));
    }
    cuts[k].assign(points.begin(), points.end());
  }
  std::vector<Box> srcBlocks, dstBlocks;
  for (int64_t p = 0; p < source.mesh.size(); ++p)
    srcBlocks.push_back(blockOf(shape, source, p));
  for (int64_t p = 0; p < destination.mesh.size(); ++p)
    dstBlocks.push_back(blockOf(shape, destination, p));

  std::vector<ReshardTile> tiles;
  for (Box &cell : gridCells(cuts)) {
    ReshardTile tile;
    tile.box = std::move(cell);
    std::set<int> holders, needers;
    for (size_t p = 0; p < srcBlocks.size(); ++p)
      if (srcBlocks[p].elements() > 0 && srcBlocks[p].contains(tile.box))
        holders.insert(source.mesh.devices[p]);
    for (size_t p = 0; p < dstBlocks.size(); ++p)
      if (dstBlocks[p].elements() > 0 && dstBlocks[p].contains(tile.box))
        needers.insert(destination.mesh.devices[p]);
    tile.holders.assign(holders.begin(), holders.end());
    for (int device : needers)
      (holders.count(device) ? tile.keepers : tile.receivers)
          .push_back(device);
    if (!needers.empty())
      tiles.push_back(std::move(tile));
  }
  return tiles;
}

//===----------------------------------------------------------------------===//
// The lower bound
//===----------------------------------------------------------------------===//

/// The most bytes per second node `node` can move through its NICs in one
/// direction: the sum of its rails, each at most what the devices on it
/// can send over the inter-node link; without rails, every device's own
/// inter-node link.
static double nicCapacity(const Cluster &cluster, int node) {
  double inter = cluster.interNode.bandwidthBytesPerS;
  std::map<int, int> devicesOnRail;
  int devices = 0;
  for (const Device &device : cluster.devices)
    if (device.node == node) {
      ++devices;
      ++devicesOnRail[device.rail];
    }
  const Node &n = cluster.nodes[node];
  if (n.rails.empty())
    return devices * inter;
  double capacity = 0;
  for (size_t r = 0; r < n.rails.size(); ++r)
    capacity += std::min(n.rails[r].bandwidthBytesPerS,
                         devicesOnRail[static_cast<int>(r)] * inter);
  return capacity;
}

/// The fastest rate any message into or out of `device` can have, and the
/// smallest latency.
static GroupLink fastestLink(const Cluster &cluster, int device) {
  int node = cluster.devices[device].node;
  const Link &intra = cluster.intraLink(node);
  GroupLink link{intra.latencySeconds, intra.bandwidthBytesPerS};
  if (cluster.nodes.size() > 1) {
    double inter = cluster.interNode.bandwidthBytesPerS;
    const Device &d = cluster.devices[device];
    if (d.rail >= 0)
      inter = std::min(inter,
                       cluster.nodes[node].rails[d.rail].bandwidthBytesPerS);
    link.beta = std::max(link.beta, inter);
    link.alpha = std::min(link.alpha, cluster.interNode.latencySeconds);
  }
  return link;
}

/// "1.5 GiB", "64 KiB", "12 B".
static std::string bytesText(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  char text[32];
  snprintf(text, sizeof(text), unit == 0 ? "%.0f %s" : "%.3g %s", bytes,
           units[unit]);
  return text;
}

ReshardBound weft::plan::reshardLowerBound(const Cluster &cluster,
                                           ArrayRef<ReshardTile> tiles,
                                           int64_t elementBytes) {
  auto nodeOf = [&](int device) { return cluster.devices[device].node; };
  std::map<int, double> nodeIn, nodeOut, deviceIn, deviceOut;
  for (const ReshardTile &tile : tiles) {
    double bytes = static_cast<double>(tile.box.elements()) * elementBytes;
    std::set<int> holderNodes;
    for (int h : tile.holders)
      holderNodes.insert(nodeOf(h));
    // Every destination node without a holder receives the tile once.
    std::set<int> lackingNodes;
    for (int r : tile.receivers) {
      deviceIn[r] += bytes;
      if (!holderNodes.count(nodeOf(r)))
        lackingNodes.insert(nodeOf(r));
    }
    for (int node : lackingNodes)
      nodeIn[node] += bytes;
    // A tile held on one node only leaves it once if a node without it
    // needs it; a tile with one holder leaves that device once.
    if (holderNodes.size() == 1 && !lackingNodes.empty())
      nodeOut[*holderNodes.begin()] += bytes;
    if (tile.holders.size() == 1 && !tile.receivers.empty())
      deviceOut[tile.holders.front()] += bytes;
  }
  ReshardBound bound;
  auto consider = [&](double seconds, std::string reason) {
    if (seconds > bound.seconds) {
      bound.seconds = seconds;
      bound.reason = std::move(reason);
    }
  };
  // Some message crosses the NICs, paying the inter-node latency; the
  // busiest rail carries at least its share of the bytes.
  auto capacityBound = [&](int node, double bytes) {
    double capacity = nicCapacity(cluster, node);
    return capacity > 0
               ? cluster.interNode.latencySeconds + bytes / capacity
               : 0.0;
  };
  for (auto [node, bytes] : nodeIn)
    consider(capacityBound(node, bytes),
             "node " + cluster.nodes[node].name + "'s NICs receive the " +
                 bytesText(bytes) + " it lacks");
  for (auto [node, bytes] : nodeOut)
    consider(capacityBound(node, bytes),
             "node " + cluster.nodes[node].name + "'s NICs send the " +
                 bytesText(bytes) + " only it holds");
  // A device's port serves one message at a time, each paying at least the
  // smallest latency of its links.
  for (auto [device, bytes] : deviceIn) {
    GroupLink link = fastestLink(cluster, device);
    consider(link.alpha + bytes / link.beta,
             "device " + std::to_string(device) + "'s link receives the " +
                 bytesText(bytes) + " it lacks");
  }
  for (auto [device, bytes] : deviceOut) {
    GroupLink link = fastestLink(cluster, device);
    consider(link.alpha + bytes / link.beta,
             "device " + std::to_string(device) + "'s link sends the " +
                 bytesText(bytes) + " only it holds");
  }
  return bound;
}
