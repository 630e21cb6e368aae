//===- weft-import-fuzzer.cpp - libFuzzer target for the ONNX importer ----===//
//
// Feeds serialized ModelProtos to mlir::weft::importOnnxBytes. A custom
// mutator parses each input as a ModelProto and changes it at the level of
// protobuf fields (op types, node inputs and outputs, attributes, shapes,
// element types, opsets, node order and names), never the bytes of weights,
// so that most inputs reach the graph importer and the op handlers instead of
// stopping in the protobuf parser. Run it through scripts/fuzz.sh.
//
//===----------------------------------------------------------------------===//

#include "weft/Import/ONNX/Importer.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>

using namespace mlir;

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace {

/// What each run does beyond the import, chosen once from the environment.
struct FuzzConfig {
  /// WEFT_FUZZ_ONNX_CHECKER=1: also run ONNX's checker and shape inference
  /// (ONNX's code, not weft's; off by default so runs stay on weft's code).
  bool runOnnxChecker = false;
  /// WEFT_FUZZ_ROUNDTRIP=0: skip printing, re-parsing and canonicalizing
  /// the imported module.
  bool roundTrip = true;
};

} // namespace

static FuzzConfig &getConfig() {
  static FuzzConfig config;
  return config;
}

static bool getEnvFlag(const char *name, bool defaultValue) {
  const char *value = std::getenv(name);
  if (!value || !*value)
    return defaultValue;
  return std::strcmp(value, "0") != 0;
}

extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv) {
  getConfig().runOnnxChecker = getEnvFlag("WEFT_FUZZ_ONNX_CHECKER", false);
  getConfig().roundTrip = getEnvFlag("WEFT_FUZZ_ROUNDTRIP", true);
  return 0;
}

