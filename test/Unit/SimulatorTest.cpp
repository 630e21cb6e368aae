//===- SimulatorTest.cpp - The event simulator against hand and closed forms
//===//
//
// Hand-computed timelines (a 2-stage pipeline, all-reduces, two transfers
// sharing a NIC rail), the GPipe closed form and the stage planner's
// objective on pipelines where nothing contends, and the errors of bad
// programs.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/Simulator.h"
#include "weft/Plan/Reshard.h"
#include "weft/Plan/Schedule.h"
#include "weft/Plan/StagePlanner.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>

using namespace weft::plan;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kTol = 1e-12;

/// `nodes` nodes of `perNode` GPUs (no core sharing) named d0, d1, ...,
/// with the given links. rail > 0 gives each node NIC rails of that
/// bandwidth: one shared by all its devices, or one per device.
Cluster makeCluster(int nodes, int perNode, Link intra, Link inter,
                    double rail = 0, bool railPerDevice = false) {
  Cluster cluster;
  cluster.name = "test";
  DeviceKind kind;
  kind.name = "gpu";
  kind.backend = "cuda";
  kind.flopPerS[DType::F32] = 1e12;
  kind.memoryBytes = 1e10;
  kind.memoryBandwidthBytesPerS = 1e12;
  cluster.kinds.push_back(kind);
  for (int n = 0; n < nodes; ++n) {
    Node node;
    node.name = "n" + std::to_string(n);
    if (rail > 0)
      node.rails.assign(railPerDevice ? perNode : 1, Rail{rail});
    cluster.nodes.push_back(node);
    for (int d = 0; d < perNode; ++d) {
      Device device;
      device.name = "d" + std::to_string(n * perNode + d);
      device.node = n;
      device.rail = rail > 0 ? (railPerDevice ? d : 0) : -1;
      cluster.devices.push_back(device);
    }
  }
  cluster.intraNode = intra;
  cluster.interNode = inter;
  return cluster;
}

SimResult run(const Cluster &cluster, const SimProgram &program,
              const SimOptions &options = {}) {
  llvm::Expected<SimResult> result = simulate(cluster, program, options);
  if (!result) {
    ADD_FAILURE() << llvm::toString(result.takeError());
    return {};
  }
  return std::move(*result);
}

/// The interval of `kind` on `track` that starts at `start` (or fails).
void expectEvent(const TimelineTrack &track, TimelineKind kind, double start,
                 double end, int64_t microbatch = -2) {
  for (const TimelineEvent &e : track.events)
    if (e.kind == kind && std::abs(e.start - start) < kTol) {
      EXPECT_NEAR(e.end, end, kTol) << track.name << " " << e.name;
      if (microbatch != -2) {
        EXPECT_EQ(e.microbatch, microbatch) << track.name << " " << e.name;
      }
      return;
    }
  ADD_FAILURE() << track.name << ": no " << timelineKindName(kind).str()
                << " interval starting at " << start;
}

