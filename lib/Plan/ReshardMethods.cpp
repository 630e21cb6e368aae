//===- ReshardMethods.cpp - The four resharding methods -------------------===//
//
// Builds each method's transfers (sends, broadcast chains or calls,
// node-local all-gathers) as messages, the balanced search over senders, chain
// entry and exit devices and order, and planResharding, which resolves a
// source's pending partial sums first.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/Reshard.h"

#include "ReshardTimeline.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>

using namespace weft::plan;
using llvm::ArrayRef;

/// Part `i` of `parts` near-equal parts of `n` (the first n % parts one
/// longer): {offset, size}. Never empty when parts <= n.
static std::pair<int64_t, int64_t> evenPart(int64_t n, int64_t parts,
                                            int64_t i) {
  int64_t base = n / parts, extra = n % parts;
  return {i * base + std::min(i, extra), base + (i < extra ? 1 : 0)};
}

/// `box` cut into `parts` along dimension `dim`, part `i`.
static Box partOf(const Box &box, int dim, int64_t parts, int64_t i) {
  Box part = box;
  auto [offset, size] = evenPart(box.sizes[dim], parts, i);
  part.offsets[dim] += offset;
  part.sizes[dim] = size;
  return part;
}

/// The outermost dimension with at least `parts` elements, or -1.
static int splitDim(const Box &box, int64_t parts) {
  for (size_t k = 0; k < box.sizes.size(); ++k)
    if (box.sizes[k] >= parts)
      return static_cast<int>(k);
  return -1;
}

namespace {
/// A transfer before it joins a plan: its messages' dependsOn index the
/// draft's own messages (-1: the sender holds the box).
struct Draft {
  ReshardTransfer transfer;
  std::vector<ReshardMessage> messages;
};

/// One way to deliver a tile: one or more transfers.
using Option = std::vector<Draft>;

/// Builds the methods' plans for one set of tiles.
class MethodPlanner {
public:
  MethodPlanner(const Cluster &cluster, const ReshardOptions &options,
                int64_t elementBytes, std::vector<ReshardTile> tiles,
                double offset)
      : cluster(cluster), options(options), elementBytes(elementBytes),
        tiles(std::move(tiles)), offset(offset) {}

  ReshardPlan plan(ReshardMethod method);

private:
  ReshardPlan sendRecv();
  ReshardPlan sendRecvAllGather();
  ReshardPlan broadcast();
  ReshardPlan balancedSearch();
  /// The ways to deliver tile `t` the balanced search compares, given what
  /// is already placed on `timeline`.
  std::vector<Option> balancedOptions(int t,
                                      const ReshardTimeline &timeline) const;

  int64_t tileBytes(int tile) const {
    return tiles[tile].box.elements() * elementBytes;
  }
  Draft sendDraft(int tile, int from, int to, const Box &box) const;
  Draft chainDraft(int tile, int from, ArrayRef<int> chain) const;
  std::optional<Draft> allGatherDraft(int tile, ArrayRef<int> devices,
                                      std::vector<double> &load) const;
  /// The holder that has sent the fewest bytes so far (ties: the lowest).
  static int leastLoaded(ArrayRef<int> holders,
                         const std::vector<double> &load);
  /// The receivers of `tile` grouped by node: `sender`'s node first, then
  /// increasing node index; inside a node increasing device index.
  std::vector<std::vector<int>> receiversByNode(int tile, int sender) const;
  /// A chain through the receivers that enters each node on the device
  /// whose NIC rail is free first and leaves it from a device on another
  /// rail (both directions of a node's rails in use at once).
  std::vector<int> railAwareChain(int tile, int sender,
                                  const ReshardTimeline &timeline) const;
  /// Places an option's messages on `timeline`; returns when they end.
  static double placeOption(const Option &option, ReshardTimeline &timeline);
  ReshardPlan assemble(ReshardMethod method, ArrayRef<Draft> drafts) const;

  const Cluster &cluster;
  const ReshardOptions &options;
  int64_t elementBytes;
  std::vector<ReshardTile> tiles;
  double offset;
};
} // namespace