/// Stops the run: the importer produced a module that the verifier, the
/// printer and parser, or canonicalization rejects. libFuzzer saves the
/// input as a crash.
[[noreturn]] static void reportBug(const std::string &what, StringRef detail) {
  llvm::errs() << "weft-import-fuzzer: " << what << "\n" << detail << "\n";
  llvm::errs().flush();
  std::abort();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  DialectRegistry registry;
  weft::registerOnnxImportDialects(registry);
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  // Bad models are expected: swallow their diagnostics, keep the last one
  // for reports of real bugs.
  std::string lastDiagnostic;
  context.getDiagEngine().registerHandler([&](Diagnostic &diag) {
    lastDiagnostic = diag.str();
    return success();
  });

  weft::OnnxImportOptions options;
  options.runOnnxChecker = getConfig().runOnnxChecker;
  StringRef bytes(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module =
      weft::importOnnxBytes(&context, bytes, "fuzz.onnx", options);
  if (!module || !getConfig().roundTrip)
    return 0;

  // A module the importer returns must be valid IR that prints, parses back
  // and survives canonicalization (which runs the dialect's folders and
  // patterns on shapes the importer accepted).
  std::string text;
  {
    llvm::raw_string_ostream os(text);
    module->print(os);
  }
  OwningOpRef<ModuleOp> reparsed =
      parseSourceString<ModuleOp>(text, ParserConfig(&context));
  if (!reparsed)
    reportBug("imported module does not parse back: " + lastDiagnostic, text);

  PassManager pm(&context);
  pm.enableVerifier(true);
  pm.addPass(createCanonicalizerPass());
  if (failed(pm.run(*reparsed)))
    reportBug("canonicalization failed on an imported module: " +
                  lastDiagnostic,
              text);
  return 0;
}

//===----------------------------------------------------------------------===//
// Structure-aware mutation
//===----------------------------------------------------------------------===//

namespace {

// clang-format off
/// ONNX op types of the default domain, covering every family weft imports
/// and a few it does not.
const char *const kOpTypes[] = {
    // Core.
    "Constant", "Identity", "Dropout",
    // Elementwise.
    "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Sum", "Mean",
    "PRelu", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual",
    "And", "Or", "Xor", "Not", "Where", "Relu", "Sigmoid", "Tanh", "Erf",
    "Exp", "Log", "Sqrt", "Reciprocal", "Neg", "Abs", "Floor", "Ceil", "Sign",
    "Sin", "Cos", "LeakyRelu", "Elu", "Selu", "Celu", "ThresholdedRelu",
    "HardSigmoid", "HardSwish", "Softplus", "Softsign", "Gelu", "Clip", "Cast",
    "CastLike",
    // Linear algebra.
    "MatMul", "Gemm", "Einsum",
    // Convolution, pooling and normalization.
    "Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool",
    "GlobalMaxPool", "BatchNormalization", "LayerNormalization",
    "InstanceNormalization", "GroupNormalization",
    // Reductions.
    "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
    "ReduceL1", "ReduceL2", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax",
    "ArgMin", "Softmax", "LogSoftmax",
    // Shapes.
    "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Concat",
    "Split", "Slice", "Gather", "GatherElements", "Expand", "Pad", "Tile",
    "Trilu", "Shape", "Size", "ConstantOfShape", "Range",
    // Not supported (exercise the rejection paths).
    "If", "Loop", "Resize", "NonZero", "TopK"};

/// Attribute names that the ops above read.
const char *const kAttrNames[] = {
    "axis",       "axes",        "perm",      "keepdims",  "transA",
    "transB",     "alpha",       "beta",      "gamma",     "kernel_shape",
    "strides",    "pads",        "dilations", "group",     "auto_pad",
    "epsilon",    "momentum",    "to",        "value",     "split",
    "starts",     "ends",        "mode",      "upper",     "equation",
    "ceil_mode",  "count_include_pad",        "storage_order",
    "select_last_index",         "noop_with_empty_axes",   "min",
    "max",        "fmod",        "approximate", "stash_type",
    "num_outputs", "batch_dims", "output_padding", "output_shape",
    "value_float", "value_int",  "value_ints", "value_floats",
    "allowzero",  "seed",        "ratio",     "training_mode", "num_groups"};

const char *const kStrings[] = {
    "",          "NOTSET",   "SAME_UPPER", "SAME_LOWER", "VALID",
    "constant",  "reflect",  "edge",       "wrap",       "none",
    "tanh",      "ij,jk->ik", "...ij,...jk->...ik", "ii->i", "i,i",
    "bij,bjk->bik", "abc->cba", "a,a->", "x"};

const char *const kDomains[] = {"", "ai.onnx", "ai.onnx.ml", "com.microsoft",
                                "weft.fuzz"};

/// Data types: every TensorProto::DataType value and some out of range.
const int32_t kDataTypes[] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10,
                              11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                              22, 23, -1, 99};

const int64_t kInterestingInts[] = {
    0, 1, -1, 2, -2, 3, 4, 7, 8, 16, 64, 255, 1024, 65535, 1 << 20,
    std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min(),
    std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(),
    std::numeric_limits<int64_t>::max() / 2};

const float kInterestingFloats[] = {
    0.0f,  -0.0f, 1.0f,   -1.0f, 0.5f,   2.0f, 1e-5f, 1e30f, -1e30f,
    std::numeric_limits<float>::infinity(),
    -std::numeric_limits<float>::infinity(),
    std::numeric_limits<float>::quiet_NaN(),
    std::numeric_limits<float>::denorm_min()};
// clang-format on

/// Random choices for one mutation.
class Mutator {
public:
  explicit Mutator(unsigned seed) : rng(seed) {}

  /// Applies one random field-level mutation. Returns false when the chosen
  /// mutation had nothing to act on.
  bool mutate(onnx::ModelProto &model);

  /// Moves random nodes (and the initializers they name) of `other` into
  /// `model`'s graph.
  void crossOver(onnx::ModelProto &model, const onnx::ModelProto &other);

private:
  uint64_t next(uint64_t bound) {
    return bound == 0
               ? 0
               : std::uniform_int_distribution<uint64_t>(0, bound - 1)(rng);
  }
  bool coin(unsigned oneIn = 2) { return next(oneIn) == 0; }
  template <typename T, size_t N> const T &pick(const T (&array)[N]) {
    return array[next(N)];
  }

  int64_t randomInt();
  float randomFloat();
  std::string randomValueName(const onnx::GraphProto &graph);
  std::string freshName() { return "fz" + std::to_string(next(1000)); }

  bool mutateOpType(onnx::GraphProto &graph);
  bool mutateNodeInputs(onnx::GraphProto &graph);
  bool mutateNodeOutputs(onnx::GraphProto &graph);
  bool mutateNodeList(onnx::GraphProto &graph);
  bool mutateNodeDomain(onnx::GraphProto &graph);
  bool mutateAttributes(onnx::GraphProto &graph);
  void mutateAttribute(onnx::AttributeProto &attr);
  bool mutateValueInfo(onnx::GraphProto &graph);
  void mutateType(onnx::TypeProto &type);
  bool mutateInitializer(onnx::GraphProto &graph);
  void mutateTensorHeader(onnx::TensorProto &tensor);
  bool mutateGraphIO(onnx::GraphProto &graph);
  bool mutateOpset(onnx::ModelProto &model);

  std::mt19937_64 rng;
};

} // namespace