TEST(SimulatorTest, TwoStagesTwoMicrobatches) {
  // One node, 1 GB/s and 0.5 ms between the devices: sending 0.5 MB takes
  // 0.5 ms + 0.5 ms = 1 ms. Stage 0 computes 3 ms, stage 1 2 ms.
  Cluster cluster = makeCluster(1, 2, {1e9, 0.5e-3}, {});
  SimPipeline pipeline;
  pipeline.stages = {{{0}, 3e-3, 0, 0.5e6}, {{1}, 2e-3, 0, 0}};
  pipeline.microbatchesPerRequest = 2;
  SimResult r = run(cluster, buildGPipeProgram(pipeline));
  ASSERT_EQ(r.timeline.tracks.size(), 2u);
  const TimelineTrack &s0 = r.timeline.tracks[0], &s1 = r.timeline.tracks[1];
  // Stage 0: m0 [0, 3], send [3, 4], m1 [4, 7], send [7, 8] (stage 1 has
  // been waiting in its receive since 6), idle until 10.
  ASSERT_EQ(s0.events.size(), 4u);
  expectEvent(s0, TimelineKind::Compute, 0, 3e-3, 0);
  expectEvent(s0, TimelineKind::Communication, 3e-3, 4e-3, 0);
  expectEvent(s0, TimelineKind::Compute, 4e-3, 7e-3, 1);
  expectEvent(s0, TimelineKind::Communication, 7e-3, 8e-3, 1);
  // Stage 1: waits [0, 3], receives [3, 4], m0 [4, 6], waits [6, 7],
  // receives [7, 8], m1 [8, 10].
  ASSERT_EQ(s1.events.size(), 6u);
  expectEvent(s1, TimelineKind::Wait, 0, 3e-3);
  expectEvent(s1, TimelineKind::Communication, 3e-3, 4e-3);
  expectEvent(s1, TimelineKind::Compute, 4e-3, 6e-3, 0);
  expectEvent(s1, TimelineKind::Wait, 6e-3, 7e-3);
  expectEvent(s1, TimelineKind::Communication, 7e-3, 8e-3);
  expectEvent(s1, TimelineKind::Compute, 8e-3, 10e-3, 1);
  // The closed form: first 3 + 1 + 2 = 6, cycles 4 and 3: 6 + 4 = 10.
  EXPECT_NEAR(r.makespanSeconds, 10e-3, kTol);
  EXPECT_NEAR(r.throughputPerSecond, 100, 1e-9);
  EXPECT_NEAR(r.devices[0].bubbleFraction, 0.2, 1e-9); // Idle 8..10.
  EXPECT_NEAR(r.devices[1].bubbleFraction, 0.4, 1e-9); // Waits 3 + 1.
  EXPECT_NEAR(r.bubbleFraction, 0.3, 1e-9);
  // Critical path: stage 0 throughout, then its last send and stage 1's
  // last compute.
  ASSERT_EQ(r.criticalPath.size(), 5u);
  EXPECT_EQ(r.criticalPath.front().device, 0);
  EXPECT_NEAR(r.criticalPath.front().start, 0, kTol);
  EXPECT_EQ(r.criticalPath.back().device, 1);
  EXPECT_EQ(r.criticalPath.back().kind, TimelineKind::Compute);
  for (size_t i = 1; i < r.criticalPath.size(); ++i)
    EXPECT_NEAR(r.criticalPath[i].start, r.criticalPath[i - 1].end, kTol);
  // Stage 0 is busy 8 of 10 ms, mostly computing.
  EXPECT_EQ(r.bottleneck.kind, SimBottleneckKind::Compute);
  EXPECT_EQ(r.bottleneck.stage, 0);
  EXPECT_NEAR(r.bottleneck.utilization, 0.8, 1e-9);
  EXPECT_NE(describeSimResult(r).find("stage 0 (d0): compute"),
            std::string::npos)
      << describeSimResult(r);
}

TEST(SimulatorTest, AllReduceOnOneNodeIsTheRingFormula) {
  // Two devices, 10 GB/s and 1 us: a 100 MB ring all-reduce takes
  // 2(p-1) alpha + 2(p-1)/p n / beta = 2 us + 10 ms (the tree's 20 ms
  // loses). It starts when the slower device (3 ms of compute) arrives.
  Cluster cluster = makeCluster(1, 2, {10e9, 1e-6}, {});
  SimProgram program;
  program.devices.resize(2);
  program.devices[0] = {
      SimOp::compute(1e-3),
      SimOp::collectiveOp(CollectiveKind::AllReduce, 100e6, {0, 1}, 7)};
  program.devices[1] = {
      SimOp::compute(3e-3),
      SimOp::collectiveOp(CollectiveKind::AllReduce, 100e6, {0, 1}, 7)};
  SimResult r = run(cluster, program);
  double end = 3e-3 + 2e-6 + 10e-3;
  EXPECT_NEAR(r.makespanSeconds, end, kTol);
  expectEvent(r.timeline.tracks[0], TimelineKind::Wait, 1e-3, 3e-3);
  expectEvent(r.timeline.tracks[0], TimelineKind::Communication, 3e-3, end);
  expectEvent(r.timeline.tracks[1], TimelineKind::Communication, 3e-3, end);
  EXPECT_EQ(r.timings[0][1].startedBy, 1);
  EXPECT_EQ(r.timeline.tracks[0].events[2].category, "collective");
}

