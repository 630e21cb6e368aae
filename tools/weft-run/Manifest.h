//===- Manifest.h - A package's manifest.json, read and checked -*- C++ -*-===//
//
// What weft-run knows of a package: its devices, their files and the mesh
// they form, read from OUT/manifest.json (written by lib/Codegen/Package.cpp)
// and checked before anything is launched.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TOOLS_WEFT_RUN_MANIFEST_H
#define WEFT_TOOLS_WEFT_RUN_MANIFEST_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weft::run {

/// One entry of the manifest's "files".
struct FileEntry {
  uint64_t bytes = 0;
  std::string sha256;
};

/// One entry of the manifest's "devices", with its weights entry; paths
/// are inside the package folder.
struct Device {
  int64_t id = 0;
  std::string executable;
  std::string weights;
  int64_t weightsBytes = 0;
  std::string weightsSha256;
  /// The executable's size and checksum from "files".
  FileEntry executableFile;
};

/// What weft-run needs from manifest.json.
/// One mesh of a version 2 manifest (a pipeline stage's): its shape and the
/// devices (MPI ranks) at its row-major positions.
struct MeshEntry {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<int64_t> devices;
};

struct Package {
  /// The mesh shape; [1] for a single device; [number of devices] for a
  /// pipeline of several meshes.
  std::vector<int64_t> meshShape = {1};
  /// Version 2: every mesh of the package (empty for version 1).
  std::vector<MeshEntry> meshes;
  /// In device (= MPI rank) order.
  std::vector<Device> devices;
  std::vector<std::string> runtimeLibraries;
};

/// Reads `dir`/manifest.json into `out`; false with `error` (naming the
/// file and the entry) when it is missing, malformed or inconsistent.
bool readManifest(llvm::StringRef dir, Package &out, std::string &error);

/// Checks that a device's executable is there and is the one weftc wrote
/// (its size and SHA-256: cheap, done at every launch) and that its weights
/// are there with the right size (their SHA-256 too with `verifyWeights`).
bool checkDevice(const Device &device, bool verifyWeights, std::string &error);

} // namespace weft::run

#endif // WEFT_TOOLS_WEFT_RUN_MANIFEST_H
