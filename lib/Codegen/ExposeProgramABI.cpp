//===- ExposeProgramABI.cpp - The model function as a device program ------===//
//
// Rewrites the model function into the runtime's program entry point: the
// context, the arena and the weights come in; inputs are read from and
// outputs written to fixed places at the start of the arena. The module's
// weft.mesh becomes part of the signature.
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/Passes.h"
#include "weft/Codegen/ProgramABI.h"
#include "weft/ModelFunction.h"
#include "weft/WeftOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir::weft {
#define GEN_PASS_DEF_WEFTEXPOSEPROGRAMABI
#include "weft/Codegen/Passes.h.inc"
} // namespace mlir::weft

using namespace mlir;
using namespace mlir::weft;

int64_t mlir::weft::alignTo64(int64_t bytes) { return (bytes + 63) / 64 * 64; }

std::optional<int32_t> mlir::weft::getRuntimeDType(Type elementType) {
  if (elementType.isF32())
    return 1;
  if (elementType.isUnsignedInteger(8))
    return 2;
  if (elementType.isSignlessInteger(8))
    return 3;
  if (elementType.isSignlessInteger(32))
    return 6;
  if (elementType.isSignlessInteger(64))
    return 7;
  if (elementType.isSignlessInteger(1))
    return 9;
  if (elementType.isF16())
    return 10;
  if (elementType.isF64())
    return 11;
  if (elementType.isBF16())
    return 16;
  return std::nullopt;
}

int64_t mlir::weft::getStorageBytes(Type elementType) {
  if (elementType.isInteger(1))
    return 1;
  return (elementType.getIntOrFloatBitWidth() + 7) / 8;
}

