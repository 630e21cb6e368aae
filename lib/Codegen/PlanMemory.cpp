//===- PlanMemory.cpp - Place a program's buffers in its arena ------------===//
//
// Thin adapter between the program function and the memory planner: finds
// each allocation's live interval (following views and derived pointers),
// plans, and turns allocations into views of the arena.
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/DeviceMemory.h"
#include "weft/Codegen/MemoryPlanner.h"
#include "weft/Codegen/Passes.h"
#include "weft/Codegen/ProgramABI.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::weft {
#define GEN_PASS_DEF_WEFTPLANMEMORY
#include "weft/Codegen/Passes.h.inc"
} // namespace mlir::weft

using namespace mlir;
using namespace mlir::weft;

/// Refuses a program that cannot fit its device's memory (the module's
/// kDeviceMemoryBytesAttr; not checked without it): a single buffer or
/// constant larger than the memory, named by its ONNX node, or the arena and
/// the weights together (the memory plan.json and --report count per
/// device). Constants are counted one by one only: large splats are arena
/// buffers (weft-lower-to-linalg fills them), the rest are small.
static LogicalResult checkFitsDevice(ModuleOp module,
                                     ArrayRef<memref::AllocOp> allocs,
                                     ArrayRef<BufferLifetime> lifetimes,
                                     int64_t arenaBytes) {
  auto memoryAttr = module->getAttrOfType<IntegerAttr>(kDeviceMemoryBytesAttr);
  if (!memoryAttr)
    return success();
  int64_t memory = memoryAttr.getInt();
  std::string budget = std::to_string(memory) + " bytes";
  if (auto source = module->getAttrOfType<StringAttr>(kDeviceMemorySourceAttr))
    budget += " (" + source.str() + ")";
  auto tooLarge = [&](Operation *op, MemRefType type, int64_t bytes) {
    return op->emitError() << RankedTensorType::get(type.getShape(),
                                                    type.getElementType())
                           << " (" << bytes
                           << " bytes) does not fit in the device's memory, "
                           << budget;
  };
  for (auto [alloc, lifetime] : llvm::zip(allocs, lifetimes)) {
    memref::AllocOp buffer = alloc;
    if (lifetime.bytes > memory)
      return tooLarge(buffer, buffer.getType(), lifetime.bytes);
  }
  for (auto global : module.getOps<memref::GlobalOp>()) {
    if (!global.getConstant() || !global.getInitialValue())
      continue;
    MemRefType type = global.getType();
    // Shape constants of reshapes hold index elements: 8 bytes each.
    Type element = type.getElementType();
    int64_t bytes = type.getNumElements() *
                    (element.isIntOrFloat() ? getStorageBytes(element) : 8);
    if (bytes > memory)
      return tooLarge(global, type, bytes);
  }
  int64_t weightsBytes = 0;
  if (auto attr = module->getAttrOfType<IntegerAttr>(kWeightsBytesAttr))
    weightsBytes = attr.getInt();
  int64_t total = arenaBytes + weightsBytes;
  if (total <= memory)
    return success();
  return module.emitError()
         << "the device program needs " << total << " bytes of memory (arena "
         << arenaBytes << ", weights " << weightsBytes
         << "), more than the device's " << budget;
}

namespace {

struct WeftPlanMemoryPass : weft::impl::WeftPlanMemoryBase<WeftPlanMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(kProgramRunName);
    if (!func) {
      module.emitError("no device program to plan (run "
                       "weft-expose-program-abi first)");
      return signalPassFailure();
    }
    auto ioBytes = module->getAttrOfType<IntegerAttr>(kIOBytesAttr);
    if (!ioBytes || !func.getBody().hasOneBlock()) {
      func.emitError("the program has no input/output layout or more than "
                     "one block");
      return signalPassFailure();
    }
    Block &block = func.getBody().front();

    // Step numbers of the block's ops.
    DenseMap<Operation *, int64_t> step;
    for (auto [i, op] : llvm::enumerate(block))
      step[&op] = i;
    auto topLevelStep = [&](Operation *op) -> int64_t {
      Operation *top = block.findAncestorOpInBlock(*op);
      return top ? step.lookup(top) : 0;
    };

    SmallVector<memref::AllocOp> allocs;
    std::vector<BufferLifetime> lifetimes;
    int64_t stagingBytes = 0;
    for (Operation &op : block) {
      auto alloc = dyn_cast<memref::AllocOp>(&op);
      if (!alloc)
        continue;
      MemRefType type = alloc.getType();
      if (!type.hasStaticShape() || !type.getLayout().isIdentity()) {
        alloc.emitOpError("is not a static dense buffer; the memory planner "
                          "places only those");
        return signalPassFailure();
      }
      // Live until the last use of anything derived from it: views, and
      // pointers taken for kernel calls.
      int64_t last = step[&op];
      SmallVector<Value> worklist{alloc.getResult()};
      DenseSet<Value> seen;
      while (!worklist.empty()) {
        Value v = worklist.pop_back_val();
        if (!seen.insert(v).second)
          continue;
        for (Operation *user : v.getUsers()) {
          last = std::max(last, topLevelStep(user));
          for (Value result : user->getResults())
            worklist.push_back(result);
        }
      }
      int64_t bytes =
          type.getNumElements() * getStorageBytes(type.getElementType());
      int64_t first = step[&op];
      // A staging buffer receives the next run's message at any time,
      // between runs too: nothing else may ever share its bytes.
      if (alloc->hasAttr(kStagingBufferAttr)) {
        first = 0;
        last = static_cast<int64_t>(block.getOperations().size());
        stagingBytes += bytes;
      }
      allocs.push_back(alloc);
      lifetimes.push_back({bytes, first, last});
    }

    MemoryPlan plan = planMemory(lifetimes, kBufferAlignment);
    int64_t base = alignTo64(ioBytes.getInt());
    int64_t arenaBytes = alignTo64(base + plan.peakBytes);
    // Before the allocations become views: they name the buffers.
    if (failed(checkFitsDevice(module, allocs, lifetimes, arenaBytes)))
      return signalPassFailure();
    Value arena = func.getArgument(1);
    for (auto [alloc, offset] : llvm::zip(allocs, plan.offsets)) {
      OpBuilder b(alloc);
      Value shift =
          arith::ConstantIndexOp::create(b, alloc.getLoc(), base + offset);
      Value view = memref::ViewOp::create(b, alloc.getLoc(), alloc.getType(),
                                          arena, shift, ValueRange{});
      alloc.replaceAllUsesWith(view);
      alloc.erase();
    }
    module->setAttr(
        kArenaBytesAttr,
        IntegerAttr::get(IntegerType::get(&getContext(), 64), arenaBytes));
    if (report) {
      int64_t total = 0;
      for (const BufferLifetime &l : lifetimes)
        total += l.bytes;
      llvm::outs() << "memory plan: " << lifetimes.size() << " buffers of "
                   << total << " bytes in " << plan.peakBytes
                   << " bytes (live lower bound " << plan.liveLowerBound
                   << "); inputs and outputs " << ioBytes.getInt()
                   << " bytes; arena " << arenaBytes << " bytes";
      if (stagingBytes)
        llvm::outs() << "; receive staging " << stagingBytes << " bytes";
      llvm::outs() << "\n";
    }
  }
};

} // namespace
