//===- ShardedMemory.cpp - Memory a sharded program holds per device ------===//
//
// Mirrors weft-spmd-partition's buffers (SpmdPartition.cpp) without building
// them: the same shardings, the same resharding plans, the same reuse of a
// value resharded once per needed sharding.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/ShardedMemory.h"
#include "weft/Plan/Sharding.h"
#include "weft/Transforms/AutoShard.h"
#include "weft/WeftOps.h"

#include "llvm/ADT/DenseSet.h"

#include <map>

using namespace mlir;
using namespace mlir::weft;
using ::weft::plan::TensorSharding;

/// Buffers are this aligned in the arena and the weights file.
static constexpr double kAlignment = 64;

namespace {
class MemoryCounter {
public:
  MemoryCounter(func::FuncOp func, StringRef mesh, ArrayRef<int64_t> meshShape)
      : func(func), mesh(mesh), meshShape(meshShape) {}
  ShardedMemory count();

private:
  /// Bytes of the largest device's block of `value` in `sharding`.
  double localBytes(Value value, const TensorSharding &sharding) const {
    auto type = cast<RankedTensorType>(value.getType());
    std::vector<int64_t> shape =
        plan::largestLocalShape(type.getShape(), sharding, meshShape);
    double elements = 1;
    for (int64_t d : shape)
      elements *= static_cast<double>(d);
    double bits = type.getElementType().getIntOrFloatBitWidth();
    double bytes = elements * std::max(bits, 8.0) / 8;
    return std::ceil(bytes / kAlignment) * kAlignment;
  }
  TensorSharding resultSharding(Value value) const;
  TensorSharding neededSharding(Operation *user, unsigned index) const;
  /// A buffer live over program points [start, end].
  void addBuffer(double bytes, int start, int end, bool reshard) {
    if (bytes > 0)
      buffers.push_back({bytes, start, end, reshard});
  }

  struct Buffer {
    double bytes;
    int start, end;
    bool reshard;
  };
  /// A value without a sharding is whole on this mesh.
  TensorSharding whole(Value value) const {
    return TensorSharding::replicated(
        mesh, cast<RankedTensorType>(value.getType()).getRank());
  }

  func::FuncOp func;
  /// The symbol of the mesh the annotations name.
  StringRef mesh;
  ArrayRef<int64_t> meshShape;
  std::vector<Buffer> buffers;
};
} // namespace

TensorSharding MemoryCounter::resultSharding(Value value) const {
  if (auto result = dyn_cast<OpResult>(value))
    if (auto attrs = result.getOwner()->getAttrOfType<ArrayAttr>(kShardingAttr))
      if (result.getResultNumber() < attrs.size())
        if (auto attr = dyn_cast<ShardingAttr>(attrs[result.getResultNumber()]))
          return toTensorSharding(attr);
  return whole(value);
}

TensorSharding MemoryCounter::neededSharding(Operation *user,
                                             unsigned index) const {
  if (auto attrs = user->getAttrOfType<ArrayAttr>(kOperandShardingAttr))
    if (index < attrs.size())
      if (auto attr = dyn_cast<ShardingAttr>(attrs[index]))
        return toTensorSharding(attr);
  // Not data (unit) or not annotated: the partitioner makes it whole.
  return whole(user->getOperand(index));
}