int64_t Mutator::randomInt() {
  switch (next(3)) {
  case 0:
    return pick(kInterestingInts);
  case 1:
    return static_cast<int64_t>(next(9)) - 4; // Axes and small sizes.
  default:
    return static_cast<int64_t>(rng());
  }
}

float Mutator::randomFloat() {
  if (coin())
    return pick(kInterestingFloats);
  return std::uniform_real_distribution<float>(-10.0f, 10.0f)(rng);
}

/// A name that some value of the graph has (input, initializer or node
/// output), an omitted input (""), or an unknown name.
std::string Mutator::randomValueName(const onnx::GraphProto &graph) {
  switch (next(8)) {
  case 0:
    return "";
  case 1:
    return freshName();
  case 2:
  case 3:
    if (graph.input_size())
      return graph.input(next(graph.input_size())).name();
    break;
  case 4:
    if (graph.initializer_size())
      return graph.initializer(next(graph.initializer_size())).name();
    break;
  default:
    break;
  }
  if (graph.node_size()) {
    const onnx::NodeProto &node = graph.node(next(graph.node_size()));
    if (node.output_size())
      return node.output(next(node.output_size()));
  }
  return freshName();
}

bool Mutator::mutateOpType(onnx::GraphProto &graph) {
  if (!graph.node_size())
    return false;
  onnx::NodeProto *node = graph.mutable_node(next(graph.node_size()));
  if (coin(16))
    node->set_op_type(freshName());
  else
    node->set_op_type(pick(kOpTypes));
  return true;
}

bool Mutator::mutateNodeInputs(onnx::GraphProto &graph) {
  if (!graph.node_size())
    return false;
  onnx::NodeProto *node = graph.mutable_node(next(graph.node_size()));
  auto *inputs = node->mutable_input();
  switch (next(5)) {
  case 0: // Add one.
    inputs->Add(randomValueName(graph));
    return true;
  case 1: // Remove one.
    if (inputs->empty())
      return false;
    inputs->erase(inputs->begin() + next(inputs->size()));
    return true;
  case 2: // Swap two.
    if (inputs->size() < 2)
      return false;
    std::swap(inputs->at(next(inputs->size())),
              inputs->at(next(inputs->size())));
    return true;
  case 3: // Omit one (empty name) or drop the tail.
    if (inputs->empty())
      return false;
    if (coin())
      inputs->at(next(inputs->size())).clear();
    else {
      int keep = static_cast<int>(next(inputs->size()));
      inputs->DeleteSubrange(keep, inputs->size() - keep);
    }
    return true;
  default: // Rewire one.
    if (inputs->empty())
      return false;
    inputs->at(next(inputs->size())) = randomValueName(graph);
    return true;
  }
}

bool Mutator::mutateNodeOutputs(onnx::GraphProto &graph) {
  if (!graph.node_size())
    return false;
  onnx::NodeProto *node = graph.mutable_node(next(graph.node_size()));
  auto *outputs = node->mutable_output();
  switch (next(4)) {
  case 0:
    outputs->Add(coin() ? freshName() : randomValueName(graph));
    return true;
  case 1:
    if (outputs->empty())
      return false;
    outputs->erase(outputs->begin() + next(outputs->size()));
    return true;
  case 2: // Duplicate a name defined elsewhere (SSA violation).
    if (outputs->empty())
      return false;
    outputs->at(next(outputs->size())) = randomValueName(graph);
    return true;
  default: // Rename the node itself.
    node->set_name(coin() ? randomValueName(graph) : freshName());
    return true;
  }
}

bool Mutator::mutateNodeList(onnx::GraphProto &graph) {
  auto *nodes = graph.mutable_node();
  switch (next(4)) {
  case 0: // Drop a node.
    if (nodes->empty())
      return false;
    nodes->erase(nodes->begin() + next(nodes->size()));
    return true;
  case 1: // Duplicate a node (its outputs are then defined twice).
    if (nodes->empty())
      return false;
    *nodes->Add() = nodes->Get(next(nodes->size()));
    return true;
  case 2: // Reorder: a use may now come before its definition.
    if (nodes->size() < 2)
      return false;
    nodes->SwapElements(next(nodes->size()), next(nodes->size()));
    return true;
  default: { // A new node of a random type on existing values.
    onnx::NodeProto *node = nodes->Add();
    node->set_op_type(pick(kOpTypes));
    for (uint64_t i = 0, e = 1 + next(3); i < e; ++i)
      node->add_input(randomValueName(graph));
    node->add_output(freshName());
    if (coin() && graph.output_size())
      graph.mutable_output(next(graph.output_size()))
          ->set_name(node->output(0));
    return true;
  }
  }
}