Draft MethodPlanner::sendDraft(int tile, int from, int to,
                               const Box &box) const {
  Draft draft;
  draft.transfer.kind = TransferKind::Send;
  draft.transfer.tile = tile;
  draft.transfer.source = from;
  draft.transfer.destinations = {to};
  draft.transfer.bytes = box.elements() * elementBytes;
  ReshardMessage m;
  m.from = from;
  m.to = to;
  m.tile = tile;
  m.box = box;
  m.bytes = draft.transfer.bytes;
  draft.messages.push_back(std::move(m));
  return draft;
}

Draft MethodPlanner::chainDraft(int tile, int from,
                                ArrayRef<int> chain) const {
  const Box &box = tiles[tile].box;
  if (chain.size() == 1)
    return sendDraft(tile, from, chain.front(), box);
  std::vector<GroupLink> hops;
  int previous = from;
  for (int device : chain) {
    hops.push_back(messageLink(cluster, previous, device));
    previous = device;
  }
  // The chunk count that the closed form says is fastest, within the
  // options' limits and the tile's outermost splittable dimension. A chain
  // of blocking messages, one at a time per device, is not pipelined: it
  // stays whole.
  double bytes = static_cast<double>(tileBytes(tile));
  int dim = splitDim(box, 2);
  bool pipelined = options.fullDuplex || options.broadcastCalls;
  int64_t limit = dim < 0 || !pipelined
                      ? 1
                      : std::min<int64_t>(options.maxChunks, box.sizes[dim]);
  int chunks = 1;
  double best = chainSeconds(hops, bytes, 1);
  for (int c = 2; c <= limit; ++c) {
    if (bytes / c < static_cast<double>(options.minChunkBytes))
      break;
    double seconds = chainSeconds(hops, bytes, c);
    if (seconds < best) {
      best = seconds;
      chunks = c;
    }
  }
  Draft draft;
  draft.transfer.kind = TransferKind::Broadcast;
  draft.transfer.tile = tile;
  draft.transfer.source = from;
  draft.transfer.destinations.assign(chain.begin(), chain.end());
  draft.transfer.chunks = chunks;
  draft.transfer.bytes = tileBytes(tile);
  draft.transfer.broadcastCall = options.broadcastCalls;
  // Chunk-major: hop h of chunk c depends on hop h-1 of chunk c, so every
  // device forwards a chunk as soon as it has it.
  for (int c = 0; c < chunks; ++c) {
    Box part = chunks == 1 ? box : partOf(box, dim, chunks, c);
    int sender = from;
    for (size_t h = 0; h < chain.size(); ++h) {
      ReshardMessage m;
      m.from = sender;
      m.to = chain[h];
      m.tile = tile;
      m.box = part;
      m.bytes = part.elements() * elementBytes;
      m.dependsOn =
          h == 0 ? -1 : static_cast<int>(draft.messages.size()) - 1;
      draft.messages.push_back(m);
      sender = chain[h];
    }
  }
  return draft;
}

std::optional<Draft>
MethodPlanner::allGatherDraft(int tile, ArrayRef<int> devices,
                              std::vector<double> &load) const {
  const ReshardTile &t = tiles[tile];
  int64_t k = static_cast<int64_t>(devices.size());
  int dim = splitDim(t.box, k);
  if (k < 2 || dim < 0)
    return std::nullopt;
  Draft draft;
  draft.transfer.kind = TransferKind::AllGather;
  draft.transfer.tile = tile;
  draft.transfer.source = -1;
  draft.transfer.destinations.assign(devices.begin(), devices.end());
  draft.transfer.bytes = tileBytes(tile);
  // Slice i goes to device i from a holder; then a ring: at step j device i
  // passes slice (i - j + 1) mod k, which it got at step j - 1, to i + 1.
  std::vector<int> holding(k);
  for (int64_t i = 0; i < k; ++i) {
    Box slice = partOf(t.box, dim, k, i);
    int from = leastLoaded(t.holders, load);
    load[from] += static_cast<double>(slice.elements() * elementBytes);
    ReshardMessage m;
    m.from = from;
    m.to = devices[i];
    m.tile = tile;
    m.box = slice;
    m.bytes = slice.elements() * elementBytes;
    holding[i] = static_cast<int>(draft.messages.size());
    draft.messages.push_back(std::move(m));
  }
  // received[i][s]: the message that brought slice s to device i.
  std::vector<std::vector<int>> received(k, std::vector<int>(k, -1));
  for (int64_t i = 0; i < k; ++i)
    received[i][i] = holding[i];
  for (int64_t step = 1; step < k; ++step)
    for (int64_t i = 0; i < k; ++i) {
      int64_t slice = ((i - step + 1) % k + k) % k;
      int64_t next = (i + 1) % k;
      ReshardMessage m;
      m.from = devices[i];
      m.to = devices[next];
      m.tile = tile;
      m.box = partOf(t.box, dim, k, slice);
      m.bytes = m.box.elements() * elementBytes;
      m.dependsOn = received[i][slice];
      received[next][slice] = static_cast<int>(draft.messages.size());
      draft.messages.push_back(std::move(m));
    }
  return draft;
}

