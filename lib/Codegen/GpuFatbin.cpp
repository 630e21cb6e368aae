//===- GpuFatbin.cpp - One fatbin of every architecture per GPU module ----===//
//
// MLIR's gpu.binary selects one object at translation time, so a package
// that must run on several GPU generations needs them combined first:
// ptxas per architecture, then fatbinary, both from the CUDA toolkit.
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/Passes.h"
#include "weft/Codegen/RuntimeConfig.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

namespace mlir::weft {
#define GEN_PASS_DEF_WEFTBUILDGPUFATBIN
#include "weft/Codegen/Passes.h.inc"
} // namespace mlir::weft

using namespace mlir;
using namespace mlir::weft;

std::string mlir::weft::findCudaBinDir(StringRef preferred) {
  auto hasTools = [](StringRef dir) {
    SmallString<256> ptxas(dir), fatbinary(dir);
    llvm::sys::path::append(ptxas, "ptxas");
    llvm::sys::path::append(fatbinary, "fatbinary");
    return llvm::sys::fs::can_execute(ptxas) &&
           llvm::sys::fs::can_execute(fatbinary);
  };
  if (!preferred.empty())
    return hasTools(preferred) ? preferred.str() : std::string();
  SmallVector<std::string> candidates;
  for (const char *env : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *home = std::getenv(env); home && *home)
      candidates.push_back((Twine(home) + "/bin").str());
  candidates.push_back(WEFT_CUDA_BIN_DIR);
  candidates.push_back("/usr/local/cuda/bin");
  for (const std::string &dir : candidates)
    if (!dir.empty() && hasTools(dir))
      return dir;
  return "";
}

namespace {

/// Runs `program` with `args`; on failure returns its output as `error`.
LogicalResult runTool(StringRef program, ArrayRef<std::string> args,
                      StringRef logPath, std::string &error) {
  SmallVector<StringRef> argv{program};
  for (const std::string &arg : args)
    argv.push_back(arg);
  std::optional<StringRef> redirects[] = {std::nullopt, logPath, logPath};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(program, argv, std::nullopt, redirects,
                                     /*SecondsToWait=*/0, /*MemoryLimit=*/0,
                                     &message);
  if (rc == 0)
    return success();
  auto log = llvm::MemoryBuffer::getFile(logPath);
  error = (llvm::sys::path::filename(program) + " failed" +
           (message.empty() ? "" : ": " + message) +
           (log ? ":\n" + (*log)->getBuffer().rtrim() : ""))
              .str();
  return failure();
}

struct WeftBuildGpuFatbinPass
    : mlir::weft::impl::WeftBuildGpuFatbinBase<WeftBuildGpuFatbinPass> {
  using WeftBuildGpuFatbinBase::WeftBuildGpuFatbinBase;

  void runOnOperation() override {
    SmallVector<gpu::BinaryOp> binaries(getOperation().getOps<gpu::BinaryOp>());
    if (binaries.empty())
      return;
    std::string bin = findCudaBinDir(cudaBin);
    if (bin.empty()) {
      getOperation().emitError()
          << "GPU code needs CUDA's ptxas and fatbinary, found in "
          << (cudaBin.empty() ? std::string("neither $CUDA_HOME/bin nor ") +
                                    WEFT_CUDA_BIN_DIR
                              : "--cuda-bin=" + cudaBin)
          << "; install the CUDA toolkit or set CUDA_HOME";
      return signalPassFailure();
    }
    SmallString<128> scratch;
    if (std::error_code ec =
            llvm::sys::fs::createUniqueDirectory("weft-fatbin", scratch)) {
      getOperation().emitError()
          << "cannot create a temporary folder: " << ec.message();
      return signalPassFailure();
    }
    auto cleanup = llvm::make_scope_exit(
        [&] { llvm::sys::fs::remove_directories(scratch); });
    for (gpu::BinaryOp binary : binaries)
      if (failed(combine(binary, bin, scratch)))
        return signalPassFailure();
  }

  LogicalResult combine(gpu::BinaryOp binary, StringRef bin,
                        StringRef scratch) {
    SmallString<256> ptxas(bin), fatbinary(bin), log(scratch);
    llvm::sys::path::append(ptxas, "ptxas");
    llvm::sys::path::append(fatbinary, "fatbinary");
    llvm::sys::path::append(log, "tool.log");
    std::vector<std::string> images;
    Attribute newestTarget;
    int newest = -1;
    std::string newestPtx;
    for (auto [i, attr] : llvm::enumerate(binary.getObjects())) {
      auto object = cast<gpu::ObjectAttr>(attr);
      auto target = dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget());
      if (!target || object.getFormat() != gpu::CompilationTarget::Assembly)
        return binary.emitError("expected PTX objects for NVVM targets "
                                "(gpu-module-to-binary{format=isa})");
      StringRef chip = target.getChip();
      int arch = 0;
      if (!chip.consume_front("sm_") || chip.getAsInteger(10, arch))
        return binary.emitError()
               << "unexpected NVVM chip '" << target.getChip() << "'";
      std::string stem =
          (scratch + "/" + binary.getSymName() + "_sm" + Twine(arch)).str();
      {
        std::error_code ec;
        llvm::raw_fd_ostream out(stem + ".ptx", ec);
        if (ec)
          return binary.emitError() << "cannot write PTX: " << ec.message();
        out << object.getObject().getValue();
      }
      std::string error;
      if (failed(runTool(ptxas,
                         {"-arch=sm_" + std::to_string(arch), "-O3",
                          stem + ".ptx", "-o", stem + ".cubin"},
                         log, error)))
        return binary.emitError() << error;
      images.push_back("--image3=kind=elf,sm=" + std::to_string(arch) +
                       ",file=" + stem + ".cubin");
      if (arch > newest) {
        newest = arch;
        newestTarget = target;
        newestPtx = stem + ".ptx";
      }
    }
    if (images.empty())
      return binary.emitError("has no objects");
    images.push_back("--image3=kind=ptx,sm=" + std::to_string(newest) +
                     ",file=" + newestPtx);
    std::string output =
        (scratch + "/" + binary.getSymName() + ".fatbin").str();
    std::vector<std::string> args{"-64", "--create=" + output};
    args.insert(args.end(), images.begin(), images.end());
    std::string error;
    if (failed(runTool(fatbinary, args, log, error)))
      return binary.emitError() << error;
    auto fatbin = llvm::MemoryBuffer::getFile(output, /*IsText=*/false);
    if (!fatbin)
      return binary.emitError() << "cannot read " << output;
    MLIRContext *ctx = binary.getContext();
    auto object = gpu::ObjectAttr::get(
        ctx, newestTarget, gpu::CompilationTarget::Fatbin,
        StringAttr::get(ctx, (*fatbin)->getBuffer()), nullptr, nullptr);
    binary.setObjectsAttr(ArrayAttr::get(ctx, {object}));
    return success();
  }
};

} // namespace
