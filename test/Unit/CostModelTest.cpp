//===- CostModelTest.cpp - Tests of the analytic cost model ---------------===//
//
// The roofline with shared node resources and the alpha-beta collective
// formulas, each against values computed by hand in the comments.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/CostModel.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <cmath>
#include <string>

using namespace weft::plan;
using llvm::Expected;
using llvm::StringRef;

#define ASSERT_OK(expected)                                                    \
  ASSERT_TRUE(static_cast<bool>(expected))                                     \
      << llvm::toString((expected).takeError())

/// Equal up to rounding: the formulas are a few operations deep.
#define EXPECT_CLOSE(actual, expected)                                         \
  EXPECT_NEAR(actual, expected, 1e-12 * std::fabs(expected))

namespace {

std::string examplePath(StringRef name) {
  llvm::SmallString<256> path(WEFT_EXAMPLE_CLUSTERS_DIR);
  llvm::sys::path::append(path, name);
  return std::string(path);
}

const Mesh &meshNamed(const Cluster &cluster, StringRef name) {
  const Mesh *mesh = cluster.findMesh(name);
  if (!mesh) {
    ADD_FAILURE() << "no mesh " << name.str();
    return cluster.meshes.front();
  }
  return *mesh;
}

// Four GPUs on one node: alpha = 1 us, beta = 10 GB/s.
const char *const fourGpus = R"({
  "device_kinds": [{"name": "gpu", "backend": "cuda",
    "flop_per_s": {"f32": 1e13}, "memory_bytes": 1.6e10,
    "memory_bandwidth_bytes_per_s": 1e12}],
  "nodes": [{"name": "n0", "devices": [{"name": "g0", "kind": "gpu"},
    {"name": "g1", "kind": "gpu"}, {"name": "g2", "kind": "gpu"},
    {"name": "g3", "kind": "gpu"}]}],
  "links": {"intra_node": {"bandwidth_bytes_per_s": 1e10,
                           "latency_seconds": 1e-6}},
  "meshes": [{"name": "mesh", "shape": [4]},
             {"name": "three", "shape": [3], "devices": ["g0", "g1", "g2"]},
             {"name": "column", "shape": [1, 4]}]
})";

// Two nodes of two GPUs; each node has two NICs of 10 GB/s (one per GPU)
// or, with `sharedNic`, one NIC both GPUs use. Inter-node link 10 GB/s,
// 10 us.
std::string twoNodes(bool sharedNic) {
  std::string rails = sharedNic ? R"([{"bandwidth_bytes_per_s": 1e10}])"
                                : R"([{"bandwidth_bytes_per_s": 1e10},
                                      {"bandwidth_bytes_per_s": 1e10}])";
  std::string second = sharedNic ? "0" : "1";
  std::string node = R"({"name": "NAME", "rails": )" + rails +
                     R"(, "devices": [{"name": "NAMEa", "kind": "gpu",
                     "rail": 0}, {"name": "NAMEb", "kind": "gpu", "rail": )" +
                     second + "}]}";
  auto named = [&](const std::string &name) {
    std::string text = node;
    for (size_t at; (at = text.find("NAME")) != std::string::npos;)
      text.replace(at, 4, name);
    return text;
  };
  return R"({"device_kinds": [{"name": "gpu", "backend": "cuda",
    "flop_per_s": {"f32": 1e13}, "memory_bytes": 1.6e10,
    "memory_bandwidth_bytes_per_s": 1e12}],
    "nodes": [)" +
         named("x") + ", " + named("y") + R"(],
    "links": {"intra_node": {"bandwidth_bytes_per_s": 1e11,
                             "latency_seconds": 1e-6},
              "inter_node": {"bandwidth_bytes_per_s": 1e10,
                             "latency_seconds": 1e-5}},
    "meshes": [{"name": "mesh", "shape": [2, 2]}]})";
}