int MethodPlanner::leastLoaded(ArrayRef<int> holders,
                               const std::vector<double> &load) {
  int best = holders.front();
  for (int h : holders)
    if (load[h] < load[best])
      best = h;
  return best;
}

std::vector<std::vector<int>> MethodPlanner::receiversByNode(int tile,
                                                             int sender) const {
  std::map<int, std::vector<int>> byNode;
  for (int r : tiles[tile].receivers)
    byNode[cluster.devices[r].node].push_back(r);
  std::vector<std::vector<int>> groups;
  int home = cluster.devices[sender].node;
  if (byNode.count(home))
    groups.push_back(byNode[home]);
  for (auto &[node, devices] : byNode)
    if (node != home)
      groups.push_back(devices);
  return groups;
}

std::vector<int>
MethodPlanner::railAwareChain(int tile, int sender,
                              const ReshardTimeline &timeline) const {
  std::vector<int> chain;
  std::vector<std::vector<int>> groups = receiversByNode(tile, sender);
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<int> devices = groups[g];
    bool home = cluster.devices[devices.front()].node ==
                cluster.devices[sender].node;
    auto earliest = [&](bool out, int avoidRail, int skip) {
      int best = -1;
      for (int d : devices) {
        if (d == skip || (avoidRail >= 0 && cluster.devices[d].rail == avoidRail))
          continue;
        if (best < 0 ||
            timeline.railFreeAt(d, out) < timeline.railFreeAt(best, out))
          best = d;
      }
      return best;
    };
    // The entry device receives over the NIC (not on the sender's node);
    // the exit device sends to the next node over another rail if it can.
    int entry = home ? devices.front() : earliest(false, -1, -1);
    int exit = -1;
    if (g + 1 < groups.size() && devices.size() > 1) {
      exit = earliest(true, cluster.devices[entry].rail, entry);
      if (exit < 0)
        exit = earliest(true, -1, entry);
    }
    chain.push_back(entry);
    for (int d : devices)
      if (d != entry && d != exit)
        chain.push_back(d);
    if (exit >= 0)
      chain.push_back(exit);
  }
  return chain;
}

double MethodPlanner::placeOption(const Option &option,
                                  ReshardTimeline &timeline) {
  double end = 0;
  for (const Draft &draft : option) {
    std::vector<int> chain = broadcastChain(draft.transfer);
    timeline.syncPorts(chain);
    std::vector<double> ends(draft.messages.size());
    for (size_t i = 0; i < draft.messages.size(); ++i) {
      const ReshardMessage &m = draft.messages[i];
      double ready = m.dependsOn >= 0 ? ends[m.dependsOn] : 0;
      ends[i] = timeline
                    .place(m.from, m.to, static_cast<double>(m.bytes), ready,
                           draft.transfer.broadcastCall)
                    .second;
      end = std::max(end, ends[i]);
    }
    timeline.syncPorts(chain);
  }
  return end;
}

