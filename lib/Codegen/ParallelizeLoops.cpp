//===- ParallelizeLoops.cpp - Generated loop nests on the runtime's threads ===//
//
// Every top-level scf.parallel nest of the program function that does enough
// work becomes a call `weft_rt_parallel_for(ctx, count, work, body, arena,
// weights)`: its outer parallel dimensions are flattened into `count` items,
// and `body(ctx, arena, weights, begin, end)` is an outlined function that
// runs items [begin, end) with the inner dimensions as loops. The runtime
// splits the items over the threads of its one OpenMP team (libgomp's, which
// OpenBLAS and oneDNN share), so generated code and kernels never compete
// with a second OpenMP runtime (MLIR's OpenMP lowering would call libomp's
// __kmpc_* entry points).
//
// The body function re-derives every buffer it reads from the program's
// arena and weights arguments: after memory planning each buffer is a view
// of one of them (or a constant global), so cloning those side-effect-free
// view chains into the body is all the capture it needs. A nest that uses
// anything else stays a serial loop.
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/Passes.h"
#include "weft/Codegen/ProgramABI.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

#include <limits>

namespace mlir::weft {
#define GEN_PASS_DEF_WEFTPARALLELIZELOOPS
#include "weft/Codegen/Passes.h.inc"
} // namespace mlir::weft

using namespace mlir;
using namespace mlir::weft;

namespace {

/// A nest's static iteration space: every dimension from 0 to its bound
/// with step 1 (linalg's parallel loops always are).
struct IterationSpace {
  SmallVector<int64_t> bounds;
};

std::optional<IterationSpace> staticIterationSpace(scf::ParallelOp loop) {
  IterationSpace space;
  for (auto [lb, ub, step] : llvm::zip(loop.getLowerBound(),
                                       loop.getUpperBound(), loop.getStep())) {
    auto lower = getConstantIntValue(lb);
    auto upper = getConstantIntValue(ub);
    auto stride = getConstantIntValue(step);
    if (!lower || !upper || !stride || *lower != 0 || *stride != 1 ||
        *upper < 0)
      return std::nullopt;
    space.bounds.push_back(*upper);
  }
  return space;
}

int64_t saturatingMul(int64_t a, int64_t b) {
  if (a != 0 && b > std::numeric_limits<int64_t>::max() / a)
    return std::numeric_limits<int64_t>::max();
  return a * b;
}

/// Operations one iteration performs, counting nested loops' iterations
/// where their bounds are constants: a rough work measure, the same unit as
/// the runtime's grain (about one element touched).
int64_t workPerIteration(Block &body) {
  int64_t work = 0;
  for (Operation &op : body.without_terminator()) {
    if (auto inner = dyn_cast<scf::ForOp>(op)) {
      auto lower = getConstantIntValue(inner.getLowerBound());
      auto upper = getConstantIntValue(inner.getUpperBound());
      auto step = getConstantIntValue(inner.getStep());
      int64_t trips =
          lower && upper && step && *step > 0 && *upper > *lower
              ? (*upper - *lower + *step - 1) / *step
              : 1;
      work += saturatingMul(trips, workPerIteration(*inner.getBody()));
      continue;
    }
    work += 1;
    for (Region &region : op.getRegions())
      for (Block &block : region)
        work += workPerIteration(block);
  }
  return std::max<int64_t>(work, 1);
}

/// The values the body function must re-create: every value the nest uses
/// from outside, and what they are computed from, each after its operands.
/// Fails when a chain reaches anything but the program's arguments,
/// constants, globals and side-effect-free ops without regions.
class CaptureChain {
public:
  explicit CaptureChain(func::FuncOp program) : program(program) {}

