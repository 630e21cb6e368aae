//===- ClusterPresets.cpp - Clusters from the command line ----------------===//
//
// The built-in cluster presets (cpu:N, dgx-h100x8, p3.16xlarge:K,
// p3.8xlarge:K, hetero-a100-v100) and the other command-line views of a
// cluster: --mesh shapes, --device-memory sizes and the --report
// description. The figures are documented, with their sources, in
// docs/ClusterSpec.md.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/Cluster.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Threading.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>

#include <unistd.h>

using namespace llvm;

namespace weft::plan {

static Error makeError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

static std::string fmtShape(ArrayRef<int64_t> shape) {
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "x" : "") + std::to_string(shape[i]);
  return text;
}

//===----------------------------------------------------------------------===//
// Presets
//===----------------------------------------------------------------------===//

/// The cores the processes of cpu:N share: the physical cores this process
/// may run on (hyper-threads share their core's vector units), else the
/// hardware threads, else 1.
static int hostCores() {
  int physical = get_physical_cores();
  if (physical > 0)
    return physical;
  unsigned threads = std::thread::hardware_concurrency();
  return threads > 0 ? static_cast<int>(threads) : 1;
}

static DeviceKind makeKind(StringRef name, StringRef backend,
                           std::map<DType, double> flopPerS, double memoryBytes,
                           double memoryBandwidth) {
  DeviceKind kind;
  kind.name = name.str();
  kind.backend = backend.str();
  kind.flopPerS = std::move(flopPerS);
  kind.memoryBytes = memoryBytes;
  kind.memoryBandwidthBytesPerS = memoryBandwidth;
  return kind;
}

/// One AVX2 core running Weft's kernels: about a third of its FMA peak
/// (2 FMA units x 8 lanes x 2 FLOP x ~3 GHz = 96 GFLOP/s), what tuned GEMMs
/// reach on a shared host; half for f64, conversions for f16/bf16.
static DeviceKind cpuCoreKind() {
  DeviceKind kind = makeKind("cpu-core", "cpu",
                             {{DType::F32, 32e9},
                              {DType::F64, 16e9},
                              {DType::F16, 16e9},
                              {DType::BF16, 16e9},
                              {DType::I8, 64e9},
                              {DType::I32, 16e9},
                              {DType::I64, 8e9}},
                             8.0 * (1 << 30), 10e9);
  kind.coresPerDevice = 1;
  return kind;
}

/// H100 SXM5 80GB, dense (no sparsity) tensor-core figures.
static DeviceKind h100Kind() {
  return makeKind("h100", "cuda",
                  {{DType::F32, 6.7e13},
                   {DType::F64, 6.7e13},
                   {DType::F16, 9.89e14},
                   {DType::BF16, 9.89e14},
                   {DType::I8, 1.979e15}},
                  80e9, 3.35e12);
}

/// A100 SXM4 40GB, dense tensor-core figures.
static DeviceKind a100Kind() {
  return makeKind("a100-40gb", "cuda",
                  {{DType::F32, 1.95e13},
                   {DType::F64, 1.95e13},
                   {DType::F16, 3.12e14},
                   {DType::BF16, 3.12e14},
                   {DType::I8, 6.24e14}},
                  40e9, 1.555e12);
}

/// V100 SXM2 16GB; no bf16 (runs at the f32 rate).
static DeviceKind v100Kind() {
  DeviceKind kind = makeKind("v100-16gb", "cuda",
                             {{DType::F32, 15.7e12},
                              {DType::F64, 7.8e12},
                              {DType::F16, 125e12},
                              {DType::I8, 62.8e12}},
                             16e9, 9.0e11);
  kind.targetable = false;
  kind.planningOnlyReason = "V100 cannot be targeted by CUDA 13";
  return kind;
}

/// Adds a node of `count` devices of kind `kind`, named prefix<k> with k
/// counting on from the devices already there. `railOf(i)` is the rail of
/// the node's i-th device.
static void addNode(Cluster &cluster, StringRef nodeName, int kind, int count,
                    StringRef prefix, int cores, double memoryBandwidth,
                    ArrayRef<double> railBandwidths,
                    function_ref<int(int)> railOf) {
  Node node;
  node.name = nodeName.str();
  node.cores = cores;
  node.memoryBandwidthBytesPerS = memoryBandwidth;
  for (double bandwidth : railBandwidths)
    node.rails.push_back(Rail{bandwidth});
  int nodeIndex = static_cast<int>(cluster.nodes.size());
  cluster.nodes.push_back(std::move(node));
  for (int i = 0; i < count; ++i) {
    Device device;
    device.name = (prefix + Twine(cluster.devices.size())).str();
    device.kind = kind;
    device.node = nodeIndex;
    device.rail = railBandwidths.empty() ? -1 : railOf(i);
    cluster.devices.push_back(std::move(device));
  }
}