bool Mutator::mutateNodeDomain(onnx::GraphProto &graph) {
  if (!graph.node_size())
    return false;
  graph.mutable_node(next(graph.node_size()))->set_domain(pick(kDomains));
  return true;
}

void Mutator::mutateAttribute(onnx::AttributeProto &attr) {
  using Attr = onnx::AttributeProto;
  switch (next(9)) {
  case 0: // Change its declared type, keeping the payload.
    attr.set_type(static_cast<Attr::AttributeType>(next(15)));
    return;
  case 1:
    attr.set_i(randomInt());
    if (coin())
      attr.set_type(Attr::INT);
    return;
  case 2:
    attr.set_f(randomFloat());
    if (coin())
      attr.set_type(Attr::FLOAT);
    return;
  case 3:
    attr.set_s(coin(4) ? freshName() : pick(kStrings));
    if (coin())
      attr.set_type(Attr::STRING);
    return;
  case 4: { // Edit an integer list: change, add or remove an element.
    auto *ints = attr.mutable_ints();
    if (!ints->empty() && coin())
      ints->Set(next(ints->size()), randomInt());
    else if (!ints->empty() && coin())
      ints->RemoveLast();
    else
      ints->Add(randomInt());
    if (coin())
      attr.set_type(Attr::INTS);
    return;
  }
  case 5: {
    auto *floats = attr.mutable_floats();
    if (!floats->empty() && coin())
      floats->Set(next(floats->size()), randomFloat());
    else if (!floats->empty() && coin())
      floats->RemoveLast();
    else
      floats->Add(randomFloat());
    if (coin())
      attr.set_type(Attr::FLOATS);
    return;
  }
  case 6: // A tensor attribute (Constant's value): change its header.
    mutateTensorHeader(*attr.mutable_t());
    if (coin())
      attr.set_type(Attr::TENSOR);
    return;
  case 7: // Rename it (unknown or duplicated attribute).
    attr.set_name(pick(kAttrNames));
    return;
  default: // Clear the payload fields.
    attr.clear_ints();
    attr.clear_floats();
    attr.clear_strings();
    if (coin())
      attr.clear_t();
    return;
  }
}

bool Mutator::mutateAttributes(onnx::GraphProto &graph) {
  if (!graph.node_size())
    return false;
  onnx::NodeProto *node = graph.mutable_node(next(graph.node_size()));
  auto *attrs = node->mutable_attribute();
  switch (next(4)) {
  case 0: { // Add a new attribute.
    onnx::AttributeProto *attr = attrs->Add();
    attr->set_name(pick(kAttrNames));
    attr->set_type(onnx::AttributeProto::INT);
    attr->set_i(randomInt());
    mutateAttribute(*attr);
    return true;
  }
  case 1:
    if (attrs->empty())
      return false;
    attrs->erase(attrs->begin() + next(attrs->size()));
    return true;
  case 2: // Duplicate one.
    if (attrs->empty())
      return false;
    *attrs->Add() = attrs->Get(next(attrs->size()));
    return true;
  default:
    if (attrs->empty())
      return false;
    mutateAttribute(attrs->at(next(attrs->size())));
    return true;
  }
}

