//===- ClusterSpec.cpp - Reading and checking cluster specs ---------------===//
//
// Parses the JSON cluster spec of docs/ClusterSpec.md into a Cluster and
// validates it; every error names the file, the JSON path and the problem.
// Also the dtype helpers and the cluster's small accessors.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/Cluster.h"
#include "weft/Support/JsonFile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

using namespace llvm;

namespace weft::plan {

//===----------------------------------------------------------------------===//
// Dtypes and small accessors
//===----------------------------------------------------------------------===//

int64_t dtypeBytes(DType dtype) {
  switch (dtype) {
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I8:
  case DType::Bool:
    return 1;
  }
  return 4;
}

StringRef dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F64:
    return "f64";
  case DType::I8:
    return "i8";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::Bool:
    return "bool";
  }
  return "f32";
}

static constexpr DType allDTypes[] = {DType::F32, DType::F16, DType::BF16,
                                      DType::F64, DType::I8,  DType::I32,
                                      DType::I64, DType::Bool};

std::optional<DType> parseDType(StringRef name) {
  for (DType dtype : allDTypes)
    if (dtypeName(dtype) == name)
      return dtype;
  return std::nullopt;
}

double DeviceKind::peakFlopPerS(DType dtype) const {
  if (auto it = flopPerS.find(dtype); it != flopPerS.end())
    return it->second;
  if (auto it = flopPerS.find(DType::F32); it != flopPerS.end())
    return it->second;
  double slowest = 0;
  for (const auto &[_, rate] : flopPerS)
    if (slowest == 0 || rate < slowest)
      slowest = rate;
  return slowest;
}

StringRef kernelClassName(KernelClass kernelClass) {
  switch (kernelClass) {
  case KernelClass::Generic:
    return "generic";
  case KernelClass::Conv:
    return "conv";
  case KernelClass::Conv3x3:
    return "conv3x3";
  case KernelClass::PointwiseConv:
    return "pointwise_conv";
  case KernelClass::DepthwiseConv:
    return "depthwise_conv";
  }
  return "generic";
}

/// The kernel classes a spec's kernel_rates may list.
static constexpr KernelClass kRatedKernelClasses[] = {
    KernelClass::Conv, KernelClass::Conv3x3, KernelClass::PointwiseConv,
    KernelClass::DepthwiseConv};

double DeviceKind::kernelRate(KernelClass kernelClass) const {
  auto it = kernelRates.find(kernelClass);
  return it == kernelRates.end() ? 1.0 : it->second;
}

int64_t Mesh::size() const {
  int64_t product = 1;
  for (int64_t dim : shape)
    product *= dim;
  return product;
}

const Link &Cluster::intraLink(int node) const {
  if (node >= 0 && node < static_cast<int>(nodes.size()) &&
      nodes[node].intraNodeLink)
    return *nodes[node].intraNodeLink;
  return intraNode;
}

const Mesh *Cluster::findMesh(StringRef meshName) const {
  for (const Mesh &mesh : meshes)
    if (mesh.name == meshName)
      return &mesh;
  return nullptr;
}

int Cluster::findDevice(StringRef deviceName) const {
  for (size_t i = 0; i < devices.size(); ++i)
    if (devices[i].name == deviceName)
      return static_cast<int>(i);
  return -1;
}

std::string planningNote(const Cluster &cluster) {
  std::vector<std::string> reasons;
  for (const Device &device : cluster.devices) {
    if (device.kind < 0 || device.kind >= (int)cluster.kinds.size())
      continue;
    const DeviceKind &kind = cluster.kinds[device.kind];
    if (!kind.targetable && !is_contained(reasons, kind.planningOnlyReason))
      reasons.push_back(kind.planningOnlyReason);
  }
  if (reasons.empty())
    return "";
  return "planning only: " + join(reasons, "; ");
}

/// Formats a number the way a spec file would write it.
static std::string fmtNumber(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.6g", value);
  return buffer;
}

static std::string fmtShape(ArrayRef<int64_t> shape) {
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "x" : "") + std::to_string(shape[i]);
  return text;
}

static Error makeError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

//===----------------------------------------------------------------------===//
// The spec reader
//===----------------------------------------------------------------------===//

static std::string fieldPath(const std::string &parent, StringRef key) {
  return parent.empty() ? key.str() : parent + "." + key.str();
}