/// One mesh "mesh" over all devices in order: [K, perNode] for several
/// nodes, [perNode] for one.
static void addNodeMajorMesh(Cluster &cluster, int nodes, int perNode) {
  Mesh mesh;
  mesh.name = "mesh";
  if (nodes > 1)
    mesh.shape = {nodes, perNode};
  else
    mesh.shape = {perNode};
  for (size_t i = 0; i < cluster.devices.size(); ++i)
    mesh.devices.push_back(static_cast<int>(i));
  cluster.meshes.push_back(std::move(mesh));
}

static Cluster cpuPreset(int processes) {
  Cluster cluster;
  cluster.name = "cpu:" + std::to_string(processes);
  cluster.kinds.push_back(cpuCoreKind());
  // Host DRAM: about 20 GB/s that all processes share; the processes talk
  // through shared memory (MPI's vader/sm transport).
  addNode(cluster, "host", 0, processes, "cpu", hostCores(), 20e9, {},
          [](int) { return -1; });
  cluster.intraNode = Link{10e9, 1e-6};
  addNodeMajorMesh(cluster, 1, processes);
  return cluster;
}

static Cluster dgxPreset(int nodes) {
  Cluster cluster;
  cluster.name =
      nodes == 1 ? "dgx-h100x8" : "dgx-h100x8:" + std::to_string(nodes);
  cluster.kinds.push_back(h100Kind());
  // Eight 400 Gb/s NICs, one per GPU (rail-optimized), 2 x 56 cores and
  // about 600 GB/s of DDR5 on the host.
  std::vector<double> rails(8, 400e9 / 8);
  for (int n = 0; n < nodes; ++n)
    addNode(cluster, "n" + std::to_string(n), 0, 8, "gpu", 112, 600e9, rails,
            [](int i) { return i; });
  cluster.intraNode = Link{450e9, 2e-6};
  cluster.interNode = Link{400e9 / 8, 5e-6};
  addNodeMajorMesh(cluster, nodes, 8);
  return cluster;
}

/// The NVLink 2 figures of a p3 node and the latency between p3 nodes,
/// which p3.16xlarge and p3.8xlarge share.
static constexpr Link kP3IntraNode{150e9, 2e-6};
static constexpr double kP3InterNodeLatency = 25e-6;

static Cluster p3Preset(int nodes) {
  Cluster cluster;
  cluster.name = "p3.16xlarge:" + std::to_string(nodes);
  cluster.kinds.push_back(v100Kind());
  // One 25 Gb/s ENA NIC that all eight GPUs share; 32 physical cores.
  for (int n = 0; n < nodes; ++n)
    addNode(cluster, "n" + std::to_string(n), 0, 8, "gpu", 32, 150e9,
            {25e9 / 8}, [](int) { return 0; });
  cluster.intraNode = kP3IntraNode;
  cluster.interNode = Link{25e9 / 8, kP3InterNodeLatency};
  addNodeMajorMesh(cluster, nodes, 8);
  cluster.note = planningNote(cluster);
  return cluster;
}

/// AWS p3.8xlarge, the testbed of the MLSys'23 cross-mesh resharding paper:
/// half a p3.16xlarge (4 V100s, one socket) behind a 10 Gb/s network.
static Cluster p3SmallPreset(int nodes) {
  Cluster cluster;
  cluster.name = "p3.8xlarge:" + std::to_string(nodes);
  cluster.kinds.push_back(v100Kind());
  // One 10 Gb/s ENA NIC that all four GPUs share; 16 physical cores and one
  // socket's memory bandwidth.
  for (int n = 0; n < nodes; ++n)
    addNode(cluster, "n" + std::to_string(n), 0, 4, "gpu", 16, 75e9, {10e9 / 8},
            [](int) { return 0; });
  cluster.intraNode = kP3IntraNode;
  cluster.interNode = Link{10e9 / 8, kP3InterNodeLatency};
  addNodeMajorMesh(cluster, nodes, 4);
  cluster.note = planningNote(cluster);
  return cluster;
}