ShardedMemory MemoryCounter::count() {
  Block &body = func.getBody().front();
  Operation *terminator = body.getTerminator();
  llvm::DenseMap<Operation *, int> position;
  for (Operation &op : body)
    position[&op] = position.size();
  int end = position.size() - 1;

  // Last use of each value, and of each (value, needed sharding) pair that
  // needs a resharding buffer: the partitioner keeps one per pair. (A
  // value's pairs are few: a list each, searched.)
  llvm::DenseMap<Value, int> lastUse;
  struct Reshard {
    Value value;
    TensorSharding need;
    int firstUse, lastUse;
  };
  std::vector<Reshard> reshards;
  llvm::DenseMap<Value, SmallVector<size_t, 2>> reshardsOf;
  llvm::DenseMap<Value, TensorSharding> madeAs;
  auto madeSharding = [&](Value value) -> const TensorSharding & {
    auto [it, fresh] = madeAs.try_emplace(value);
    if (fresh)
      it->second = resultSharding(value);
    return it->second;
  };
  for (Operation &op : body) {
    int at = position[&op];
    for (auto [i, operand] : llvm::enumerate(op.getOperands())) {
      if (!isa<RankedTensorType>(operand.getType()))
        continue;
      lastUse[operand] = at;
      // Results leave through the program's output buffers, counted whole
      // below; a gathered result is gathered into its output buffer (its
      // local part lives until then).
      if (&op == terminator)
        continue;
      TensorSharding need = neededSharding(&op, i);
      if (need == madeSharding(operand))
        continue;
      SmallVector<size_t, 2> &known = reshardsOf[operand];
      auto same = llvm::find_if(
          known, [&](size_t k) { return reshards[k].need == need; });
      if (same != known.end()) {
        reshards[*same].lastUse = at;
        continue;
      }
      known.push_back(reshards.size());
      reshards.push_back({operand, std::move(need), at, at});
    }
  }

  // Inputs and outputs have buffers of their own for the whole run, whole
  // on every device; a result returned as it is made is made there.
  ShardedMemory memory;
  for (BlockArgument arg : body.getArguments()) {
    double bytes = localBytes(arg, whole(arg));
    // A received input and the staging buffer its receive keeps.
    if (func.getArgAttr(arg.getArgNumber(), kReceivedArgAttr))
      bytes *= 2;
    memory.residentBytes += bytes;
  }
  llvm::DenseSet<Value> madeInOutput;
  for (Value result : terminator->getOperands()) {
    memory.residentBytes += localBytes(result, whole(result));
    if (madeSharding(result) == whole(result))
      madeInOutput.insert(result);
  }
  for (Operation &op : body) {
    if (&op == terminator)
      continue;
    bool resident = isa<WeightOp, ConstantOp>(op);
    for (Value result : op.getResults()) {
      if (!isa<RankedTensorType>(result.getType()))
        continue;
      double bytes = localBytes(result, madeSharding(result));
      // weft.shard's result is its resharded operand, counted there.
      if (isa<ShardOp>(op) || madeInOutput.contains(result))
        continue;
      if (resident) {
        memory.residentBytes += bytes;
        continue;
      }
      int at = position[&op];
      auto it = lastUse.find(result);
      addBuffer(bytes, at, it == lastUse.end() ? at : it->second, false);
    }
  }
  for (const Reshard &reshard : reshards) {
    const auto &[value, need, firstUse, lastUse] = reshard;
    addBuffer(localBytes(value, need), firstUse, lastUse, true);
    // Multi-step reshardings hold each step's output while the next is
    // made; the intermediates die at the user.
    auto type = cast<RankedTensorType>(value.getType());
    std::optional<std::vector<plan::ReshardStep>> steps = plan::planReshard(
        type.getShape(), madeSharding(value), need, meshShape);
    if (steps && steps->size() > 1)
      for (size_t s = 0; s + 1 < steps->size(); ++s)
        addBuffer(localBytes(value, (*steps)[s].after), firstUse, firstUse,
                  true);
  }

  // Sweep the program points.
  std::vector<double> delta(end + 2, 0), reshardDelta(end + 2, 0);
  for (const Buffer &b : buffers) {
    delta[b.start] += b.bytes;
    delta[b.end + 1] -= b.bytes;
    if (b.reshard) {
      reshardDelta[b.start] += b.bytes;
      reshardDelta[b.end + 1] -= b.bytes;
    }
  }
  double live = 0, reshardLive = 0;
  memory.peakBytes = memory.residentBytes;
  for (int i = 0; i <= end; ++i) {
    live += delta[i];
    reshardLive += reshardDelta[i];
    if (memory.residentBytes + live > memory.peakBytes) {
      memory.peakBytes = memory.residentBytes + live;
      memory.reshardBytesAtPeak = reshardLive;
    }
  }
  return memory;
}

ShardedMemory mlir::weft::countShardedMemory(func::FuncOp func,
                                             StringRef meshSymbol,
                                             ArrayRef<int64_t> meshShape) {
  return MemoryCounter(func, meshSymbol, meshShape).count();
}
