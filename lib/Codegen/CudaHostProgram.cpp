//===- CudaHostProgram.cpp - Making a device program's host side GPU-ready ===//
//
// Two rewrites of a bufferized program for --target=cuda: kernel calls go to
// the CUDA runtime's kernels, and constant data the GPU reads moves from
// host globals into the weights, which live in device memory.
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/Passes.h"
#include "weft/Codegen/ProgramABI.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::weft {
#define GEN_PASS_DEF_WEFTDEVICECONSTANTSTOWEIGHTS
#define GEN_PASS_DEF_WEFTRETARGETKERNELSTOCUDA
#include "weft/Codegen/Passes.h.inc"
} // namespace mlir::weft

using namespace mlir;
using namespace mlir::weft;

namespace {

/// The CUDA name of a runtime entry, or "" when `name` is not one.
std::string cudaNameOf(StringRef name) {
  if (name.starts_with(kCpuKernelPrefix))
    return (kCudaKernelPrefix + name.drop_front(kCpuKernelPrefix.size())).str();
  if (name == kCollectiveSymbol)
    return "weft_rt_cuda_collective";
  return "";
}

struct WeftRetargetKernelsToCudaPass
    : mlir::weft::impl::WeftRetargetKernelsToCudaBase<
          WeftRetargetKernelsToCudaPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    for (auto decl : module.getOps<func::FuncOp>()) {
      if (!decl.isDeclaration())
        continue;
      std::string cudaName = cudaNameOf(decl.getSymName());
      if (cudaName.empty())
        continue;
      if (module.lookupSymbol(cudaName)) {
        decl.emitError() << "cannot retarget to '" << cudaName
                         << "': the module already defines it";
        return signalPassFailure();
      }
      if (failed(SymbolTable::replaceAllSymbolUses(
              decl, StringAttr::get(ctx, cudaName), module)))
        return signalPassFailure();
      decl.setSymName(cudaName);
    }
  }
};

/// Whether the host reads `global` itself: kernel parameter blocks and
/// index shapes (memref.reshape's), which stay in host memory.
bool isHostData(memref::GlobalOp global) {
  return global.getSymName().starts_with("__weft_params_") ||
         global.getType().getElementType().isIndex();
}

struct WeftDeviceConstantsToWeightsPass
    : mlir::weft::impl::WeftDeviceConstantsToWeightsBase<
          WeftDeviceConstantsToWeightsPass> {
  using WeftDeviceConstantsToWeightsBase::WeftDeviceConstantsToWeightsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    Builder attrs(ctx);
    int64_t base = 0;
    if (auto attr = module->getAttrOfType<IntegerAttr>(kWeightsBytesAttr))
      base = attr.getInt();
    if (base < 0 || base % kBufferAlignment != 0) {
      module.emitError() << kWeightsBytesAttr << " is " << base
                         << ", not a non-negative multiple of "
                         << kBufferAlignment;
      return signalPassFailure();
    }

    // Each global's place after the weights, in order of first use.
    std::string bytes;
    llvm::DenseMap<StringAttr, int64_t> placed;
    SmallVector<memref::GetGlobalOp> uses;
    module.walk([&](memref::GetGlobalOp get) {
      auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
          get, get.getNameAttr());
      if (!global || !global.getConstant() || isHostData(global))
        return;
      uses.push_back(get);
    });
    for (memref::GetGlobalOp get : uses) {
      auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
          get, get.getNameAttr());
      auto value =
          dyn_cast_or_null<DenseElementsAttr>(global.getInitialValueAttr());
      MemRefType type = global.getType();
      if (!value || !type.hasStaticShape() || !type.getLayout().isIdentity()) {
        global.emitError("a constant the GPU reads must be a dense, "
                         "static, row-major buffer");
        return signalPassFailure();
      }
      auto [it, inserted] = placed.try_emplace(global.getSymNameAttr(), 0);
      if (inserted) {
        it->second = base + static_cast<int64_t>(bytes.size());
        if (failed(appendBytes(global, value, bytes)))
          return signalPassFailure();
        bytes.resize(alignTo64(bytes.size()), '\0');
      }
      auto func = get->getParentOfType<func::FuncOp>();
      if (!func || func.getNumArguments() < 3 ||
          func.getArgument(2).getType() !=
              MemRefType::get({ShapedType::kDynamic},
                              IntegerType::get(ctx, 8))) {
        get.emitError("reads a constant outside the program function "
                      "(ctx, arena, weights); run weft-expose-program-abi "
                      "first");
        return signalPassFailure();
      }
      OpBuilder b(get);
      Value offset =
          arith::ConstantIndexOp::create(b, get.getLoc(), it->second);
      Value view = memref::ViewOp::create(
          b, get.getLoc(), type, func.getArgument(2), offset, ValueRange());
      get.replaceAllUsesWith(view);
      get.erase();
    }
    // Globals no longer used go.
    for (auto global :
         llvm::make_early_inc_range(module.getOps<memref::GlobalOp>()))
      if (placed.count(global.getSymNameAttr()) &&
          SymbolTable::symbolKnownUseEmpty(global, module))
        global.erase();

    module->setAttr(kDeviceConstantsBytesAttr,
                    attrs.getI64IntegerAttr(bytes.size()));
    module->setAttr(kWeightsBytesAttr,
                    attrs.getI64IntegerAttr(base + bytes.size()));
    if (bytes.empty())
      return;
    if (file.empty()) {
      module.emitError("weft-device-constants-to-weights: the program has "
                       "constant data for the GPU but no file= to write it");
      return signalPassFailure();
    }
    std::error_code ec;
    llvm::raw_fd_ostream out(file, ec, llvm::sys::fs::OF_None);
    if (!ec) {
      out << bytes;
      out.close();
      ec = out.error();
    }
    if (ec) {
      module.emitError() << "cannot write the GPU constants to '" << file
                         << "': " << ec.message();
      return signalPassFailure();
    }
  }

  /// Appends the raw little-endian bytes of `value` (splats expanded).
  LogicalResult appendBytes(memref::GlobalOp global, DenseElementsAttr value,
                            std::string &bytes) {
    Type element = value.getElementType();
    int64_t count = value.getNumElements();
    int64_t width = getStorageBytes(element);
    if (element.isInteger(1)) {
      for (bool bit : value.getValues<bool>())
        bytes.push_back(bit ? 1 : 0);
      return success();
    }
    if (!element.isIntOrFloat() || element.getIntOrFloatBitWidth() % 8 != 0)
      return global.emitError() << "constant of element type " << element
                                << " cannot be stored for the GPU";
    ArrayRef<char> raw = value.getRawData();
    if (value.isSplat()) {
      for (int64_t i = 0; i < count; ++i)
        bytes.append(raw.data(), width);
      return success();
    }
    bytes.append(raw.data(), raw.size());
    return success();
  }
};

} // namespace
