//===- ReshardBroadcastTest.cpp - Broadcast calls in resharding plans -----===//
//
// The device model of pipelines: blocking messages one at a time per
// device, and broadcast chains that each run as one runtime call (a relay
// receives chunk c + 1 while it forwards chunk c). The predicted times are
// checked against values computed by hand for the algorithm the runtime
// runs (runtime/comm/Broadcast.cpp: a chunked chain of MPI_Isend and
// MPI_Irecv); and the job's broadcast groups, deduplicated and capped.
//
//===----------------------------------------------------------------------===//

#include "ReshardTestSupport.h"

#include <gtest/gtest.h>

using namespace weft::plan;
using namespace weft::plan::testing;

namespace {

/// Pipelines' options: one message at a time, broadcasts as calls.
ReshardOptions pipelineOptions() {
  ReshardOptions options;
  options.fullDuplex = false;
  options.broadcastCalls = true;
  return options;
}

// Tests a call inside one node by hand: 4 MB from device 0 to devices 1, 2
// and 3 (2 us, 100 GB/s hops), at most 4 chunks. C chunks of 4 / C MB take
// (3 + C - 1) x (2 + 40 / C) us: 126 us whole, 88 in 2, 76.7 in 3, 72 in
// 4, so 4 chunks and 72 us; the runtime's chain runs exactly these hops.
// The same chain as blocking messages is not cut and takes 3 x 42 us.
TEST(ReshardBroadcastCall, ChunkedChainInOneNode) {
  Cluster cluster = makeCluster(1, 4);
  ReshardProblem problem;
  problem.shape = {1000000}; // 4 MB of f32.
  problem.source = side({1}, {0}, {{}});
  problem.destination = side({3}, {1, 2, 3}, {{}});
  ReshardOptions options = pipelineOptions();
  options.maxChunks = 4;
  for (ReshardMethod method :
       {ReshardMethod::Broadcast, ReshardMethod::Balanced}) {
    ReshardPlan plan = mustPlan(cluster, problem, method, options);
    ASSERT_EQ(plan.transfers.size(), 1u);
    const ReshardTransfer &call = plan.transfers.front();
    EXPECT_TRUE(call.broadcastCall);
    EXPECT_EQ(call.chunks, 4);
    EXPECT_EQ(broadcastChain(call), (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(plan.messages.size(), 12u);
    EXPECT_NEAR(plan.predictedSeconds, 72e-6, 1e-12);
    std::vector<GroupLink> hops(3, messageLink(cluster, 0, 1));
    EXPECT_NEAR(plan.predictedSeconds, chainSeconds(hops, 4e6, 4), 1e-12);
    // Each chunk moves once per hop: 3 x 4 MB.
    EXPECT_EQ(plan.bytesMoved, 12000000);
  }
  options.broadcastCalls = false;
  ReshardPlan blocking =
      mustPlan(cluster, problem, ReshardMethod::Broadcast, options);
  ASSERT_EQ(blocking.transfers.size(), 1u);
  EXPECT_FALSE(blocking.transfers.front().broadcastCall);
  EXPECT_EQ(blocking.transfers.front().chunks, 1);
  EXPECT_NEAR(blocking.predictedSeconds, 126e-6, 1e-12);
}

// Tests a call across two nodes by hand: 9.6 MB from device 0 (node 0) to
// devices 2 and 3 (node 1, one 10 GB/s NIC each, 10 us). Hop 0 -> 2 takes
// 10 us + c / 10 GB/s, hop 2 -> 3 2 us + c / 100 GB/s. In C chunks:
// 12 + 10 (C - 1) + 960 + 96 / C us, least at C = 3: 1024 us. Blocking
// messages take 970 + 98 us; two sends through the NIC 2 x 970 us. The
// bound is node 1's NIC: 10 us + 960 us.
TEST(ReshardBroadcastCall, AcrossNodesByHand) {
  Cluster cluster = makeCluster(2, 2, /*rails=*/1, /*railBandwidth=*/10e9);
  ReshardProblem problem;
  problem.shape = {2400000}; // 9.6 MB of f32.
  problem.source = side({1}, {0}, {{}});
  problem.destination = side({2}, {2, 3}, {{}});
  for (ReshardMethod method :
       {ReshardMethod::Broadcast, ReshardMethod::Balanced}) {
    ReshardPlan plan = mustPlan(cluster, problem, method, pipelineOptions());
    ASSERT_EQ(plan.transfers.size(), 1u) << reshardMethodName(method).str();
    const ReshardTransfer &call = plan.transfers.front();
    EXPECT_TRUE(call.broadcastCall);
    EXPECT_EQ(call.chunks, 3);
    EXPECT_EQ(broadcastChain(call), (std::vector<int>{0, 2, 3}));
    EXPECT_NEAR(plan.predictedSeconds, 1024e-6, 1e-12);
    EXPECT_NEAR(plan.bound.seconds, 970e-6, 1e-12);
  }
  ReshardOptions blocking = pipelineOptions();
  blocking.broadcastCalls = false;
  EXPECT_NEAR(mustPlan(cluster, problem, ReshardMethod::Broadcast, blocking)
                  .predictedSeconds,
              1068e-6, 1e-12);
  EXPECT_NEAR(
      mustPlan(cluster, problem, ReshardMethod::SendRecv, pipelineOptions())
          .predictedSeconds,
      1940e-6, 1e-12);
}

/// A message of `bytes` from `from` to `to` of transfer `transfer`.
ReshardMessage message(int from, int to, int64_t bytes, int transfer,
                       int dependsOn = -1) {
  ReshardMessage m;
  m.from = from;
  m.to = to;
  m.bytes = bytes;
  m.transfer = transfer;
  m.dependsOn = dependsOn;
  m.box = Box{{0}, {bytes / 4}};
  return m;
}

// Tests when a call's devices enter and leave it, on one node (2 us, 100
// GB/s): device 1 first receives 1 MB from device 3 (0 - 12 us), then
// relays a 2-chunk call 0 -> 1 -> 2 of 1 MB (7 us a chunk), then sends
// 1 MB to device 3. The call starts when device 1 is free (12 us); inside
// it device 1 receives chunk 1 while it forwards chunk 0 (19 - 26 us);
// it leaves at 33 us, and its send ends at 45 us. As blocking messages the
// relay's four hops follow each other and the send ends at 52 us.
TEST(ReshardBroadcastCall, DevicesEnterAndLeaveTheCall) {
  Cluster cluster = makeCluster(1, 4);
  ReshardPlan plan;
  plan.fullDuplex = false;
  ReshardTransfer before;
  before.source = 3;
  before.destinations = {1};
  ReshardTransfer call;
  call.kind = TransferKind::Broadcast;
  call.source = 0;
  call.destinations = {1, 2};
  call.chunks = 2;
  call.broadcastCall = true;
  ReshardTransfer after;
  after.source = 1;
  after.destinations = {3};
  plan.transfers = {before, call, after};
  plan.messages = {message(3, 1, 1000000, 0),   message(0, 1, 500000, 1),
                   message(1, 2, 500000, 1, 1), message(0, 1, 500000, 1),
                   message(1, 2, 500000, 1, 3), message(1, 3, 1000000, 2)};
  simulateMessages(cluster, plan);
  const double us = 1e-6;
  std::vector<std::pair<double, double>> expected = {
      {0, 12}, {12, 19}, {19, 26}, {19, 26}, {26, 33}, {33, 45}};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(plan.messages[i].start, expected[i].first * us, 1e-12) << i;
    EXPECT_NEAR(plan.messages[i].end, expected[i].second * us, 1e-12) << i;
  }
  EXPECT_NEAR(plan.predictedSeconds, 45 * us, 1e-12);
  // Inside the call the chain takes its closed form: 2 x 7 + 7 us.
  std::vector<GroupLink> hops(2, messageLink(cluster, 0, 1));
  EXPECT_NEAR(plan.transfers[1].end - plan.transfers[1].start,
              chainSeconds(hops, 1e6, 2), 1e-12);

  plan.transfers[1].broadcastCall = false;
  simulateMessages(cluster, plan);
  EXPECT_NEAR(plan.messages[3].start, 26 * us, 1e-12);
  EXPECT_NEAR(plan.predictedSeconds, 52 * us, 1e-12);
}

// Tests the job's groups: one per device set whatever the chain's order,
// numbered in first-use order, none beyond the cap.
TEST(BroadcastGroups, DeduplicatedAndCapped) {
  BroadcastGroups groups(2);
  EXPECT_EQ(groups.groupOf({3, 1, 2}), 0);
  EXPECT_EQ(groups.groupOf({1, 2, 3}), 0);
  EXPECT_EQ(groups.groupOf({2, 0}), 1);
  EXPECT_EQ(groups.groupOf({4, 5}), -1);
  EXPECT_EQ(groups.groupOf({0, 2}), 1);
  EXPECT_EQ(groups.sets(), (std::vector<std::vector<int>>{{1, 2, 3}, {0, 2}}));
  BroadcastGroups none(0);
  EXPECT_EQ(none.groupOf({0, 1}), -1);
  EXPECT_TRUE(none.sets().empty());
}

} // namespace
