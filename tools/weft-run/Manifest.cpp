//===- Manifest.cpp - Reading and checking a package's manifest.json ------===//
//
// A package is outside input: its manifest may be truncated, edited or come
// from another build, and its files may be missing or partial. Everything
// weft-run later relies on is checked here, with messages that name the
// file and the entry.
//
//===----------------------------------------------------------------------===//

#include "Manifest.h"

#include "weft/Support/JsonFile.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"

#include <climits>
#include <map>
#include <set>

using namespace llvm;
using namespace weft::run;

/// A path the manifest gives, which must stay inside the package.
static bool resolveInPackage(StringRef package, StringRef relative,
                             const char *what, std::string &out,
                             std::string &error) {
  if (relative.empty() || sys::path::is_absolute(relative)) {
    error = std::string("the manifest's ") + what + " path '" + relative.str() +
            "' must be relative to the package";
    return false;
  }
  for (StringRef part :
       make_range(sys::path::begin(relative), sys::path::end(relative)))
    if (part == "..") {
      error = std::string("the manifest's ") + what + " path '" +
              relative.str() + "' leaves the package";
      return false;
    }
  SmallString<256> path(package);
  sys::path::append(path, relative);
  out = path.str().str();
  return true;
}

/// Reads the optional "mesh": {"shape": [...]}; [1] when absent.
static bool readMesh(const json::Object &root, std::vector<int64_t> &shape,
                     std::string &error) {
  shape = {1};
  const json::Value *mesh = root.get("mesh");
  if (!mesh)
    return true;
  const json::Object *object = mesh->getAsObject();
  const json::Array *dims = object ? object->getArray("shape") : nullptr;
  if (!dims || dims->empty()) {
    error = "\"mesh\" must be {\"shape\": [d0, d1, ...]}";
    return false;
  }
  shape.clear();
  int64_t devices = 1;
  for (const json::Value &dim : *dims) {
    std::optional<int64_t> d = dim.getAsInteger();
    if (!d || *d < 1 || *d > INT_MAX / devices) {
      error = "\"mesh\" shape entries must be integers >= 1 (at most " +
              std::to_string(INT_MAX) + " devices)";
      return false;
    }
    devices *= *d;
    shape.push_back(*d);
  }
  return true;
}

/// Reads version 2's "meshes": [{"name", "shape", "devices"}], which must
/// hold each of the package's `numDevices` devices exactly once.
static bool readMeshes(const json::Object &root, int64_t numDevices,
                       std::vector<MeshEntry> &meshes, std::string &error) {
  const json::Array *list = root.getArray("meshes");
  if (!list || list->empty()) {
    error = "\"meshes\" must list the package's meshes";
    return false;
  }
  std::vector<int> owner(static_cast<size_t>(numDevices), -1);
  for (auto [m, value] : llvm::enumerate(*list)) {
    std::string where = "meshes[" + std::to_string(m) + "]";
    const json::Object *object = value.getAsObject();
    const json::Array *shape = object ? object->getArray("shape") : nullptr;
    const json::Array *devices = object ? object->getArray("devices") : nullptr;
    if (!shape || !devices || shape->empty()) {
      error = where + " must be {\"name\", \"shape\": [d0, ...], "
                      "\"devices\": [...]}";
      return false;
    }
    MeshEntry mesh;
    if (std::optional<StringRef> name = object->getString("name"))
      mesh.name = name->str();
    int64_t size = 1;
    for (const json::Value &d : *shape) {
      std::optional<int64_t> dim = d.getAsInteger();
      if (!dim || *dim < 1 || *dim > INT_MAX / size) {
        error = where + " shape entries must be integers >= 1 (at most " +
                std::to_string(INT_MAX) + " devices)";
        return false;
      }
      size *= *dim;
      mesh.shape.push_back(*dim);
    }
    if (size != static_cast<int64_t>(devices->size())) {
      error = where + " has a shape of " + std::to_string(size) +
              " devices but lists " + std::to_string(devices->size());
      return false;
    }
    for (const json::Value &d : *devices) {
      std::optional<int64_t> device = d.getAsInteger();
      if (!device || *device < 0 || *device >= numDevices ||
          owner[*device] >= 0) {
        error = where + " lists a device that is not one of the package's "
                        "devices 0 to " +
                std::to_string(numDevices - 1) +
                ", or is in another mesh too";
        return false;
      }
      owner[*device] = static_cast<int>(m);
      mesh.devices.push_back(*device);
    }
    meshes.push_back(std::move(mesh));
  }
  for (int64_t k = 0; k < numDevices; ++k)
    if (owner[k] < 0) {
      error = "device " + std::to_string(k) + " is in none of the meshes";
      return false;
    }
  return true;
}