TEST(SimulatorTest, ChainBroadcastIsTheChainFormula) {
  // A broadcast call 0 -> 1 -> 2 of 4 MB in 4 chunks on one node (2 us,
  // 100 GB/s): 2 hops, then 3 more chunks, (2 + 4 - 1) x (2 us + 10 us) =
  // 60 us, the resharding planner's chainSeconds, from when the last
  // device arrives (1 ms).
  Cluster cluster = makeCluster(1, 3, {100e9, 2e-6}, {});
  SimProgram program;
  program.devices.resize(3);
  for (int d = 0; d < 3; ++d) {
    if (d == 1)
      program.devices[d].push_back(SimOp::compute(1e-3));
    program.devices[d].push_back(SimOp::broadcast({0, 1, 2}, 4e6, 4, 3));
  }
  SimResult r = run(cluster, program);
  EXPECT_NEAR(r.makespanSeconds, 1e-3 + 60e-6, 1e-15);
  std::vector<GroupLink> hops(2, messageLink(cluster, 0, 1));
  EXPECT_NEAR(r.makespanSeconds - 1e-3, chainSeconds(hops, 4e6, 4), 1e-15);
  for (int d = 0; d < 3; ++d)
    expectEvent(r.timeline.tracks[d], TimelineKind::Communication, 1e-3,
                1e-3 + 60e-6);
  EXPECT_NE(r.timeline.tracks[0].events.back().name.find("broadcast"),
            std::string::npos)
      << r.timeline.tracks[0].events.back().name;
}

TEST(SimulatorTest, AllReducesAcrossNodesShareTheRail) {
  // Two nodes of two devices, one 1 GB/s NIC per node, inter-node 1 GB/s
  // and 10 us. One all-reduce of 1 MB between d0 and d2 alone: 2 alpha +
  // n / beta = 20 us + 1 ms. Two at once (d0-d2 and d1-d3) share both
  // rails: 20 us + 2 ms each, what the cost model predicts for the
  // mesh-wide collective over axis 0 of a [2, 2] mesh.
  Cluster cluster = makeCluster(2, 2, {100e9, 1e-6}, {1e9, 1e-5}, 1e9);
  auto allReduce = [](std::vector<int> group) {
    return SimOp::collectiveOp(CollectiveKind::AllReduce, 1e6, group, 0);
  };
  SimProgram alone;
  alone.devices = {{allReduce({0, 2})}, {}, {allReduce({0, 2})}};
  EXPECT_NEAR(run(cluster, alone).makespanSeconds, 2e-5 + 1e-3, kTol);

  SimProgram both;
  both.devices = {{allReduce({0, 2})},
                  {allReduce({1, 3})},
                  {allReduce({0, 2})},
                  {allReduce({1, 3})}};
  // Ids: the two groups use distinct ids.
  both.devices[1][0].id = both.devices[3][0].id = 1;
  SimResult r = run(cluster, both);
  EXPECT_NEAR(r.makespanSeconds, 2e-5 + 2e-3, 1e-12);
  for (const SimDeviceSummary &s : r.devices)
    EXPECT_NEAR(s.contentionSeconds, 1e-3, 1e-12);
  Mesh mesh{"m", {2, 2}, {0, 1, 2, 3}};
  EXPECT_NEAR(CostModel(cluster, mesh)
                  .collectiveSeconds(CollectiveKind::AllReduce, 1e6, {0}),
              r.makespanSeconds, 1e-12);
}

TEST(SimulatorTest, TwoTransfersShareOneNicRail) {
  // d0 and d1 leave node 0 by its one 1 GB/s rail; d2 and d3 each have
  // their own on node 1. d0 sends 1 MB to d2 and d1 sends 2 MB to d3 at
  // once. After 10 us of latency both get half the rail (0.5 GB/s): d0's
  // 1 MB takes 2 ms; d1 has sent 1 MB by then and sends the rest alone at
  // 1 GB/s in 1 ms more.
  Cluster cluster = makeCluster(2, 2, {100e9, 1e-6}, {1e9, 1e-5}, 1e9);
  cluster.nodes[1].rails = {Rail{1e9}, Rail{1e9}};
  cluster.devices[3].rail = 1;
  SimProgram program;
  program.devices = {{SimOp::send(2, 1e6)},
                     {SimOp::send(3, 2e6)},
                     {SimOp::recv(0, 1e6)},
                     {SimOp::recv(1, 2e6)}};
  SimResult r = run(cluster, program);
  EXPECT_NEAR(r.timings[0][0].end, 1e-5 + 2e-3, kTol);
  EXPECT_NEAR(r.timings[1][0].end, 1e-5 + 3e-3, kTol);
  EXPECT_NEAR(r.timings[2][0].end, 1e-5 + 2e-3, kTol);
  // Each lost 1 ms to the other (half speed for 2 ms).
  EXPECT_NEAR(r.devices[0].contentionSeconds, 1e-3, kTol);
  EXPECT_NEAR(r.devices[1].contentionSeconds, 1e-3, kTol);
  EXPECT_EQ(r.timeline.tracks[0].events[0].category, "transfer");

  // Without contention each runs at its link's 1 GB/s.
  SimOptions free;
  free.contention = false;
  SimResult u = run(cluster, program, free);
  EXPECT_NEAR(u.timings[0][0].end, 1e-5 + 1e-3, kTol);
  EXPECT_NEAR(u.timings[1][0].end, 1e-5 + 2e-3, kTol);
}