TEST(CostModelCompute, FourProcessesOnTwoCoresGetHalf) {
  // shared-host-cpu4.json: four 1-core processes of 32 GFLOP/s and 10 GB/s
  // on a host of 2 cores and 20 GB/s.
  Expected<Cluster> cluster = loadCluster(examplePath("shared-host-cpu4.json"));
  ASSERT_OK(cluster);
  CostModel four(*cluster, meshNamed(*cluster, "mesh"));
  // 2 cores / 4 processes: 16 GFLOP/s each; 20 / 40 GB/s: 5 GB/s each.
  EXPECT_CLOSE(four.effectiveFlopPerS(0, DType::F32), 16e9);
  EXPECT_CLOSE(four.effectiveMemoryBandwidth(3), 5e9);
  EXPECT_CLOSE(four.computeSeconds(3.2e10, 0, DType::F32), 2.0);
  EXPECT_CLOSE(four.computeSeconds(0, 1e10, DType::F32), 2.0);
  // f16 is not listed: it runs at the f32 rate.
  EXPECT_CLOSE(four.computeSeconds(3.2e10, 0, DType::F16), 2.0);

  // Two processes in use on the same host: each has a whole core.
  CostModel pair(*cluster, meshNamed(*cluster, "pair"));
  EXPECT_CLOSE(pair.effectiveFlopPerS(1, DType::F32), 32e9);
  EXPECT_CLOSE(pair.computeSeconds(3.2e10, 0, DType::F32), 1.0);
  EXPECT_CLOSE(pair.computeSeconds(0, 1e10, DType::F32), 1.0);
  // Roofline: 1 GFLOP takes 31.25 ms, 10 GB take 1 s; memory binds.
  EXPECT_CLOSE(pair.computeSeconds(1e9, 1e10, DType::F32), 1.0);
  EXPECT_CLOSE(pair.computeSeconds(1e9, 1e6, DType::F32), 1e9 / 32e9);
  EXPECT_EQ(pair.effectiveFlopPerS(5, DType::F32), 0);
}

// Tests that a kernel class's rate scales the FLOP/s side of the roofline
// only: a depthwise convolution at a quarter of the GEMM rate takes four
// times as long while compute binds, and as long as anything while memory
// binds.
TEST(CostModelCompute, KernelRatesScaleTheFlopRate) {
  std::string spec = twoNodes(false);
  std::string from = R"("flop_per_s": {"f32": 1e13},)";
  spec.replace(spec.find(from), from.size(),
               R"("flop_per_s": {"f32": 1e13}, "kernel_rates": )"
               R"({"depthwise_conv": 0.25, "conv3x3": 2},)");
  Expected<Cluster> cluster = parseClusterSpec(spec, "rates.json");
  ASSERT_OK(cluster);
  Mesh one;
  one.shape = {1};
  one.devices = {0};
  CostModel costs(*cluster, one);
  EXPECT_CLOSE(costs.computeSeconds(1e13, 0, DType::F32), 1.0);
  EXPECT_CLOSE(
      costs.computeSeconds(1e13, 0, DType::F32, KernelClass::DepthwiseConv),
      4.0);
  EXPECT_CLOSE(costs.computeSeconds(1e13, 0, DType::F32, KernelClass::Conv3x3),
               0.5);
  EXPECT_CLOSE(costs.computeSeconds(1e13, 0, DType::F32, KernelClass::Conv),
               1.0);
  // 1e12 bytes at 1e12 B/s: memory binds every class but the depthwise
  // one, whose 1e11 FLOPs take 0.04 s at a quarter of 1e13.
  EXPECT_CLOSE(costs.computeSeconds(1e11, 1e12, DType::F32,
                                    KernelClass::DepthwiseConv),
               1.0);
}

