//===- StageSignature.cpp - The structure of part of a model --------------===//
//
// Signatures are sequences of words: uniqued MLIR objects (op names, types,
// attributes) by address, positions and counts. They are compared, never
// ordered for a decision, so the addresses changing from run to run changes
// nothing that weftc prints.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/StageSignature.h"
#include "weft/WeftOps.h"

#include "llvm/ADT/Hashing.h"

#include <algorithm>
#include <iterator>

using namespace mlir;
using namespace mlir::weft;

static uint64_t word(const void *pointer) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(pointer));
}

/// A weight's name, file, offset and checksum say which weight it is, not
/// what it is: copies of a block hold different weights of one kind.
static bool namesTheWeight(Operation *op, StringAttr name) {
  if (!isa<WeightOp>(op))
    return false;
  return name == "name" || name == "file" || name == "offset" ||
         name == "checksum";
}

/// A float constant's values (a small bias folded into the IR) do not
/// change what the planner sees: its type does. Integer constants stay
/// whole: they are shapes, axes and indices, which change the ops.
static bool isFloatConstantValue(Operation *op, NamedAttribute attr) {
  auto constant = dyn_cast<ConstantOp>(op);
  if (!constant || attr.getName() != "value")
    return false;
  auto elements = dyn_cast<ElementsAttr>(attr.getValue());
  return elements && isa<FloatType>(elements.getElementType());
}

uint64_t StageSignatures::ownPart(Operation *op) {
  auto [it, inserted] = parts.try_emplace(op, 0);
  if (!inserted)
    return it->second;
  std::vector<uint64_t> words;
  words.push_back(word(op->getName().getAsOpaquePointer()));
  // Ops with regions are not compared by structure: each is its own.
  if (op->getNumRegions() > 0)
    words.push_back(word(op));
  for (NamedAttribute attr : op->getAttrs()) {
    if (namesTheWeight(op, attr.getName()))
      continue;
    if (isFloatConstantValue(op, attr)) {
      words.push_back(word(attr.getName().getAsOpaquePointer()));
      words.push_back(word(
          cast<ElementsAttr>(attr.getValue()).getType().getAsOpaquePointer()));
      continue;
    }
    words.push_back(word(attr.getName().getAsOpaquePointer()));
    words.push_back(word(attr.getValue().getAsOpaquePointer()));
  }
  words.push_back(op->getNumResults());
  for (Type type : op->getResultTypes())
    words.push_back(word(type.getAsOpaquePointer()));
  words.push_back(op->getNumOperands());
  for (Type type : op->getOperandTypes())
    words.push_back(word(type.getAsOpaquePointer()));
  auto [number, fresh] = numbers.try_emplace(std::move(words), 0);
  if (fresh)
    number->second = numbers.size();
  it->second = number->second;
  return it->second;
}

ScopeSignature StageSignatures::of(const PlanScope &scope) {
  llvm::DenseMap<Operation *, int64_t> local;
  for (auto [i, op] : llvm::enumerate(scope.ops))
    local[op] = static_cast<int64_t>(i);
  llvm::DenseMap<Value, int64_t> input;
  for (auto [i, value] : llvm::enumerate(scope.inputs))
    input[value] = static_cast<int64_t>(i);
  Block *body = scope.ops.empty() ? nullptr : scope.ops.front()->getBlock();

  ScopeSignature signature;
  std::vector<uint64_t> &w = signature.words;
  w.push_back(scope.inputs.size());
  for (Value value : scope.inputs) {
    w.push_back(word(value.getType().getAsOpaquePointer()));
    auto result = dyn_cast<OpResult>(value);
    if (!result) {
      w.push_back(0);
      continue;
    }
    w.push_back(1);
    w.push_back(ownPart(result.getOwner()));
    w.push_back(result.getResultNumber());
    w.push_back(std::distance(value.use_begin(), value.use_end()));
  }

  w.push_back(scope.ops.size());
  std::vector<std::pair<uint64_t, uint64_t>> outside;
  for (Operation *op : scope.ops) {
    w.push_back(ownPart(op));
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (auto it = def ? local.find(def) : local.end(); it != local.end()) {
        w.insert(w.end(), {0, static_cast<uint64_t>(it->second),
                           cast<OpResult>(operand).getResultNumber()});
      } else if (auto in = input.find(operand); in != input.end()) {
        w.insert(w.end(), {1, static_cast<uint64_t>(in->second)});
      } else {
        w.push_back(2);
      }
    }
    // Uses: how many, and which kinds of op outside the scope read it.
    for (Value result : op->getResults()) {
      outside.clear();
      uint64_t uses = 0;
      for (OpOperand &use : result.getUses()) {
        ++uses;
        Operation *user = use.getOwner();
        Operation *top = body ? body->findAncestorOpInBlock(*user) : nullptr;
        if (top && local.contains(top))
          continue;
        outside.push_back({ownPart(user), use.getOperandNumber()});
      }
      llvm::sort(outside);
      w.push_back(uses);
      w.push_back(outside.size());
      for (auto [part, operand] : outside)
        w.insert(w.end(), {part, operand});
    }
  }

  w.push_back(scope.outputs.size());
  for (Value value : scope.outputs) {
    auto result = dyn_cast<OpResult>(value);
    auto it = result ? local.find(result.getOwner()) : local.end();
    if (it == local.end()) {
      w.push_back(~uint64_t(0));
      continue;
    }
    w.insert(w.end(),
             {static_cast<uint64_t>(it->second), result.getResultNumber()});
  }
  return signature;
}

std::vector<uint64_t>
StageSignatures::structureHashes(ArrayRef<Operation *> ops) {
  llvm::DenseMap<Operation *, int64_t> index;
  for (auto [i, op] : llvm::enumerate(ops))
    index[op] = static_cast<int64_t>(i);
  std::vector<uint64_t> hashes;
  std::vector<uint64_t> w;
  for (auto [i, op] : llvm::enumerate(ops)) {
    w.assign({ownPart(op)});
    for (Value operand : op->getOperands()) {
      if (auto arg = dyn_cast<BlockArgument>(operand)) {
        w.insert(w.end(), {1, word(arg.getType().getAsOpaquePointer())});
        continue;
      }
      auto result = cast<OpResult>(operand);
      auto it = index.find(result.getOwner());
      if (it != index.end())
        w.insert(w.end(), {0, static_cast<uint64_t>(i - it->second),
                           result.getResultNumber()});
      else
        w.insert(w.end(),
                 {2, ownPart(result.getOwner()), result.getResultNumber()});
    }
    hashes.push_back(llvm::hash_combine_range(w.begin(), w.end()));
  }
  return hashes;
}