TEST(SimulatorTest, RailBoundStreamNamesTheRail) {
  // Two 2-stage pipelines, d0 -> d2 and d1 -> d3, whose 4 MB activations
  // (4 ms at 1 GB/s) dwarf their 0.5 ms of compute, through node 0's one
  // shared rail: the rail bounds throughput.
  Cluster cluster = makeCluster(2, 2, {100e9, 1e-6}, {1e9, 1e-5}, 1e9, true);
  cluster.nodes[0].rails = {Rail{1e9}};
  cluster.devices[1].rail = 0;
  SimProgram program;
  program.devices.resize(4);
  program.requests = 8;
  for (int64_t m = 0; m < 8; ++m)
    for (int p = 0; p < 2; ++p) {
      program.devices[p].push_back(SimOp::compute(0.5e-3).at(0, m));
      program.devices[p].push_back(SimOp::send(2 + p, 4e6).at(0, m));
      program.devices[2 + p].push_back(SimOp::recv(p, 4e6).at(1, m));
      program.devices[2 + p].push_back(SimOp::compute(0.5e-3).at(1, m));
    }
  SimResult r = run(cluster, program);
  EXPECT_EQ(r.bottleneck.kind, SimBottleneckKind::Rail)
      << r.bottleneck.description;
  EXPECT_EQ(r.bottleneck.node, 0);
  EXPECT_TRUE(r.bottleneck.outbound);
  // Each microbatch: 0.5 ms compute, then 10 us + 8 ms at half speed.
  EXPECT_NEAR(1 / r.throughputPerSecond, 0.5e-3 + 1e-5 + 8e-3, 1e-9);
}

/// Device programs of a chain with one device per stage, every device on
/// its own node with its own rail (nothing is shared).
struct Chain {
  std::vector<double> compute, bytes;
};

Cluster chainCluster(size_t stages) {
  return makeCluster(static_cast<int>(stages), 1, {}, {2e9, 3e-6}, 4e9);
}

TEST(SimulatorTest, GPipeWithoutTransfersIsTheClosedForm) {
  // sum of stages + (M - 1) x the slowest stage, exactly.
  std::mt19937 rng(17);
  std::uniform_real_distribution<double> time(0.1e-3, 5e-3);
  for (int trial = 0; trial < 150; ++trial) {
    size_t stages = 1 + trial % 6;
    int64_t microbatches = 1 + (trial * 7) % 9;
    SimPipeline pipeline;
    PipelineTimes times;
    for (size_t k = 0; k < stages; ++k) {
      double t = time(rng);
      pipeline.stages.push_back({{static_cast<int>(k)}, t, 0, 0});
      times.stageSeconds.push_back(t);
    }
    pipeline.microbatchesPerRequest = microbatches;
    SimResult r = run(chainCluster(stages), buildGPipeProgram(pipeline));
    ScheduleEstimate e = estimateGPipe(times, microbatches);
    EXPECT_NEAR(r.makespanSeconds, e.latencySeconds, 1e-12) << trial;
  }
}