TEST(CostModelCompute, SlowestDeviceCountsAndGpusShareNothing) {
  Expected<Cluster> cluster = loadCluster(examplePath("hetero.json"));
  ASSERT_OK(cluster);
  // H100s and A100s in one mesh: the A100 (19.5 TFLOP/s f32) binds.
  CostModel mixed(*cluster, meshNamed(*cluster, "mesh"));
  EXPECT_CLOSE(mixed.computeSeconds(1.95e13, 0, DType::F32), 1.0);
  EXPECT_CLOSE(mixed.computeSeconds(0, 1.555e12, DType::F32), 1.0);
  EXPECT_EQ(mixed.deviceMemoryBytes(), 4.0e10);
  CostModel fast(*cluster, meshNamed(*cluster, "h100s"));
  EXPECT_CLOSE(fast.computeSeconds(1.95e13, 0, DType::F32), 1.95e13 / 6.7e13);
  EXPECT_CLOSE(fast.computeSeconds(9.89e14, 0, DType::BF16), 1.0);
  EXPECT_EQ(fast.deviceMemoryBytes(), 8.0e10);

  overrideDeviceMemory(*cluster, 1e9);
  EXPECT_EQ(CostModel(*cluster, cluster->meshes[0]).deviceMemoryBytes(), 1e9);

  // Eight V100 processes on a 32-core node keep their full peak: GPUs do
  // not share host cores.
  Expected<Cluster> p3 = loadCluster("p3.16xlarge:1");
  ASSERT_OK(p3);
  CostModel v100(*p3, p3->meshes[0]);
  EXPECT_CLOSE(v100.effectiveFlopPerS(7, DType::F16), 125e12);
  EXPECT_CLOSE(v100.effectiveMemoryBandwidth(7), 9e11);
}

TEST(CostModelCollectives, RingAndTreeOnOneNode) {
  Expected<Cluster> cluster = parseClusterSpec(fourGpus, "four.json");
  ASSERT_OK(cluster);
  CostModel model(*cluster, meshNamed(*cluster, "mesh"));
  const double alpha = 1e-6, beta = 1e10;
  // 100 MB all-reduce, p = 4: ring 6a + 1.5 n/b = 15.006 ms; tree
  // 4a + 2 n/b = 20.004 ms; ring wins.
  double n = 1e8;
  EXPECT_CLOSE(model.collectiveSeconds(CollectiveKind::AllReduce, n, {0}),
               6 * alpha + 1.5 * n / beta);
  EXPECT_EQ(model.collectiveAlgorithm(CollectiveKind::AllReduce, n, {0}),
            "ring");
  EXPECT_CLOSE(
      model.collectiveSecondsWith(CollectiveKind::AllReduce, "tree", n, {0}),
      4 * alpha + 2 * n / beta);
  // 1 kB: ring 6 us + 0.15 us, tree 4 us + 0.2 us; tree wins.
  n = 1e3;
  EXPECT_CLOSE(model.collectiveSeconds(CollectiveKind::AllReduce, n, {0}),
               4 * alpha + 2 * n / beta);
  EXPECT_EQ(model.collectiveAlgorithm(CollectiveKind::AllReduce, n, {0}),
            "tree");
  EXPECT_CLOSE(
      model.collectiveSecondsWith(CollectiveKind::AllReduce, "ring", n, {0}),
      6 * alpha + 1.5 * n / beta);

  // All-gather producing / reduce-scatter consuming 100 MB: 3a + 0.75 n/b.
  n = 1e8;
  EXPECT_CLOSE(model.collectiveSeconds(CollectiveKind::AllGather, n, {0}),
               3 * alpha + 0.75 * n / beta);
  EXPECT_CLOSE(model.collectiveSeconds(CollectiveKind::ReduceScatter, n, {0}),
               3 * alpha + 0.75 * n / beta);
  EXPECT_EQ(model.collectiveAlgorithm(CollectiveKind::AllGather, 1, {0}),
            "ring");
  // All-to-all of a 100 MB buffer: each sends 3/16 of it, 3a + 3/16 n/b.
  EXPECT_CLOSE(model.collectiveSeconds(CollectiveKind::AllToAll, n, {0}),
               3 * alpha + 3.0 / 16 * n / beta);

  // p = 3: the tree is ceil(log2 3) = 2 levels deep.
  CostModel three(*cluster, meshNamed(*cluster, "three"));
  EXPECT_CLOSE(
      three.collectiveSecondsWith(CollectiveKind::AllReduce, "tree", 3e3, {0}),
      4 * alpha + 2 * 3e3 / beta);
  EXPECT_CLOSE(
      three.collectiveSecondsWith(CollectiveKind::AllReduce, "ring", 3e3, {0}),
      4 * alpha + 4.0 / 3 * 3e3 / beta);
}