static std::string indexPath(const std::string &parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

static StringRef jsonKindName(const json::Value &value) {
  switch (value.kind()) {
  case json::Value::Null:
    return "null";
  case json::Value::Boolean:
    return "a boolean";
  case json::Value::Number:
    return "a number";
  case json::Value::String:
    return "a string";
  case json::Value::Array:
    return "an array";
  case json::Value::Object:
    return "an object";
  }
  return "a value";
}

namespace {
/// Walks a spec's JSON and keeps the first error. Readers return false after
/// an error; an optional field that is absent leaves its output unchanged.
class SpecReader {
public:
  explicit SpecReader(StringRef fileName) : fileName(fileName.str()) {}

  /// Records "file: path: what" and returns false.
  bool fail(const std::string &path, const Twine &what) {
    if (message.empty())
      message =
          fileName + ": " + (path.empty() ? "" : path + ": ") + what.str();
    return false;
  }

  Error takeError() { return makeError(message); }

  const json::Object *object(const json::Value &value,
                             const std::string &path) {
    if (const json::Object *obj = value.getAsObject())
      return obj;
    fail(path, "expected an object, got " + jsonKindName(value));
    return nullptr;
  }

  const json::Array *array(const json::Value &value, const std::string &path) {
    if (const json::Array *arr = value.getAsArray())
      return arr;
    fail(path, "expected an array, got " + jsonKindName(value));
    return nullptr;
  }

  /// Fails on the first key (in sorted order, so errors are reproducible)
  /// that is not in `known`.
  bool checkKeys(const json::Object &obj, const std::string &path,
                 ArrayRef<StringRef> known) {
    std::vector<std::string> keys;
    for (const auto &entry : obj)
      keys.push_back(entry.first.str());
    llvm::sort(keys);
    for (const std::string &key : keys)
      if (!is_contained(known, StringRef(key)))
        return fail(fieldPath(path, key),
                    "unknown field (known here: " + join(known, ", ") + ")");
    return true;
  }

  /// The value of `key`, or nullptr; fails if it is required and absent.
  const json::Value *field(const json::Object &obj, StringRef key,
                           const std::string &path, bool required) {
    const json::Value *value = obj.get(key);
    if (!value && required)
      fail(fieldPath(path, key), "required field is missing");
    return value;
  }

  bool readString(const json::Object &obj, StringRef key,
                  const std::string &path, bool required, std::string &out) {
    const json::Value *value = field(obj, key, path, required);
    if (!value)
      return !required;
    std::optional<StringRef> text = value->getAsString();
    if (!text)
      return fail(fieldPath(path, key),
                  "expected a string, got " + jsonKindName(*value));
    if (text->empty())
      return fail(fieldPath(path, key), "must not be empty");
    out = text->str();
    return true;
  }

  /// A finite number > 0, or >= 0 when `allowZero`.
  bool readNumber(const json::Object &obj, StringRef key,
                  const std::string &path, bool required, bool allowZero,
                  double &out) {
    const json::Value *value = field(obj, key, path, required);
    if (!value)
      return !required;
    return checkNumber(*value, fieldPath(path, key), allowZero, out);
  }

  bool checkNumber(const json::Value &value, const std::string &path,
                   bool allowZero, double &out) {
    std::optional<double> number = value.getAsNumber();
    if (!number)
      return fail(path, "expected a number, got " + jsonKindName(value));
    if (!std::isfinite(*number))
      return fail(path, "must be finite");
    if (*number < 0 || (*number == 0 && !allowZero))
      return fail(path, Twine("must be ") +
                            (allowZero ? "zero or positive" : "positive") +
                            ", got " + fmtNumber(*number));
    out = *number;
    return true;
  }

  bool checkInteger(const json::Value &value, const std::string &path,
                    int64_t min, int64_t max, int64_t &out) {
    std::optional<int64_t> number = value.getAsInteger();
    if (!number) {
      if (value.getAsNumber())
        return fail(path, "expected an integer, got " +
                              fmtNumber(*value.getAsNumber()));
      return fail(path, "expected an integer, got " + jsonKindName(value));
    }
    if (*number < min || *number > max)
      return fail(path, "must be from " + std::to_string(min) + " to " +
                            std::to_string(max) + ", got " +
                            std::to_string(*number));
    out = *number;
    return true;
  }

  bool readInteger(const json::Object &obj, StringRef key,
                   const std::string &path, bool required, int64_t min,
                   int64_t max, int64_t &out) {
    const json::Value *value = field(obj, key, path, required);
    if (!value)
      return !required;
    return checkInteger(*value, fieldPath(path, key), min, max, out);
  }

  bool readBool(const json::Object &obj, StringRef key, const std::string &path,
                bool &out) {
    const json::Value *value = field(obj, key, path, /*required=*/false);
    if (!value)
      return true;
    std::optional<bool> flag = value->getAsBoolean();
    if (!flag)
      return fail(fieldPath(path, key),
                  "expected true or false, got " + jsonKindName(*value));
    out = *flag;
    return true;
  }

  bool readLink(const json::Value &value, const std::string &path, Link &link) {
    const json::Object *obj = object(value, path);
    return obj &&
           checkKeys(*obj, path,
                     {"bandwidth_bytes_per_s", "latency_seconds"}) &&
           readNumber(*obj, "bandwidth_bytes_per_s", path, true, false,
                      link.bandwidthBytesPerS) &&
           readNumber(*obj, "latency_seconds", path, true, true,
                      link.latencySeconds);
  }

private:
  std::string fileName;
  std::string message;
};
} // namespace

/// Fails if `name` was seen before in the same namespace of names.
static bool checkUnique(SpecReader &reader, StringMap<std::string> &seen,
                        StringRef name, const std::string &path,
                        StringRef what) {
  auto [it, inserted] = seen.try_emplace(name, path);
  if (inserted)
    return true;
  return reader.fail(path, "duplicate " + what + " name '" + name +
                               "' (also at " + it->second + ")");
}

/// The optional `kernel_rates` of a device kind: per kernel class, its rate
/// relative to flop_per_s, above 0 and at most 16 (Winograd does a third of
/// the direct count's multiplications; 16 leaves room and still catches a
/// rate given in FLOP/s by mistake).
static bool readKernelRates(SpecReader &reader, const json::Object &kindObj,
                            const std::string &path, DeviceKind &kind) {
  const json::Value *rates = kindObj.get("kernel_rates");
  if (!rates)
    return true;
  std::string ratesPath = fieldPath(path, "kernel_rates");
  const json::Object *ratesObj = reader.object(*rates, ratesPath);
  SmallVector<StringRef> names;
  for (KernelClass kernelClass : kRatedKernelClasses)
    names.push_back(kernelClassName(kernelClass));
  if (!ratesObj || !reader.checkKeys(*ratesObj, ratesPath, names))
    return false;
  for (KernelClass kernelClass : kRatedKernelClasses) {
    StringRef name = kernelClassName(kernelClass);
    if (!ratesObj->get(name))
      continue;
    double rate = 0;
    if (!reader.readNumber(*ratesObj, name, ratesPath, true, false, rate))
      return false;
    if (!(rate > 0 && rate <= 16))
      return reader.fail(fieldPath(ratesPath, name),
                         "must be above 0 and at most 16 (a rate relative "
                         "to flop_per_s, not FLOP/s)");
    kind.kernelRates[kernelClass] = rate;
  }
  return true;
}

static bool readKind(SpecReader &reader, const json::Value &value,
                     const std::string &path, DeviceKind &kind) {
  const json::Object *obj = reader.object(value, path);
  if (!obj ||
      !reader.checkKeys(*obj, path,
                        {"name", "backend", "flop_per_s", "kernel_rates",
                         "memory_bytes", "memory_bandwidth_bytes_per_s",
                         "cores_per_device", "targetable",
                         "planning_only_reason"}) ||
      !reader.readString(*obj, "name", path, true, kind.name) ||
      !reader.readString(*obj, "backend", path, true, kind.backend))
    return false;
  if (kind.backend != "cpu" && kind.backend != "cuda")
    return reader.fail(fieldPath(path, "backend"),
                       "unknown backend '" + kind.backend +
                           "' (expected cpu or cuda)");

  std::string flopPath = fieldPath(path, "flop_per_s");
  const json::Value *flops = reader.field(*obj, "flop_per_s", path, true);
  if (!flops)
    return false;
  const json::Object *flopObj = reader.object(*flops, flopPath);
  SmallVector<StringRef> dtypeNames;
  for (DType dtype : allDTypes)
    dtypeNames.push_back(dtypeName(dtype));
  if (!flopObj || !reader.checkKeys(*flopObj, flopPath, dtypeNames))
    return false;
  if (flopObj->empty())
    return reader.fail(flopPath, "must give the FLOP/s of at least one dtype");
  for (DType dtype : allDTypes) {
    double rate = 0;
    if (!reader.readNumber(*flopObj, dtypeName(dtype), flopPath, false, false,
                           rate))
      return false;
    if (rate > 0)
      kind.flopPerS[dtype] = rate;
  }

  if (!readKernelRates(reader, *obj, path, kind))
    return false;

  int64_t cores = 1;
  if (!reader.readNumber(*obj, "memory_bytes", path, true, false,
                         kind.memoryBytes) ||
      !reader.readNumber(*obj, "memory_bandwidth_bytes_per_s", path, true,
                         false, kind.memoryBandwidthBytesPerS) ||
      !reader.readInteger(*obj, "cores_per_device", path, false, 1, 1 << 20,
                          cores) ||
      !reader.readBool(*obj, "targetable", path, kind.targetable) ||
      !reader.readString(*obj, "planning_only_reason", path, false,
                         kind.planningOnlyReason))
    return false;
  if (obj->get("cores_per_device") && !kind.isCpu())
    return reader.fail(fieldPath(path, "cores_per_device"),
                       "only cpu device kinds use host cores");
  kind.coresPerDevice = static_cast<int>(cores);
  if (kind.targetable && !kind.planningOnlyReason.empty())
    return reader.fail(fieldPath(path, "planning_only_reason"),
                       "only allowed with \"targetable\": false");
  if (!kind.targetable && kind.planningOnlyReason.empty())
    kind.planningOnlyReason =
        "device kind '" + kind.name + "' is marked not targetable";
  return true;
}

static bool readDevice(SpecReader &reader, const json::Value &value,
                       const std::string &path, Cluster &cluster,
                       const StringMap<int> &kindIndex,
                       StringMap<std::string> &deviceNames, int nodeIndex) {
  const Node &node = cluster.nodes[nodeIndex];
  Device device;
  device.node = nodeIndex;
  std::string kindName;
  int64_t rail = 0;
  const json::Object *obj = reader.object(value, path);
  if (!obj || !reader.checkKeys(*obj, path, {"name", "kind", "rail"}) ||
      !reader.readString(*obj, "name", path, true, device.name) ||
      !checkUnique(reader, deviceNames, device.name, fieldPath(path, "name"),
                   "device") ||
      !reader.readString(*obj, "kind", path, true, kindName))
    return false;
  auto kindIt = kindIndex.find(kindName);
  if (kindIt == kindIndex.end()) {
    std::vector<std::string> known;
    for (const DeviceKind &kind : cluster.kinds)
      known.push_back(kind.name);
    return reader.fail(fieldPath(path, "kind"),
                       "unknown device kind '" + kindName +
                           "' (device_kinds has: " + join(known, ", ") + ")");
  }
  device.kind = kindIt->second;
  if (obj->get("rail") && node.rails.empty())
    return reader.fail(fieldPath(path, "rail"),
                       "node '" + node.name + "' lists no rails");
  if (!node.rails.empty() &&
      !reader.readInteger(*obj, "rail", path, false, 0,
                          static_cast<int64_t>(node.rails.size()) - 1, rail))
    return false;
  device.rail = node.rails.empty() ? -1 : static_cast<int>(rail);
  cluster.devices.push_back(device);
  return true;
}

static bool readNode(SpecReader &reader, const json::Value &value,
                     const std::string &path, Cluster &cluster,
                     const StringMap<int> &kindIndex,
                     StringMap<std::string> &nodeNames,
                     StringMap<std::string> &deviceNames) {
  int nodeIndex = static_cast<int>(cluster.nodes.size());
  cluster.nodes.emplace_back();
  Node &node = cluster.nodes.back();
  const json::Object *obj = reader.object(value, path);
  if (!obj ||
      !reader.checkKeys(*obj, path,
                        {"name", "cores", "memory_bandwidth_bytes_per_s",
                         "devices", "rails", "intra_node_link"}) ||
      !reader.readString(*obj, "name", path, true, node.name) ||
      !checkUnique(reader, nodeNames, node.name, fieldPath(path, "name"),
                   "node"))
    return false;
  int64_t cores = 0;
  if (!reader.readInteger(*obj, "cores", path, false, 1, 1 << 24, cores) ||
      !reader.readNumber(*obj, "memory_bandwidth_bytes_per_s", path, false,
                         false, node.memoryBandwidthBytesPerS))
    return false;
  node.cores = static_cast<int>(cores);

  if (const json::Value *link =
          reader.field(*obj, "intra_node_link", path, false)) {
    node.intraNodeLink.emplace();
    if (!reader.readLink(*link, fieldPath(path, "intra_node_link"),
                         *node.intraNodeLink))
      return false;
  }

  std::string railsPath = fieldPath(path, "rails");
  if (const json::Value *rails = reader.field(*obj, "rails", path, false)) {
    const json::Array *arr = reader.array(*rails, railsPath);
    if (!arr)
      return false;
    for (size_t i = 0; i < arr->size(); ++i) {
      std::string railPath = indexPath(railsPath, i);
      const json::Object *railObj = reader.object((*arr)[i], railPath);
      Rail rail;
      if (!railObj ||
          !reader.checkKeys(*railObj, railPath, {"bandwidth_bytes_per_s"}) ||
          !reader.readNumber(*railObj, "bandwidth_bytes_per_s", railPath, true,
                             false, rail.bandwidthBytesPerS))
        return false;
      node.rails.push_back(rail);
    }
  }

  std::string devicesPath = fieldPath(path, "devices");
  const json::Value *devices = reader.field(*obj, "devices", path, true);
  const json::Array *arr =
      devices ? reader.array(*devices, devicesPath) : nullptr;
  if (!arr)
    return false;
  if (arr->empty())
    return reader.fail(devicesPath, "a node must hold at least one device");
  bool holdsCpu = false;
  for (size_t i = 0; i < arr->size(); ++i) {
    if (!readDevice(reader, (*arr)[i], indexPath(devicesPath, i), cluster,
                    kindIndex, deviceNames, nodeIndex))
      return false;
    holdsCpu |= cluster.kinds[cluster.devices.back().kind].isCpu();
  }
  // The processes of cpu devices share the host: without its cores and
  // memory bandwidth the cost model could not tell how they slow each other.
  const Node &done = cluster.nodes[nodeIndex];
  for (StringRef key : {"cores", "memory_bandwidth_bytes_per_s"})
    if (holdsCpu && !obj->get(key))
      return reader.fail(fieldPath(path, key),
                         "required field is missing (node '" + done.name +
                             "' holds cpu devices)");
  return true;
}

static bool readMesh(SpecReader &reader, const json::Value &value,
                     const std::string &path, Cluster &cluster,
                     StringMap<std::string> &meshNames) {
  Mesh mesh;
  const json::Object *obj = reader.object(value, path);
  if (!obj || !reader.checkKeys(*obj, path, {"name", "shape", "devices"}) ||
      !reader.readString(*obj, "name", path, true, mesh.name) ||
      !checkUnique(reader, meshNames, mesh.name, fieldPath(path, "name"),
                   "mesh"))
    return false;
  std::string shapePath = fieldPath(path, "shape");
  const json::Value *shape = reader.field(*obj, "shape", path, true);
  const json::Array *shapeArr =
      shape ? reader.array(*shape, shapePath) : nullptr;
  if (!shapeArr)
    return false;
  if (shapeArr->empty())
    return reader.fail(shapePath, "a mesh needs at least one dimension");
  if (shapeArr->size() > static_cast<size_t>(kMaxMeshAxes))
    return reader.fail(shapePath, std::to_string(shapeArr->size()) +
                                      " axes, but the runtime supports at "
                                      "most " +
                                      std::to_string(kMaxMeshAxes));
  int64_t numDevices = static_cast<int64_t>(cluster.devices.size());
  for (size_t i = 0; i < shapeArr->size(); ++i) {
    int64_t dim = 0;
    if (!reader.checkInteger((*shapeArr)[i], indexPath(shapePath, i), 1,
                             1 << 30, dim))
      return false;
    mesh.shape.push_back(dim);
  }

  std::string devicesPath = fieldPath(path, "devices");
  if (const json::Value *devices = reader.field(*obj, "devices", path, false)) {
    const json::Array *arr = reader.array(*devices, devicesPath);
    if (!arr)
      return false;
    StringMap<std::string> seen;
    for (size_t i = 0; i < arr->size(); ++i) {
      std::string devicePath = indexPath(devicesPath, i);
      std::optional<StringRef> name = (*arr)[i].getAsString();
      if (!name)
        return reader.fail(devicePath, "expected a device name, got " +
                                           jsonKindName((*arr)[i]));
      int index = cluster.findDevice(*name);
      if (index < 0)
        return reader.fail(devicePath, "unknown device '" + *name + "'");
      auto [it, inserted] = seen.try_emplace(*name, devicePath);
      if (!inserted)
        return reader.fail(devicePath, "device '" + *name +
                                           "' is listed twice (also at " +
                                           it->second + ")");
      mesh.devices.push_back(index);
    }
  } else {
    for (int64_t i = 0; i < numDevices; ++i)
      mesh.devices.push_back(static_cast<int>(i));
  }

  // Saturate at 2^40 so that the product of many large dimensions cannot
  // overflow (no cluster comes near it).
  const int64_t cap = int64_t(1) << 40;
  int64_t listed = static_cast<int64_t>(mesh.devices.size());
  int64_t product = 1;
  for (int64_t dim : mesh.shape)
    product = product > cap / dim ? cap : product * dim;
  if (product != listed)
    return reader.fail(
        shapePath,
        "mesh shape " + fmtShape(mesh.shape) + " has " +
            (product == cap ? "over 2^40" : std::to_string(product)) +
            " positions but " +
            (obj->get("devices") ? "the mesh lists "
                                 : "without \"devices\" it covers all ") +
            std::to_string(mesh.devices.size()) + " devices");
  cluster.meshes.push_back(std::move(mesh));
  return true;
}

/// Finds a key given twice in one object, which json::parse accepts (the
/// last value wins) but is almost always a mistake in a hand-written spec.
/// Returns its JSON path. Runs on text json::parse has accepted, so a
/// shallow scan suffices.
static std::optional<std::string> findRepeatedKey(StringRef text) {
  struct Frame {
    bool isObject;
    std::set<std::string> keys;
    std::string key;
    size_t index = 0;
  };
  std::vector<Frame> frames;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '{' || c == '[') {
      frames.push_back(Frame{c == '{', {}, "", 0});
    } else if ((c == '}' || c == ']') && !frames.empty()) {
      frames.pop_back();
    } else if (c == ',' && !frames.empty() && !frames.back().isObject) {
      ++frames.back().index;
    } else if (c == '"') {
      size_t end = i + 1;
      while (end < text.size() && text[end] != '"')
        end += text[end] == '\\' ? 2 : 1;
      std::string string = text.slice(i + 1, end).str();
      i = end;
      size_t next = text.find_first_not_of(" \t\r\n", end + 1);
      if (frames.empty() || !frames.back().isObject ||
          next == StringRef::npos || text[next] != ':')
        continue;
      if (frames.back().keys.insert(string).second) {
        frames.back().key = string;
        continue;
      }
      std::string path;
      for (size_t f = 0; f + 1 < frames.size(); ++f)
        path = frames[f].isObject ? fieldPath(path, frames[f].key)
                                  : indexPath(path, frames[f].index);
      return fieldPath(path, string);
    }
  }
  return std::nullopt;
}

