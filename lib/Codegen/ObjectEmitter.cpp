//===- ObjectEmitter.cpp - LLVM IR and object files of programs -----------===//
//
// In-process code generation: MLIR's LLVM dialect -> LLVM IR -> O3 ->
// object file, with no textual IR or external compiler on the way.
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/ObjectEmitter.h"
#include "weft/Codegen/ProgramABI.h"

#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

using namespace mlir;
using namespace mlir::weft;

std::unique_ptr<llvm::TargetMachine>
mlir::weft::createTargetMachine(const TargetOptions &options,
                                std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  std::string cpu = options.cpu;
  std::string features = options.features;
  if (cpu == "native") {
    cpu = llvm::sys::getHostCPUName().str();
    std::string host;
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      host += (host.empty() ? "" : ",") +
              std::string(feature.second ? "+" : "-") + feature.first().str();
    features = features.empty() ? host : host + "," + features;
  }
  // MCSubtargetInfo only warns about an unknown CPU; check it here.
  std::unique_ptr<llvm::MCSubtargetInfo> probe(
      target->createMCSubtargetInfo(triple, "", ""));
  if (probe && !probe->isCPUStringValid(cpu)) {
    error = "unknown CPU '" + cpu + "' for " + triple.str() +
            " (try x86-64-v3, x86-64-v4, skylake-avx512, znver4 or native)";
    return nullptr;
  }
  llvm::TargetOptions targetOptions;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpu, features, targetOptions, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    error = "LLVM could not create a target machine for " + triple.str();
  return machine;
}

std::string mlir::weft::buildProgramSignature(ModuleOp module,
                                              int64_t weightsBytes) {
  auto text = [&](StringRef name) {
    auto attr = module->getAttrOfType<StringAttr>(name);
    return attr ? attr.str() : std::string();
  };
  int64_t arena = 0;
  if (auto attr = module->getAttrOfType<IntegerAttr>(kArenaBytesAttr))
    arena = attr.getInt();
  // A program for one device of a larger mesh says which mesh: the runtime
  // then needs a communicator of that shape.
  std::string mesh;
  if (auto shape = module->getAttrOfType<DenseI64ArrayAttr>(kMeshShapeAttr)) {
    int64_t devices = 1;
    for (int64_t d : shape.asArrayRef())
      devices *= d;
    if (devices > 1) {
      mesh = "mesh";
      for (int64_t d : shape.asArrayRef())
        mesh += " " + std::to_string(d);
      mesh += "\n";
    }
  }
  // A stage of a pipeline names the job's size and its mesh's world ranks:
  // even a one-device stage needs a communicator for its transfers.
  auto world = module->getAttrOfType<IntegerAttr>(kProgramWorldSizeAttr);
  auto ranks = module->getAttrOfType<DenseI64ArrayAttr>(kMeshWorldRanksAttr);
  if (world && ranks && world.getInt() > 1) {
    mesh += "pipeline " + std::to_string(world.getInt());
    for (int64_t rank : ranks.asArrayRef())
      mesh += " " + std::to_string(rank);
    mesh += "\n";
    if (auto collector =
            module->getAttrOfType<IntegerAttr>(kProgramCollectorRankAttr))
      mesh += "collector " + std::to_string(collector.getInt()) + "\n";
    // The sub-communicators the driver creates at start-up for the job's
    // broadcasts, listed alike by every program of the job.
    if (auto groups =
            module->getAttrOfType<ArrayAttr>(kProgramBroadcastGroupsAttr))
      for (auto group : groups.getAsRange<DenseI64ArrayAttr>()) {
        mesh += "broadcast-group";
        for (int64_t rank : group.asArrayRef())
          mesh += " " + std::to_string(rank);
        mesh += "\n";
      }
    // Where the rank's peers lie in its weights file (movePeersToTable).
    if (auto peers = module->getAttrOfType<DenseI64ArrayAttr>(
            kProgramPeerTableAttr))
      mesh += "peers " + std::to_string(peers[0]) + " " +
              std::to_string(peers[1]) + "\n";
  }
  // A microbatch's program: the driver runs it M times per batch.
  if (auto micro = module->getAttrOfType<IntegerAttr>(kProgramMicrobatchesAttr))
    if (micro.getInt() > 1)
      mesh += "microbatches " + std::to_string(micro.getInt()) + "\n";
  // A GPU program names its architectures: the runtime refuses older GPUs.
  std::string target;
  if (auto archs = module->getAttrOfType<DenseI32ArrayAttr>(kGpuArchsAttr)) {
    target = "target cuda";
    for (int32_t arch : archs.asArrayRef())
      target += " sm_" + std::to_string(arch);
    target += "\n";
  }
  return "weft-program 1\narena " + std::to_string(arena) + "\nweights " +
         std::to_string(weightsBytes) + "\n" + mesh + target +
         text(kProgramIOAttr) + text(kProgramOpsAttr);
}

/// Defines `const weft_rt_program weft_program = {signature, run}`.
static void addProgramDescriptor(llvm::Module &module,
                                 llvm::StringRef signature) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Constant *text = llvm::ConstantDataArray::getString(ctx, signature);
  auto *textGlobal = new llvm::GlobalVariable(
      module, text->getType(), /*isConstant=*/true,
      llvm::GlobalValue::PrivateLinkage, text, "weft_program_signature");
  textGlobal->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  llvm::Function *run = module.getFunction(kProgramRunCInterface);
  auto *ptrType = llvm::PointerType::get(ctx, 0);
  auto *structType = llvm::StructType::get(ctx, {ptrType, ptrType});
  llvm::Constant *init = llvm::ConstantStruct::get(
      structType, {textGlobal, run ? static_cast<llvm::Constant *>(run)
                                   : llvm::ConstantPointerNull::get(ptrType)});
  new llvm::GlobalVariable(module, structType, /*isConstant=*/true,
                           llvm::GlobalValue::ExternalLinkage, init,
                           kProgramSymbol);
}

std::unique_ptr<llvm::Module>
mlir::weft::translateProgram(ModuleOp module, llvm::LLVMContext &context,
                             llvm::TargetMachine &machine,
                             llvm::StringRef signature) {
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context, "weft_program");
  if (!llvmModule)
    return nullptr;
  llvmModule->setDataLayout(machine.createDataLayout());
  llvmModule->setTargetTriple(machine.getTargetTriple());
  // Only the descriptor and the C entry are the program's interface.
  for (llvm::Function &f : *llvmModule)
    if (!f.isDeclaration() && f.getName() != kProgramRunCInterface)
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
  addProgramDescriptor(*llvmModule, signature);
  addWideVectorLoopVariants(*llvmModule, machine);

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder builder(&machine, tuning);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm =
      builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(*llvmModule, mam);
  return llvmModule;
}

bool mlir::weft::emitObjectFile(llvm::Module &module,
                                llvm::TargetMachine &machine,
                                llvm::StringRef path, std::string &error) {
  std::error_code ec;
  llvm::ToolOutputFile out(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = "cannot write " + path.str() + ": " + ec.message();
    return false;
  }
  llvm::legacy::PassManager pm;
  if (machine.addPassesToEmitFile(pm, out.os(), nullptr,
                                  llvm::CodeGenFileType::ObjectFile)) {
    error = "LLVM cannot emit object files for this target";
    return false;
  }
  pm.run(module);
  out.os().flush();
  if (out.os().has_error()) {
    out.os().clear_error();
    error = "writing " + path.str() + " failed";
    return false;
  }
  out.keep();
  return true;
}
