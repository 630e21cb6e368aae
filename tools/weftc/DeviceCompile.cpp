//===- DeviceCompile.cpp - Compiling one device program -------------------===//

#include "DeviceCompile.h"
#include "Driver.h"

#include "weft/Codegen/DeviceMemory.h"
#include "weft/Codegen/ObjectEmitter.h"
#include "weft/Codegen/Passes.h"
#include "weft/Codegen/ProgramABI.h"
#include "weft/Transforms/Pipeline.h"
#include "weft/Transforms/ShardingRules.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/xxhash.h"

using namespace mlir;
using namespace mlir::weft;

DeviceMemory mlir::weft::deviceMemoryOf(const WeftcOptions &options,
                                        const plan::Cluster &cluster,
                                        const plan::Mesh &mesh,
                                        int64_t position) {
  const plan::DeviceKind &kind =
      cluster.kinds[cluster.devices[mesh.devices[position]].kind];
  DeviceMemory memory;
  // Any finite figure is accepted; past 2^62 bytes nothing is refused.
  memory.bytes = static_cast<int64_t>(std::min(kind.memoryBytes, 0x1p62));
  if (options.deviceMemoryGiven) {
    memory.source = "--device-memory";
    return memory;
  }
  if (options.clusterGiven || mesh.size() > 1) {
    memory.source = "cluster '" + cluster.name + "'";
    return memory;
  }
  if (options.isCuda()) {
    memory.bytes = 80'000'000'000;
    memory.source = "the default for one GPU, an H100's; --device-memory "
                    "or --cluster sets another";
    return memory;
  }
  if (double host = plan::hostMemoryBytes(); host > 0) {
    memory.bytes = static_cast<int64_t>(host);
    memory.source = "this machine's memory; --device-memory sets another";
    return memory;
  }
  memory.source = "the cpu:1 preset's, as this machine's memory is "
                  "unknown; --device-memory sets another";
  return memory;
}

bool mlir::weft::checkIOFits(ArrayRef<TensorDescription> tensors,
                             StringRef what, const DeviceMemory &memory) {
  for (const TensorDescription &t : tensors) {
    double bytes = 1;
    std::string shape;
    for (int64_t d : t.shape) {
      bytes *= static_cast<double>(d);
      shape += std::to_string(d) + "x";
    }
    int64_t element = t.dtype == "f64" || t.dtype == "i64"    ? 8
                      : t.dtype == "f32" || t.dtype == "i32"  ? 4
                      : t.dtype == "f16" || t.dtype == "bf16" ? 2
                                                              : 1;
    bytes *= static_cast<double>(element);
    if (bytes <= static_cast<double>(memory.bytes))
      continue;
    llvm::WithColor::error(llvm::errs(), "weftc")
        << what << " '" << t.name << "' (" << shape << t.dtype << ", "
        << llvm::formatv("{0:F0}", bytes) << " bytes) does not fit in the "
        << "device's memory, " << memory.bytes << " bytes (" << memory.source
        << ")\n";
    return false;
  }
  return true;
}

int mlir::weft::prepareKernelForms(MLIRContext &context,
                                   const WeftcOptions &options,
                                   ModuleOp device) {
  if (options.isCuda())
    return 0;
  PassManager pm(&context);
  buildCpuKernelFormsPipeline(pm, CpuCodegenPipelineOptions());
  if (failed(pm.run(device)))
    return stageFailure();
  return 0;
}