static std::string formatShape(const std::vector<int64_t> &shape) {
  std::vector<std::string> dims;
  for (int64_t d : shape)
    dims.push_back(std::to_string(d));
  return "[" + join(dims, ", ") + "]";
}

static std::string sha256Hex(StringRef bytes) {
  return toHex(SHA256::hash(arrayRefFromStringRef<uint8_t>(bytes)),
               /*LowerCase=*/true);
}

static bool isSha256Hex(StringRef text) {
  return text.size() == 64 &&
         text.find_first_not_of("0123456789abcdef") == StringRef::npos;
}

/// Compares the manifest's bytes with manifest.json.sha256 beside it (as
/// `sha256sum manifest.json` writes it).
static bool checkManifestDigest(StringRef dir, StringRef manifest,
                                const std::string &where, std::string &error) {
  SmallString<256> sidecar(dir);
  sys::path::append(sidecar, "manifest.json.sha256");
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
      MemoryBuffer::getFile(sidecar, /*IsText=*/false,
                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    error = "cannot read " + sidecar.str().str() + ": " +
            buffer.getError().message() +
            " (a package from weftc has it: an incomplete copy, or one "
            "written by an older weftc? recompile it)";
    return false;
  }
  StringRef text = (*buffer)->getBuffer();
  StringRef expected = text.split(' ').first.trim();
  if (!isSha256Hex(expected) || !text.contains("manifest.json")) {
    error = sidecar.str().str() +
            " is not '<sha256>  manifest.json' (as sha256sum writes it)";
    return false;
  }
  std::string actual = sha256Hex(manifest);
  if (actual != expected) {
    error = where + " has SHA-256 " + actual + "; manifest.json.sha256 says " +
            expected.str() + " (the manifest was edited or corrupted)";
    return false;
  }
  return true;
}

/// Reads "files": [{"path", "bytes", "sha256"}, ...].
static bool readFiles(const json::Object &root,
                      std::map<std::string, FileEntry> &out,
                      std::string &error) {
  const json::Array *files = root.getArray("files");
  if (!files) {
    error = "the manifest has no \"files\" (the checksums of the package's "
            "files); recompile the package with this weftc";
    return false;
  }
  for (size_t i = 0; i < files->size(); ++i) {
    std::string name = "files[" + std::to_string(i) + "]";
    const json::Object *file = (*files)[i].getAsObject();
    std::optional<StringRef> path = file ? file->getString("path") : std::nullopt;
    std::optional<int64_t> bytes =
        file ? file->getInteger("bytes") : std::nullopt;
    std::optional<StringRef> sha = file ? file->getString("sha256") : std::nullopt;
    if (!path || !bytes || *bytes < 0 || !sha || !isSha256Hex(sha->lower())) {
      error = name + " must be {\"path\": ..., \"bytes\": <count >= 0>, "
                     "\"sha256\": <64 hex digits>}";
      return false;
    }
    out[path->str()] = {static_cast<uint64_t>(*bytes), sha->lower()};
  }
  return true;
}