TEST(SimulatorTest, GPipeWithTransfersIsTheClosedForm) {
  // The closed form charges every transfer to the cycles of both its
  // stages, which is what blocking transfers do: a sender is busy until
  // its message has left, a receiver until it has arrived. Its first
  // microbatch, its steady-state cycle and its latency of M microbatches
  // are the simulated ones. (ScheduleTest only asks for an upper bound.)
  std::mt19937 rng(23);
  std::uniform_real_distribution<double> time(0.1e-3, 5e-3);
  std::uniform_real_distribution<double> size(0, 8e6);
  for (int trial = 0; trial < 120; ++trial) {
    size_t stages = 2 + trial % 5;
    Cluster cluster = chainCluster(stages);
    SimPipeline pipeline;
    PipelineTimes times;
    for (size_t k = 0; k < stages; ++k) {
      double t = time(rng), bytes = k + 1 < stages ? size(rng) : 0;
      pipeline.stages.push_back({{static_cast<int>(k)}, t, 0, bytes});
      times.stageSeconds.push_back(t);
      if (k + 1 < stages)
        times.transfers.push_back(
            {static_cast<int>(k), static_cast<int>(k + 1),
             messageSeconds(messageLink(cluster, static_cast<int>(k),
                                        static_cast<int>(k + 1)),
                            bytes)});
    }
    ScheduleEstimate one = estimateGPipe(times, 1);
    EXPECT_NEAR(run(cluster, buildGPipeProgram(pipeline)).makespanSeconds,
                one.latencySeconds, 1e-12)
        << trial;

    pipeline.requests = 60;
    SimResult stream = run(cluster, buildGPipeProgram(pipeline));
    const std::vector<double> &done = stream.requestDoneSeconds;
    EXPECT_NEAR(done[59] - done[58], one.cycleSeconds, 1e-11) << trial;

    pipeline.requests = 1;
    pipeline.microbatchesPerRequest = 1 + trial % 7;
    ScheduleEstimate many =
        estimateGPipe(times, pipeline.microbatchesPerRequest);
    EXPECT_NEAR(run(cluster, buildGPipeProgram(pipeline)).makespanSeconds,
                many.latencySeconds, 1e-12)
        << trial;
  }
}

/// Two nodes of two devices (each with its own rail, so that nothing is
/// shared), and a 4-layer problem for the stage planner over them whose
/// stage costs are what the simulator charges: compute, plus an all-reduce
/// of the stage's devices, plus transfers between equal sub-meshes (the
/// simulator's pairing; unequal neighbours are ruled out).
struct PlannerCase {
  Cluster cluster =
      makeCluster(2, 2, {100e9, 1e-6}, {10e9, 5e-6}, 12.5e9, true);
  std::vector<double> work = {1e-3, 3e-3, 2e-3, 2e-3};
  std::vector<double> activation = {0, 8e6, 4e6, 6e6};
  double allReduceBytes = 2e6;

  /// The devices of a stage placed at `p`.
  std::vector<int> devices(const StagePlacement &p) const {
    std::vector<int> out;
    for (int64_t node : p.nodes)
      for (int64_t d = 0; d < p.shape.devicesPerNode; ++d)
        out.push_back(static_cast<int>(node * 2 + p.firstDevice + d));
    return out;
  }
  double computeSeconds(int64_t first, int64_t last,
                        const SubMeshShape &s) const {
    double sum = 0;
    for (int64_t l = first; l < last; ++l)
      sum += work[l];
    return sum / s.devices();
  }
  double allReduceSeconds(const SubMeshShape &s) const {
    StagePlacement p{s, {}, 0};
    for (int64_t n = 0; n < s.nodes; ++n)
      p.nodes.push_back(n);
    std::vector<int> group = devices(p);
    Mesh mesh{"stage", {static_cast<int64_t>(group.size())}, group};
    return CostModel(cluster, mesh)
        .collectiveSeconds(CollectiveKind::AllReduce, allReduceBytes, {0});
  }
  StageProblem problem(std::vector<SubMeshShape> shapes) const {
    StageProblem p;
    p.layers = 4;
    p.nodeKinds = {0, 0};
    p.devicesPerNode = {2};
    p.shapes = std::move(shapes);
    p.maxStages = 4;
    p.stageSeconds = [this](int64_t first, int64_t last,
                            const SubMeshShape &s) {
      return computeSeconds(first, last, s) + allReduceSeconds(s);
    };
    p.transferSeconds = [this](int64_t layer, const SubMeshShape &from,
                               const SubMeshShape &to, bool sameNode) {
      if (from.devices() != to.devices())
        return kInf;
      GroupLink link = messageLink(cluster, 0, sameNode ? 1 : 2);
      return messageSeconds(link, activation[layer] / from.devices());
    };
    return p;
  }
  SimPipeline pipeline(const StagePlan &plan) const {
    SimPipeline pipeline;
    for (size_t k = 0; k < plan.stages.size(); ++k) {
      const StagePlacement &p = plan.stages[k];
      SimPipelineStage stage;
      stage.devices = devices(p);
      stage.computeSeconds =
          computeSeconds(plan.firstLayer[k], plan.firstLayer[k + 1], p.shape);
      stage.allReduceBytes = allReduceBytes;
      if (k + 1 < plan.stages.size())
        stage.bytesToNext = activation[plan.firstLayer[k + 1]];
      pipeline.stages.push_back(stage);
    }
    return pipeline;
  }
};

