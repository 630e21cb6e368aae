//===- ClusterSpecTest.cpp - Tests of cluster specs and presets -----------===//
//
// Parsing and validation of JSON cluster specs (every error names the file
// and the JSON path), the built-in presets, and the command-line helpers:
// mesh shapes, byte sizes, mesh groups.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/Cluster.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <string>

using namespace weft::plan;
using llvm::Expected;
using llvm::StringRef;

#define ASSERT_OK(expected)                                                    \
  ASSERT_TRUE(static_cast<bool>(expected))                                     \
      << llvm::toString((expected).takeError())

namespace {

/// The absolute path of a file under examples/clusters.
std::string examplePath(StringRef name) {
  llvm::SmallString<256> path(WEFT_EXAMPLE_CLUSTERS_DIR);
  llvm::sys::path::append(path, name);
  return std::string(path);
}

/// The text of `error`, or "" for success.
std::string errorText(llvm::Error error) {
  return error ? llvm::toString(std::move(error)) : "";
}

/// The error text of a failed parse, or "" (a test failure) if it parsed.
std::string parseError(StringRef text, StringRef file = "base.json") {
  Expected<Cluster> cluster = parseClusterSpec(text, file);
  if (cluster) {
    ADD_FAILURE() << "parsed although it should not:\n" << text.str();
    return "";
  }
  return llvm::toString(cluster.takeError());
}

// A valid spec using every field; each case below breaks one thing.
const char *const baseSpec = R"({
  "name": "base",
  "device_kinds": [
    {"name": "cpu-core", "backend": "cpu", "cores_per_device": 1,
     "flop_per_s": {"f32": 3.2e10}, "memory_bytes": 8e9,
     "memory_bandwidth_bytes_per_s": 1e10},
    {"name": "h100", "backend": "cuda",
     "flop_per_s": {"f32": 6.7e13, "f16": 9.89e14},
     "memory_bytes": 8e10, "memory_bandwidth_bytes_per_s": 3.35e12}
  ],
  "nodes": [
    {"name": "n0", "cores": 2, "memory_bandwidth_bytes_per_s": 2e10,
     "rails": [{"bandwidth_bytes_per_s": 5e10}],
     "devices": [{"name": "c0", "kind": "cpu-core", "rail": 0},
                 {"name": "c1", "kind": "cpu-core"}]},
    {"name": "n1", "devices": [{"name": "g0", "kind": "h100"}]},
    {"name": "n2", "devices": [{"name": "g1", "kind": "h100"}]}
  ],
  "links": {
    "inter_node": {"bandwidth_bytes_per_s": 3.125e9, "latency_seconds": 1e-5},
    "intra_node": {"bandwidth_bytes_per_s": 4.5e11, "latency_seconds": 2e-6}
  },
  "meshes": [{"name": "mesh", "shape": [2, 2],
              "devices": ["c0", "c1", "g0", "g1"]}]
})";

