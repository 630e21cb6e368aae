//===- WeightsFile.h - A device's weights file ------------------*- C++ -*-===//
//
// Gathers the bytes every weft.weight of a module refers to (in the model's
// .onnx file or its external-data files) into one weights file per device,
// each weight 64-byte aligned, and points the ops at their new places.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_CODEGEN_WEIGHTSFILE_H
#define WEFT_CODEGEN_WEIGHTSFILE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace mlir::weft {

/// One weight's bytes: where they are read from and where they go.
struct WeightCopy {
  std::string sourcePath;
  int64_t sourceOffset = 0;
  int64_t size = 0;
  std::string checksum;
  int64_t offset = 0;
};

/// The layout of a device's weights file.
struct WeightsFileLayout {
  std::vector<WeightCopy> copies;
  int64_t bytes = 0;
};

/// Lays out the weights of `module` (weights that share a source range are
/// stored once) and rewrites every weft.weight to refer to `fileName` at its
/// new offset. Source paths are resolved against the module's
/// `weft.weights_dir`.
WeightsFileLayout layoutWeights(ModuleOp module, llvm::StringRef fileName);

/// Writes the file: copies each weight's bytes after checking their size and
/// XXH3 checksum against what the importer recorded (a model file changed
/// since import is an error naming the weight). Writes to a temporary file
/// renamed at the end, so no half-written file is left. Returns the SHA-256
/// of the file as hex through `outSha256`.
LogicalResult writeWeightsFile(const WeightsFileLayout &layout,
                               llvm::StringRef path, Location loc,
                               std::string &outSha256);

} // namespace mlir::weft

#endif // WEFT_CODEGEN_WEIGHTSFILE_H
