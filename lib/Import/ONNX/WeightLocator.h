//===- WeightLocator.h - Where initializer bytes live on disk ---*- C++ -*-===//
//
// Finds the file and byte range of each initializer's data so that weft.weight
// can refer to it instead of copying it: raw_data (and packed float/double
// data) inside the model file itself, found by scanning the protobuf wire
// format, and external-data files next to the model, validated as untrusted
// input.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_LIB_IMPORT_ONNX_WEIGHTLOCATOR_H
#define WEFT_LIB_IMPORT_ONNX_WEIGHTLOCATOR_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace onnx {
class TensorProto;
} // namespace onnx

namespace mlir::weft::onnx_import {

/// A byte range of a file.
struct FileRange {
  uint64_t offset = 0;
  uint64_t size = 0;
};

/// Offsets of the data of the main graph's initializers inside a serialized
/// ModelProto, keyed by initializer name. Only tensors whose bytes are stored
/// contiguously in the machine's layout are listed: raw_data, and packed
/// float_data / double_data. Malformed input yields an empty or partial map,
/// never a read out of bounds.
llvm::StringMap<FileRange> scanInitializerData(StringRef modelBytes);

/// The resolved location of a tensor stored as ONNX external data.
struct ExternalLocation {
  /// Path relative to the model's directory, as written in the model.
  std::string relativePath;
  /// Absolute path after resolving links.
  std::string resolvedPath;
  FileRange range;
};

/// Resolves and validates the external data of `tensor`, whose data must
/// take `expectedBytes` bytes. Refuses absolute paths, paths that leave
/// `modelDir` (through `..` or links), missing files, and offsets or lengths
/// past the end of the file or not matching the tensor's size. On error,
/// returns false and sets `error`.
bool resolveExternalData(const onnx::TensorProto &tensor, StringRef modelDir,
                         uint64_t expectedBytes, ExternalLocation &out,
                         std::string &error);

/// XXH3-64 of `bytes` as 16 lowercase hex digits.
std::string checksumHex(StringRef bytes);

} // namespace mlir::weft::onnx_import

#endif // WEFT_LIB_IMPORT_ONNX_WEIGHTLOCATOR_H