static Cluster heteroPreset() {
  Cluster cluster;
  cluster.name = "hetero-a100-v100";
  cluster.kinds.push_back(a100Kind());
  cluster.kinds.push_back(v100Kind());
  // A p4d-like node of four A100s (NVLink 3) and a p3-like node of four
  // V100s (NVLink 2), one 100 Gb/s NIC each.
  addNode(cluster, "a100-node", 0, 4, "a100-", 48, 200e9, {100e9 / 8},
          [](int) { return 0; });
  cluster.nodes.back().intraNodeLink = Link{300e9, 2e-6};
  addNode(cluster, "v100-node", 1, 4, "v100-", 32, 150e9, {100e9 / 8},
          [](int) { return 0; });
  cluster.nodes.back().intraNodeLink = Link{150e9, 2e-6};
  cluster.intraNode = Link{150e9, 2e-6};
  cluster.interNode = Link{100e9 / 8, 10e-6};
  addNodeMajorMesh(cluster, 2, 4);
  cluster.note = planningNote(cluster);
  return cluster;
}

StringRef presetHelp() {
  return "cpu:N, dgx-h100x8, dgx-h100x8:K, p3.16xlarge:K, p3.8xlarge:K, "
         "hetero-a100-v100";
}

/// Parses the count after "name:" ("" when `allowBare`, meaning 1).
static Expected<int> presetCount(StringRef preset, StringRef argument,
                                 bool allowBare, int max, StringRef what) {
  int count = 0;
  if (argument.empty() && allowBare)
    return 1;
  if (argument.getAsInteger(10, count) || count < 1 || count > max)
    return makeError("invalid cluster preset '" + preset + "': " + what +
                     " must be an integer from 1 to " + Twine(max));
  return count;
}