TEST(SimulatorTest, StagePlannerObjectiveIsTheSimulatedTime) {
  // Where nothing contends, the planner's latency of M microbatches, its
  // first microbatch and its slowest cycle (the throughput objective) are
  // the simulated ones: both charge a transfer to both its stages, as
  // blocking transfers do (see the GPipe tests).
  PlannerCase c;
  SubMeshShape node{0, 1, 2}, device{0, 1, 1};
  for (const std::vector<SubMeshShape> &shapes :
       {std::vector<SubMeshShape>{node}, std::vector<SubMeshShape>{device}})
    for (StageObjective objective :
         {StageObjective::Throughput, StageObjective::Latency})
      for (int64_t microbatches : {1, 5}) {
        SCOPED_TRACE(shapes.front().str() + ", objective " +
                     std::to_string(static_cast<int>(objective)) +
                     ", M = " + std::to_string(microbatches));
        StageProblem problem = c.problem(shapes);
        problem.objective = objective;
        problem.microbatches = microbatches;
        StagePlan plan = planStages(problem);
        ASSERT_TRUE(plan.found);
        // The throughput objective splits the layers (the latency one may
        // keep them on one stage).
        if (objective == StageObjective::Throughput) {
          ASSERT_GE(plan.stages.size(), 2u);
        }
        SimPipeline pipeline = c.pipeline(plan);
        pipeline.microbatchesPerRequest = microbatches;
        SimResult r = run(c.cluster, buildGPipeProgram(pipeline));
        EXPECT_NEAR(r.makespanSeconds, plan.latencySeconds, 1e-12);
        EXPECT_NEAR(stageObjectiveValue(problem, plan),
                    objective == StageObjective::Latency
                        ? r.makespanSeconds
                        : plan.slowestCycleSeconds,
                    1e-12);

        pipeline.microbatchesPerRequest = 1;
        pipeline.requests = 40;
        SimResult stream = run(c.cluster, buildGPipeProgram(pipeline));
        const std::vector<double> &done = stream.requestDoneSeconds;
        EXPECT_NEAR(done[0], plan.firstMicrobatchSeconds, 1e-12);
        EXPECT_NEAR(done[39] - done[38], plan.slowestCycleSeconds, 1e-11);
        for (const SimDeviceSummary &s : stream.devices)
          EXPECT_EQ(s.contentionSeconds, 0);
      }
}