ReshardPlan MethodPlanner::assemble(ReshardMethod method,
                                    ArrayRef<Draft> drafts) const {
  ReshardPlan plan;
  plan.method = method;
  plan.fullDuplex = options.fullDuplex;
  plan.tiles = tiles;
  size_t devices = cluster.devices.size();
  plan.bytesSent.assign(devices, 0);
  plan.bytesReceived.assign(devices, 0);
  for (const Draft &draft : drafts) {
    int index = static_cast<int>(plan.transfers.size());
    int base = static_cast<int>(plan.messages.size());
    plan.transfers.push_back(draft.transfer);
    for (ReshardMessage m : draft.messages) {
      if (m.dependsOn >= 0)
        m.dependsOn += base;
      m.transfer = index;
      plan.bytesSent[m.from] += m.bytes;
      plan.bytesReceived[m.to] += m.bytes;
      plan.bytesMoved += m.bytes;
      plan.messages.push_back(std::move(m));
    }
  }
  simulateMessages(cluster, plan, offset);
  return plan;
}

ReshardPlan MethodPlanner::sendRecv() {
  std::vector<double> load(cluster.devices.size(), 0);
  std::vector<Draft> drafts;
  for (size_t t = 0; t < tiles.size(); ++t)
    for (int r : tiles[t].receivers) {
      int from = leastLoaded(tiles[t].holders, load);
      load[from] += static_cast<double>(tileBytes(t));
      drafts.push_back(sendDraft(t, from, r, tiles[t].box));
    }
  return assemble(ReshardMethod::SendRecv, drafts);
}

ReshardPlan MethodPlanner::sendRecvAllGather() {
  std::vector<double> load(cluster.devices.size(), 0);
  std::vector<Draft> drafts;
  for (size_t t = 0; t < tiles.size(); ++t) {
    std::map<int, std::vector<int>> byNode;
    for (int r : tiles[t].receivers)
      byNode[cluster.devices[r].node].push_back(r);
    for (auto &[node, devices] : byNode) {
      if (std::optional<Draft> ring = allGatherDraft(t, devices, load)) {
        drafts.push_back(std::move(*ring));
        continue;
      }
      for (int r : devices) {
        int from = leastLoaded(tiles[t].holders, load);
        load[from] += static_cast<double>(tileBytes(t));
        drafts.push_back(sendDraft(t, from, r, tiles[t].box));
      }
    }
  }
  return assemble(ReshardMethod::SendRecvAllGather, drafts);
}

ReshardPlan MethodPlanner::broadcast() {
  std::vector<double> load(cluster.devices.size(), 0);
  std::vector<Draft> drafts;
  for (size_t t = 0; t < tiles.size(); ++t) {
    if (tiles[t].receivers.empty())
      continue;
    int from = leastLoaded(tiles[t].holders, load);
    load[from] += static_cast<double>(tileBytes(t));
    std::vector<int> chain;
    for (const std::vector<int> &group : receiversByNode(t, from))
      chain.insert(chain.end(), group.begin(), group.end());
    drafts.push_back(chainDraft(t, from, chain));
  }
  return assemble(ReshardMethod::Broadcast, drafts);
}

std::vector<Option>
MethodPlanner::balancedOptions(int t, const ReshardTimeline &timeline) const {
  const ReshardTile &tile = tiles[t];
  std::vector<Option> choices;
  // A chain from each of the holders whose NICs are idlest (at most 4).
  std::vector<int> holders = tile.holders;
  std::stable_sort(holders.begin(), holders.end(), [&](int a, int b) {
    return std::make_pair(timeline.railFreeAt(a, true),
                          timeline.sendFreeAt(a)) <
           std::make_pair(timeline.railFreeAt(b, true),
                          timeline.sendFreeAt(b));
  });
  if (holders.size() > 4)
    holders.resize(4);
  for (int h : holders)
    choices.push_back({chainDraft(t, h, railAwareChain(t, h, timeline))});
  // Or one send per receiver, each from the holder it ends earliest with.
  if (tile.receivers.size() > 1 && tile.holders.size() > 1) {
    Option sends;
    ReshardTimeline scratch = timeline;
    for (int r : tile.receivers) {
      Draft best;
      double bestEnd = std::numeric_limits<double>::infinity();
      for (int h : tile.holders) {
        ReshardTimeline trial = scratch;
        Draft draft = sendDraft(t, h, r, tile.box);
        double end = placeOption({draft}, trial);
        if (end < bestEnd) {
          bestEnd = end;
          best = std::move(draft);
        }
      }
      placeOption({best}, scratch);
      sends.push_back(std::move(best));
    }
    choices.push_back(std::move(sends));
  }
  return choices;
}

