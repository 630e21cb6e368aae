//===- StageSignature.h - The structure of part of a model ------*- C++ -*-===//
//
// Two stages of a model that repeats a block (a transformer's layers) are
// the same problem for the intra-operator planner: the same ops with the
// same types and attributes, wired the same way, with weights that differ
// only in their names and values. StagePricer prices a stage once per
// signature, and the stage planner's layer clustering finds the blocks by
// the ops' structure hashes.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TRANSFORMS_STAGESIGNATURE_H
#define WEFT_TRANSFORMS_STAGESIGNATURE_H

#include "weft/Transforms/AutoShard.h"

#include "llvm/ADT/DenseMap.h"

#include <cstdint>
#include <map>
#include <vector>

namespace mlir::weft {

/// What a stage scope is, with names and weight locations left out. Equal
/// signatures mean equal problems: the same inputs (types, received or the
/// model's own, and the kind of op each comes from), the same ops in the
/// same order (op name, attributes but a weight's name, file, offset and
/// checksum, result types, each operand as a position in the scope), the
/// same outputs, and the same uses outside the scope (their number and
/// users' kinds, which the cost model's fusion rules read). A float
/// constant counts by its type, not its values (a folded bias of each
/// block).
struct ScopeSignature {
  std::vector<uint64_t> words;

  bool operator==(const ScopeSignature &other) const {
    return words == other.words;
  }
  bool operator<(const ScopeSignature &other) const {
    return words < other.words;
  }
};

/// Makes signatures of scopes of one function, and the ops' structure
/// hashes. Each op's own part (name, attributes, result types) is worked
/// out once and numbered, so a signature is one pass over the scope. The
/// function must not change while this lives.
class StageSignatures {
public:
  /// The signature of `scope`.
  ScopeSignature of(const PlanScope &scope);

  /// Per op of `ops` (in body order; ops left out of the list are read as
  /// constants): a hash of what it computes relative to the ops before it:
  /// its own part, and each operand as the distance back to the op of the
  /// list that makes it, the kind of a weight or constant, or an argument's
  /// type. Equal for the same op of two copies of a block.
  std::vector<uint64_t> structureHashes(llvm::ArrayRef<Operation *> ops);

private:
  /// The number of `op`'s own part: equal numbers, equal parts.
  uint64_t ownPart(Operation *op);

  llvm::DenseMap<Operation *, uint64_t> parts;
  std::map<std::vector<uint64_t>, uint64_t> numbers;
};

} // namespace mlir::weft

#endif // WEFT_TRANSFORMS_STAGESIGNATURE_H