void mlir::weft::buildDevicePipeline(PassManager &pm,
                                     const WeftcOptions &options,
                                     ModuleOp device, int64_t weightsBytes,
                                     StringRef constantsPath,
                                     bool stopAtBuffers,
                                     const DeviceMemory &memory) {
  // What weft-plan-memory checks the program against.
  Builder attrs(device.getContext());
  device->setAttr(kWeightsBytesAttr, attrs.getI64IntegerAttr(weightsBytes));
  device->setAttr(kDeviceMemoryBytesAttr,
                  attrs.getI64IntegerAttr(memory.bytes));
  device->setAttr(kDeviceMemorySourceAttr, attrs.getStringAttr(memory.source));
  if (!options.isCuda()) {
    CpuCodegenPipelineOptions cpuOptions;
    cpuOptions.reportMemory = options.reportMemory;
    // The weights are laid out by now (prepareKernelForms packed what it
    // could before): a packing found only now would need a permutation
    // that the weights file no longer applies.
    cpuOptions.packConvWeights = false;
    if (stopAtBuffers)
      buildCpuBufferizationPipeline(pm, cpuOptions);
    else
      buildCpuCodegenPipeline(pm, cpuOptions);
    return;
  }
  const std::vector<int> &gpuArchs = options.gpuArchs;
  if (!options.gpuEmulate)
    device->setAttr(kGpuArchsAttr,
                    attrs.getDenseI32ArrayAttr(SmallVector<int32_t>(
                        gpuArchs.begin(), gpuArchs.end())));
  CudaCodegenPipelineOptions cudaOptions;
  cudaOptions.emulateOnCpu = options.gpuEmulate;
  cudaOptions.reportMemory = options.reportMemory;
  cudaOptions.constantsFile = constantsPath.str();
  cudaOptions.gpuArchs = gpuArchs;
  if (stopAtBuffers)
    buildCudaKernelPipeline(pm, cudaOptions);
  else
    buildCudaCodegenPipeline(pm, cudaOptions);
}

LogicalResult mlir::weft::appendDeviceConstants(ModuleOp module, StringRef file,
                                                WeightsFileLayout &weights) {
  auto attr = module->getAttrOfType<IntegerAttr>(kDeviceConstantsBytesAttr);
  if (!attr || attr.getInt() == 0)
    return success();
  auto buffer = llvm::MemoryBuffer::getFile(file, /*IsText=*/false);
  if (!buffer ||
      (*buffer)->getBufferSize() != static_cast<size_t>(attr.getInt()))
    return module.emitError() << "the GPU constants file " << file
                              << " is missing or of the wrong size";
  WeightCopy copy;
  copy.name = "(constants read by GPU kernels)";
  copy.sourcePath = file.str();
  copy.sourceOffset = 0;
  copy.size = attr.getInt();
  copy.checksum = llvm::utohexstr(
      llvm::xxh3_64bits(llvm::arrayRefFromStringRef((*buffer)->getBuffer())),
      /*LowerCase=*/true, /*Width=*/16);
  copy.offset = weights.bytes;
  weights.bytes = alignTo64(weights.bytes + copy.size);
  weights.copies.push_back(copy);
  return success();
}

/// Moves a rank's transfer peers into a table after its weights
/// (movePeersToTable) and records where for the signature's "peers"
/// record. Ranks that differ only in their peers then share one program.
static void appendPeerTable(ModuleOp device, WeightsFileLayout &weights) {
  std::vector<int64_t> table = movePeersToTable(device);
  if (table.empty())
    return;
  // int64 in the compiler's byte order, as every weight is stored: the
  // runtime reads it on the CPU kind the package is built for.
  WeightCopy copy;
  copy.name = "(peer table)";
  copy.contents.assign(reinterpret_cast<const char *>(table.data()),
                       table.size() * sizeof(int64_t));
  copy.size = static_cast<int64_t>(copy.contents.size());
  copy.offset = weights.bytes;
  weights.bytes = alignTo64(weights.bytes + copy.size);
  weights.copies.push_back(copy);
  device->setAttr(kProgramPeerTableAttr,
                  DenseI64ArrayAttr::get(
                      device.getContext(),
                      {copy.offset, static_cast<int64_t>(table.size() / 2)}));
}