TEST(ClusterSpec, BaseSpecParses) {
  Expected<Cluster> cluster = parseClusterSpec(baseSpec, "base.json");
  ASSERT_OK(cluster);
  EXPECT_EQ(cluster->name, "base");
  ASSERT_EQ(cluster->kinds.size(), 2u);
  EXPECT_TRUE(cluster->kinds[0].isCpu());
  EXPECT_EQ(cluster->kinds[1].flopPerS.at(DType::F16), 9.89e14);
  ASSERT_EQ(cluster->devices.size(), 4u);
  EXPECT_EQ(cluster->devices[2].name, "g0");
  EXPECT_EQ(cluster->devices[2].kind, 1);
  EXPECT_EQ(cluster->devices[2].node, 1);
  // Rail 0 given, rail 0 by default, no rails at all.
  EXPECT_EQ(cluster->devices[0].rail, 0);
  EXPECT_EQ(cluster->devices[1].rail, 0);
  EXPECT_EQ(cluster->devices[3].rail, -1);
  EXPECT_EQ(cluster->nodes[0].cores, 2);
  EXPECT_EQ(cluster->nodes[1].cores, 0);
  EXPECT_EQ(cluster->nodes.size(), 3u);
  EXPECT_EQ(cluster->interNode.bandwidthBytesPerS, 3.125e9);
  EXPECT_EQ(cluster->intraNode.latencySeconds, 2e-6);
  ASSERT_EQ(cluster->meshes.size(), 1u);
  EXPECT_EQ(cluster->meshes[0].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(cluster->meshes[0].devices, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(cluster->note.empty());
  EXPECT_EQ(errorText(verifyMesh(*cluster, cluster->meshes[0])), "");
}

// Tests that kernel_rates are read per class, and that a class not listed
// runs at 1 (flop_per_s).
TEST(ClusterSpec, KernelRates) {
  std::string text = baseSpec;
  std::string from = R"("flop_per_s": {"f32": 3.2e10},)";
  text.replace(text.find(from), from.size(),
               R"("flop_per_s": {"f32": 3.2e10}, "kernel_rates": )"
               R"({"conv3x3": 1.9, "depthwise_conv": 0.25},)");
  Expected<Cluster> cluster = parseClusterSpec(text, "rates.json");
  ASSERT_OK(cluster);
  const DeviceKind &cpu = cluster->kinds[0];
  EXPECT_EQ(cpu.kernelRate(KernelClass::Conv3x3), 1.9);
  EXPECT_EQ(cpu.kernelRate(KernelClass::DepthwiseConv), 0.25);
  EXPECT_EQ(cpu.kernelRate(KernelClass::Conv), 1.0);
  EXPECT_EQ(cpu.kernelRate(KernelClass::Generic), 1.0);
  EXPECT_EQ(cluster->kinds[1].kernelRate(KernelClass::Conv3x3), 1.0);
}

struct BrokenSpec {
  const char *from;
  const char *to;
  const char *path;
  const char *problem;
};

/// Names a failing case by the JSON path it breaks.
void PrintTo(const BrokenSpec &broken, std::ostream *out) {
  *out << broken.path << " (" << broken.problem << ")";
}

class ClusterSpecErrors : public ::testing::TestWithParam<BrokenSpec> {};

TEST_P(ClusterSpecErrors, NamesFilePathAndProblem) {
  const BrokenSpec &broken = GetParam();
  std::string text = baseSpec;
  size_t at = text.find(broken.from);
  ASSERT_NE(at, std::string::npos) << "not in the base spec: " << broken.from;
  text.replace(at, strlen(broken.from), broken.to);
  std::string message = parseError(text);
  EXPECT_EQ(message.rfind(std::string("base.json: ") + broken.path + ": ", 0),
            0u)
      << message;
  EXPECT_NE(message.find(broken.problem), std::string::npos) << message;
}

const BrokenSpec brokenSpecs[] = {
    // Kernel rates: known classes, factors of flop_per_s.
    {R"("flop_per_s": {"f32": 3.2e10},)",
     R"("flop_per_s": {"f32": 3.2e10}, "kernel_rates": {"winograd": 2},)",
     "device_kinds[0].kernel_rates.winograd", "unknown field"},
    {R"("flop_per_s": {"f32": 3.2e10},)",
     R"("flop_per_s": {"f32": 3.2e10}, "kernel_rates": {"conv": 0},)",
     "device_kinds[0].kernel_rates.conv", "must be positive"},
    {R"("flop_per_s": {"f32": 3.2e10},)",
     R"("flop_per_s": {"f32": 3.2e10}, "kernel_rates": {"conv3x3": 6e10},)",
     "device_kinds[0].kernel_rates.conv3x3", "not FLOP/s"},
    {R"("flop_per_s": {"f32": 3.2e10},)",
     R"("flop_per_s": {"f32": 3.2e10}, "kernel_rates": [1],)",
     "device_kinds[0].kernel_rates", "expected an object"},
    // Unknown fields, anywhere.
    {R"("name": "base",)", R"("name": "base", "nmae": 1,)", "nmae",
     "unknown field"},
    {R"({"name": "g0", "kind": "h100"})",
     R"({"name": "g0", "kind": "h100", "colour": "red"})",
     "nodes[1].devices[0].colour", "unknown field"},
    {R"("f16": 9.89e14)", R"("f8": 9.89e14)", "device_kinds[1].flop_per_s.f8",
     "unknown field"},
    {R"("latency_seconds": 1e-5})", R"("latency_seconds": 1e-5, "jitter": 0})",
     "links.inter_node.jitter", "unknown field"},
    {R"([{"bandwidth_bytes_per_s": 5e10}])",
     R"([{"bandwidth_bytes_per_s": 5e10, "gbps": 400}])",
     "nodes[0].rails[0].gbps", "unknown field"},
    // Keys given twice (JSON parsers keep the last silently).
    {R"("cores": 2, )", R"("cores": 2, "cores": 3, )", "nodes[0].cores",
     "field given twice"},
    {R"({"name": "c1", "kind": "cpu-core"})",
     R"({"name": "c1", "kind": "cpu-core", "name": "c2"})",
     "nodes[0].devices[1].name", "field given twice"},
    // Missing required fields.
    {R"({"name": "g1", "kind": "h100"})", R"({"name": "g1"})",
     "nodes[2].devices[0].kind", "required field is missing"},
    {R"("memory_bytes": 8e10, )", "", "device_kinds[1].memory_bytes",
     "required field is missing"},
    {R"("cores": 2, )", "", "nodes[0].cores", "holds cpu devices"},
    {R"("inter_node": {"bandwidth_bytes_per_s": 3.125e9,)", R"("x": {)",
     "links.x", "unknown field"},
    {R"({"bandwidth_bytes_per_s": 4.5e11, )", "{",
     "links.intra_node.bandwidth_bytes_per_s", "required field is missing"},
    {R"("shape": [2, 2],)", "", "meshes[0].shape", "required field"},
    // Wrong types.
    {R"("cores": 2)", R"("cores": "2")", "nodes[0].cores",
     "expected an integer, got a string"},
    {R"("cores": 2)", R"("cores": 2.5)", "nodes[0].cores",
     "expected an integer, got 2.5"},
    {R"("shape": [2, 2])", R"("shape": "2x2")", "meshes[0].shape",
     "expected an array, got a string"},
    {R"({"name": "g0", "kind": "h100"})", R"("g0")", "nodes[1].devices[0]",
     "expected an object, got a string"},
    {R"("backend": "cuda",)", R"("backend": "cuda", "targetable": "yes",)",
     "device_kinds[1].targetable", "expected true or false"},
    {R"("memory_bytes": 8e9)", R"("memory_bytes": "8 GB")",
     "device_kinds[0].memory_bytes", "expected a number, got a string"},
    {R"("name": "n1")", R"("name": "")", "nodes[1].name", "must not be empty"},
    // Unknown references and duplicate names.
    {R"({"name": "g0", "kind": "h100"})", R"({"name": "g0", "kind": "h200"})",
     "nodes[1].devices[0].kind", "unknown device kind 'h200'"},
    {R"("name": "c1")", R"("name": "c0")", "nodes[0].devices[1].name",
     "duplicate device name 'c0' (also at nodes[0].devices[0].name)"},
    {R"("name": "n1")", R"("name": "n0")", "nodes[1].name",
     "duplicate node name 'n0'"},
    {R"("name": "h100", "backend")", R"("name": "cpu-core", "backend")",
     "device_kinds[1].name", "duplicate device kind name 'cpu-core'"},
    {R"("backend": "cuda")", R"("backend": "rocm")", "device_kinds[1].backend",
     "unknown backend 'rocm'"},
    // Zero or negative quantities.
    {R"("bandwidth_bytes_per_s": 3.125e9)", R"("bandwidth_bytes_per_s": 0)",
     "links.inter_node.bandwidth_bytes_per_s", "must be positive, got 0"},
    {R"("bandwidth_bytes_per_s": 5e10)", R"("bandwidth_bytes_per_s": -5e10)",
     "nodes[0].rails[0].bandwidth_bytes_per_s", "must be positive"},
    {R"("f32": 3.2e10)", R"("f32": 0)", "device_kinds[0].flop_per_s.f32",
     "must be positive"},
    {R"("memory_bytes": 8e9)", R"("memory_bytes": 0)",
     "device_kinds[0].memory_bytes", "must be positive"},
    {R"("memory_bandwidth_bytes_per_s": 2e10)",
     R"("memory_bandwidth_bytes_per_s": -1)",
     "nodes[0].memory_bandwidth_bytes_per_s", "must be positive"},
    {R"("latency_seconds": 2e-6)", R"("latency_seconds": -2e-6)",
     "links.intra_node.latency_seconds", "must be zero or positive"},
    {R"("cores": 2)", R"("cores": 0)", "nodes[0].cores", "must be from 1"},
    {R"("flop_per_s": {"f32": 3.2e10})", R"("flop_per_s": {})",
     "device_kinds[0].flop_per_s", "at least one dtype"},
    // Meshes that do not match the devices.
    {R"("shape": [2, 2])", R"("shape": [2, 3])", "meshes[0].shape",
     "mesh shape 2x3 has 6 positions but the mesh lists 4 devices"},
    {R"("shape": [2, 2])", R"("shape": [0, 4])", "meshes[0].shape[0]",
     "must be from 1"},
    {R"("shape": [2, 2])", R"("shape": [])", "meshes[0].shape",
     "at least one dimension"},
    // More axes than the runtime's collectives take (kMaxMeshAxes).
    {R"("shape": [2, 2])", R"("shape": [2, 2, 1, 1, 1, 1, 1, 1, 1])",
     "meshes[0].shape", "9 axes, but the runtime supports at most 8"},
    {R"(["c0", "c1", "g0", "g1"])", R"(["c0", "c1", "g0", "g9"])",
     "meshes[0].devices[3]", "unknown device 'g9'"},
    {R"(["c0", "c1", "g0", "g1"])", R"(["c0", "c1", "g0", "g0"])",
     "meshes[0].devices[3]", "listed twice (also at meshes[0].devices[2])"},
    {R"(["c0", "c1", "g0", "g1"])", R"(["c0", "c1", "g0", 3])",
     "meshes[0].devices[3]", "expected a device name, got a number"},
    {"[2, 2],\n              \"devices\": [\"c0\", \"c1\", \"g0\", \"g1\"]",
     "[3]", "meshes[0].shape", "without \"devices\" it covers all 4"},
    // Rails, nodes and kinds that do not fit together.
    {R"("kind": "cpu-core", "rail": 0)", R"("kind": "cpu-core", "rail": 1)",
     "nodes[0].devices[0].rail", "must be from 0 to 0, got 1"},
    {R"({"name": "g0", "kind": "h100"})",
     R"({"name": "g0", "kind": "h100", "rail": 0})", "nodes[1].devices[0].rail",
     "node 'n1' lists no rails"},
    {R"("backend": "cuda",)", R"("backend": "cuda", "cores_per_device": 2,)",
     "device_kinds[1].cores_per_device", "only cpu device kinds"},
    {R"("backend": "cuda",)",
     R"("backend": "cuda", "planning_only_reason": "old",)",
     "device_kinds[1].planning_only_reason", "targetable"},
    {R"([{"name": "g0", "kind": "h100"}])", "[]", "nodes[1].devices",
     "at least one device"},
};

INSTANTIATE_TEST_SUITE_P(EveryCase, ClusterSpecErrors,
                         ::testing::ValuesIn(brokenSpecs));

TEST(ClusterSpec, BadJsonNamesFileAndPosition) {
  std::string message =
      parseError("{\n  \"name\": \"x\",\n  oops\n}", "a.json");
  EXPECT_NE(message.find("a.json: invalid JSON"), std::string::npos) << message;
  EXPECT_NE(message.find("[3:"), std::string::npos) << message;
}

TEST(ClusterSpec, RootMustBeAnObject) {
  EXPECT_EQ(parseError("[]", "r.json"),
            "r.json: expected an object, got an array");
}

TEST(ClusterSpec, LinksRequiredOnlyWhenUsed) {
  // One node, one device: no link is needed; two devices need intra_node.
  const char *one = R"({"device_kinds": [{"name": "k", "backend": "cuda",
      "flop_per_s": {"f32": 1e12}, "memory_bytes": 1e9,
      "memory_bandwidth_bytes_per_s": 1e11}],
    "nodes": [{"name": "n", "devices": [{"name": "d", "kind": "k"}]}]})";
  Expected<Cluster> cluster = parseClusterSpec(one, "dir/one.json");
  ASSERT_OK(cluster);
  EXPECT_EQ(cluster->name, "one"); // from the file name
  ASSERT_EQ(cluster->meshes.size(), 1u);
  EXPECT_EQ(cluster->meshes[0].name, "mesh");
  EXPECT_EQ(cluster->meshes[0].shape, (std::vector<int64_t>{1}));

  std::string two = one;
  two.replace(two.find("]}]}"), 4, R"(, {"name": "e", "kind": "k"}]}]})");
  EXPECT_EQ(parseError(two, "two.json"),
            "two.json: links: required field is missing (the cluster has a "
            "node with several devices)");
}

