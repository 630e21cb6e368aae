//===- weft-manifest-fuzzer.cpp - libFuzzer target for package manifests -===//
//
// Feeds text as a package's manifest.json to weft::run::readManifest
// (tools/weft-run/Manifest.cpp, compiled into this target), which weft-run
// calls before it launches anything. The input is written to a package
// folder of this process's own with the manifest.json.sha256 that weftc
// writes beside it, so that the reader gets past its digest check to the
// manifest's contents. A manifest the reader accepts must describe
// what the launcher relies on without further checks: as many devices as
// the mesh has, device k at index k, and every path inside the package.
// Run it through scripts/fuzz.sh.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "../tools/weft-run/Manifest.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"

#include <cstdint>
#include <string>

using weft::run::Device;
using weft::run::Package;

static const char kTarget[] = "weft-manifest-fuzzer";

[[noreturn]] static void reportBug(const std::string &what) {
  weft::fuzz::reportBug(kTarget, what);
}

/// A path the launcher will run or read: inside `dir`, no "..".
static void checkInPackage(const std::string &dir, const std::string &path,
                           const std::string &what) {
  llvm::StringRef rest(path);
  if (!rest.consume_front(dir + "/") || rest.empty())
    reportBug(what + " '" + path + "' is not inside the package");
  for (llvm::StringRef part : llvm::make_range(llvm::sys::path::begin(rest),
                                               llvm::sys::path::end(rest)))
    if (part == "..")
      reportBug(what + " '" + path + "' leaves the package");
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &dir = weft::fuzz::scratchDir();
  weft::fuzz::writeFileOrDie(dir + "/manifest.json", data, size);
  std::string digest =
      llvm::toHex(llvm::SHA256::hash(llvm::ArrayRef<uint8_t>(data, size)),
                  /*LowerCase=*/true) +
      "  manifest.json\n";
  weft::fuzz::writeFileOrDie(dir + "/manifest.json.sha256",
                             reinterpret_cast<const uint8_t *>(digest.data()),
                             digest.size());

  Package package;
  std::string error;
  if (!weft::run::readManifest(dir, package, error)) {
    if (error.empty())
      reportBug("refused the manifest without a message");
    return 0;
  }
  int64_t meshDevices = 1;
  for (int64_t d : package.meshShape) {
    if (d < 1)
      reportBug("accepted a mesh dimension " + std::to_string(d));
    meshDevices *= d;
  }
  if (package.devices.empty() ||
      static_cast<int64_t>(package.devices.size()) != meshDevices)
    reportBug("accepted " + std::to_string(package.devices.size()) +
              " devices for a mesh of " + std::to_string(meshDevices));
  for (size_t k = 0; k < package.devices.size(); ++k) {
    const Device &device = package.devices[k];
    std::string name = "device " + std::to_string(k);
    if (device.id != static_cast<int64_t>(k))
      reportBug(name + " has id " + std::to_string(device.id));
    checkInPackage(dir, device.executable, name + "'s executable");
    checkInPackage(dir, device.weights, name + "'s weights");
    if (device.weightsBytes < 0)
      reportBug(name + "'s weights have " +
                std::to_string(device.weightsBytes) + " bytes");
    if (device.executableFile.sha256.size() != 64)
      reportBug(name + "'s executable has checksum '" +
                device.executableFile.sha256 + "'");
  }
  return 0;
}