static std::string dtypeName(Type t) {
  if (t.isUnsignedInteger(8))
    return "u8";
  if (t.isSignlessInteger(1))
    return "bool";
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

std::vector<TensorDescription> mlir::weft::describe(func::FuncOp func,
                                                    bool results) {
  std::vector<TensorDescription> out;
  unsigned n = results ? func.getNumResults() : func.getNumArguments();
  for (unsigned i = 0; i < n; ++i) {
    auto type = cast<RankedTensorType>(results ? func.getResultTypes()[i]
                                               : func.getArgumentTypes()[i]);
    StringAttr name = results
                          ? func.getResultAttrOfType<StringAttr>(i, "weft.name")
                          : func.getArgAttrOfType<StringAttr>(i, "weft.name");
    TensorDescription t;
    t.name =
        name ? name.str() : (results ? "output" : "input") + std::to_string(i);
    t.dtype = dtypeName(type.getElementType());
    t.shape.assign(type.getShape().begin(), type.getShape().end());
    out.push_back(t);
  }
  return out;
}

double mlir::weft::programFlops(ModuleOp module) {
  double flops = 0;
  module.walk([&](Operation *op) {
    if (std::optional<LoopSpace> space = getLoopSpace(op))
      flops += space->flops;
  });
  return flops;
}

int mlir::weft::compileDeviceProgram(
    MLIRContext &context, const WeftcOptions &options, ModuleOp device,
    int64_t k, const DeviceMemory &memory, StringRef scratch,
    llvm::TargetMachine &machine, ProgramCache &cache,
    PackageContents &contents, DeviceSummary &summary) {
  std::string error;
  if (int code = prepareKernelForms(context, options, device))
    return code;
  // One file name for every device, so that equal programs compare equal.
  WeightsFileLayout weights = layoutWeights(device, "weights.bin");
  appendPeerTable(device, weights);
  std::string key = std::to_string(memory.bytes) + " " + memory.source + "\n";
  {
    llvm::raw_string_ostream printed(key);
    device->print(printed);
  }
  auto found = cache.programs.find(key);
  if (found == cache.programs.end()) {
    int index = static_cast<int>(contents.programs.size());
    PassManager pm(&context);
    SmallString<256> constantsPath(scratch);
    llvm::sys::path::append(constantsPath,
                            "gpu-constants" + std::to_string(index) + ".bin");
    buildDevicePipeline(pm, options, device, weights.bytes, constantsPath,
                        /*stopAtBuffers=*/false, memory);
    if (failed(pm.run(device)))
      return stageFailure();
    CompiledProgram program;
    program.index = index;
    size_t copiesBefore = weights.copies.size();
    if (options.isCuda() &&
        failed(appendDeviceConstants(device, constantsPath, weights)))
      return kExitInternal;
    if (weights.copies.size() > copiesBefore)
      program.constants = weights.copies.back();
    if (auto attr = device->getAttrOfType<IntegerAttr>(kArenaBytesAttr))
      program.arenaBytes = attr.getInt();
    std::string signature = buildProgramSignature(device, weights.bytes);
    llvm::LLVMContext llvmContext;
    std::unique_ptr<llvm::Module> llvmModule =
        translateProgram(device, llvmContext, machine, signature);
    if (!llvmModule) {
      llvm::WithColor::error(llvm::errs(), "weftc")
          << "translation of device " << k
          << "'s program to LLVM IR failed; this is a bug in Weft\n";
      return kExitInternal;
    }
    SmallString<256> objectPath(scratch);
    llvm::sys::path::append(objectPath, "prog" + std::to_string(index) + ".o");
    if (!emitObjectFile(*llvmModule, machine, objectPath, error))
      return refuse(error);
    contents.programs.push_back(
        {objectPath.str().str(), program.arenaBytes, signature});
    found = cache.programs.emplace(std::move(key), program).first;
  } else if (found->second.constants) {
    // The same GPU constants, after this device's own weights.
    WeightCopy copy = *found->second.constants;
    copy.offset = weights.bytes;
    weights.bytes = alignTo64(weights.bytes + copy.size);
    weights.copies.push_back(copy);
  }
  const CompiledProgram &program = found->second;
  summary.weightBytes = weights.bytes;
  summary.arenaBytes = program.arenaBytes;
  summary.program = program.index;
  SmallString<256> weightsPath(scratch);
  llvm::sys::path::append(weightsPath, "dev" + std::to_string(k) + ".bin");
  std::string sha256;
  if (failed(writeWeightsFile(weights, weightsPath, device.getLoc(), sha256,
                              &cache.weights)))
    return kExitBadInput;
  contents.devices.push_back(
      {program.index, weightsPath.str().str(), weights.bytes, sha256});
  return 0;
}