bool weft::run::readManifest(StringRef dir, Package &out, std::string &error) {
  SmallString<256> manifestPath(dir);
  sys::path::append(manifestPath, "manifest.json");
  std::string where = manifestPath.str().str();
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
      MemoryBuffer::getFile(manifestPath);
  if (!buffer) {
    error = "cannot read " + where + ": " + buffer.getError().message() +
            " (is '" + dir.str() + "' a package folder written by weftc?)";
    return false;
  }
  Expected<json::Value> parsed = weft::parseJson((*buffer)->getBuffer());
  if (!parsed) {
    error = where + " is not valid JSON: " + toString(parsed.takeError());
    return false;
  }
  // Before anything in it is believed: it is the manifest weftc wrote.
  if (!checkManifestDigest(dir, (*buffer)->getBuffer(), where, error))
    return false;
  const json::Object *root = parsed->getAsObject();
  auto bad = [&](const Twine &why) {
    error = (where + ": " + why).str();
    return false;
  };
  if (!root)
    return bad("the manifest is not a JSON object");
  std::optional<StringRef> format = root->getString("format");
  if (!format || *format != "weft-package")
    return bad("not a Weft package manifest (\"format\" is not "
               "\"weft-package\")");
  std::optional<int64_t> version = root->getInteger("version");
  if (!version || (*version != 1 && *version != 2))
    return bad("manifest version " +
               (version ? Twine(*version) : Twine("(none)")) +
               " is not one this weft-run reads (versions 1 and 2)");
  const json::Array *devices = root->getArray("devices");
  if (!devices || devices->empty())
    return bad("the manifest lists no devices");
  // Version 2 lists meshes (one per pipeline stage) that together hold
  // every device once; version 1 has one optional "mesh".
  if (*version == 2) {
    if (!readMeshes(*root, static_cast<int64_t>(devices->size()), out.meshes,
                    error))
      return bad(error);
    out.meshShape = {static_cast<int64_t>(devices->size())};
    if (out.meshes.size() == 1)
      out.meshShape = out.meshes.front().shape;
  } else if (!readMesh(*root, out.meshShape, error)) {
    return bad(error);
  }
  int64_t meshDevices = 1;
  for (int64_t d : out.meshShape)
    meshDevices *= d;
  if (static_cast<int64_t>(devices->size()) != meshDevices)
    return bad(root->get("mesh")
                   ? "the mesh " + formatShape(out.meshShape) + " has " +
                         Twine(meshDevices) +
                         " devices, but \"devices\" "
                         "lists " +
                         Twine(devices->size())
                   : "this package has " + Twine(devices->size()) +
                         " devices but no \"mesh\" shape to run them on");

  std::map<std::string, FileEntry> files;
  if (!readFiles(*root, files, error))
    return bad(error);
  const json::Array *weightList = root->getArray("weights");
  out.devices.assign(devices->size(), Device());
  std::set<int64_t> seen;
  for (size_t k = 0; k < devices->size(); ++k) {
    std::string name = "devices[" + std::to_string(k) + "]";
    const json::Object *device = (*devices)[k].getAsObject();
    if (!device)
      return bad(name + " is not an object");
    std::optional<int64_t> id = device->getInteger("id");
    if (!id)
      id = static_cast<int64_t>(k);
    if (*id < 0 || *id >= static_cast<int64_t>(devices->size()) ||
        !seen.insert(*id).second)
      return bad(name + " has id " + Twine(*id) +
                 "; ids run from 0 to the device count - 1, each once");
    Device &entry = out.devices[*id];
    entry.id = *id;
    std::optional<StringRef> executable = device->getString("executable");
    std::optional<StringRef> weights = device->getString("weights");
    if (!executable || !weights)
      return bad(name + " needs \"executable\" and \"weights\" paths" +
                 (device->get("library")
                      ? " (a library package is loaded by your program, "
                        "not run)"
                      : ""));
    if (!resolveInPackage(dir, *executable, "executable", entry.executable,
                          error) ||
        !resolveInPackage(dir, *weights, "weights", entry.weights, error))
      return bad(error);
    const json::Object *weightsEntry = nullptr;
    if (weightList)
      for (const json::Value &value : *weightList)
        if (const json::Object *object = value.getAsObject())
          if (object->getString("file") == *weights)
            weightsEntry = object;
    if (!weightsEntry)
      return bad("\"weights\" has no entry for " + *weights);
    const json::Value *bytesValue = weightsEntry->get("bytes");
    std::optional<int64_t> bytes =
        bytesValue ? bytesValue->getAsInteger() : std::nullopt;
    if (!bytesValue)
      return bad("the weights entry of " + *weights + " has no \"bytes\"");
    if (!bytes || *bytes < 0)
      return bad("the weights entry of " + *weights +
                 " has \"bytes\" that is not a byte count >= 0");
    entry.weightsBytes = *bytes;
    if (std::optional<StringRef> sha = weightsEntry->getString("sha256"))
      entry.weightsSha256 = sha->lower();
    auto executableFile = files.find(executable->str());
    if (executableFile == files.end())
      return bad("\"files\" has no checksum for " + *executable);
    entry.executableFile = executableFile->second;
  }
  if (const json::Array *libs = root->getArray("runtime_libraries"))
    for (const json::Value &lib : *libs)
      if (std::optional<StringRef> name = lib.getAsString())
        out.runtimeLibraries.push_back(name->str());
  return true;
}

