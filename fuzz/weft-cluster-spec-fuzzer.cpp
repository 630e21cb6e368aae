//===- weft-cluster-spec-fuzzer.cpp - libFuzzer target for cluster specs --===//
//
// Feeds text to weft::plan::parseClusterSpec (lib/Plan/ClusterSpec.cpp), the
// reader of weftc --cluster=FILE. A spec the reader accepts must describe a
// cluster the planner can use without further checks: every mesh passes
// verifyMesh, every device names an existing kind, node and rail, and the
// cost model gives each mesh times that are numbers (not NaN) and not
// negative. Run it through scripts/fuzz.sh.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "weft/Plan/Cluster.h"
#include "weft/Plan/CostModel.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cmath>
#include <numeric>

using namespace weft::plan;

static const char kTarget[] = "weft-cluster-spec-fuzzer";

[[noreturn]] static void reportBug(const std::string &what) {
  weft::fuzz::reportBug(kTarget, what);
}

/// A time the planner can add and compare.
static void checkSeconds(double seconds, const std::string &what) {
  if (std::isnan(seconds) || seconds < 0)
    reportBug(what + " is " + std::to_string(seconds));
}

/// Devices must point at things that exist: the planner and the cost model
/// index with these numbers.
static void checkDevices(const Cluster &cluster) {
  for (const Device &device : cluster.devices) {
    if (device.kind < 0 ||
        device.kind >= static_cast<int>(cluster.kinds.size()))
      reportBug("device '" + device.name + "' has kind index " +
                std::to_string(device.kind));
    if (device.node < 0 ||
        device.node >= static_cast<int>(cluster.nodes.size()))
      reportBug("device '" + device.name + "' has node index " +
                std::to_string(device.node));
    int rails = static_cast<int>(cluster.nodes[device.node].rails.size());
    if (device.rail < -1 || device.rail >= rails)
      reportBug("device '" + device.name + "' has rail index " +
                std::to_string(device.rail) + " of " + std::to_string(rails));
    if (cluster.findDevice(device.name) < 0)
      reportBug("findDevice does not find '" + device.name + "'");
  }
  for (size_t node = 0; node < cluster.nodes.size(); ++node)
    (void)cluster.intraLink(static_cast<int>(node));
}

/// Exercises the cost model on `mesh` as the planner does: compute of every
/// dtype, each collective over each single axis and over all axes.
static void checkCostModel(const Cluster &cluster, const Mesh &mesh) {
  CostModel model(cluster, mesh);
  std::string where = "mesh '" + mesh.name + "': ";
  checkSeconds(model.deviceMemoryBytes(), where + "device memory");
  for (DType dtype : {DType::F32, DType::F16, DType::BF16, DType::F64,
                      DType::I8, DType::I32, DType::I64, DType::Bool})
    checkSeconds(model.computeSeconds(1e9, 1e8, dtype),
                 where + "compute time (" + dtypeName(dtype).str() + ")");
  std::vector<std::vector<int>> axisSets;
  std::vector<int> allAxes(mesh.shape.size());
  std::iota(allAxes.begin(), allAxes.end(), 0);
  for (int axis : allAxes)
    axisSets.push_back({axis});
  axisSets.push_back(allAxes);
  for (const std::vector<int> &axes : axisSets) {
    int64_t groupSize = model.groupSize(axes);
    int64_t members = 0;
    for (const std::vector<int64_t> &group : meshGroups(mesh, axes))
      members += static_cast<int64_t>(group.size());
    if (members != mesh.size())
      reportBug(where + "the groups over " + std::to_string(axes.size()) +
                " axes hold " + std::to_string(members) + " of " +
                std::to_string(mesh.size()) + " positions");
    (void)groupSize;
    for (CollectiveKind kind :
         {CollectiveKind::AllReduce, CollectiveKind::AllGather,
          CollectiveKind::ReduceScatter, CollectiveKind::AllToAll})
      checkSeconds(model.collectiveSeconds(kind, 1 << 20, axes),
                   where + collectiveKindName(kind).str() + " time");
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::Expected<Cluster> cluster = parseClusterSpec(text, "fuzz.json");
  if (!cluster) {
    std::string message = llvm::toString(cluster.takeError());
    if (!llvm::StringRef(message).starts_with("fuzz.json"))
      reportBug("an error does not name the file: " + message);
    return 0;
  }
  if (cluster->kinds.empty() || cluster->nodes.empty() ||
      cluster->devices.empty() || cluster->meshes.empty())
    reportBug("accepted a cluster without kinds, nodes, devices or meshes");
  checkDevices(*cluster);
  for (const Mesh &mesh : cluster->meshes) {
    if (llvm::Error error = verifyMesh(*cluster, mesh))
      reportBug("accepted a mesh that verifyMesh refuses: " +
                llvm::toString(std::move(error)));
    if (cluster->findMesh(mesh.name) == nullptr)
      reportBug("findMesh does not find '" + mesh.name + "'");
    checkCostModel(*cluster, mesh);
  }
  (void)describeCluster(*cluster);
  return 0;
}