std::optional<Expected<Cluster>> loadPreset(StringRef name) {
  auto [base, argument] = name.split(':');
  bool hasColon = name.contains(':');
  if (base == "cpu" && hasColon) {
    Expected<int> count =
        presetCount(name, argument, false, 1024, "N (processes)");
    if (!count)
      return Expected<Cluster>(count.takeError());
    return Expected<Cluster>(cpuPreset(*count));
  }
  if (base == "dgx-h100x8" || base == "p3.16xlarge" || base == "p3.8xlarge") {
    Expected<int> count =
        presetCount(name, argument, !hasColon, 1024, "K (nodes)");
    if (!count)
      return Expected<Cluster>(count.takeError());
    if (base == "p3.16xlarge")
      return Expected<Cluster>(p3Preset(*count));
    if (base == "p3.8xlarge")
      return Expected<Cluster>(p3SmallPreset(*count));
    return Expected<Cluster>(dgxPreset(*count));
  }
  if (base == "hetero-a100-v100") {
    if (hasColon)
      return Expected<Cluster>(
          makeError("invalid cluster preset '" + name +
                    "': hetero-a100-v100 takes no argument"));
    return Expected<Cluster>(heteroPreset());
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// --mesh and --device-memory
//===----------------------------------------------------------------------===//

Error verifyMesh(const Cluster &cluster, const Mesh &mesh) {
  if (mesh.shape.empty())
    return makeError("mesh '" + mesh.name + "' has no dimensions");
  if (mesh.shape.size() > static_cast<size_t>(kMaxMeshAxes))
    return makeError(
        "mesh '" + mesh.name + "' has " + Twine(mesh.shape.size()) +
        " axes; the runtime supports at most " + Twine(kMaxMeshAxes));
  for (int64_t dim : mesh.shape)
    if (dim < 1)
      return makeError("mesh '" + mesh.name + "' has shape " +
                       fmtShape(mesh.shape) +
                       ": every dimension must be positive");
  if (mesh.size() != static_cast<int64_t>(mesh.devices.size()))
    return makeError("mesh '" + mesh.name + "' has shape " +
                     fmtShape(mesh.shape) + " but lists " +
                     Twine(mesh.devices.size()) + " devices");
  std::vector<bool> used(cluster.devices.size());
  for (int device : mesh.devices) {
    if (device < 0 || device >= static_cast<int>(cluster.devices.size()))
      return makeError("mesh '" + mesh.name + "' names device index " +
                       Twine(device) + " but the cluster has " +
                       Twine(cluster.devices.size()) + " devices");
    if (used[device])
      return makeError("mesh '" + mesh.name + "' lists device '" +
                       cluster.devices[device].name + "' twice");
    used[device] = true;
  }
  return Error::success();
}

Error setMeshShape(Cluster &cluster, ArrayRef<int64_t> shape) {
  if (shape.empty())
    return makeError("a mesh shape needs at least one dimension");
  if (shape.size() > static_cast<size_t>(kMaxMeshAxes))
    return makeError(
        "mesh shape " + fmtShape(shape) + " has " + Twine(shape.size()) +
        " axes; the runtime supports at most " + Twine(kMaxMeshAxes));
  int64_t available = static_cast<int64_t>(cluster.devices.size());
  int64_t product = 1;
  for (int64_t dim : shape) {
    if (dim < 1)
      return makeError("mesh shape " + fmtShape(shape) +
                       ": every dimension must be positive");
    // Saturate past the device count so that the product cannot overflow.
    product = std::min(product * std::min(dim, available + 1), available + 1);
  }
  if (product > available) {
    int64_t needed = 1;
    for (int64_t dim : shape)
      needed =
          needed > (int64_t(1) << 40) / dim ? int64_t(1) << 40 : needed * dim;
    return makeError("mesh shape " + fmtShape(shape) + " needs " +
                     Twine(needed) + " devices but cluster '" + cluster.name +
                     "' has " + Twine(available));
  }
  Mesh mesh;
  mesh.name = "mesh";
  mesh.shape.assign(shape.begin(), shape.end());
  for (int64_t i = 0; i < product; ++i)
    mesh.devices.push_back(static_cast<int>(i));
  cluster.meshes.assign(1, std::move(mesh));
  return Error::success();
}

Expected<std::vector<int64_t>> parseMeshShape(StringRef text) {
  auto bad = [&](const Twine &why) {
    return makeError("invalid mesh shape '" + text + "': " + why +
                     " (expected positive integers joined by 'x', e.g. 8 or "
                     "2x4)");
  };
  StringRef trimmed = text.trim();
  if (trimmed.empty())
    return bad("it is empty");
  SmallVector<StringRef> parts;
  trimmed.split(parts, 'x', /*MaxSplit=*/-1, /*KeepEmpty=*/true);
  if (parts.size() > static_cast<size_t>(kMaxMeshAxes)) {
    // Not bad(): the shape is well formed, only longer than runs.
    return makeError(
        "invalid mesh shape '" + text + "': it has " + Twine(parts.size()) +
        " axes; the runtime supports at most " + Twine(kMaxMeshAxes));
  }
  std::vector<int64_t> shape;
  for (StringRef part : parts) {
    int64_t dim = 0;
    if (part.empty())
      return bad("a dimension is missing");
    if (part.getAsInteger(10, dim))
      return bad("'" + part + "' is not an integer");
    if (dim < 1 || dim > (1 << 20))
      return bad("dimension " + part + " is not from 1 to 1048576");
    shape.push_back(dim);
  }
  return shape;
}

Expected<double> parseByteSize(StringRef text) {
  auto bad = [&](const Twine &why) {
    return makeError("invalid byte size '" + text + "': " + why +
                     " (e.g. 17179869184, 8e9, 512MB or 16GiB)");
  };
  static const struct {
    StringRef suffix;
    double scale;
  } units[] = {{"KiB", 1024.0},
               {"MiB", 1048576.0},
               {"GiB", 1073741824.0},
               {"TiB", 1099511627776.0},
               {"KB", 1e3},
               {"MB", 1e6},
               {"GB", 1e9},
               {"TB", 1e12},
               {"B", 1.0}};
  StringRef number = text.trim();
  double scale = 1;
  for (const auto &unit : units)
    if (number.ends_with_insensitive(unit.suffix)) {
      number = number.drop_back(unit.suffix.size()).rtrim();
      scale = unit.scale;
      break;
    }
  double value = 0;
  if (number.empty())
    return bad("no number");
  if (number.getAsDouble(value))
    return bad("'" + number + "' is not a number");
  value *= scale;
  if (!std::isfinite(value) || value <= 0)
    return bad("it must be a positive, finite size");
  return value;
}

double hostMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long pageBytes = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || pageBytes <= 0)
    return 0;
  return static_cast<double>(pages) * static_cast<double>(pageBytes);
}