static bool readCluster(SpecReader &reader, const json::Value &root,
                        StringRef fileName, Cluster &cluster) {
  const json::Object *obj = reader.object(root, "");
  if (!obj ||
      !reader.checkKeys(*obj, "",
                        {"name", "device_kinds", "nodes", "links", "meshes"}))
    return false;
  cluster.name = sys::path::stem(fileName).str();
  if (!reader.readString(*obj, "name", "", false, cluster.name))
    return false;

  // Device kinds first: devices refer to them by name.
  const json::Value *kinds = reader.field(*obj, "device_kinds", "", true);
  const json::Array *kindArr =
      kinds ? reader.array(*kinds, "device_kinds") : nullptr;
  if (!kindArr)
    return false;
  if (kindArr->empty())
    return reader.fail("device_kinds", "must list at least one device kind");
  StringMap<int> kindIndex;
  StringMap<std::string> kindNames;
  for (size_t i = 0; i < kindArr->size(); ++i) {
    std::string path = indexPath("device_kinds", i);
    DeviceKind kind;
    if (!readKind(reader, (*kindArr)[i], path, kind) ||
        !checkUnique(reader, kindNames, kind.name, fieldPath(path, "name"),
                     "device kind"))
      return false;
    kindIndex[kind.name] = static_cast<int>(cluster.kinds.size());
    cluster.kinds.push_back(std::move(kind));
  }

  const json::Value *nodes = reader.field(*obj, "nodes", "", true);
  const json::Array *nodeArr = nodes ? reader.array(*nodes, "nodes") : nullptr;
  if (!nodeArr)
    return false;
  if (nodeArr->empty())
    return reader.fail("nodes", "must list at least one node");
  StringMap<std::string> nodeNames, deviceNames;
  for (size_t i = 0; i < nodeArr->size(); ++i)
    if (!readNode(reader, (*nodeArr)[i], indexPath("nodes", i), cluster,
                  kindIndex, nodeNames, deviceNames))
      return false;

  // Links are required only where a collective could use them.
  bool needsIntra = false;
  for (size_t i = 0; i < cluster.nodes.size(); ++i) {
    int held = static_cast<int>(count_if(cluster.devices, [&](const Device &d) {
      return d.node == static_cast<int>(i);
    }));
    needsIntra |= held > 1 && !cluster.nodes[i].intraNodeLink;
  }
  bool needsInter = cluster.nodes.size() > 1;
  const json::Value *links = reader.field(*obj, "links", "", false);
  const json::Object *linkObj = nullptr;
  if (links && !(linkObj = reader.object(*links, "links")))
    return false;
  if (!links && (needsIntra || needsInter))
    return reader.fail("links", "required field is missing (the cluster has " +
                                    Twine(needsInter ? "several nodes"
                                                     : "a node with several "
                                                       "devices") +
                                    ")");
  if (linkObj) {
    if (!reader.checkKeys(*linkObj, "links", {"intra_node", "inter_node"}))
      return false;
    const json::Value *intra =
        reader.field(*linkObj, "intra_node", "links", needsIntra);
    if ((needsIntra && !intra) ||
        (intra &&
         !reader.readLink(*intra, "links.intra_node", cluster.intraNode)))
      return false;
    const json::Value *inter =
        reader.field(*linkObj, "inter_node", "links", false);
    if (needsInter && !inter)
      return reader.fail("links.inter_node",
                         "required field is missing (the cluster has " +
                             std::to_string(cluster.nodes.size()) + " nodes)");
    if (inter &&
        !reader.readLink(*inter, "links.inter_node", cluster.interNode))
      return false;
  }

  if (const json::Value *meshes = reader.field(*obj, "meshes", "", false)) {
    const json::Array *meshArr = reader.array(*meshes, "meshes");
    if (!meshArr)
      return false;
    if (meshArr->empty())
      return reader.fail("meshes", "must list at least one mesh (or leave "
                                   "\"meshes\" out for the default one)");
    StringMap<std::string> meshNames;
    for (size_t i = 0; i < meshArr->size(); ++i)
      if (!readMesh(reader, (*meshArr)[i], indexPath("meshes", i), cluster,
                    meshNames))
        return false;
  } else {
    Mesh mesh;
    mesh.name = "mesh";
    mesh.shape = {static_cast<int64_t>(cluster.devices.size())};
    for (size_t i = 0; i < cluster.devices.size(); ++i)
      mesh.devices.push_back(static_cast<int>(i));
    cluster.meshes.push_back(std::move(mesh));
  }
  cluster.note = planningNote(cluster);
  return true;
}

Expected<Cluster> parseClusterSpec(StringRef jsonText, StringRef fileName) {
  Expected<json::Value> root = parseJson(jsonText);
  if (!root)
    return makeError(fileName +
                     ": invalid JSON: " + toString(root.takeError()));
  SpecReader reader(fileName);
  if (std::optional<std::string> repeated = findRepeatedKey(jsonText)) {
    reader.fail(*repeated, "field given twice");
    return reader.takeError();
  }
  Cluster cluster;
  if (!readCluster(reader, *root, fileName, cluster))
    return reader.takeError();
  return cluster;
}

Expected<Cluster> loadCluster(StringRef fileOrPreset) {
  if (std::optional<Expected<Cluster>> preset = loadPreset(fileOrPreset))
    return std::move(*preset);
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
      MemoryBuffer::getFile(fileOrPreset, /*IsText=*/true);
  if (!buffer)
    return makeError(
        "cannot read cluster spec '" + fileOrPreset +
        "': " + buffer.getError().message() +
        " (--cluster takes a spec file or a preset: " + presetHelp() + ")");
  return parseClusterSpec((*buffer)->getBuffer(), fileOrPreset);
}

} // namespace weft::plan