TEST(ClusterSpec, MissingInterNodeLinkAndEmptyMeshes) {
  std::string noInter = baseSpec;
  size_t line = noInter.find("    \"inter_node\"");
  ASSERT_NE(line, std::string::npos);
  noInter.erase(line, noInter.find('\n', line) + 1 - line);
  EXPECT_EQ(parseError(noInter), "base.json: links.inter_node: required "
                                 "field is missing (the cluster has 3 nodes)");

  std::string noMeshes = baseSpec;
  size_t meshes = noMeshes.find("\"meshes\": [");
  ASSERT_NE(meshes, std::string::npos);
  noMeshes.replace(meshes, noMeshes.rfind(']') + 1 - meshes, "\"meshes\": []");
  EXPECT_EQ(parseError(noMeshes),
            "base.json: meshes: must list at least one mesh (or leave "
            "\"meshes\" out for the default one)");
}

TEST(ClusterSpec, PlanningOnlyKindSetsTheNote) {
  std::string text = baseSpec;
  std::string from = R"("backend": "cuda",)";
  text.replace(text.find(from), from.size(),
               R"("backend": "cuda", "targetable": false,
                  "planning_only_reason": "H100 is not supported here",)");
  Expected<Cluster> cluster = parseClusterSpec(text, "base.json");
  ASSERT_OK(cluster);
  EXPECT_FALSE(cluster->kinds[1].targetable);
  EXPECT_EQ(cluster->note, "planning only: H100 is not supported here");
}

