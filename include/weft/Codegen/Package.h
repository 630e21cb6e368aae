//===- Package.h - Writing compiled packages --------------------*- C++ -*-===//
//
// A package is a folder that runs a model on its devices:
//   manifest.json        what the package holds (docs/Codegen.md)
//   bin/dev<k>           device k's executable (program + static runtime);
//                        devices running the same program share one
//   weights/dev<k>.bin   device k's weights, 64-byte aligned
//   plan.json            the sharding plan, when there is one
//   run.sh               runs the package (with weft-run when multi-device)
// A library package (--emit=lib) has lib/libweft_model.so and include/
// instead of bin/ and run.sh.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_CODEGEN_PACKAGE_H
#define WEFT_CODEGEN_PACKAGE_H

#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace mlir::weft {

/// Where the runtime and the linker are.
struct RuntimeLocation {
  /// Folder with libweft_rt.a and libweft_rt_main.a.
  std::string libraryDir;
  /// Folder with weft_rt.h.
  std::string includeDir;
  /// The C compiler driver used as linker front end (clang-22).
  std::string linker;
  /// System libraries the runtime needs (full paths or -l flags).
  std::vector<std::string> systemLibraries;
  /// Their sonames, for the manifest.
  std::vector<std::string> sonames;
  /// What a --target=cuda executable links besides the runtime (empty when
  /// the CUDA backend was not built).
  std::vector<std::string> cudaLibraries;
  /// MPI's libraries (in systemLibraries too).
  std::vector<std::string> mpiLibraries;
  /// What executables of a GPU mesh link besides cudaLibraries: NCCL, MPI.
  std::vector<std::string> meshLibraries;
  /// Sonames of the CUDA libraries, NCCL's last, for the manifest.
  std::vector<std::string> cudaSonames;
};

/// Finds the runtime: $WEFT_RUNTIME_DIR, else next to the running tool when
/// installed (<prefix>/lib/weft), else the build tree it was built in.
RuntimeLocation findRuntime(const char *argv0);

/// One tensor of the model's signature, for the manifest.
struct TensorDescription {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
};

/// One distinct compiled program: several devices of a mesh may run the
/// same one (with their own weights).
struct DeviceProgram {
  /// The program's object file.
  std::string objectPath;
  int64_t arenaBytes = 0;
  /// Text of the program signature, for the library's header comment.
  std::string signature;
};

/// One device of the package; device k is mesh position k (row-major).
struct DeviceContents {
  /// Index into PackageContents::programs.
  int program = 0;
  /// The device's weights file (already written), its size and SHA-256.
  std::string weightsPath;
  int64_t weightsBytes = 0;
  std::string weightsSha256;
  /// Index into PackageContents::meshes: the device's pipeline stage.
  int mesh = 0;
};

/// What a package is made of, ready to be written.
struct PackageContents {
  std::string modelName;
  /// "cpu" or "cuda"; for "cuda" the GPU architectures (80 = sm_80).
  std::string backend = "cpu";
  std::vector<int> gpuArchs;
  std::string cpu;
  std::string features;
  std::vector<TensorDescription> inputs;
  std::vector<TensorDescription> outputs;
  /// The logical mesh; empty or [1] for a single device; [ranks] for a
  /// pipeline. Its size must be the number of devices.
  std::vector<int64_t> meshShape;
  /// A pipeline's meshes, one per stage (empty: one mesh of meshShape over
  /// all devices). Devices are MPI ranks, in row-major mesh order.
  struct Mesh {
    std::string name;
    std::vector<int64_t> shape;
    std::vector<int64_t> devices;
  };
  std::vector<Mesh> meshes;
  std::vector<DeviceProgram> programs;
  std::vector<DeviceContents> devices;
  /// If not empty, written as OUT/plan.json (the sharding plan) and named
  /// in the manifest.
  std::string planJson;
};

/// Links and writes the package into `outDir` (replacing an old package
/// there): first into a temporary sibling folder, renamed at the end, so
/// that a failure leaves no half-written package. Program p is linked once,
/// as bin/dev<k> for the first device k that runs it; every device gets
/// weights/dev<k>.bin. `asLibrary` writes a shared library and headers
/// instead of executables (single-device packages only).
LogicalResult writePackage(const PackageContents &contents,
                           const RuntimeLocation &runtime,
                           llvm::StringRef outDir, bool asLibrary,
                           Location loc);

} // namespace mlir::weft

#endif // WEFT_CODEGEN_PACKAGE_H
