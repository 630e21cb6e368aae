//===- ReshardNetwork.cpp - The time of a resharding's messages -----------===//
//
// The network model of cross-mesh resharding: the alpha-beta link of one
// message, the closed form of a pipelined chain, and the simulation that
// predicts a plan's timeline. Every device has a send port and a receive
// port (full duplex, or one port for both outside broadcast calls) and
// every NIC rail of a node a send and a receive direction; each serves one
// message at a time, in plan order, which is the order in which every
// device performs its messages. Also the job's broadcast groups.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/Reshard.h"
#include "ReshardTimeline.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace weft::plan;
using llvm::ArrayRef;

GroupLink weft::plan::messageLink(const Cluster &cluster, int from, int to) {
  GroupLink link;
  if (from == to) {
    link.beta = std::numeric_limits<double>::infinity();
    return link;
  }
  const Device &src = cluster.devices[from];
  const Device &dst = cluster.devices[to];
  if (src.node == dst.node) {
    const Link &intra = cluster.intraLink(src.node);
    link.alpha = intra.latencySeconds;
    link.beta = intra.bandwidthBytesPerS;
    return link;
  }
  link.alpha = cluster.interNode.latencySeconds;
  link.beta = cluster.interNode.bandwidthBytesPerS;
  for (const Device *end : {&src, &dst})
    if (end->rail >= 0)
      link.beta = std::min(
          link.beta,
          cluster.nodes[end->node].rails[end->rail].bandwidthBytesPerS);
  return link;
}

double weft::plan::messageSeconds(const GroupLink &link, double bytes) {
  if (bytes <= 0)
    return 0;
  if (!(link.beta > 0))
    return std::numeric_limits<double>::infinity();
  return link.alpha + bytes / link.beta;
}

double weft::plan::chainSeconds(ArrayRef<GroupLink> hops, double bytes,
                                int chunks) {
  if (hops.empty() || bytes <= 0)
    return 0;
  chunks = std::max(chunks, 1);
  double chunk = bytes / chunks, sum = 0, slowest = 0;
  for (const GroupLink &hop : hops) {
    double seconds = messageSeconds(hop, chunk);
    sum += seconds;
    slowest = std::max(slowest, seconds);
  }
  return sum + (chunks - 1) * slowest;
}

//===----------------------------------------------------------------------===//
// ReshardTimeline
//===----------------------------------------------------------------------===//

ReshardTimeline::ReshardTimeline(const Cluster &cluster, bool fullDuplex)
    : cluster(&cluster), fullDuplex(fullDuplex) {
  int devices = static_cast<int>(cluster.devices.size());
  railBase = 2 * devices;
  int rails = 0;
  for (const Node &node : cluster.nodes) {
    firstRail.push_back(rails);
    rails += static_cast<int>(node.rails.size());
  }
  freeAt.assign(railBase + 2 * rails, 0.0);
}

void ReshardTimeline::resources(int from, int to, bool inCall,
                                llvm::SmallVectorImpl<int> &out) const {
  int devices = static_cast<int>(cluster->devices.size());
  out.push_back(from);
  out.push_back(devices + to);
  // One port per device: a message holds both ports of both its ends.
  if (!fullDuplex && !inCall) {
    out.push_back(devices + from);
    out.push_back(to);
  }
  const Device &src = cluster->devices[from];
  const Device &dst = cluster->devices[to];
  if (src.node == dst.node)
    return;
  if (src.rail >= 0)
    out.push_back(railBase + 2 * (firstRail[src.node] + src.rail));
  if (dst.rail >= 0)
    out.push_back(railBase + 2 * (firstRail[dst.node] + dst.rail) + 1);
}

std::pair<double, double> ReshardTimeline::place(int from, int to, double bytes,
                                                 double ready, bool inCall) {
  llvm::SmallVector<int, 6> used;
  resources(from, to, inCall, used);
  double start = ready;
  for (int r : used)
    start = std::max(start, freeAt[r]);
  double end = start + messageSeconds(messageLink(*cluster, from, to), bytes);
  for (int r : used)
    freeAt[r] = end;
  finish = std::max(finish, end);
  return {start, end};
}