TEST(SimulatorTest, Deterministic) {
  Cluster cluster = makeCluster(2, 2, {100e9, 1e-6}, {1e9, 1e-5}, 1e9);
  SimPipeline pipeline;
  pipeline.stages = {{{0, 1}, 1e-3, 4e6, 2e6}, {{2, 3}, 1.5e-3, 4e6, 0}};
  pipeline.microbatchesPerRequest = 4;
  pipeline.requests = 3;
  SimProgram program = buildGPipeProgram(pipeline);
  SimResult a = run(cluster, program), b = run(cluster, program);
  ASSERT_EQ(a.timings.size(), b.timings.size());
  for (size_t d = 0; d < a.timings.size(); ++d)
    for (size_t i = 0; i < a.timings[d].size(); ++i) {
      EXPECT_EQ(a.timings[d][i].start, b.timings[d][i].start);
      EXPECT_EQ(a.timings[d][i].end, b.timings[d][i].end);
    }
  EXPECT_EQ(describeSimResult(a), describeSimResult(b));
  EXPECT_EQ(a.events, b.events);
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

struct ErrorCase {
  const char *name;
  std::function<SimProgram()> program;
  /// Every one of these appears in the message.
  std::vector<std::string> says;
};

std::ostream &operator<<(std::ostream &os, const ErrorCase &c) {
  return os << c.name;
}

class SimulatorErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(SimulatorErrorTest, SaysWhereAndWhat) {
  Cluster cluster = makeCluster(1, 3, {1e9, 1e-6}, {});
  llvm::Expected<SimResult> result = simulate(cluster, GetParam().program());
  ASSERT_FALSE(static_cast<bool>(result));
  std::string message = llvm::toString(result.takeError());
  for (const std::string &part : GetParam().says)
    EXPECT_NE(message.find(part), std::string::npos)
        << "'" << part << "' not in: " << message;
}

SimProgram programOf(std::vector<std::vector<SimOp>> devices) {
  SimProgram program;
  program.devices = std::move(devices);
  return program;
}

const ErrorCase kErrorCases[] = {
    {"UnmatchedRecv",
     [] {
       return programOf({{SimOp::compute(1)}, {SimOp::recv(0, 8, 3)}});
     },
     {"device 1 ('d1') op 0 (recv from d0)",
      "no matching send on device 0 ('d0') (tag 3)"}},
    {"UnmatchedSend",
     [] {
       return programOf({{SimOp::send(2, 8)}, {}, {}});
     },
     {"device 0 ('d0') op 0", "no matching recv on device 2"}},
    {"Deadlock",
     [] {
       return programOf({{SimOp::recv(1, 8), SimOp::send(1, 8)},
                         {SimOp::recv(0, 8), SimOp::send(0, 8)}});
     },
     {"deadlock", "device 0 ('d0') op 0 (recv from d1) waits for device 1",
      "device 1 ('d1') op 0 (recv from d0) waits for device 0"}},
    {"CollectiveDeadlock",
     [] {
       auto ar = [](int64_t id) {
         return SimOp::collectiveOp(CollectiveKind::AllReduce, 8, {0, 1}, id);
       };
       return programOf({{ar(1), ar(2)}, {ar(2), ar(1)}});
     },
     {"deadlock", "waits for device 1 ('d1') (at op 0)"}},
    {"DeviceOutsideTheCluster",
     [] {
       return programOf({{}, {}, {}, {SimOp::compute(1)}});
     },
     {"device 3 is not in cluster 'test', which has 3 devices"}},
    {"PeerOutsideTheCluster",
     [] { return programOf({{SimOp::send(7, 8)}}); },
     {"device 0 ('d0') op 0", "peer device 7 is not in cluster"}},
    {"ParticipantOutsideTheCluster",
     [] {
       return programOf(
           {{SimOp::collectiveOp(CollectiveKind::AllGather, 8, {0, 5}, 0)}});
     },
     {"op 0 (all-gather 8 B)", "participant device 5 is not in cluster"}},
    {"ParticipantsDisagree",
     [] {
       return programOf(
           {{SimOp::collectiveOp(CollectiveKind::AllReduce, 8, {0, 1}, 4)},
            {SimOp::collectiveOp(CollectiveKind::AllReduce, 8, {0, 1, 2}, 4)}});
     },
     {"device 1 ('d1') op 0", "occurrence 0 of id 4 disagrees with device 0",
      "participants [0, 1, 2] vs [0, 1]"}},
    {"ParticipantNeverArrives",
     [] {
       return programOf(
           {{SimOp::collectiveOp(CollectiveKind::AllReduce, 8, {0, 2}, 4)}});
     },
     {"never meets participant device 2 ('d2'), which has 0 collectives"}},
    {"NegativeSeconds",
     [] {
       return programOf({{SimOp::compute(1), SimOp::compute(-2)}});
     },
     {"device 0 ('d0') op 1 (compute)", "must be finite and non-negative"}},
    {"NegativeBytes",
     [] {
       return programOf({{SimOp::send(1, -1)}, {SimOp::recv(0, -1)}});
     },
     {"bytes must be finite and non-negative, got -1"}},
    {"BytesDisagree",
     [] {
       return programOf({{SimOp::send(1, 8)}, {SimOp::recv(0, 16)}});
     },
     {"device 1 ('d1') op 0", "expects 16 B", "sends 8 B"}},
    {"SendToItself",
     [] { return programOf({{SimOp::send(0, 8)}}); },
     {"a blocking send to itself never completes"}},
    {"MicrobatchOutsideTheStream",
     [] { return programOf({{SimOp::compute(1).at(0, 3)}}); },
     {"microbatch 3 is outside the stream's 1 microbatches"}},
};

INSTANTIATE_TEST_SUITE_P(Errors, SimulatorErrorTest,
                         ::testing::ValuesIn(kErrorCases),
                         [](const auto &info) { return info.param.name; });

} // namespace
