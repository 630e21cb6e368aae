//===- weft-sharding-file-fuzzer.cpp - libFuzzer target for --sharding-file
//===//
//
// Feeds text as weftc's --sharding-file to mlir::weft::applyShardingFile
// (tools/weftc/ShardingFile.cpp, compiled into this target) against a fixed
// small model on a 2x2 mesh, then canonicalizes and runs
// checkConstraintsAfterFolding as weftc does. The model has what the
// reader's messages are about: graph inputs, initializers, an Identity (two
// names, one value), a tensor read only as a shape (Reshape's target), an
// initializer nobody uses and a node no output depends on. A file the reader
// accepts must leave a module that verifies. Run it through scripts/fuzz.sh.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"
#include "OnnxModelBuilder.h"

#include "../tools/weftc/ShardingFile.h"

#include "weft/Import/ONNX/Importer.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace mlir;
namespace fuzz = ::weft::fuzz;

static const char kTarget[] = "weft-sharding-file-fuzzer";

using fuzz::addNode;
using fuzz::addTensor;
using fuzz::addValue;

/// The serialized model every input is applied to:
///   y = Reshape(MatMul(Identity(Relu(MatMul(x, w1) + b1)), w2), [2, 8])
static const std::string &modelBytes() {
  static const std::string bytes = [] {
    onnx::ModelProto model;
    model.set_ir_version(8);
    model.add_opset_import()->set_version(17);
    onnx::GraphProto &graph = *model.mutable_graph();
    graph.set_name("sharding_fuzz");
    addValue(graph.mutable_input(), "x", {4, 8});
    addValue(graph.mutable_output(), "y", {2, 8});
    addTensor(graph, "w1", {8, 6});
    addTensor(graph, "b1", {6});
    addTensor(graph, "w2", {6, 4});
    addTensor(graph, "target_shape", {2}, /*isInt64=*/true);
    addTensor(graph, "unused_weight", {3});
    addNode(graph, "MatMul", {"x", "w1"}, "h");
    addNode(graph, "Add", {"h", "b1"}, "h_bias");
    addNode(graph, "Relu", {"h_bias"}, "r");
    addNode(graph, "Identity", {"r"}, "r_alias");
    addNode(graph, "MatMul", {"r_alias", "w2"}, "z");
    addNode(graph, "Reshape", {"z", "target_shape"}, "y");
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

/// One context for every input (creating one per input would make the run
/// four times slower). Bad files are expected: their errors are swallowed.
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
  std::string path = fuzz::scratchDir() + "/sharding.json";
  fuzz::writeFileOrDie(path, data, size);
  MLIRContext &context = getContext();
  lastDiagnostic().clear();

  mlir::weft::ImportedTensors tensors;
  OwningOpRef<ModuleOp> module =
      mlir::weft::importOnnxBytes(&context, modelBytes(), "sharding_fuzz.onnx",
                                  mlir::weft::OnnxImportOptions(), &tensors);
  if (!module)
    fuzz::reportBug(kTarget,
                    "the fixed model does not import: " + lastDiagnostic());

  const int64_t meshShape[] = {2, 2};
  std::vector<std::string> constrained;
  if (failed(mlir::weft::applyShardingFile(*module, path, meshShape, tensors,
                                           constrained)))
    return 0;
  if (failed(verify(*module)))
    fuzz::reportBug(kTarget, "an accepted file left a module that does not "
                             "verify: " +
                                 lastDiagnostic());

  PassManager pm(&context);
  pm.enableVerifier(true);
  pm.addPass(createCanonicalizerPass());
  if (failed(pm.run(*module)))
    fuzz::reportBug(kTarget, "canonicalization failed after an accepted "
                             "file: " +
                                 lastDiagnostic());
  (void)mlir::weft::checkConstraintsAfterFolding(*module, path, constrained);
  return 0;
}
