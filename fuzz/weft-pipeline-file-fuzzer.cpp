//===- weft-pipeline-file-fuzzer.cpp - libFuzzer target for --pipeline-file
//===//
//
// Feeds text as weftc's --pipeline-file to readPipelineFile, then does what
// weftc does with an accepted file on a fixed small model and a cluster of
// 6 devices: marks the stages' end tensors, canonicalizes, assigns the ops
// to stages and splits main into weft.stage regions with transfers. The
// model has a residual (a value two later stages use), a graph input, a
// weight, an Identity (two names, one value) and a node no output depends
// on. Whatever a file says, the reader and the split must end in a clean
// error or a module that verifies. tools/weftc/Stages.cpp is compiled in.
// Run it through scripts/fuzz.sh.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"
#include "OnnxModelBuilder.h"

#include "../tools/weftc/Stages.h"

#include "weft/Import/ONNX/Importer.h"
#include "weft/Transforms/Pipeline.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/Error.h"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace mlir;
namespace fuzz = ::weft::fuzz;

static const char kTarget[] = "weft-pipeline-file-fuzzer";

static constexpr int64_t kDevices = 6;

using fuzz::addNode;
using fuzz::addTensor;
using fuzz::addValue;

/// The serialized model every input is applied to:
///   h = MatMul(x, w1); r = Relu(h + b1); z = MatMul(Identity(r), w2);
///   y = z + h (a residual across two cuts)
static const std::string &modelBytes() {
  static const std::string bytes = [] {
    onnx::ModelProto model;
    model.set_ir_version(8);
    model.add_opset_import()->set_version(17);
    onnx::GraphProto &graph = *model.mutable_graph();
    graph.set_name("pipeline_fuzz");
    addValue(graph.mutable_input(), "x", {4, 8});
    addValue(graph.mutable_output(), "y", {4, 6});
    addTensor(graph, "w1", {8, 6});
    addTensor(graph, "b1", {6});
    addTensor(graph, "w2", {6, 6});
    addNode(graph, "MatMul", {"x", "w1"}, "h");
    addNode(graph, "Add", {"h", "b1"}, "h_bias");
    addNode(graph, "Relu", {"h_bias"}, "r");
    addNode(graph, "Identity", {"r"}, "r_alias");
    addNode(graph, "MatMul", {"r_alias", "w2"}, "z");
    addNode(graph, "Add", {"z", "h"}, "y");
    addNode(graph, "Sigmoid", {"x"}, "dead");
    std::string out;
    if (!model.SerializeToString(&out))
      fuzz::reportBug(kTarget, "cannot serialize the fixed model");
    return out;
  }();
  return bytes;
}

/// The last diagnostic, for reports of real bugs.
static std::string &lastDiagnostic() {
  static std::string text;
  return text;
}

/// One context for every input. Bad files are expected: their errors are
/// swallowed.
static MLIRContext &getContext() {
  static MLIRContext *context = [] {
    DialectRegistry registry;
    mlir::weft::registerOnnxImportDialects(registry);
    auto *created = new MLIRContext(registry, MLIRContext::Threading::DISABLED);
    created->loadAllAvailableDialects();
    created->getDiagEngine().registerHandler([](Diagnostic &diag) {
      lastDiagnostic() = diag.str();
      return success();
    });
    return created;
  }();
  return *context;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = fuzz::scratchDir() + "/pipeline.json";
  fuzz::writeFileOrDie(path, data, size);
  llvm::Expected<std::vector<mlir::weft::StageRequest>> stages =
      mlir::weft::readPipelineFile(path, kDevices);
  if (!stages) {
    llvm::consumeError(stages.takeError());
    return 0;
  }
  // What an accepted file promises.
  std::vector<bool> used(kDevices, false);
  for (const mlir::weft::StageRequest &stage : *stages) {
    int64_t product = 1;
    for (int64_t d : stage.meshShape)
      product *= d;
    if (stage.devices.empty() ||
        product != static_cast<int64_t>(stage.devices.size()))
      fuzz::reportBug(kTarget, "an accepted stage's mesh does not hold its "
                               "devices");
    for (int64_t device : stage.devices) {
      if (device < 0 || device >= kDevices || used[device])
        fuzz::reportBug(kTarget, "an accepted file reuses or invents a "
                                 "device");
      used[device] = true;
    }
  }

  MLIRContext &context = getContext();
  lastDiagnostic().clear();
  mlir::weft::ImportedTensors tensors;
  OwningOpRef<ModuleOp> module =
      mlir::weft::importOnnxBytes(&context, modelBytes(), "pipeline_fuzz.onnx",
                                  mlir::weft::OnnxImportOptions(), &tensors);
  if (!module)
    fuzz::reportBug(kTarget,
                    "the fixed model does not import: " + lastDiagnostic());
  auto func = module->lookupSymbol<func::FuncOp>("main");
  if (failed(mlir::weft::markStageEnds(func, path, *stages, tensors)))
    return 0;
  PassManager pm(&context);
  pm.enableVerifier(true);
  pm.addPass(createCanonicalizerPass());
  if (failed(pm.run(*module)))
    fuzz::reportBug(kTarget, "canonicalization failed after marking the "
                             "stages' ends: " +
                                 lastDiagnostic());
  FailureOr<mlir::weft::StageAssignment> assignment =
      mlir::weft::assignStagesByEnds(func, path, *stages);
  if (failed(assignment))
    return 0;
  std::vector<mlir::weft::StageMesh> meshes;
  for (auto [k, stage] : llvm::enumerate(*stages))
    meshes.push_back({"stage" + std::to_string(k), stage.meshShape,
                      stage.devices});
  if (failed(mlir::weft::splitIntoStages(*module, *assignment, meshes)))
    return 0;
  if (failed(verify(*module)))
    fuzz::reportBug(kTarget, "an accepted pipeline split into a module that "
                             "does not verify: " +
                                 lastDiagnostic());
  return 0;
}