  FailureOr<SmallVector<Operation *>> of(scf::ParallelOp loop) {
    llvm::SetVector<Value> used;
    getUsedValuesDefinedAbove(loop.getRegion(), used);
    for (Value value : used)
      if (failed(visit(value)))
        return failure();
    return ordered;
  }

private:
  /// Depth first over operands: an op is appended after all it uses.
  LogicalResult visit(Value value) {
    if (auto arg = dyn_cast<BlockArgument>(value))
      return success(arg.getOwner() == &program.getBody().front());
    Operation *def = value.getDefiningOp();
    if (!seen.insert(def).second)
      return success();
    if (def->getParentOp() != program.getOperation() ||
        def->getNumRegions() != 0 || !isMemoryEffectFree(def))
      return failure();
    for (Value operand : def->getOperands())
      if (failed(visit(operand)))
        return failure();
    ordered.push_back(def);
    return success();
  }

  func::FuncOp program;
  llvm::SmallPtrSet<Operation *, 16> seen;
  SmallVector<Operation *> ordered;
};

/// Decomposes flat item `item` of the outer dimensions `bounds` (row-major)
/// into one index per dimension.
SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value item,
                               ArrayRef<int64_t> bounds) {
  SmallVector<Value> indices(bounds.size());
  Value rest = item;
  for (int d = static_cast<int>(bounds.size()) - 1; d >= 0; --d) {
    if (d == 0) {
      indices[d] = rest;
      break;
    }
    Value bound = arith::ConstantIndexOp::create(b, loc, bounds[d]);
    indices[d] = arith::RemUIOp::create(b, loc, rest, bound);
    rest = arith::DivUIOp::create(b, loc, rest, bound);
  }
  return indices;
}

