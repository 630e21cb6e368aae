//===- ReshardTest.cpp - Tests of the cross-mesh resharding planner -------===//
//
// The cost formulas against hand-computed values, the simulated timeline of
// small plans, and every method on random problems checked element by
// element: each destination element arrives exactly once, from a device
// that holds it when it sends; the predicted time is never below the bound;
// balanced <= broadcast <= send-recv.
//
//===----------------------------------------------------------------------===//

#include "ReshardTestSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

using namespace weft::plan;
using namespace weft::plan::testing;

namespace {

//===----------------------------------------------------------------------===//
// Formulas, by hand
//===----------------------------------------------------------------------===//

// Tests that a message costs alpha + bytes / beta over the link its ends
// share: the node's link inside a node, the inter-node link limited by the
// slower rail across nodes.
TEST(ReshardCost, MessageLinks) {
  Cluster cluster = makeCluster(2, 2, /*rails=*/1, /*railBandwidth=*/5e9);
  GroupLink intra = messageLink(cluster, 0, 1);
  EXPECT_DOUBLE_EQ(intra.alpha, 2e-6);
  EXPECT_DOUBLE_EQ(intra.beta, 100e9);
  GroupLink inter = messageLink(cluster, 1, 2);
  EXPECT_DOUBLE_EQ(inter.alpha, 10e-6);
  EXPECT_DOUBLE_EQ(inter.beta, 5e9);
  // 1 MB over 5 GB/s after 10 us: 210 us.
  EXPECT_NEAR(messageSeconds(inter, 1e6), 210e-6, 1e-12);
  EXPECT_EQ(messageSeconds(messageLink(cluster, 3, 3), 1e6), 0);
}

// Tests the pipelined chain's closed form on two unequal hops: a 2 us /
// 100 GB/s hop and a 10 us / 25 GB/s hop, 4 MB in 4 chunks of 1 MB:
// (2 + 10) + (10 + 40) = 62 us for the first chunk through both hops, then
// 3 more chunks at the slower hop's 50 us: 212 us.
TEST(ReshardCost, ChainClosedForm) {
  std::vector<GroupLink> hops = {{2e-6, 100e9}, {10e-6, 25e9}};
  EXPECT_NEAR(chainSeconds(hops, 4e6, 4), 212e-6, 1e-12);
  // Unchunked: both hops one after the other, 42 + 170 us (the same
  // total by chance); 8 MB: 82 + 330 us, or 62 + 7 x 50 us in 8 chunks.
  EXPECT_NEAR(chainSeconds(hops, 4e6, 1), 212e-6, 1e-12);
  EXPECT_NEAR(chainSeconds(hops, 8e6, 1), 82e-6 + 330e-6, 1e-12);
  EXPECT_NEAR(chainSeconds(hops, 8e6, 8), 62e-6 + 7 * 50e-6, 1e-12);
}

// Tests that the simulated broadcast chain through one node's devices takes
// the closed form's time: 1 source, 3 receivers of one node, 3 uniform hops.
TEST(ReshardCost, SimulatedChainMatchesClosedForm) {
  Cluster cluster = makeCluster(2, 4);
  ReshardProblem problem;
  problem.shape = {1 << 20}; // 4 MiB of f32.
  problem.source = side({1}, {0}, {{}});
  problem.destination = side({3}, {4, 5, 6}, {{}});
  ReshardPlan plan = mustPlan(cluster, problem, ReshardMethod::Broadcast);
  ASSERT_EQ(plan.transfers.size(), 1u);
  const ReshardTransfer &chain = plan.transfers.front();
  EXPECT_EQ(chain.kind, TransferKind::Broadcast);
  EXPECT_EQ(chain.destinations, (std::vector<int>{4, 5, 6}));
  std::vector<GroupLink> hops = {messageLink(cluster, 0, 4),
                                 messageLink(cluster, 4, 5),
                                 messageLink(cluster, 5, 6)};
  double bytes = 4.0 * (1 << 20);
  EXPECT_GT(chain.chunks, 1);
  // Chunks are whole elements, so they differ by one element at most: the
  // simulation and the closed form agree to a few parts in 10^7.
  EXPECT_NEAR(plan.predictedSeconds, chainSeconds(hops, bytes, chain.chunks),
              1e-6 * plan.predictedSeconds);
  // The chunk count is the closed form's best within the limits.
  for (int c = 1; c <= 16; ++c)
    EXPECT_LE(chainSeconds(hops, bytes, chain.chunks),
              chainSeconds(hops, bytes, c) + 1e-15);
  // Every receiver gets the whole tensor once: 3 x 4 MiB cross links.
  EXPECT_EQ(plan.bytesMoved, 3 * 4 * (1 << 20));
}

// Tests that two sends leaving one node through its single NIC rail take
// turns: the second starts when the first ends.
TEST(ReshardCost, SharedRailSerializes) {
  Cluster cluster = makeCluster(2, 2, /*rails=*/1, /*railBandwidth=*/10e9);
  ReshardProblem problem;
  problem.shape = {2, 250000}; // 1 MB per row.
  problem.source = side({2}, {0, 1}, {{0}, {}});
  problem.destination = side({2}, {2, 3}, {{0}, {}});
  ReshardPlan plan = mustPlan(cluster, problem, ReshardMethod::SendRecv);
  ASSERT_EQ(plan.messages.size(), 2u);
  double one = 10e-6 + 1e6 / 10e9;
  EXPECT_NEAR(plan.messages[0].end, one, 1e-12);
  EXPECT_NEAR(plan.messages[1].start, one, 1e-12);
  EXPECT_NEAR(plan.predictedSeconds, 2 * one, 1e-12);
  // The bound: 2 MB through node 0's one 10 GB/s NIC, after at least one
  // message's 10 us latency.
  EXPECT_NEAR(plan.bound.seconds, 10e-6 + 2e6 / 10e9, 1e-12);
  // With two rails the sends run at once.
  Cluster twoRails = makeCluster(2, 2, /*rails=*/2, /*railBandwidth=*/10e9);
  ReshardPlan parallel = mustPlan(twoRails, problem, ReshardMethod::Balanced);
  EXPECT_NEAR(parallel.predictedSeconds, one, 1e-12);
}

// Tests the ring all-gather of send-recv-allgather by hand: two receivers
// on one node each get half of a 1 MB tile from the other node (one after
// the other through the single rail), then swap halves over the 100 GB/s
// link.
TEST(ReshardCost, LocalAllGatherByHand) {
  Cluster cluster = makeCluster(2, 2, /*rails=*/1, /*railBandwidth=*/10e9);
  ReshardProblem problem;
  problem.shape = {250000};
  problem.source = side({1}, {0}, {{}});
  problem.destination = side({2}, {2, 3}, {{}});
  ReshardPlan plan =
      mustPlan(cluster, problem, ReshardMethod::SendRecvAllGather);
  ASSERT_EQ(plan.transfers.size(), 1u);
  EXPECT_EQ(plan.transfers[0].kind, TransferKind::AllGather);
  ASSERT_EQ(plan.messages.size(), 4u);
  double half = 10e-6 + 0.5e6 / 10e9;
  double swap = 2e-6 + 0.5e6 / 100e9;
  // Device 2's half arrives at `half`, device 3's at 2 x half (one sender,
  // one rail). Device 2's forward waits for device 3's receive port, which
  // is busy until 2 x half; device 3 forwards once its half is there.
  EXPECT_NEAR(plan.messages[0].end, half, 1e-12);
  EXPECT_NEAR(plan.messages[1].end, 2 * half, 1e-12);
  EXPECT_NEAR(plan.messages[2].start, 2 * half, 1e-12);
  EXPECT_NEAR(plan.messages[3].start, 2 * half, 1e-12);
  EXPECT_NEAR(plan.predictedSeconds, 2 * half + swap, 1e-12);
}

// Tests the device model of blocking messages, one at a time per device,
// with no broadcast calls: a chain's relay receives a tile, then forwards
// it, so the two hops of an unchunked 1 MB chain inside one node follow
// each other, and a second tile's first hop waits for the relay's forward.
// (ReshardBroadcastTest.cpp has the calls pipelines use.)
TEST(ReshardCost, OneMessageAtATime) {
  Cluster cluster = makeCluster(1, 4);
  ReshardProblem problem;
  problem.shape = {2, 125000}; // Two rows of 0.5 MB.
  problem.source = side({1}, {0}, {{}, {}});
  problem.destination = side({2}, {1, 2}, {{}, {}});
  ReshardOptions blocking;
  blocking.fullDuplex = false;
  blocking.broadcastCalls = false;
  ReshardPlan plan =
      mustPlan(cluster, problem, ReshardMethod::Broadcast, blocking);
  EXPECT_FALSE(plan.fullDuplex);
  ASSERT_EQ(plan.messages.size(), 2u);
  double hop = 2e-6 + 1e6 / 100e9;
  EXPECT_NEAR(plan.messages[0].end, hop, 1e-12);
  EXPECT_NEAR(plan.messages[1].start, hop, 1e-12);
  EXPECT_NEAR(plan.predictedSeconds, 2 * hop, 1e-12);
  // Two rows held by devices 0 and 3, each broadcast along 1 -> 2. Full
  // duplex, device 1 receives row 1 while it forwards row 0: 3 hops' time.
  // One message at a time, the chains would take 4 (device 1 receives,
  // forwards, receives, forwards), so broadcast falls back on plain sends
  // from both holders: 0 -> 1, then 0 -> 2 beside 3 -> 1, then 3 -> 2.
  ReshardProblem rows = problem;
  rows.source = side({2}, {0, 3}, {{0}, {}});
  ReshardOptions duplex;
  duplex.maxChunks = 1;
  duplex.broadcastCalls = false;
  double half = 2e-6 + 0.5e6 / 100e9;
  ReshardPlan chainsDuplex =
      mustPlan(cluster, rows, ReshardMethod::Broadcast, duplex);
  ReshardPlan chainsBlocking =
      mustPlan(cluster, rows, ReshardMethod::Broadcast, blocking);
  ASSERT_EQ(chainsDuplex.messages.size(), 4u);
  EXPECT_NEAR(chainsDuplex.predictedSeconds, 3 * half, 1e-12);
  EXPECT_NEAR(chainsBlocking.predictedSeconds, 3 * half, 1e-12);
  EXPECT_FALSE(chainsBlocking.note.empty());
  for (const ReshardTransfer &t : chainsBlocking.transfers)
    EXPECT_EQ(t.kind, TransferKind::Send);
}

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

// Tests that a source with a pending partial sum is reduced on its mesh
// first, and by a reduce-scatter when the destination splits a dimension
// over as many devices: then each source device holds one block.
TEST(ReshardPlan, PartialSourceReducedFirst) {
  Cluster cluster = makeCluster(2, 4);
  ReshardProblem problem;
  problem.shape = {1024, 1024};
  problem.source = side({4}, {0, 1, 2, 3}, {{}, {}}, {0});
  problem.destination = side({4}, {4, 5, 6, 7}, {{0}, {}});
  ReshardPlan plan = mustPlan(cluster, problem, ReshardMethod::Balanced);
  ASSERT_TRUE(plan.reduction.has_value());
  EXPECT_EQ(plan.reduction->kind, ReshardKind::ReduceScatter);
  EXPECT_EQ(plan.reduction->dim, 0);
  EXPECT_GT(plan.reduction->seconds, 0);
  // 4 blocks of 1 MiB, one per destination device, each from its holder.
  EXPECT_EQ(plan.bytesMoved, 4 << 20);
  for (const ReshardMessage &m : plan.messages)
    EXPECT_GE(m.start, plan.reduction->seconds);
}

// Tests that the same mesh on both sides uses the in-mesh collectives.
TEST(ReshardPlan, SameMeshIsInMesh) {
  Cluster cluster = makeCluster(1, 4);
  ReshardProblem problem;
  problem.shape = {64, 64};
  problem.source = side({4}, {0, 1, 2, 3}, {{0}, {}});
  problem.destination = side({4}, {0, 1, 2, 3}, {{}, {0}});
  ReshardPlan plan = mustPlan(cluster, problem, ReshardMethod::Balanced);
  EXPECT_TRUE(plan.inMesh);
  ASSERT_EQ(plan.inMeshSteps.size(), 1u);
  EXPECT_EQ(plan.inMeshSteps[0].kind, ReshardKind::AllToAll);
  EXPECT_TRUE(plan.messages.empty());
  EXPECT_GT(plan.predictedSeconds, 0);
}

// Tests that a side whose sharding names another mesh than the side's is
// refused, on either side, with both names in the message; and that two
// names of the same devices still make an in-mesh resharding, whose steps
// stay on the source's mesh.
TEST(ReshardPlan, SideShardingOnAnotherMesh) {
  Cluster cluster = makeCluster(1, 4);
  ReshardProblem problem;
  problem.shape = {8};
  problem.source = side({2}, {0, 1}, {{0}});
  problem.source.mesh.name = "a";
  problem.source.sharding.mesh = "b";
  problem.destination = side({2}, {2, 3}, {{}});
  auto message = [&](const ReshardProblem &p) {
    llvm::Expected<ReshardPlan> plan =
        planResharding(cluster, p, ReshardMethod::Balanced);
    return plan ? std::string() : llvm::toString(plan.takeError());
  };
  EXPECT_EQ(message(problem), "the source sharding [[0]] is on mesh 'b', not "
                              "on the source mesh 'a'");
  problem.source.sharding.mesh = "a";
  EXPECT_EQ(message(problem), "");
  problem.destination.sharding = problem.destination.sharding.onMesh("a");
  EXPECT_EQ(message(problem), "the destination sharding [[]] is on mesh 'a', "
                              "not on the destination mesh 'm'");

  problem.destination = side({2}, {0, 1}, {{}});
  ReshardPlan plan = mustPlan(cluster, problem, ReshardMethod::Balanced);
  EXPECT_TRUE(plan.inMesh);
  ASSERT_EQ(plan.inMeshSteps.size(), 1u);
  EXPECT_EQ(plan.inMeshSteps[0].after, TensorSharding::replicated("a", 1));
}

// Tests that a device in both meshes keeps what it holds.
TEST(ReshardPlan, OverlappingMeshesKeep) {
  Cluster cluster = makeCluster(1, 4);
  ReshardProblem problem;
  problem.shape = {8};
  problem.source = side({2}, {0, 1}, {{0}});
  problem.destination = side({2}, {1, 2}, {{}});
  ReshardPlan plan = mustPlan(cluster, problem, ReshardMethod::SendRecv);
  // Device 1 holds [4, 8) and needs [0, 8): it receives [0, 4) only.
  int64_t toOne = 0;
  for (const ReshardMessage &m : plan.messages)
    if (m.to == 1)
      toOne += m.box.elements();
  EXPECT_EQ(toOne, 4);
  EXPECT_EQ(plan.bytesMoved, (4 + 8) * 4);
}

// Tests the errors a bad problem gets.
TEST(ReshardPlan, Errors) {
  Cluster cluster = makeCluster(1, 4);
  ReshardProblem problem;
  problem.shape = {8};
  problem.source = side({2}, {0, 1}, {{0}});
  problem.destination = side({2}, {2, 3}, {{}}, {0});
  auto message = [&](const ReshardProblem &p) {
    llvm::Expected<ReshardPlan> plan =
        planResharding(cluster, p, ReshardMethod::Balanced);
    return plan ? std::string() : llvm::toString(plan.takeError());
  };
  EXPECT_NE(message(problem).find("destination sharding"), std::string::npos);
  problem.destination = side({2}, {2, 9}, {{}});
  EXPECT_NE(message(problem).find("destination mesh"), std::string::npos);
  problem.destination = side({2}, {2, 3}, {{1}});
  EXPECT_NE(message(problem).find("destination sharding"), std::string::npos);
  problem.destination = side({2}, {2, 3}, {{}});
  problem.shape = {0};
  EXPECT_NE(message(problem).find("positive"), std::string::npos);
}

//===----------------------------------------------------------------------===//
// Random problems, checked element by element
//===----------------------------------------------------------------------===//

struct RandomCase {
  Cluster cluster;
  ReshardProblem problem;
  std::string text;
};

AxisList randomAxes(std::mt19937 &rng, int axes, std::vector<bool> &used) {
  AxisList list;
  for (int a = 0; a < axes; ++a)
    if (!used[a] && rng() % 3 == 0) {
      used[a] = true;
      list.push_back(a);
    }
  return list;
}

ReshardSide randomSide(std::mt19937 &rng, const Cluster &cluster,
                       unsigned rank, std::vector<int> pool, bool partial) {
  std::shuffle(pool.begin(), pool.end(), rng);
  int devices = 1 + static_cast<int>(rng() % std::min<size_t>(6, pool.size()));
  std::vector<int64_t> shape;
  if (devices == 4 && rng() % 2)
    shape = {2, 2};
  else if (devices == 6 && rng() % 2)
    shape = {2, 3};
  else
    shape = {devices};
  pool.resize(devices);
  if (rng() % 2)
    std::sort(pool.begin(), pool.end());
  ReshardSide s;
  s.mesh = makeMesh(shape, pool);
  s.sharding.mesh = s.mesh.name;
  int axes = static_cast<int>(shape.size());
  std::vector<bool> used(axes);
  s.sharding.dims.resize(rank);
  for (unsigned k = 0; k < rank; ++k)
    s.sharding.dims[k] = randomAxes(rng, axes, used);
  if (partial)
    s.sharding.partial = randomAxes(rng, axes, used);
  (void)cluster;
  return s;
}

RandomCase randomCase(unsigned seed) {
  std::mt19937 rng(seed);
  RandomCase c;
  int nodes = 1 + static_cast<int>(rng() % 3);
  int perNode = 1 + static_cast<int>(rng() % 4);
  int rails = static_cast<int>(rng() % 3);
  c.cluster = makeCluster(nodes, perNode, rails, rng() % 2 ? 10e9 : 50e9);
  unsigned rank = 1 + rng() % 3;
  for (unsigned k = 0; k < rank; ++k)
    c.problem.shape.push_back(1 + static_cast<int64_t>(rng() % 13));
  c.problem.elementBytes = rng() % 2 ? 4 : 2;
  std::vector<int> all(c.cluster.devices.size());
  for (size_t i = 0; i < all.size(); ++i)
    all[i] = static_cast<int>(i);
  c.problem.source = randomSide(rng, c.cluster, rank, all, rng() % 4 == 0);
  // Disjoint where the cluster allows, else overlapping.
  std::vector<int> rest;
  for (int d : all)
    if (!llvm::is_contained(c.problem.source.mesh.devices, d))
      rest.push_back(d);
  bool disjoint = !rest.empty() && rng() % 4 != 0;
  c.problem.destination =
      randomSide(rng, c.cluster, rank, disjoint ? rest : all, false);
  c.text = "seed " + std::to_string(seed) + ": " +
           std::to_string(nodes) + "x" + std::to_string(perNode) +
           " devices, " + std::to_string(rails) + " rails, from " +
           c.problem.source.sharding.str() + " to " +
           c.problem.destination.sharding.str();
  return c;
}

/// Every element each destination device needs, counted over what it keeps
/// and the messages it receives; the block a device holds after the
/// source's reduction is computed here independently of the tiles.
void checkDelivery(const RandomCase &c, const ReshardPlan &plan) {
  const ReshardProblem &p = c.problem;
  ReshardSide resolved = p.source;
  if (plan.reduction)
    resolved.sharding = plan.reduction->after;
  auto blockOf = [&](const ReshardSide &s, int device) -> std::optional<Box> {
    const std::vector<int> &devices = s.mesh.devices;
    auto it = llvm::find(devices, device);
    if (it == devices.end())
      return std::nullopt;
    int64_t pos = it - devices.begin();
    Box box{localOffsets(p.shape, s.sharding, s.mesh.shape, pos),
            localShape(p.shape, s.sharding, s.mesh.shape, pos)};
    if (box.elements() == 0)
      return std::nullopt;
    return box;
  };
  // Senders hold what they send, when they send it.
  for (size_t i = 0; i < plan.messages.size(); ++i) {
    const ReshardMessage &m = plan.messages[i];
    ASSERT_NE(m.from, m.to) << c.text;
    ASSERT_GT(m.box.elements(), 0) << c.text;
    ASSERT_TRUE(plan.tiles[m.tile].box.contains(m.box)) << c.text;
    if (m.dependsOn < 0) {
      std::optional<Box> held = blockOf(resolved, m.from);
      ASSERT_TRUE(held && held->contains(m.box))
          << c.text << ": message " << i << " from " << m.from;
    } else {
      ASSERT_LT(m.dependsOn, static_cast<int>(i)) << c.text;
      const ReshardMessage &before = plan.messages[m.dependsOn];
      ASSERT_EQ(before.to, m.from) << c.text;
      ASSERT_TRUE(before.box.contains(m.box)) << c.text;
      ASSERT_GE(m.start + 1e-15, before.end) << c.text;
    }
    std::optional<Box> needed = blockOf(p.destination, m.to);
    ASSERT_TRUE(needed && needed->contains(m.box))
        << c.text << ": message " << i << " to " << m.to;
    ASSERT_LE(m.start, m.end) << c.text;
  }
  // Each destination element exactly once: kept or received.
  for (int device : p.destination.mesh.devices) {
    std::optional<Box> needed = blockOf(p.destination, device);
    if (!needed)
      continue;
    std::map<std::vector<int64_t>, int> count;
    std::optional<Box> held = blockOf(resolved, device);
    std::vector<int64_t> index(p.shape.size());
    auto forEach = [&](const Box &box, auto &&fn) {
      if (box.elements() == 0)
        return;
      std::vector<int64_t> i = box.offsets;
      while (true) {
        fn(i);
        int k = static_cast<int>(i.size()) - 1;
        for (; k >= 0; --k) {
          if (++i[k] < box.offsets[k] + box.sizes[k])
            break;
          i[k] = box.offsets[k];
        }
        if (k < 0)
          return;
      }
    };
    auto inside = [](const Box &box, const std::vector<int64_t> &i) {
      for (size_t k = 0; k < i.size(); ++k)
        if (i[k] < box.offsets[k] || i[k] >= box.offsets[k] + box.sizes[k])
          return false;
      return true;
    };
    forEach(*needed, [&](const std::vector<int64_t> &i) {
      count[i] = held && inside(*held, i) ? 1 : 0;
    });
    for (const ReshardMessage &m : plan.messages)
      if (m.to == device)
        forEach(m.box, [&](const std::vector<int64_t> &i) { ++count[i]; });
    for (const auto &[i, n] : count)
      ASSERT_EQ(n, 1) << c.text << ": device " << device << " gets element ("
                      << i.front() << ", ...) " << n << " times";
  }
}

// Tests every method on 150 random problems (1 to 3 nodes, 0 to 2 rails,
// disjoint or overlapping meshes, uneven blocks, partial sources), in both
// device models (one message at a time with and without broadcast calls):
// exact delivery, the bound, and the order of the methods.
TEST(ReshardRandom, DeliveryBoundAndOrder) {
  int checked = 0;
  for (unsigned seed = 1; seed <= 300; ++seed) {
    RandomCase c = randomCase((seed + 1) / 2);
    ReshardOptions options;
    options.fullDuplex = seed % 2 == 1;
    options.broadcastCalls = seed % 4 != 0;
    std::map<ReshardMethod, double> seconds;
    for (ReshardMethod method :
         {ReshardMethod::SendRecv, ReshardMethod::SendRecvAllGather,
          ReshardMethod::Broadcast, ReshardMethod::Balanced}) {
      ReshardPlan plan = mustPlan(c.cluster, c.problem, method, options);
      if (plan.inMesh)
        break;
      checkDelivery(c, plan);
      if (HasFatalFailure())
        return;
      EXPECT_GE(plan.predictedSeconds * (1 + 1e-12), plan.bound.seconds)
          << c.text << " " << reshardMethodName(method).str() << ": "
          << plan.bound.reason;
      seconds[method] = plan.predictedSeconds;
      // Planning is deterministic.
      ReshardPlan again = mustPlan(c.cluster, c.problem, method, options);
      ASSERT_EQ(again.messages.size(), plan.messages.size()) << c.text;
      EXPECT_EQ(again.predictedSeconds, plan.predictedSeconds) << c.text;
    }
    if (seconds.size() < 4)
      continue;
    ++checked;
    EXPECT_LE(seconds[ReshardMethod::Balanced],
              seconds[ReshardMethod::Broadcast] * (1 + 1e-12))
        << c.text;
    EXPECT_LE(seconds[ReshardMethod::Broadcast],
              seconds[ReshardMethod::SendRecv] * (1 + 1e-12))
        << c.text;
    EXPECT_LE(seconds[ReshardMethod::Balanced],
              seconds[ReshardMethod::SendRecvAllGather] * (1 + 1e-12))
        << c.text;
  }
  EXPECT_GE(checked, 200);
}

// Tests the tiles against a brute force over every element: a tile's
// holders and receivers are exactly the devices whose blocks hold and need
// each of its elements.
TEST(ReshardRandom, TilesMatchBruteForce) {
  for (unsigned seed = 1; seed <= 100; ++seed) {
    RandomCase c = randomCase(seed);
    ReshardSide source = c.problem.source;
    source.sharding.partial.clear();
    std::vector<ReshardTile> tiles =
        reshardTiles(c.problem.shape, source, c.problem.destination);
    auto devicesHolding = [&](const ReshardSide &s,
                              const std::vector<int64_t> &i) {
      std::vector<int> devices;
      for (int64_t pos = 0; pos < s.mesh.size(); ++pos) {
        std::vector<int64_t> off =
            localOffsets(c.problem.shape, s.sharding, s.mesh.shape, pos);
        std::vector<int64_t> size =
            localShape(c.problem.shape, s.sharding, s.mesh.shape, pos);
        bool in = true;
        for (size_t k = 0; k < i.size(); ++k)
          in &= i[k] >= off[k] && i[k] < off[k] + size[k];
        if (in)
          devices.push_back(s.mesh.devices[pos]);
      }
      std::sort(devices.begin(), devices.end());
      return devices;
    };
    int64_t covered = 0;
    for (const ReshardTile &tile : tiles) {
      covered += tile.box.elements();
      std::vector<int> needers = tile.receivers;
      needers.insert(needers.end(), tile.keepers.begin(), tile.keepers.end());
      std::sort(needers.begin(), needers.end());
      std::vector<int64_t> i = tile.box.offsets;
      while (true) {
        ASSERT_EQ(devicesHolding(source, i), tile.holders) << c.text;
        ASSERT_EQ(devicesHolding(c.problem.destination, i), needers)
            << c.text;
        int k = static_cast<int>(i.size()) - 1;
        for (; k >= 0; --k) {
          if (++i[k] < tile.box.offsets[k] + tile.box.sizes[k])
            break;
          i[k] = tile.box.offsets[k];
        }
        if (k < 0)
          break;
      }
    }
    int64_t total = 1;
    for (int64_t n : c.problem.shape)
      total *= n;
    EXPECT_EQ(covered, total) << c.text;
  }
}

} // namespace