TEST(CostModelCollectives, GroupOfOneOrNothingIsFree) {
  Expected<Cluster> cluster = parseClusterSpec(fourGpus, "four.json");
  ASSERT_OK(cluster);
  CostModel column(*cluster, meshNamed(*cluster, "column"));
  EXPECT_EQ(column.groupSize({0}), 1);
  EXPECT_EQ(column.collectiveSeconds(CollectiveKind::AllReduce, 1e9, {0}), 0);
  EXPECT_EQ(column.collectiveAlgorithm(CollectiveKind::AllReduce, 1e9, {0}),
            "none");
  EXPECT_EQ(column.collectiveSeconds(CollectiveKind::AllGather, 1e9, {}), 0);
  EXPECT_GT(column.collectiveSeconds(CollectiveKind::AllGather, 1e9, {1}), 0);
  EXPECT_EQ(column.collectiveSeconds(CollectiveKind::AllGather, 0, {1}), 0);
  EXPECT_EQ(column.groupSize({1}), 4);
  EXPECT_EQ(column.groupSize({0, 1}), 4);
  EXPECT_EQ(column.groupSize({}), 1);
  EXPECT_EQ(column.groupSize({1, 1, 9}), 4);
}

TEST(CostModelCollectives, GroupsAcrossNodesUseTheNetwork) {
  // two-node-cpu.json: mesh [2, 2], axis 0 across the nodes, axis 1 inside.
  // Shared memory: 10 GB/s, 1 us; network 1.25 GB/s, 25 us; one NIC of
  // 1.25 GB/s per node.
  Expected<Cluster> cluster = loadCluster(examplePath("two-node-cpu.json"));
  ASSERT_OK(cluster);
  CostModel model(*cluster, cluster->meshes[0]);
  EXPECT_EQ(model.groupSize({0, 1}), 4);
  double n = 1e6;
  // Inside a node: 1 us + 0.5 * 1 MB / 10 GB/s = 51 us.
  EXPECT_CLOSE(model.collectiveSeconds(CollectiveKind::AllGather, n, {1}),
               1e-6 + 0.5 * n / 1e10);
  // Across nodes: both processes of a node send through its one NIC at
  // once (the two groups run together): 1.25 GB/s / 2 = 625 MB/s, so
  // 25 us + 0.5 * 1 MB / 625 MB/s = 825 us.
  std::vector<GroupLink> links = model.groupLinks({0});
  ASSERT_EQ(links.size(), 2u);
  EXPECT_CLOSE(links[0].beta, 6.25e8);
  EXPECT_CLOSE(links[0].alpha, 2.5e-5);
  EXPECT_CLOSE(model.collectiveSeconds(CollectiveKind::AllGather, n, {0}),
               2.5e-5 + 0.5 * n / 6.25e8);
  // The whole mesh, flat at its slowest link: ring 6a + 1.5 n/b = 2.55 ms
  // beats tree 4a + 2 n/b = 3.3 ms.
  EXPECT_CLOSE(model.collectiveSeconds(CollectiveKind::AllReduce, n, {0, 1}),
               6 * 2.5e-5 + 1.5 * n / 6.25e8);
  EXPECT_EQ(model.collectiveAlgorithm(CollectiveKind::AllReduce, n, {0, 1}),
            "ring");
}

TEST(CostModelCollectives, RailSharingHalvesBandwidth) {
  // Axis 0 of the [2, 2] mesh pairs xa with ya and xb with yb across the
  // nodes; 1 GB all-gather, p = 2: 10 us + 0.5 GB / beta.
  double n = 1e9;
  Expected<Cluster> ownNics = parseClusterSpec(twoNodes(false), "own.json");
  ASSERT_OK(ownNics);
  CostModel own(*ownNics, ownNics->meshes[0]);
  // One NIC per GPU: beta = min(10 GB/s link, 10 GB/s NIC) = 10 GB/s.
  EXPECT_CLOSE(own.collectiveSeconds(CollectiveKind::AllGather, n, {0}),
               1e-5 + 0.5 * n / 1e10);

  Expected<Cluster> sharedNic = parseClusterSpec(twoNodes(true), "shared.json");
  ASSERT_OK(sharedNic);
  CostModel shared(*sharedNic, sharedNic->meshes[0]);
  // Both GPUs of a node on one NIC: 5 GB/s each.
  EXPECT_CLOSE(shared.collectiveSeconds(CollectiveKind::AllGather, n, {0}),
               1e-5 + 0.5 * n / 5e9);
  // Inside the node the NIC is not used: 1 us + 0.5 GB / 100 GB/s.
  EXPECT_CLOSE(shared.collectiveSeconds(CollectiveKind::AllGather, n, {1}),
               1e-6 + 0.5 * n / 1e11);
}