void overrideDeviceMemory(Cluster &cluster, double bytes) {
  if (!std::isfinite(bytes) || bytes <= 0)
    return;
  for (DeviceKind &kind : cluster.kinds)
    kind.memoryBytes = bytes;
}

//===----------------------------------------------------------------------===//
// --report
//===----------------------------------------------------------------------===//

/// `value` with an SI prefix, e.g. "3.35 TB/s" or "25 us".
static std::string si(double value, StringRef unit) {
  static const struct {
    double scale;
    const char *prefix;
  } prefixes[] = {{1e18, "E"}, {1e15, "P"}, {1e12, "T"}, {1e9, "G"},
                  {1e6, "M"},  {1e3, "k"},  {1, ""},     {1e-3, "m"},
                  {1e-6, "u"}, {1e-9, "n"}};
  const auto *chosen = &prefixes[6];
  if (value != 0)
    for (const auto &prefix : prefixes)
      if (std::fabs(value) >= prefix.scale * 0.9995) {
        chosen = &prefix;
        break;
      }
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "%.4g %s", value / chosen->scale,
                chosen->prefix);
  return buffer + unit.str();
}

static std::string describeLink(const Link &link) {
  return si(link.bandwidthBytesPerS, "B/s") + ", " +
         si(link.latencySeconds, "s");
}

std::string describeCluster(const Cluster &cluster) {
  std::string text = "cluster '" + cluster.name +
                     "': " + std::to_string(cluster.devices.size()) +
                     " devices on " + std::to_string(cluster.nodes.size()) +
                     " node" + (cluster.nodes.size() == 1 ? "" : "s") + "\n";
  if (!cluster.note.empty())
    text += "  " + cluster.note + "\n";
  for (size_t k = 0; k < cluster.kinds.size(); ++k) {
    const DeviceKind &kind = cluster.kinds[k];
    int64_t used = count_if(cluster.devices, [&](const Device &device) {
      return device.kind == static_cast<int>(k);
    });
    text += "  kind " + kind.name + " (" + kind.backend + ", " +
            std::to_string(used) + " devices): " + si(kind.memoryBytes, "B") +
            " memory at " + si(kind.memoryBandwidthBytesPerS, "B/s");
    for (const auto &[dtype, rate] : kind.flopPerS)
      text += ", " + dtypeName(dtype).str() + " " + si(rate, "FLOP/s");
    if (kind.isCpu())
      text += ", " + std::to_string(kind.coresPerDevice) + " core" +
              (kind.coresPerDevice == 1 ? "" : "s") + " per device";
    text += "\n";
  }
  // Large clusters repeat the same node; the first few tell the story.
  const size_t shownNodes = 4;
  for (size_t n = 0; n < cluster.nodes.size() && n < shownNodes; ++n) {
    const Node &node = cluster.nodes[n];
    int64_t held = count_if(cluster.devices, [&](const Device &device) {
      return device.node == static_cast<int>(n);
    });
    text += "  node " + node.name + ": " + std::to_string(held) + " devices";
    if (node.cores > 0)
      text += ", " + std::to_string(node.cores) + " cores";
    if (node.memoryBandwidthBytesPerS > 0)
      text += ", host memory " + si(node.memoryBandwidthBytesPerS, "B/s");
    if (!node.rails.empty()) {
      text += ", " + std::to_string(node.rails.size()) + " NIC rail" +
              (node.rails.size() == 1 ? "" : "s") + " of " +
              si(node.rails.front().bandwidthBytesPerS, "B/s");
    }
    if (node.intraNodeLink)
      text += ", own intra-node link " + describeLink(*node.intraNodeLink);
    text += "\n";
  }
  if (cluster.nodes.size() > shownNodes)
    text += "  ... and " + std::to_string(cluster.nodes.size() - shownNodes) +
            " more nodes\n";
  text += "  links: intra-node " + describeLink(cluster.intraNode);
  if (cluster.nodes.size() > 1)
    text += "; inter-node " + describeLink(cluster.interNode);
  text += "\n";
  for (const Mesh &mesh : cluster.meshes)
    text += "  mesh '" + mesh.name + "': " + fmtShape(mesh.shape) + "\n";
  return text;
}

} // namespace weft::plan