void Mutator::mutateType(onnx::TypeProto &type) {
  onnx::TypeProto::Tensor *tensor = type.mutable_tensor_type();
  switch (next(6)) {
  case 0:
    tensor->set_elem_type(pick(kDataTypes));
    return;
  case 1: { // Change one dimension.
    onnx::TensorShapeProto *shape = tensor->mutable_shape();
    if (!shape->dim_size()) {
      shape->add_dim()->set_dim_value(randomInt());
      return;
    }
    onnx::TensorShapeProto::Dimension *dim =
        shape->mutable_dim(next(shape->dim_size()));
    switch (next(3)) {
    case 0:
      dim->set_dim_param(coin() ? "N" : freshName());
      return;
    case 1:
      dim->clear_dim_value();
      dim->clear_dim_param();
      return;
    default:
      dim->set_dim_value(coin() ? randomInt() : static_cast<int64_t>(next(9)));
      return;
    }
  }
  case 2: // Add a dimension.
    tensor->mutable_shape()->add_dim()->set_dim_value(1 + next(8));
    return;
  case 3: { // Remove a dimension.
    onnx::TensorShapeProto *shape = tensor->mutable_shape();
    if (shape->dim_size())
      shape->mutable_dim()->erase(shape->mutable_dim()->begin() +
                                  next(shape->dim_size()));
    return;
  }
  case 4: // No shape at all (unranked), or no tensor type.
    if (coin())
      tensor->clear_shape();
    else
      type.clear_tensor_type();
    return;
  default: { // A sequence or optional type where a tensor is expected.
    onnx::TypeProto copy = type;
    if (coin())
      *type.mutable_sequence_type()->mutable_elem_type() = copy;
    else
      *type.mutable_optional_type()->mutable_elem_type() = copy;
    return;
  }
  }
}

bool Mutator::mutateValueInfo(onnx::GraphProto &graph) {
  auto *list = coin(3) ? graph.mutable_output() : graph.mutable_input();
  if (list->empty())
    return false;
  onnx::ValueInfoProto &info = list->at(next(list->size()));
  mutateType(*info.mutable_type());
  return true;
}

/// Changes the dims, data type or data location of a tensor, never its data
/// bytes: the data then disagrees with the header, which the importer must
/// reject cleanly.
void Mutator::mutateTensorHeader(onnx::TensorProto &tensor) {
  switch (next(6)) {
  case 0:
    tensor.set_data_type(pick(kDataTypes));
    return;
  case 1:
    if (tensor.dims_size())
      tensor.set_dims(next(tensor.dims_size()), randomInt());
    else
      tensor.add_dims(randomInt());
    return;
  case 2:
    tensor.add_dims(coin() ? 1 : randomInt());
    return;
  case 3:
    if (tensor.dims_size())
      tensor.mutable_dims()->RemoveLast();
    return;
  case 4: // Claim the data lives in an external file.
    tensor.set_data_location(onnx::TensorProto::EXTERNAL);
    if (coin()) {
      onnx::StringStringEntryProto *entry = tensor.add_external_data();
      entry->set_key(coin() ? "location" : "offset");
      entry->set_value(coin() ? "../weights.bin" : "12");
    }
    return;
  default: // Move the data between raw_data and typed fields.
    if (tensor.has_raw_data() && coin())
      tensor.clear_raw_data();
    else if (!tensor.has_raw_data())
      tensor.set_raw_data(std::string(next(16), '\0'));
    return;
  }
}

bool Mutator::mutateInitializer(onnx::GraphProto &graph) {
  auto *inits = graph.mutable_initializer();
  if (inits->empty())
    return false;
  onnx::TensorProto &tensor = inits->at(next(inits->size()));
  switch (next(4)) {
  case 0: // Rename: to an input's name (input with a default), a node
          // output's (defined twice) or nothing.
    tensor.set_name(coin(4) ? "" : randomValueName(graph));
    return true;
  case 1:
    inits->erase(inits->begin() + next(inits->size()));
    return true;
  default:
    mutateTensorHeader(tensor);
    return true;
  }
}

bool Mutator::mutateGraphIO(onnx::GraphProto &graph) {
  switch (next(5)) {
  case 0: // Drop a graph output.
    if (!graph.output_size())
      return false;
    graph.mutable_output()->erase(graph.mutable_output()->begin() +
                                  next(graph.output_size()));
    return true;
  case 1: { // Output some other value, or one nobody defines.
    onnx::ValueInfoProto *out = graph.add_output();
    out->set_name(randomValueName(graph));
    if (coin() && graph.input_size())
      out->mutable_type()->CopyFrom(graph.input(0).type());
    return true;
  }
  case 2: // Drop a graph input (its uses become undefined).
    if (!graph.input_size())
      return false;
    graph.mutable_input()->erase(graph.mutable_input()->begin() +
                                 next(graph.input_size()));
    return true;
  case 3: // Duplicate a graph input.
    if (!graph.input_size())
      return false;
    *graph.add_input() = graph.input(next(graph.input_size()));
    return true;
  default: // Rename an input or output.
    if (coin() && graph.input_size())
      graph.mutable_input(next(graph.input_size()))
          ->set_name(randomValueName(graph));
    else if (graph.output_size())
      graph.mutable_output(next(graph.output_size()))
          ->set_name(randomValueName(graph));
    return true;
  }
}