void ReshardTimeline::syncPorts(ArrayRef<int> devices) {
  if (fullDuplex)
    return;
  size_t n = cluster->devices.size();
  for (int d : devices) {
    double free = std::max(freeAt[d], freeAt[n + d]);
    freeAt[d] = freeAt[n + d] = free;
  }
}

double ReshardTimeline::sendFreeAt(int device) const {
  size_t n = cluster->devices.size();
  return fullDuplex ? freeAt[device]
                    : std::max(freeAt[device], freeAt[n + device]);
}

double ReshardTimeline::receiveFreeAt(int device) const {
  size_t n = cluster->devices.size();
  return fullDuplex ? freeAt[n + device]
                    : std::max(freeAt[device], freeAt[n + device]);
}

double ReshardTimeline::railFreeAt(int device, bool out) const {
  const Device &d = cluster->devices[device];
  if (d.rail < 0)
    return out ? sendFreeAt(device) : receiveFreeAt(device);
  return freeAt[railBase + 2 * (firstRail[d.node] + d.rail) + (out ? 0 : 1)];
}

std::vector<int> weft::plan::broadcastChain(const ReshardTransfer &transfer) {
  if (!transfer.broadcastCall)
    return {};
  std::vector<int> chain = {transfer.source};
  llvm::append_range(chain, transfer.destinations);
  return chain;
}

int64_t BroadcastGroups::groupOf(ArrayRef<int> devices) {
  std::vector<int> set(devices.begin(), devices.end());
  llvm::sort(set);
  set.erase(std::unique(set.begin(), set.end()), set.end());
  auto it = llvm::find(groupSets, set);
  if (it != groupSets.end())
    return it - groupSets.begin();
  if (static_cast<int64_t>(groupSets.size()) >= cap)
    return -1;
  groupSets.push_back(std::move(set));
  return static_cast<int64_t>(groupSets.size()) - 1;
}

double weft::plan::simulateMessages(const Cluster &cluster, ReshardPlan &plan,
                                    double offset) {
  ReshardTimeline timeline(cluster, plan.fullDuplex);
  size_t count = plan.messages.size();
  for (size_t i = 0; i < count; ++i) {
    ReshardMessage &m = plan.messages[i];
    // A transfer's messages are contiguous in plan order: a call begins at
    // its first message and ends after its last.
    const ReshardTransfer &t = plan.transfers[m.transfer];
    bool first = i == 0 || plan.messages[i - 1].transfer != m.transfer;
    bool last = i + 1 == count || plan.messages[i + 1].transfer != m.transfer;
    std::vector<int> chain = broadcastChain(t);
    if (first)
      timeline.syncPorts(chain);
    double ready = m.dependsOn >= 0 ? plan.messages[m.dependsOn].end : 0;
    std::tie(m.start, m.end) = timeline.place(
        m.from, m.to, static_cast<double>(m.bytes), ready, t.broadcastCall);
    if (last)
      timeline.syncPorts(chain);
  }
  for (ReshardTransfer &t : plan.transfers) {
    t.start = std::numeric_limits<double>::infinity();
    t.end = 0;
  }
  for (const ReshardMessage &m : plan.messages) {
    ReshardTransfer &t = plan.transfers[m.transfer];
    t.start = std::min(t.start, m.start);
    t.end = std::max(t.end, m.end);
  }
  for (ReshardTransfer &t : plan.transfers)
    if (t.start > t.end)
      t.start = t.end = 0;
  // Times count from the end of the source's reduction.
  for (ReshardMessage &m : plan.messages) {
    m.start += offset;
    m.end += offset;
  }
  for (ReshardTransfer &t : plan.transfers) {
    t.start += offset;
    t.end += offset;
  }
  plan.predictedSeconds = timeline.finishTime() + offset;
  return plan.predictedSeconds;
}