TEST(CostModelCollectives, HeterogeneousLinksSlowestGroupCounts) {
  // hetero.json, mesh [2, 4]: row 0 the H100 node (own NVLink 450 GB/s,
  // two 50 GB/s NICs shared by two GPUs each), row 1 the A100 node
  // (cluster link 300 GB/s, one 25 GB/s NIC for four GPUs).
  Expected<Cluster> cluster = loadCluster(examplePath("hetero.json"));
  ASSERT_OK(cluster);
  CostModel model(*cluster, meshNamed(*cluster, "mesh"));
  // Axis 1 stays inside each node; the A100 group is slower:
  // 3 * 2 us + 0.75 * 1.2 GB / 300 GB/s = 3.006 ms.
  double n = 1.2e9;
  std::vector<GroupLink> inside = model.groupLinks({1});
  ASSERT_EQ(inside.size(), 2u);
  EXPECT_CLOSE(inside[0].beta, 4.5e11);
  EXPECT_CLOSE(inside[1].beta, 3.0e11);
  EXPECT_CLOSE(model.collectiveSeconds(CollectiveKind::AllGather, n, {1}),
               3 * 2e-6 + 0.75 * n / 3.0e11);
  // Axis 0 crosses the nodes: beta = min(25 GB/s link, 50/2 GB/s H100
  // NICs, 25/4 GB/s A100 NIC) = 6.25 GB/s; 5 us + 0.5 n / beta.
  EXPECT_CLOSE(model.collectiveSeconds(CollectiveKind::AllGather, n, {0}),
               5e-6 + 0.5 * n / 6.25e9);

  // Only the H100s, [2, 2]: axis 1 inside their node at 450 GB/s.
  CostModel fast(*cluster, meshNamed(*cluster, "h100s"));
  EXPECT_CLOSE(fast.collectiveSeconds(CollectiveKind::AllGather, n, {1}),
               2e-6 + 0.5 * n / 4.5e11);
}

TEST(CostModelCollectives, P3AcrossNodesIsSlow) {
  // p3.16xlarge:2, mesh [2, 8]: eight groups of two across the nodes share
  // each node's 25 Gbps NIC: 3.125 GB/s / 8 per GPU.
  Expected<Cluster> cluster = loadCluster("p3.16xlarge:2");
  ASSERT_OK(cluster);
  CostModel model(*cluster, cluster->meshes[0]);
  double n = 1e8;
  EXPECT_CLOSE(model.collectiveSeconds(CollectiveKind::AllReduce, n, {0}),
               2 * 25e-6 + 1.0 * n / (25e9 / 8 / 8));
  // Inside a node, NVLink: ring 14a + 1.75 n/b.
  EXPECT_CLOSE(model.collectiveSeconds(CollectiveKind::AllReduce, n, {1}),
               14 * 2e-6 + 1.75 * n / 150e9);
}

TEST(CostModelRobustness, BadMeshIndicesAreIgnored) {
  Expected<Cluster> cluster = loadCluster("cpu:2");
  ASSERT_OK(cluster);
  // A hand-made mesh naming a device the cluster lacks: no crash, and the
  // missing device neither computes nor limits.
  Mesh bad{"bad", {2}, {0, 7}};
  CostModel model(*cluster, bad);
  EXPECT_EQ(model.effectiveFlopPerS(1, DType::F32), 0);
  EXPECT_GT(model.computeSeconds(1e9, 0, DType::F32), 0);
  EXPECT_EQ(model.collectiveSeconds(CollectiveKind::AllReduce, 1e6, {0}), 0);
  EXPECT_EQ(model.mesh().name, "bad");
}

} // namespace