/// Checks that a device's executable and weights are there and whole.
/// Reads `file` whole and checks it against `entry`; false with `error`
/// naming `what` on a mismatch.
static bool checkDigest(const std::string &file, const FileEntry &entry,
                        const char *what, std::string &error) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer = MemoryBuffer::getFile(
      file, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer) {
    error = "cannot read " + file + ": " + buffer.getError().message();
    return false;
  }
  StringRef bytes = (*buffer)->getBuffer();
  if (bytes.size() != entry.bytes) {
    error = std::string(what) + " " + file + " has " +
            std::to_string(bytes.size()) + " bytes; the manifest says " +
            std::to_string(entry.bytes) +
            " (a partial copy, or the file of another build?)";
    return false;
  }
  std::string hex = sha256Hex(bytes);
  if (hex != entry.sha256) {
    error = std::string(what) + " " + file + " has SHA-256 " + hex +
            "; the manifest says " + entry.sha256 +
            " (corrupted or replaced)";
    return false;
  }
  return true;
}

bool weft::run::checkDevice(const Device &device, bool verifyWeights,
                            std::string &error) {
  if (!sys::fs::exists(device.executable)) {
    error = "the device program " + device.executable +
            " is missing (an incomplete copy of the package?)";
    return false;
  }
  if (!sys::fs::is_regular_file(device.executable) ||
      !sys::fs::can_execute(device.executable)) {
    error = device.executable + " is not an executable file";
    return false;
  }
  if (!checkDigest(device.executable, device.executableFile,
                   "the device program", error))
    return false;
  sys::fs::file_status status;
  if (std::error_code ec = sys::fs::status(device.weights, status)) {
    error = "cannot read the weights " + device.weights + " of device " +
            std::to_string(device.id) + ": " + ec.message();
    return false;
  }
  if (status.type() != sys::fs::file_type::regular_file) {
    error = "the weights " + device.weights + " of device " +
            std::to_string(device.id) + " are not a regular file";
    return false;
  }
  uint64_t size = status.getSize();
  if (size != static_cast<uint64_t>(device.weightsBytes)) {
    error = device.weights + " has " + std::to_string(size) +
            " bytes; the manifest says " + std::to_string(device.weightsBytes) +
            " (a partial copy, or the weights of another build?)";
    return false;
  }
  if (!verifyWeights)
    return true;
  if (device.weightsSha256.empty()) {
    error =
        "--verify-weights: the manifest gives no sha256 for " + device.weights;
    return false;
  }
  FileEntry weights = {static_cast<uint64_t>(device.weightsBytes),
                       device.weightsSha256};
  return checkDigest(device.weights, weights, "the weights", error);
}