ReshardPlan MethodPlanner::balancedSearch() {
  // List scheduling: among the next tiles (largest first), place the one
  // whose best option leaves the earliest finish, then ends earliest; so
  // tiles fill whichever NICs and ports are idle. The window is as wide as
  // the work budget allows (every tile for small plans), at least 16.
  std::vector<int> remaining;
  for (size_t t = 0; t < tiles.size(); ++t)
    if (!tiles[t].receivers.empty())
      remaining.push_back(static_cast<int>(t));
  size_t window = std::max<size_t>(
      16, static_cast<size_t>(options.searchBudget /
                              (8 * std::max<size_t>(1, remaining.size()))));
  std::stable_sort(remaining.begin(), remaining.end(), [&](int a, int b) {
    return tileBytes(a) * static_cast<int64_t>(tiles[a].receivers.size()) >
           tileBytes(b) * static_cast<int64_t>(tiles[b].receivers.size());
  });
  ReshardTimeline timeline(cluster, options.fullDuplex);
  std::vector<std::vector<Option>> candidates(tiles.size());
  std::vector<int> chosen(tiles.size(), 0);
  std::vector<int> order;
  while (!remaining.empty()) {
    size_t pick = 0;
    int pickOption = 0;
    std::vector<Option> pickOptions;
    double bestFinish = std::numeric_limits<double>::infinity();
    double bestEnd = bestFinish;
    for (size_t i = 0; i < std::min(window, remaining.size()); ++i) {
      std::vector<Option> choices = balancedOptions(remaining[i], timeline);
      int bestHere = -1;
      for (size_t o = 0; o < choices.size(); ++o) {
        ReshardTimeline trial = timeline;
        double end = placeOption(choices[o], trial);
        double finish = trial.finishTime();
        if (finish < bestFinish || (finish == bestFinish && end < bestEnd)) {
          bestFinish = finish;
          bestEnd = end;
          bestHere = static_cast<int>(o);
        }
      }
      if (bestHere >= 0) {
        pick = i;
        pickOption = bestHere;
        pickOptions = std::move(choices);
      }
    }
    int t = remaining[pick];
    remaining.erase(remaining.begin() + pick);
    candidates[t] = std::move(pickOptions);
    chosen[t] = pickOption;
    placeOption(candidates[t][pickOption], timeline);
    order.push_back(t);
  }

  // Local search: other candidates for a tile, and a tile one place
  // earlier, kept when the whole plan finishes sooner. Bounded by the
  // number of messages simulated, so the result does not depend on the
  // machine.
  auto evaluate = [&](ArrayRef<int> sequence, ArrayRef<int> choice,
                      int64_t &work) {
    ReshardTimeline trial(cluster, options.fullDuplex);
    for (int t : sequence) {
      placeOption(candidates[t][choice[t]], trial);
      for (const Draft &draft : candidates[t][choice[t]])
        work += static_cast<int64_t>(draft.messages.size());
    }
    return trial.finishTime();
  };
  int64_t work = 0;
  double best = evaluate(order, chosen, work);
  bool improved = true;
  while (improved && work < options.searchBudget) {
    improved = false;
    for (size_t i = 0; i < order.size() && work < options.searchBudget; ++i) {
      int t = order[i];
      for (size_t o = 0; o < candidates[t].size(); ++o) {
        if (static_cast<int>(o) == chosen[t])
          continue;
        std::vector<int> choice = chosen;
        choice[t] = static_cast<int>(o);
        double finish = evaluate(order, choice, work);
        if (finish < best) {
          best = finish;
          chosen = std::move(choice);
          improved = true;
        }
      }
      if (i > 0) {
        std::vector<int> swapped = order;
        std::swap(swapped[i - 1], swapped[i]);
        double finish = evaluate(swapped, chosen, work);
        if (finish < best) {
          best = finish;
          order = std::move(swapped);
          improved = true;
        }
      }
    }
  }
  std::vector<Draft> drafts;
  for (int t : order)
    for (const Draft &draft : candidates[t][chosen[t]])
      drafts.push_back(draft);
  return assemble(ReshardMethod::Balanced, drafts);
}

