//===- WeftLimits.h - The largest tensors Weft compiles ---------*- C++ -*-===//
//
// The size limits checked where shapes enter Weft (the importer's declared
// shapes and --input-shape, the type inference of ops whose result shape
// comes from operand values), so that no later stage multiplies sizes past
// int64_t or tries to build a tensor no machine holds. docs/Importer.md
// ("Errors") lists them.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_WEFTLIMITS_H
#define WEFT_DIALECT_WEFT_WEFTLIMITS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>

namespace mlir::weft {

/// The largest size of one dimension: 2^31 - 1, as ONNX's int32 shape
/// arithmetic and the runtime's tensor files assume.
inline constexpr int64_t kMaxDimSize = std::numeric_limits<int32_t>::max();

/// The largest tensor in bytes: 2^48 (256 TiB), beyond any one device's
/// memory, and small enough that sums of tensor sizes cannot overflow
/// int64_t.
inline constexpr int64_t kMaxTensorBytes = int64_t(1) << 48;

/// "2^48 bytes (256 TiB)", for messages.
inline constexpr const char *kMaxTensorBytesText = "2^48 bytes (256 TiB)";

/// Bytes of one element of `elementType` as Weft stores it (bool as a byte).
inline int64_t elementStorageBytes(Type elementType) {
  if (!elementType.isIntOrFloat())
    return 8;
  return std::max<int64_t>(1, (elementType.getIntOrFloatBitWidth() + 7) / 8);
}

/// Why a tensor of `shape` and `elementType` is too large to compile (a
/// phrase such as "dimension 1 is 100000000000, more than 2147483647, the
/// largest Weft compiles"), or std::nullopt when it is not. Dynamic sizes
/// are skipped: they are checked once known.
inline std::optional<std::string> checkTensorSize(ArrayRef<int64_t> shape,
                                                  Type elementType) {
  for (auto [d, size] : llvm::enumerate(shape))
    if (!ShapedType::isDynamic(size) && size > kMaxDimSize)
      return ("dimension " + llvm::Twine(d) + " is " + llvm::Twine(size) +
              ", more than " + llvm::Twine(kMaxDimSize) +
              ", the largest Weft compiles")
          .str();
  // Each factor is at most 2^31 and the product is kept at most 2^48, so no
  // step overflows.
  int64_t bytes = elementStorageBytes(elementType);
  for (int64_t size : shape) {
    if (ShapedType::isDynamic(size))
      continue;
    if (size == 0)
      return std::nullopt;
    bytes = bytes > kMaxTensorBytes / size ? kMaxTensorBytes + 1 : bytes * size;
  }
  if (bytes <= kMaxTensorBytes)
    return std::nullopt;
  // The exact size, when it fits a double's range (it always does).
  double exact = static_cast<double>(elementStorageBytes(elementType));
  for (int64_t size : shape)
    if (!ShapedType::isDynamic(size))
      exact *= static_cast<double>(size);
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g", exact);
  return ("holds " + llvm::Twine(text) + " bytes, more than " +
          kMaxTensorBytesText + ", the largest tensor Weft compiles")
      .str();
}

} // namespace mlir::weft

#endif // WEFT_DIALECT_WEFT_WEFTLIMITS_H