bool Mutator::mutateOpset(onnx::ModelProto &model) {
  auto *opsets = model.mutable_opset_import();
  switch (next(4)) {
  case 0: { // Another version of an existing entry.
    if (opsets->empty())
      return false;
    int64_t version =
        coin(4) ? randomInt() : static_cast<int64_t>(1 + next(24));
    opsets->at(next(opsets->size())).set_version(version);
    return true;
  }
  case 1: { // Declare a domain (maybe the default one twice).
    onnx::OperatorSetIdProto *id = opsets->Add();
    id->set_domain(pick(kDomains));
    id->set_version(1 + next(24));
    return true;
  }
  case 2:
    if (opsets->empty())
      return false;
    opsets->erase(opsets->begin() + next(opsets->size()));
    return true;
  default:
    model.set_ir_version(coin() ? static_cast<int64_t>(next(12)) : randomInt());
    return true;
  }
}

bool Mutator::mutate(onnx::ModelProto &model) {
  onnx::GraphProto &graph = *model.mutable_graph();
  switch (next(16)) {
  case 0:
  case 1:
    return mutateOpType(graph);
  case 2:
  case 3:
    return mutateNodeInputs(graph);
  case 4:
    return mutateNodeOutputs(graph);
  case 5:
  case 6:
    return mutateNodeList(graph);
  case 7:
    return mutateNodeDomain(graph);
  case 8:
  case 9:
  case 10:
    return mutateAttributes(graph);
  case 11:
  case 12:
    return mutateValueInfo(graph);
  case 13:
    return mutateInitializer(graph);
  case 14:
    return mutateGraphIO(graph);
  default:
    return mutateOpset(model);
  }
}

void Mutator::crossOver(onnx::ModelProto &model,
                        const onnx::ModelProto &other) {
  const onnx::GraphProto &from = other.graph();
  onnx::GraphProto &to = *model.mutable_graph();
  if (!from.node_size())
    return;
  uint64_t begin = next(from.node_size());
  uint64_t end = begin + 1 + next(from.node_size() - begin);
  for (uint64_t i = begin; i < end; ++i) {
    const onnx::NodeProto &node = from.node(i);
    *to.add_node() = node;
    // Bring the initializers the node reads, so that copied subgraphs are
    // often complete.
    for (const std::string &input : node.input())
      for (const onnx::TensorProto &init : from.initializer())
        if (init.name() == input)
          *to.add_initializer() = init;
  }
  // Make the last copied node's first output a graph output, so it is used.
  const onnx::NodeProto &last = from.node(end - 1);
  if (last.output_size() && coin()) {
    onnx::ValueInfoProto *out = to.add_output();
    out->set_name(last.output(0));
  }
  if (coin(4))
    for (const onnx::ValueInfoProto &input : from.input())
      *to.add_input() = input;
}

/// Writes `model` into `data` when it fits; returns its size, or 0.
static size_t serializeInto(const onnx::ModelProto &model, uint8_t *data,
                            size_t maxSize) {
  std::string bytes;
  if (!model.SerializeToString(&bytes) || bytes.empty() ||
      bytes.size() > maxSize)
    return 0;
  std::memcpy(data, bytes.data(), bytes.size());
  return bytes.size();
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  Mutator mutator(seed);
  onnx::ModelProto model;
  // Inputs that are not ModelProtos, and now and then a valid one, get
  // libFuzzer's byte-level mutations (which also reach the protobuf parser).
  if (size == 0 || (seed % 16) == 0 ||
      !model.ParseFromArray(data, static_cast<int>(size)))
    return LLVMFuzzerMutate(data, size, maxSize);

  unsigned numMutations = 1 + (seed >> 4) % 3;
  for (unsigned i = 0, tries = 0; i < numMutations && tries < 16; ++tries)
    if (mutator.mutate(model))
      ++i;
  if (size_t newSize = serializeInto(model, data, maxSize))
    return newSize;
  return LLVMFuzzerMutate(data, size, maxSize);
}

extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t *data1, size_t size1,
                                            const uint8_t *data2, size_t size2,
                                            uint8_t *out, size_t maxOutSize,
                                            unsigned seed) {
  onnx::ModelProto model, other;
  if (!model.ParseFromArray(data1, static_cast<int>(size1)) ||
      !other.ParseFromArray(data2, static_cast<int>(size2)))
    return 0;
  Mutator mutator(seed);
  mutator.crossOver(model, other);
  return serializeInto(model, out, maxOutSize);
}
