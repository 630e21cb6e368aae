//===- WeightsFile.h - A device's weights file ------------------*- C++ -*-===//
//
// Gathers the bytes every weft.weight of a module refers to (in the model's
// .onnx file or its external-data files; for a device's shard, a block of
// them) into one weights file per device, each weight 64-byte aligned, and
// points the ops at their new places.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_CODEGEN_WEIGHTSFILE_H
#define WEFT_CODEGEN_WEIGHTSFILE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/ADT/StringRef.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace mlir::weft {

/// One weight's bytes: where they are read from and where they go.
struct WeightCopy {
  /// The (first) weft.weight placed here, for messages.
  std::string name;
  std::string sourcePath;
  int64_t sourceOffset = 0;
  /// Bytes of the whole stored tensor, which `checksum` covers.
  int64_t size = 0;
  std::string checksum;
  /// Where the copy starts in the weights file (64-byte aligned).
  int64_t offset = 0;
  /// For a block of the stored tensor (a device's shard): the stored
  /// tensor's shape, the block's offsets and shape and the element size.
  /// Empty shapes for a whole weight.
  std::vector<int64_t> fullShape;
  std::vector<int64_t> blockOffsets;
  std::vector<int64_t> blockShape;
  int64_t elementBytes = 0;
  /// For a weight stored permuted (weft.weight's `permuted`): the
  /// permutation and the shape it applies to (the block's, or the stored
  /// tensor's). Empty otherwise. `elementBytes` is set with it.
  std::vector<int64_t> perm;
  std::vector<int64_t> unpermutedShape;

  /// Bytes the compiler made rather than read from the model (a rank's
  /// peer table): written as they are; `size` is their count, and there is
  /// no source file or checksum.
  std::string contents;

  bool isBlock() const { return !fullShape.empty(); }
  /// Bytes the copy takes in the weights file: `size`, or the block's.
  int64_t bytes() const;
};

/// The layout of a device's weights file.
struct WeightsFileLayout {
  std::vector<WeightCopy> copies;
  int64_t bytes = 0;
};

/// Lays out the weights of `module` (weights that share a source range and
/// block are stored once) and rewrites every weft.weight to refer to
/// `fileName` at its new offset. A block weight (`block ... of ...`) gets
/// only its block in the file and becomes a plain weight of the block's
/// size there (its checksum stays the stored tensor's, which is verified
/// when the file is written). Source paths are resolved against the
/// module's `weft.weights_dir`.
WeightsFileLayout layoutWeights(ModuleOp module, llvm::StringRef fileName);

/// Writes the file: copies each weight's bytes (for a block, its elements,
/// row-major; permuted when the weight says so) after checking the stored tensor's size and XXH3 checksum
/// against what the importer recorded (a model file changed since import is
/// an error naming the weight). Writes to a temporary file
/// renamed at the end, so no half-written file is left. Returns the SHA-256
/// of the file as hex through `outSha256`.
/// The model files weights are read from, and the stored tensors whose
/// checksum was verified: kept across the weights files of one package, so
/// that 64 devices read and check the model once, not 64 times.
struct WeightSources {
  std::map<std::string, std::unique_ptr<llvm::MemoryBuffer>> files;
  std::set<std::tuple<std::string, int64_t, int64_t>> verified;
};

/// `sources` (optional) is shared between the calls of one package.
LogicalResult writeWeightsFile(const WeightsFileLayout &layout,
                               llvm::StringRef path, Location loc,
                               std::string &outSha256,
                               WeightSources *sources = nullptr);

} // namespace mlir::weft

#endif // WEFT_CODEGEN_WEIGHTSFILE_H
