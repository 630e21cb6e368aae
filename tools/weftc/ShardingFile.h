//===- ShardingFile.h - weftc --sharding-file -------------------*- C++ -*-===//
//
// Reads a user's sharding constraints, a JSON file keyed by ONNX tensor
// names, and turns them into weft.shard ops that the planner must respect.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TOOLS_WEFTC_SHARDINGFILE_H
#define WEFT_TOOLS_WEFTC_SHARDINGFILE_H

#include "weft/Import/ONNX/Importer.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace mlir::weft {

/// Reads the sharding file `path`, of the form
///
///   {"input": {"dims": [[0], []]}, "fc1.weight": {"dims": [[], [1]]}}
///
/// (for each dimension of the tensor the mesh axes it is split over, as in
/// #weft.sharding), and adds its constraints to `module`'s main function:
/// declares `weft.mesh @mesh` with `meshShape` and routes every use of each
/// named tensor through a `weft.shard` placed right after the tensor's
/// definition. Every mistake in the file is reported, naming the file, the
/// tensor and where in the JSON it is; returns failure after any.
/// `constrained` receives the names whose constraints were added.
LogicalResult applyShardingFile(ModuleOp module, StringRef path,
                                ArrayRef<int64_t> meshShape,
                                const ImportedTensors &tensors,
                                std::vector<std::string> &constrained);

/// Run once shapes are known (after canonicalization): every constrained
/// tensor must be data. One that ops read only as a shape or an index (a
/// Reshape's target) is folded into them, so its constraint is gone; one
/// whose shape-reading user can no longer be folded leaves that user's
/// result shape unknown. Both are reported naming the tensor, rather than
/// ignored or reported as an unknown shape.
LogicalResult checkConstraintsAfterFolding(ModuleOp module, StringRef path,
                                           ArrayRef<std::string> constrained);

} // namespace mlir::weft

#endif // WEFT_TOOLS_WEFTC_SHARDINGFILE_H