std::string mlir::weft::escapeSignatureName(StringRef name) {
  std::string out;
  for (unsigned char c : name) {
    if (c <= 0x20 || c == '%' || c >= 0x7f) {
      out += '%';
      out += llvm::hexdigit(c >> 4, /*LowerCase=*/false);
      out += llvm::hexdigit(c & 15, /*LowerCase=*/false);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

namespace {

struct WeftExposeProgramABIPass
    : weft::impl::WeftExposeProgramABIBase<WeftExposeProgramABIPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    func::FuncOp func =
        entry.empty() ? getModelFunction(module, "weft-expose-program-abi")
                      : module.lookupSymbol<func::FuncOp>(entry);
    if (!func) {
      if (!entry.empty())
        module.emitError() << "no function '" << entry << "' to compile";
      return signalPassFailure();
    }
    if (!func.getBody().hasOneBlock()) {
      func.emitError("the model function must have a single block");
      return signalPassFailure();
    }
    if (failed(rejectShardingConstraints(module)) ||
        failed(recordMesh(module)) || failed(rewrite(func)))
      signalPassFailure();
  }

  /// weft.shard is the partitioner's input: a device program holds local
  /// ops and collectives only.
  static LogicalResult rejectShardingConstraints(ModuleOp module) {
    WalkResult result = module.walk([](ShardOp shard) {
      shard.emitOpError(
          "is a sharding constraint, which the SPMD partitioner resolves; "
          "it cannot reach code generation (partition the module for its "
          "mesh first)");
      return WalkResult::interrupt();
    });
    return failure(result.wasInterrupted());
  }

  /// The mesh the device runs on: the one its collectives name (the
  /// runtime gives a program one communicator, split from the job's world),
  /// else the module's only weft.mesh. A module may declare other meshes
  /// (a pipeline's module declares every stage's); collectives on two of
  /// them, or several meshes and no collective to choose, are refused.
  static FailureOr<MeshOp> deviceMesh(ModuleOp module) {
    SmallVector<MeshOp> meshes = llvm::to_vector(module.getOps<MeshOp>());
    if (meshes.empty())
      return MeshOp();
    MeshOp used;
    WalkResult result = module.walk([&](Operation *op) {
      auto ref = op->getAttrOfType<FlatSymbolRefAttr>("mesh");
      if (!ref || isa<MeshOp>(op))
        return WalkResult::advance();
      auto mesh = module.lookupSymbol<MeshOp>(ref);
      if (!mesh || mesh == used)
        return WalkResult::advance();
      if (used) {
        op->emitOpError("runs on mesh @")
            << mesh.getSymName() << ", but an earlier collective runs on @"
            << used.getSymName()
            << "; a device program's collectives run on one mesh (its "
               "communicator)";
        return WalkResult::interrupt();
      }
      used = mesh;
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return failure();
    if (used)
      return used;
    if (meshes.size() == 1)
      return meshes[0];
    return meshes[1].emitOpError("is a second mesh, and no collective says "
                                 "which of @")
           << meshes[0].getSymName() << " and @" << meshes[1].getSymName()
           << " the device runs on";
  }

  /// Records the shape (and a pipeline stage's world ranks) of the device's
  /// weft.mesh for the signature. The op stays until weft-bufferize has
  /// turned the collectives that name it into kernel calls.
  static LogicalResult recordMesh(ModuleOp module) {
    FailureOr<MeshOp> mesh = deviceMesh(module);
    if (failed(mesh))
      return failure();
    if (!*mesh)
      return success();
    module->setAttr(kMeshShapeAttr, mesh->getShapeAttr());
    // One stage of a pipeline: its mesh's world ranks go to the signature.
    if (std::optional<ArrayRef<int64_t>> ranks = mesh->getDevices())
      module->setAttr(kMeshWorldRanksAttr,
                      DenseI64ArrayAttr::get(module.getContext(), *ranks));
    return success();
  }

  /// Name of argument or result `index` (the ONNX name when the importer
  /// recorded one).
  static std::string ioName(DictionaryAttr attrs, StringRef prefix,
                            unsigned index) {
    if (attrs)
      if (auto name = attrs.getAs<StringAttr>("weft.name"))
        return name.str();
    return (prefix + Twine(index)).str();
  }

  LogicalResult rewrite(func::FuncOp func) {
    MLIRContext *ctx = func.getContext();
    FunctionType type = func.getFunctionType();
    Block &body = func.getBody().front();
    auto returnOp = cast<func::ReturnOp>(body.getTerminator());

    // Lay inputs, then outputs, out at the start of the arena.
    std::string lines;
    int64_t offset = 0;
    auto place = [&](StringRef kind, StringRef name,
                     Type valueType) -> FailureOr<int64_t> {
      auto tensorType = dyn_cast<RankedTensorType>(valueType);
      if (!tensorType || !tensorType.hasStaticShape())
        return func.emitError()
               << kind << " '" << name << "' has no static shape (" << valueType
               << "); fix it with --input-shape";
      std::optional<int32_t> dtype =
          getRuntimeDType(tensorType.getElementType());
      if (!dtype)
        return func.emitError()
               << kind << " '" << name << "' has an unsupported element type "
               << tensorType.getElementType();
      int64_t at = offset;
      int64_t bytes = tensorType.getNumElements() *
                      getStorageBytes(tensorType.getElementType());
      offset = alignTo64(offset + std::max<int64_t>(bytes, 1));
      lines += (kind + " " + escapeSignatureName(name) + " " + Twine(*dtype) +
                " " + Twine(tensorType.getRank()))
                   .str();
      for (int64_t d : tensorType.getShape())
        lines += " " + std::to_string(d);
      lines += " " + std::to_string(at) + "\n";
      return at;
    };

    SmallVector<int64_t> inputOffsets, outputOffsets;
    for (unsigned i = 0; i < type.getNumInputs(); ++i) {
      FailureOr<int64_t> at =
          place("input", ioName(func.getArgAttrDict(i), "input", i),
                type.getInput(i));
      if (failed(at))
        return failure();
      inputOffsets.push_back(*at);
    }
    for (unsigned i = 0; i < type.getNumResults(); ++i) {
      FailureOr<int64_t> at =
          place("output", ioName(func.getResultAttrDict(i), "output", i),
                type.getResult(i));
      if (failed(at))
        return failure();
      outputOffsets.push_back(*at);
    }

    // New signature: (ctx, arena, weights) -> status.
    auto bytes =
        MemRefType::get({ShapedType::kDynamic}, IntegerType::get(ctx, 8));
    auto ptrType = LLVM::LLVMPointerType::get(ctx);
    body.addArgument(ptrType, func.getLoc()); // ctx
    Value arena = body.addArgument(bytes, func.getLoc());
    body.addArgument(bytes, func.getLoc()); // weights

    OpBuilder b(ctx);
    b.setInsertionPointToStart(&body);
    Location loc = func.getLoc();
    auto viewAt = [&](int64_t at, RankedTensorType tensorType) -> Value {
      Value shift = arith::ConstantIndexOp::create(b, loc, at);
      auto memrefType =
          MemRefType::get(tensorType.getShape(), tensorType.getElementType());
      return memref::ViewOp::create(b, loc, memrefType, arena, shift,
                                    ValueRange{});
    };
    for (unsigned i = 0; i < type.getNumInputs(); ++i) {
      auto tensorType = cast<RankedTensorType>(type.getInput(i));
      Value view = viewAt(inputOffsets[i], tensorType);
      // Not writable: bufferization copies before writing into an input.
      Value tensor = bufferization::ToTensorOp::create(
          b, loc, tensorType, view, /*restrict=*/true, /*writable=*/false);
      body.getArgument(i).replaceAllUsesWith(tensor);
    }

    // Output views come first too, so that the op producing an output can
    // write into it directly.
    SmallVector<Value> outputViews;
    for (unsigned i = 0; i < type.getNumResults(); ++i)
      outputViews.push_back(
          viewAt(outputOffsets[i], cast<RankedTensorType>(type.getResult(i))));
    b.setInsertionPoint(returnOp);
    for (auto [i, result] : llvm::enumerate(returnOp.getOperands())) {
      Value view = outputViews[i];
      auto materialize = bufferization::MaterializeInDestinationOp::create(
          b, loc, TypeRange{}, result, view);
      materialize.setRestrict(true);
      materialize.setWritable(true);
    }
    Value ok = arith::ConstantIntOp::create(b, loc, 0, 32);
    func::ReturnOp::create(b, loc, ValueRange{ok});
    returnOp.erase();
    body.eraseArguments(0, type.getNumInputs());

    func.setFunctionType(FunctionType::get(ctx, {ptrType, bytes, bytes},
                                           {IntegerType::get(ctx, 32)}));
    func->removeAttr(func.getArgAttrsAttrName());
    func->removeAttr(func.getResAttrsAttrName());
    func.setName(kProgramRunName);
    func->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));

    ModuleOp module = getOperation();
    module->setAttr(kProgramIOAttr, StringAttr::get(ctx, lines));
    module->setAttr(kIOBytesAttr,
                    IntegerAttr::get(IntegerType::get(ctx, 64), offset));
    return success();
  }
};

} // namespace