ReshardPlan MethodPlanner::plan(ReshardMethod method) {
  switch (method) {
  case ReshardMethod::SendRecv:
    return sendRecv();
  case ReshardMethod::SendRecvAllGather:
    return sendRecvAllGather();
  case ReshardMethod::Broadcast: {
    // Chains pay a hop per receiver; where plain sends from several
    // holders are predicted faster, broadcast uses them.
    ReshardPlan chains = broadcast();
    ReshardPlan sends = sendRecv();
    if (sends.predictedSeconds < chains.predictedSeconds) {
      sends.method = ReshardMethod::Broadcast;
      sends.note = "plain sends from several holders are predicted faster "
                   "than broadcast chains";
      return sends;
    }
    return chains;
  }
  case ReshardMethod::Balanced: {
    ReshardPlan best = balancedSearch();
    for (ReshardMethod other :
         {ReshardMethod::Broadcast, ReshardMethod::SendRecvAllGather}) {
      ReshardPlan candidate = plan(other);
      if (candidate.predictedSeconds < best.predictedSeconds) {
        candidate.method = ReshardMethod::Balanced;
        candidate.note = "the search found nothing faster than the " +
                         reshardMethodName(other).str() + " plan";
        best = std::move(candidate);
      }
    }
    return best;
  }
  }
  return sendRecv();
}

//===----------------------------------------------------------------------===//
// planResharding
//===----------------------------------------------------------------------===//

/// The bytes of the largest block of `side`.
static double blockBytes(ArrayRef<int64_t> shape, const TensorSharding &s,
                         ArrayRef<int64_t> meshShape, int64_t elementBytes) {
  double bytes = static_cast<double>(elementBytes);
  for (int64_t size : largestLocalShape(shape, s, meshShape))
    bytes *= static_cast<double>(size);
  return bytes;
}

/// The ways to resolve the source's partial sums on its mesh: an
/// all-reduce, or a reduce-scatter onto each whole dimension long enough.
static std::vector<std::optional<ReshardReduction>>
reductionOptions(const Cluster &cluster, const ReshardProblem &problem) {
  const ReshardSide &source = problem.source;
  if (source.sharding.partial.empty())
    return {std::nullopt};
  CostModel model(cluster, source.mesh);
  double bytes = blockBytes(problem.shape, source.sharding, source.mesh.shape,
                            problem.elementBytes);
  const AxisList &axes = source.sharding.partial;
  std::vector<std::optional<ReshardReduction>> result;
  ReshardReduction allReduce;
  allReduce.kind = ReshardKind::AllReduce;
  allReduce.axes = axes;
  allReduce.after = source.sharding;
  allReduce.after.partial.clear();
  allReduce.seconds =
      model.collectiveSeconds(CollectiveKind::AllReduce, bytes, axes);
  result.push_back(allReduce);
  int64_t group = groupSize(source.mesh.shape, axes);
  for (size_t d = 0; d < problem.shape.size(); ++d) {
    if (!source.sharding.dims[d].empty() || problem.shape[d] < group)
      continue;
    ReshardReduction scatter;
    scatter.kind = ReshardKind::ReduceScatter;
    scatter.axes = axes;
    scatter.dim = static_cast<int>(d);
    scatter.after = allReduce.after;
    scatter.after.dims[d] = axes;
    scatter.seconds =
        model.collectiveSeconds(CollectiveKind::ReduceScatter, bytes, axes);
    result.push_back(scatter);
  }
  return result;
}