TEST(ClusterSpec, ExampleSpecsParse) {
  for (const char *name :
       {"two-node-cpu.json", "hetero.json", "shared-host-cpu4.json"}) {
    Expected<Cluster> cluster = loadCluster(examplePath(name));
    ASSERT_OK(cluster);
    EXPECT_FALSE(cluster->devices.empty()) << name;
    for (const Mesh &mesh : cluster->meshes)
      EXPECT_EQ(errorText(verifyMesh(*cluster, mesh)), "")
          << name << " mesh " << mesh.name;
  }
  Expected<Cluster> twoNode = loadCluster(examplePath("two-node-cpu.json"));
  ASSERT_OK(twoNode);
  EXPECT_EQ(twoNode->nodes.size(), 2u);
  EXPECT_EQ(twoNode->devices.size(), 4u);
  EXPECT_EQ(twoNode->devices[3].node, 1);
  EXPECT_EQ(twoNode->meshes[0].shape, (std::vector<int64_t>{2, 2}));

  Expected<Cluster> hetero = loadCluster(examplePath("hetero.json"));
  ASSERT_OK(hetero);
  EXPECT_EQ(hetero->kinds.size(), 2u);
  EXPECT_EQ(hetero->devices[2].rail, 1);
  ASSERT_TRUE(hetero->nodes[0].intraNodeLink.has_value());
  EXPECT_EQ(hetero->intraLink(0).bandwidthBytesPerS, 4.5e11);
  EXPECT_EQ(hetero->intraLink(1).bandwidthBytesPerS, 3.0e11);
  const Mesh *h100s = hetero->findMesh("h100s");
  ASSERT_NE(h100s, nullptr);
  EXPECT_EQ(h100s->size(), 4);
}