struct WeftParallelizeLoopsPass
    : weft::impl::WeftParallelizeLoopsBase<WeftParallelizeLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto program = module.lookupSymbol<func::FuncOp>(kProgramRunName);
    if (!program || program.isExternal() || !hasProgramSignature(program))
      return;
    // Nests directly in the function's region (kernel status checks split
    // it into blocks), not inside another loop.
    SmallVector<scf::ParallelOp> loops;
    for (Block &block : program.getBody())
      for (Operation &op : block)
        if (auto loop = dyn_cast<scf::ParallelOp>(op))
          loops.push_back(loop);
    unsigned next = 0;
    for (scf::ParallelOp loop : loops)
      if (outline(loop, program, next))
        ++next;
  }

  /// The program ABI: (ctx, arena, weights) -> status.
  static bool hasProgramSignature(func::FuncOp program) {
    FunctionType type = program.getFunctionType();
    if (type.getNumInputs() != 3)
      return false;
    auto bytes = MemRefType::get({ShapedType::kDynamic},
                                 IntegerType::get(program.getContext(), 8));
    return isa<LLVM::LLVMPointerType>(type.getInput(0)) &&
           type.getInput(1) == bytes && type.getInput(2) == bytes;
  }

  bool outline(scf::ParallelOp loop, func::FuncOp program, unsigned index) {
    std::optional<IterationSpace> space = staticIterationSpace(loop);
    if (!space || !loop.getInitVals().empty())
      return false;
    ArrayRef<int64_t> bounds = space->bounds;
    // Items are the outer dimensions, as few as give enough of them to
    // spread; the innermost dimension stays whole (it is the vectorized
    // one) unless it is the only one.
    size_t outer = 1;
    int64_t items = bounds[0];
    while (outer + 1 < bounds.size() && items < kMinItems)
      items = saturatingMul(items, bounds[outer++]);
    int64_t innerIterations = 1;
    for (int64_t bound : bounds.drop_front(outer))
      innerIterations = saturatingMul(innerIterations, bound);
    int64_t workPerItem =
        saturatingMul(innerIterations, workPerIteration(*loop.getBody()));
    if (items < 2 || saturatingMul(items, workPerItem) < minWork)
      return false;
    FailureOr<SmallVector<Operation *>> chain = CaptureChain(program).of(loop);
    if (failed(chain))
      return false;

    func::FuncOp body =
        buildBody(loop, program, *chain, bounds, outer, index);
    emitCall(loop, program, body, items, workPerItem);
    loop.erase();
    return true;
  }

  /// func @__weft_loop_<index>(ctx, arena, weights, begin, end): items
  /// [begin, end) of the nest.
  func::FuncOp buildBody(scf::ParallelOp loop, func::FuncOp program,
                         ArrayRef<Operation *> chain, ArrayRef<int64_t> bounds,
                         size_t outer, unsigned index) {
    MLIRContext *ctx = &getContext();
    Location loc = loop.getLoc();
    OpBuilder b(ctx);
    b.setInsertionPoint(program);
    SmallVector<Type> inputs(program.getFunctionType().getInputs());
    inputs.append({b.getIndexType(), b.getIndexType()});
    auto body = func::FuncOp::create(
        b, loc, (kLoopBodyPrefix + Twine(index)).str(),
        FunctionType::get(ctx, inputs, {}));
    body.setPrivate();
    Block *entry = body.addEntryBlock();
    b.setInsertionPointToStart(entry);

    IRMapping map;
    for (auto [from, to] :
         llvm::zip(program.getArguments(), entry->getArguments()))
      map.map(from, to);
    for (Operation *op : chain)
      b.clone(*op, map);

    // getInductionVars() returns a vector by value: keep it alive.
    SmallVector<Value> ivs = loop.getInductionVars();
    ArrayRef<Value> outerIvs = ArrayRef<Value>(ivs).take_front(outer);
    ArrayRef<Value> innerIvs = ArrayRef<Value>(ivs).drop_front(outer);
    Value begin = entry->getArgument(3), end = entry->getArgument(4);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto items = scf::ForOp::create(b, loc, begin, end, one);
    b.setInsertionPointToStart(items.getBody());
    SmallVector<Value> outerIndices =
        delinearize(b, loc, items.getInductionVar(), bounds.take_front(outer));
    for (auto [iv, value] :
         llvm::zip(outerIvs, outerIndices))
      map.map(iv, value);

    Block *original = loop.getBody();
    if (outer < bounds.size()) {
      SmallVector<Value> zeros, uppers, steps;
      for (int64_t bound : bounds.drop_front(outer)) {
        zeros.push_back(arith::ConstantIndexOp::create(b, loc, 0));
        uppers.push_back(arith::ConstantIndexOp::create(b, loc, bound));
        steps.push_back(one);
      }
      auto inner = scf::ParallelOp::create(b, loc, zeros, uppers, steps);
      SmallVector<Value> innerValues = inner.getInductionVars();
      for (auto [iv, value] : llvm::zip(innerIvs, innerValues))
        map.map(iv, value);
      b.setInsertionPoint(inner.getBody()->getTerminator());
    }
    for (Operation &op : original->without_terminator())
      b.clone(op, map);

    b.setInsertionPointToEnd(entry);
    func::ReturnOp::create(b, loc);
    return body;
  }

  /// weft_rt_parallel_for(ctx, items, workPerItem, @body, arena, weights)
  /// where the nest was.
  void emitCall(scf::ParallelOp loop, func::FuncOp program, func::FuncOp body,
                int64_t items, int64_t workPerItem) {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    Location loc = loop.getLoc();
    OpBuilder b(loop);
    SmallVector<Type> calleeInputs = {
        program.getArgumentTypes()[0], b.getI64Type(), b.getI64Type(),
        body.getFunctionType(), program.getArgumentTypes()[1],
        program.getArgumentTypes()[2]};
    auto calleeType = FunctionType::get(ctx, calleeInputs, {});
    auto callee = module.lookupSymbol<func::FuncOp>(kParallelForSymbol);
    if (!callee) {
      OpBuilder top(ctx);
      top.setInsertionPointToStart(module.getBody());
      callee = func::FuncOp::create(top, loc, kParallelForSymbol, calleeType);
      callee.setPrivate();
    }
    Value fn = func::ConstantOp::create(b, loc, body.getFunctionType(),
                                        SymbolRefAttr::get(body));
    Value count = arith::ConstantIntOp::create(b, loc, items, 64);
    Value work = arith::ConstantIntOp::create(b, loc, workPerItem, 64);
    func::CallOp::create(b, loc, callee,
                         ValueRange{program.getArgument(0), count, work, fn,
                                    program.getArgument(1),
                                    program.getArgument(2)});
  }

  /// Items to aim for before the inner dimensions stay whole: enough for a
  /// balanced split over a few threads.
  static constexpr int64_t kMinItems = 64;
};

} // namespace