/// The time of the in-mesh collectives `steps` from `from`.
static double inMeshSeconds(const Cluster &cluster,
                            const ReshardProblem &problem,
                            ArrayRef<ReshardStep> steps) {
  const Mesh &mesh = problem.source.mesh;
  CostModel model(cluster, mesh);
  TensorSharding current = problem.source.sharding;
  double seconds = 0;
  for (const ReshardStep &step : steps) {
    double before = blockBytes(problem.shape, current, mesh.shape,
                               problem.elementBytes);
    double after = blockBytes(problem.shape, step.after, mesh.shape,
                              problem.elementBytes);
    switch (step.kind) {
    case ReshardKind::AllReduce:
      seconds += model.collectiveSeconds(CollectiveKind::AllReduce, before,
                                         step.axes);
      break;
    case ReshardKind::ReduceScatter:
      seconds += model.collectiveSeconds(CollectiveKind::ReduceScatter, before,
                                         step.axes);
      break;
    case ReshardKind::AllGather:
      seconds += model.collectiveSeconds(CollectiveKind::AllGather, after,
                                         step.axes);
      break;
    case ReshardKind::AllToAll:
      seconds += model.collectiveSeconds(CollectiveKind::AllToAll, before,
                                         step.axes);
      break;
    case ReshardKind::LocalSlice:
      break;
    }
    current = step.after;
  }
  return seconds;
}

llvm::Expected<ReshardPlan>
weft::plan::planResharding(const Cluster &cluster,
                           const ReshardProblem &problem, ReshardMethod method,
                           const ReshardOptions &options) {
  if (llvm::Error error = verifyReshardProblem(cluster, problem))
    return std::move(error);
  const ReshardSide &source = problem.source;
  const ReshardSide &destination = problem.destination;

  // Every way to resolve partial sums, each planned; the bound is the
  // smallest over them, so it holds for any plan.
  std::optional<ReshardPlan> best;
  double bound = std::numeric_limits<double>::infinity();
  std::string boundReason;
  for (const std::optional<ReshardReduction> &reduction :
       reductionOptions(cluster, problem)) {
    ReshardSide resolved = source;
    double seconds = 0;
    if (reduction) {
      resolved.sharding = reduction->after;
      seconds = reduction->seconds;
    }
    std::vector<ReshardTile> tiles =
        reshardTiles(problem.shape, resolved, destination);
    ReshardBound tileBound =
        reshardLowerBound(cluster, tiles, problem.elementBytes);
    if (seconds + tileBound.seconds < bound) {
      bound = seconds + tileBound.seconds;
      boundReason = tileBound.reason;
      if (reduction && seconds > 0)
        boundReason = (boundReason.empty() ? "" : boundReason + ", ") +
                      "with the source reduced by " +
                      reshardKindName(reduction->kind) +
                      " (the fastest reduction for the bound)";
    }
    MethodPlanner planner(cluster, options, problem.elementBytes,
                          std::move(tiles), seconds);
    ReshardPlan plan = planner.plan(method);
    plan.reduction = reduction;
    if (!best || plan.predictedSeconds < best->predictedSeconds)
      best = std::move(plan);
  }
  best->bound.seconds = bound;
  best->bound.reason = boundReason;

  // The same mesh on both sides: the in-mesh collectives do it.
  if (source.mesh.shape == destination.mesh.shape &&
      source.mesh.devices == destination.mesh.devices) {
    std::optional<std::vector<ReshardStep>> steps = planReshard(
        problem.shape, source.sharding, destination.sharding,
        source.mesh.shape);
    if (!steps)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "internal: no in-mesh resharding from " + source.sharding.str() +
              " to " + destination.sharding.str());
    best->inMesh = true;
    best->inMeshSteps = *steps;
    best->transfers.clear();
    best->messages.clear();
    best->reduction.reset();
    best->note.clear();
    std::fill(best->bytesSent.begin(), best->bytesSent.end(), 0);
    std::fill(best->bytesReceived.begin(), best->bytesReceived.end(), 0);
    best->bytesMoved = 0;
    best->predictedSeconds = inMeshSeconds(cluster, problem, *steps);
    // The tile bound prices point-to-point messages; the collectives are
    // priced by the mesh planner's formulas, which the bound does not
    // bound. No bound is claimed for them.
    best->bound.seconds = 0;
    best->bound.reason = "none for in-mesh collectives (the mesh planner's "
                         "cost model prices them)";
  }
  return std::move(*best);
}
