//===- DeviceMemory.h - The memory a device program must fit ----*- C++ -*-===//
//
// Module attributes that weftc sets on a device program before code
// generation, and that weft-plan-memory checks the planned arena against
// (docs/Codegen.md, "The memory plan").
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_CODEGEN_DEVICEMEMORY_H
#define WEFT_CODEGEN_DEVICEMEMORY_H

#include "llvm/ADT/StringRef.h"

namespace mlir::weft {

/// The device's memory in bytes (i64). With it, no single buffer or
/// constant may be larger, and neither may the arena and the weights
/// (`weft.weights_bytes`, kWeightsBytesAttr) together. Without it the
/// program is not checked.
inline constexpr llvm::StringLiteral kDeviceMemoryBytesAttr =
    "weft.device_memory_bytes";

/// Where the device memory figure comes from (a string for messages, e.g.
/// "--device-memory" or "cluster 'cpu:4'").
inline constexpr llvm::StringLiteral kDeviceMemorySourceAttr =
    "weft.device_memory_source";

} // namespace mlir::weft

#endif // WEFT_CODEGEN_DEVICEMEMORY_H