TEST(ClusterSpec, MissingFileNamesPresets) {
  Expected<Cluster> cluster = loadCluster("/no/such/cluster.json");
  ASSERT_FALSE(static_cast<bool>(cluster));
  std::string message = llvm::toString(cluster.takeError());
  EXPECT_NE(message.find("cannot read cluster spec '/no/such/cluster.json'"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("cpu:N"), std::string::npos) << message;
}

TEST(ClusterPresets, CpuN) {
  Expected<Cluster> cluster = loadCluster("cpu:4");
  ASSERT_OK(cluster);
  EXPECT_EQ(cluster->name, "cpu:4");
  EXPECT_EQ(cluster->devices.size(), 4u);
  ASSERT_EQ(cluster->nodes.size(), 1u);
  EXPECT_GE(cluster->nodes[0].cores, 1);
  EXPECT_EQ(cluster->nodes[0].memoryBandwidthBytesPerS, 20e9);
  EXPECT_TRUE(cluster->kinds[0].isCpu());
  EXPECT_EQ(cluster->kinds[0].memoryBytes, 8.0 * (1 << 30));
  EXPECT_EQ(cluster->kinds[0].peakFlopPerS(DType::F32), 32e9);
  ASSERT_EQ(cluster->meshes.size(), 1u);
  EXPECT_EQ(cluster->meshes[0].shape, (std::vector<int64_t>{4}));
  EXPECT_TRUE(cluster->note.empty());
  EXPECT_EQ(errorText(verifyMesh(*cluster, cluster->meshes[0])), "");

  Expected<Cluster> one = loadCluster("cpu:1");
  ASSERT_OK(one);
  EXPECT_EQ(one->devices.size(), 1u);
}

TEST(ClusterPresets, DgxH100) {
  Expected<Cluster> cluster = loadCluster("dgx-h100x8");
  ASSERT_OK(cluster);
  EXPECT_EQ(cluster->devices.size(), 8u);
  EXPECT_EQ(cluster->meshes[0].shape, (std::vector<int64_t>{8}));
  ASSERT_EQ(cluster->nodes[0].rails.size(), 8u);
  EXPECT_EQ(cluster->nodes[0].rails[0].bandwidthBytesPerS, 50e9);
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(cluster->devices[i].rail, i);
  EXPECT_EQ(cluster->intraNode.bandwidthBytesPerS, 450e9);
  EXPECT_EQ(cluster->kinds[0].memoryBytes, 80e9);
  EXPECT_TRUE(cluster->note.empty());

  Expected<Cluster> two = loadCluster("dgx-h100x8:2");
  ASSERT_OK(two);
  EXPECT_EQ(two->devices.size(), 16u);
  EXPECT_EQ(two->nodes.size(), 2u);
  EXPECT_EQ(two->devices[9].node, 1);
  EXPECT_EQ(two->meshes[0].shape, (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(errorText(verifyMesh(*two, two->meshes[0])), "");
}

TEST(ClusterPresets, P3IsPlanningOnly) {
  Expected<Cluster> cluster = loadCluster("p3.16xlarge:2");
  ASSERT_OK(cluster);
  EXPECT_EQ(cluster->devices.size(), 16u);
  EXPECT_EQ(cluster->nodes.size(), 2u);
  EXPECT_EQ(cluster->meshes[0].shape, (std::vector<int64_t>{2, 8}));
  EXPECT_FALSE(cluster->kinds[0].targetable);
  EXPECT_EQ(cluster->kinds[0].peakFlopPerS(DType::F32), 15.7e12);
  EXPECT_EQ(cluster->kinds[0].peakFlopPerS(DType::F16), 125e12);
  EXPECT_EQ(cluster->note, "planning only: V100 cannot be targeted by CUDA 13");
  // One NIC per node that all eight GPUs share; 25 Gbps between nodes.
  for (const Node &node : cluster->nodes)
    EXPECT_EQ(node.rails.size(), 1u);
  for (const Device &device : cluster->devices)
    EXPECT_EQ(device.rail, 0);
  EXPECT_EQ(cluster->interNode.bandwidthBytesPerS, 25e9 / 8);
  EXPECT_EQ(cluster->intraNode.bandwidthBytesPerS, 150e9);

  Expected<Cluster> one = loadCluster("p3.16xlarge:1");
  ASSERT_OK(one);
  EXPECT_EQ(one->meshes[0].shape, (std::vector<int64_t>{8}));
  std::string text = describeCluster(*cluster);
  EXPECT_NE(text.find("planning only"), std::string::npos) << text;
  EXPECT_NE(text.find("mesh 'mesh': 2x8"), std::string::npos) << text;
  EXPECT_NE(text.find("inter-node 3.125 GB/s, 25 us"), std::string::npos)
      << text;
  EXPECT_NE(text.find("f32 15.7 TFLOP/s"), std::string::npos) << text;
}

// Tests that p3.8xlarge:K is K nodes of four V100s that share one 10 Gbps
// NIC, with p3.16xlarge's NVLink and inter-node latency.
TEST(ClusterPresets, P3EightXLargeSharesOneSlowNic) {
  Expected<Cluster> cluster = loadCluster("p3.8xlarge:5");
  ASSERT_OK(cluster);
  Expected<Cluster> big = loadCluster("p3.16xlarge:1");
  ASSERT_OK(big);
  EXPECT_EQ(cluster->name, "p3.8xlarge:5");
  EXPECT_EQ(cluster->devices.size(), 20u);
  ASSERT_EQ(cluster->nodes.size(), 5u);
  EXPECT_EQ(cluster->meshes[0].shape, (std::vector<int64_t>{5, 4}));
  EXPECT_EQ(errorText(verifyMesh(*cluster, cluster->meshes[0])), "");
  for (size_t i = 0; i < cluster->devices.size(); ++i) {
    EXPECT_EQ(cluster->devices[i].node, static_cast<int>(i / 4)) << i;
    EXPECT_EQ(cluster->devices[i].rail, 0) << i;
  }
  for (const Node &node : cluster->nodes) {
    ASSERT_EQ(node.rails.size(), 1u);
    EXPECT_EQ(node.rails[0].bandwidthBytesPerS, 1.25e9);
  }
  EXPECT_EQ(cluster->interNode.bandwidthBytesPerS, 1.25e9);
  EXPECT_EQ(cluster->interNode.latencySeconds, big->interNode.latencySeconds);
  EXPECT_EQ(cluster->intraNode.bandwidthBytesPerS,
            big->intraNode.bandwidthBytesPerS);
  EXPECT_EQ(cluster->intraNode.latencySeconds, big->intraNode.latencySeconds);
  ASSERT_EQ(cluster->kinds.size(), 1u);
  EXPECT_EQ(cluster->kinds[0].name, big->kinds[0].name);
  EXPECT_FALSE(cluster->kinds[0].targetable);
  EXPECT_EQ(cluster->note, "planning only: V100 cannot be targeted by CUDA 13");
  std::string text = describeCluster(*cluster);
  EXPECT_NE(text.find("1 NIC rail of 1.25 GB/s"), std::string::npos) << text;

  Expected<Cluster> one = loadCluster("p3.8xlarge");
  ASSERT_OK(one);
  EXPECT_EQ(one->devices.size(), 4u);
  EXPECT_EQ(one->meshes[0].shape, (std::vector<int64_t>{4}));
  EXPECT_NE(presetHelp().find("p3.8xlarge:K"), StringRef::npos);

  Expected<Cluster> none = loadCluster("p3.8xlarge:0");
  ASSERT_FALSE(static_cast<bool>(none));
  EXPECT_EQ(llvm::toString(none.takeError()),
            "invalid cluster preset 'p3.8xlarge:0': K (nodes) must be an "
            "integer from 1 to 1024");
}

TEST(ClusterPresets, HeteroHasUnequalDevices) {
  Expected<Cluster> cluster = loadCluster("hetero-a100-v100");
  ASSERT_OK(cluster);
  EXPECT_EQ(cluster->devices.size(), 8u);
  ASSERT_EQ(cluster->kinds.size(), 2u);
  EXPECT_NE(cluster->kinds[0].memoryBytes, cluster->kinds[1].memoryBytes);
  EXPECT_NE(cluster->kinds[0].peakFlopPerS(DType::F16),
            cluster->kinds[1].peakFlopPerS(DType::F16));
  EXPECT_EQ(cluster->meshes[0].shape, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(cluster->devices[0].kind, 0);
  EXPECT_EQ(cluster->devices[7].kind, 1);
  EXPECT_NE(cluster->note.find("planning only"), std::string::npos);
  EXPECT_EQ(errorText(verifyMesh(*cluster, cluster->meshes[0])), "");
}

TEST(ClusterPresets, BadArgumentsAreErrors) {
  for (const char *name :
       {"cpu:0", "cpu:", "cpu:abc", "cpu:-2", "cpu:4096", "p3.16xlarge:0",
        "p3.16xlarge:", "p3.8xlarge:0", "p3.8xlarge:1025", "p3.8xlarge:two",
        "dgx-h100x8:x", "hetero-a100-v100:2"}) {
    Expected<Cluster> cluster = loadCluster(name);
    ASSERT_FALSE(static_cast<bool>(cluster)) << name;
    std::string message = llvm::toString(cluster.takeError());
    EXPECT_NE(message.find(std::string("invalid cluster preset '") + name),
              std::string::npos)
        << message;
  }
}

TEST(MeshShape, SetMeshShape) {
  Expected<Cluster> cluster = loadCluster("cpu:4");
  ASSERT_OK(cluster);
  EXPECT_EQ(errorText(setMeshShape(*cluster, {2, 3})),
            "mesh shape 2x3 needs 6 devices but cluster 'cpu:4' has 4");
  EXPECT_EQ(errorText(setMeshShape(*cluster, {0, 2})),
            "mesh shape 0x2: every dimension must be positive");
  EXPECT_EQ(errorText(setMeshShape(*cluster, {})),
            "a mesh shape needs at least one dimension");
  EXPECT_NE(errorText(setMeshShape(*cluster, {1 << 30, 1 << 30, 1 << 30})), "");
  EXPECT_EQ(errorText(setMeshShape(*cluster, {2, 1, 1, 1, 1, 1, 1, 1, 1})),
            "mesh shape 2x1x1x1x1x1x1x1x1 has 9 axes; the runtime supports "
            "at most 8");
  // The failed attempts left the mesh alone.
  EXPECT_EQ(cluster->meshes[0].shape, (std::vector<int64_t>{4}));

  ASSERT_EQ(errorText(setMeshShape(*cluster, {2, 2})), "");
  ASSERT_EQ(cluster->meshes.size(), 1u);
  EXPECT_EQ(cluster->meshes[0].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(cluster->meshes[0].devices, (std::vector<int>{0, 1, 2, 3}));
  ASSERT_EQ(errorText(setMeshShape(*cluster, {2})), "");
  EXPECT_EQ(cluster->meshes[0].devices, (std::vector<int>{0, 1}));
}

TEST(MeshShape, VerifyMesh) {
  Expected<Cluster> cluster = loadCluster("cpu:2");
  ASSERT_OK(cluster);
  EXPECT_EQ(errorText(verifyMesh(*cluster, Mesh{"m", {2}, {0, 0}})),
            "mesh 'm' lists device 'cpu0' twice");
  EXPECT_EQ(errorText(verifyMesh(*cluster, Mesh{"m", {3}, {0, 1}})),
            "mesh 'm' has shape 3 but lists 2 devices");
  EXPECT_EQ(errorText(verifyMesh(*cluster, Mesh{"m", {1}, {9}})),
            "mesh 'm' names device index 9 but the cluster has 2 devices");
  EXPECT_EQ(errorText(verifyMesh(*cluster, Mesh{"m", {2, 1}, {1, 0}})), "");
  EXPECT_EQ(errorText(verifyMesh(
                *cluster, Mesh{"m", {2, 1, 1, 1, 1, 1, 1, 1, 1}, {1, 0}})),
            "mesh 'm' has 9 axes; the runtime supports at most 8");
  EXPECT_EQ(errorText(verifyMesh(*cluster,
                                 Mesh{"m", {2, 1, 1, 1, 1, 1, 1, 1}, {1, 0}})),
            "");
}

TEST(MeshShape, Parse) {
  Expected<std::vector<int64_t>> shape = parseMeshShape("2x4");
  ASSERT_OK(shape);
  EXPECT_EQ(*shape, (std::vector<int64_t>{2, 4}));
  Expected<std::vector<int64_t>> flat = parseMeshShape("8");
  ASSERT_OK(flat);
  EXPECT_EQ(*flat, (std::vector<int64_t>{8}));
  Expected<std::vector<int64_t>> eight = parseMeshShape("2x1x1x1x1x1x1x1");
  ASSERT_OK(eight);
  EXPECT_EQ(eight->size(), 8u);
  EXPECT_EQ(errorText(parseMeshShape("2x1x1x1x1x1x1x1x1").takeError()),
            "invalid mesh shape '2x1x1x1x1x1x1x1x1': it has 9 axes; the "
            "runtime supports at most 8");
  for (const char *bad :
       {"", "2x", "x2", "2x0", "2x-1", "2*2", "axb", "2xx2"}) {
    Expected<std::vector<int64_t>> result = parseMeshShape(bad);
    ASSERT_FALSE(static_cast<bool>(result)) << bad;
    std::string message = llvm::toString(result.takeError());
    EXPECT_NE(message.find(std::string("invalid mesh shape '") + bad + "'"),
              std::string::npos)
        << message;
  }
}

TEST(DeviceMemory, ParseByteSizeAndOverride) {
  struct {
    const char *text;
    double bytes;
  } good[] = {{"16GiB", 16.0 * (1 << 30)}, {"8e9", 8e9}, {"512MB", 512e6},
              {" 1 KiB ", 1024},           {"2gb", 2e9}, {"100B", 100}};
  for (const auto &example : good) {
    Expected<double> bytes = parseByteSize(example.text);
    ASSERT_OK(bytes);
    EXPECT_EQ(*bytes, example.bytes) << example.text;
  }
  for (const char *bad : {"", "-1", "0", "abc", "GB", "1e999", "4 parsecs"}) {
    Expected<double> bytes = parseByteSize(bad);
    ASSERT_FALSE(static_cast<bool>(bytes)) << bad;
    llvm::consumeError(bytes.takeError());
  }

  Expected<Cluster> cluster = loadCluster("hetero-a100-v100");
  ASSERT_OK(cluster);
  overrideDeviceMemory(*cluster, 1e9);
  for (const DeviceKind &kind : cluster->kinds)
    EXPECT_EQ(kind.memoryBytes, 1e9);
  overrideDeviceMemory(*cluster, -5);
  EXPECT_EQ(cluster->kinds[0].memoryBytes, 1e9);
}

TEST(DTypes, NamesAndSizes) {
  for (DType dtype : {DType::F32, DType::F16, DType::BF16, DType::F64,
                      DType::I8, DType::I32, DType::I64, DType::Bool})
    EXPECT_EQ(parseDType(dtypeName(dtype)), dtype);
  EXPECT_EQ(parseDType("f8"), std::nullopt);
  EXPECT_EQ(dtypeBytes(DType::BF16), 2);
  EXPECT_EQ(dtypeBytes(DType::I64), 8);
  EXPECT_EQ(dtypeBytes(DType::Bool), 1);
}

TEST(MeshGroups, RowMajorAndMixedRadix) {
  Mesh mesh{"m", {2, 3}, {0, 1, 2, 3, 4, 5}};
  using Groups = std::vector<std::vector<int64_t>>;
  EXPECT_EQ(meshGroups(mesh, {1}), (Groups{{0, 1, 2}, {3, 4, 5}}));
  EXPECT_EQ(meshGroups(mesh, {0}), (Groups{{0, 3}, {1, 4}, {2, 5}}));
  EXPECT_EQ(meshGroups(mesh, {0, 1}), (Groups{{0, 1, 2, 3, 4, 5}}));
  // Axis 1 listed first is the most significant digit of the group rank.
  EXPECT_EQ(meshGroups(mesh, {1, 0}), (Groups{{0, 3, 1, 4, 2, 5}}));
  EXPECT_EQ(meshGroups(mesh, {}), (Groups{{0}, {1}, {2}, {3}, {4}, {5}}));
  // Invalid and repeated axes are ignored.
  EXPECT_EQ(meshGroups(mesh, {7, 1, 1}), (Groups{{0, 1, 2}, {3, 4, 5}}));
  EXPECT_EQ(meshCoordinates(mesh, 4), (std::vector<int64_t>{1, 1}));
}

} // namespace
