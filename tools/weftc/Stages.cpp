//===- Stages.cpp - Which ops and devices each pipeline stage gets --------===//

#include "Stages.h"

#include "weft/Codegen/ProgramABI.h"
#include "weft/Plan/CostModel.h"
#include "weft/Plan/StageCut.h"
#include "weft/Support/JsonFile.h"
#include "weft/Transforms/ShardingRules.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <limits>
#include <set>

using namespace mlir;
using namespace mlir::weft;
namespace plan = ::weft::plan;
namespace json = llvm::json;

/// On the op that computes a stage's end tensor: the stages that end there.
static constexpr llvm::StringLiteral kStageEndAttr = "weft.stage_end";

//===----------------------------------------------------------------------===//
// The pipeline file
//===----------------------------------------------------------------------===//

static std::string brief(const json::Value &value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << value;
  if (text.size() > 40)
    text = text.substr(0, 37) + "...";
  return text;
}

/// A non-negative integer list at `key` of `object`.
static llvm::Error readIntegers(const json::Object &object, StringRef key,
                                const std::string &where, int64_t minimum,
                                std::vector<int64_t> &out) {
  const json::Array *array = object.getArray(key);
  if (!array)
    return llvm::createStringError(where + "." + key.str() +
                                   ": expected a list of integers, got " +
                                   brief(*object.get(key)));
  for (auto [i, entry] : llvm::enumerate(*array)) {
    std::optional<int64_t> value = entry.getAsInteger();
    if (!value || *value < minimum)
      return llvm::createStringError(
          where + "." + key.str() + "[" + std::to_string(i) +
          "]: expected an integer >= " + std::to_string(minimum) + ", got " +
          brief(entry));
    out.push_back(*value);
  }
  return llvm::Error::success();
}

static llvm::Expected<std::vector<StageRequest>>
parsePipeline(const json::Value &root, int64_t numDevices) {
  auto fail = [](const Twine &message) {
    return llvm::createStringError(message);
  };
  const json::Object *object = root.getAsObject();
  if (!object)
    return fail("$: expected an object {\"stages\": [...]}, got " +
                brief(root));
  for (const auto &member : *object)
    if (member.first != "stages")
      return fail("$." + member.first.str() +
                  ": unknown key (a pipeline file has \"stages\")");
  const json::Array *list = object->getArray("stages");
  if (!list)
    return fail("$.stages: expected a list of stages");
  if (list->empty())
    return fail("$.stages: a pipeline has at least one stage");
  std::vector<StageRequest> stages;
  std::map<int64_t, size_t> owner;
  for (auto [k, entry] : llvm::enumerate(*list)) {
    std::string where = "$.stages[" + std::to_string(k) + "]";
    const json::Object *stage = entry.getAsObject();
    if (!stage)
      return fail(where + ": expected an object, got " + brief(entry));
    for (const auto &member : *stage)
      if (!llvm::is_contained({"devices", "mesh_shape", "sharding", "ends"},
                              member.first))
        return fail(where + "." + member.first.str() +
                    ": unknown key (a stage has \"devices\", \"mesh_shape\", "
                    "\"sharding\" and \"ends\")");
    StageRequest request;
    if (!stage->get("devices"))
      return fail(where + ": no \"devices\" (the cluster device indices of "
                          "the stage)");
    if (llvm::Error error =
            readIntegers(*stage, "devices", where, 0, request.devices))
      return std::move(error);
    if (request.devices.empty())
      return fail(where + ".devices: a stage needs at least one device");
    for (auto [i, device] : llvm::enumerate(request.devices)) {
      std::string at = where + ".devices[" + std::to_string(i) + "]";
      if (device >= numDevices)
        return fail(at + ": device " + Twine(device) +
                    " is not in the cluster (devices 0 to " +
                    Twine(numDevices - 1) + ")");
      auto [it, inserted] = owner.try_emplace(device, k);
      if (!inserted)
        return fail(at + ": device " + Twine(device) + " is also in stage " +
                    Twine(it->second) + " (stages use disjoint devices)");
    }
    if (stage->get("mesh_shape")) {
      if (llvm::Error error =
              readIntegers(*stage, "mesh_shape", where, 1, request.meshShape))
        return std::move(error);
      if (request.meshShape.empty() ||
          request.meshShape.size() > static_cast<size_t>(plan::kMaxMeshAxes))
        return fail(where + ".mesh_shape: a mesh has 1 to " +
                    Twine(plan::kMaxMeshAxes) + " axes");
      int64_t product = 1;
      for (int64_t d : request.meshShape)
        product *= d;
      if (product != static_cast<int64_t>(request.devices.size()))
        return fail(where + ".mesh_shape: " + brief(*stage->get("mesh_shape")) +
                    " holds " + Twine(product) + " devices but the stage has " +
                    Twine(request.devices.size()));
    } else {
      request.meshShape = {static_cast<int64_t>(request.devices.size())};
    }
    if (const json::Value *sharding = stage->get("sharding")) {
      std::optional<StringRef> text = sharding->getAsString();
      std::optional<ShardingMode> mode =
          text ? parseShardingMode(*text) : std::nullopt;
      if (!mode)
        return fail(where + ".sharding: expected \"auto\", \"dp\", \"tp\" or "
                            "\"replicate\", got " +
                    brief(*sharding));
      request.mode = mode;
    }
    bool last = k + 1 == list->size();
    if (const json::Value *ends = stage->get("ends")) {
      if (last)
        return fail(where + ".ends: the last stage takes the rest of the "
                            "model and has no ends");
      const json::Array *names = ends->getAsArray();
      if (!names || names->empty())
        return fail(where + ".ends: expected a non-empty list of ONNX tensor "
                            "names, got " +
                    brief(*ends));
      for (auto [i, name] : llvm::enumerate(*names)) {
        std::optional<StringRef> text = name.getAsString();
        if (!text)
          return fail(where + ".ends[" + std::to_string(i) +
                      "]: expected a tensor name, got " + brief(name));
        request.ends.push_back(text->str());
      }
    } else if (!last) {
      return fail(where + ": no \"ends\" (the ONNX tensors where the stage "
                          "ends; only the last stage has none)");
    }
    stages.push_back(std::move(request));
  }
  return stages;
}

llvm::Expected<std::vector<StageRequest>>
mlir::weft::readPipelineFile(StringRef path, int64_t numDevices) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError("--pipeline-file " + path + ": " +
                                   buffer.getError().message());
  llvm::Expected<json::Value> root = ::weft::parseJson((*buffer)->getBuffer());
  if (!root)
    return llvm::createStringError("--pipeline-file " + path +
                                   ": not valid JSON: " +
                                   llvm::toString(root.takeError()));
  llvm::Expected<std::vector<StageRequest>> stages =
      parsePipeline(*root, numDevices);
  if (!stages)
    return llvm::createStringError("--pipeline-file " + path + ": " +
                                   llvm::toString(stages.takeError()));
  return stages;
}

//===----------------------------------------------------------------------===//
// Stages by their end tensors
//===----------------------------------------------------------------------===//

LogicalResult mlir::weft::markStageEnds(func::FuncOp func, StringRef path,
                                        ArrayRef<StageRequest> stages,
                                        const ImportedTensors &tensors) {
  Builder b(func.getContext());
  for (auto [k, stage] : llvm::enumerate(stages)) {
    for (auto [i, name] : llvm::enumerate(stage.ends)) {
      std::string where = "--pipeline-file " + path.str() + ": $.stages[" +
                          std::to_string(k) + "].ends[" + std::to_string(i) +
                          "]: ";
      auto it = tensors.values.find(name);
      if (it == tensors.values.end()) {
        std::string why = tensors.dropped.contains(name)
                              ? "no output of the model depends on it"
                              : "the model has no tensor of that name";
        return func.emitError() << where << "tensor '" << name
                                << "': " << why;
      }
      Value value = it->second;
      Operation *producer = value.getDefiningOp();
      if (!producer)
        return func.emitError()
               << where << "tensor '" << name
               << "' is an input of the model, which every device has; a "
                  "stage ends at a tensor it computes";
      if (isReplicableOp(producer))
        return func.emitError()
               << where << "tensor '" << name
               << "' is a weight or constant, which every stage that uses "
                  "it holds; a stage ends at a tensor it computes";
      SmallVector<int64_t> marks;
      if (auto old = producer->getAttrOfType<DenseI64ArrayAttr>(kStageEndAttr))
        marks.assign(old.asArrayRef().begin(), old.asArrayRef().end());
      marks.push_back(static_cast<int64_t>(k));
      producer->setAttr(kStageEndAttr, b.getDenseI64ArrayAttr(marks));
    }
  }
  return success();
}

FailureOr<StageAssignment>
mlir::weft::assignStagesByEnds(func::FuncOp func, StringRef path,
                               ArrayRef<StageRequest> stages) {
  Block &body = func.getBody().front();
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  int numStages = static_cast<int>(stages.size());
  std::vector<SmallVector<Operation *>> ends(numStages);
  for (Operation *op : ops)
    if (auto marks = op->getAttrOfType<DenseI64ArrayAttr>(kStageEndAttr)) {
      for (int64_t k : marks.asArrayRef())
        ends[k].push_back(op);
      op->removeAttr(kStageEndAttr);
    }
  for (int k = 0; k + 1 < numStages; ++k)
    if (ends[k].size() < 1)
      return func.emitError()
             << "--pipeline-file " << path << ": $.stages[" << k
             << "].ends: the simplifier merged the ops computing these "
                "tensors into others; end the stage at a tensor nearby";

  DenseMap<Operation *, int> stageOf;
  for (int k = 0; k + 1 < numStages; ++k) {
    // Everything the ends depend on that no earlier stage computes.
    SmallVector<Operation *> work(ends[k].begin(), ends[k].end());
    for (Operation *end : ends[k])
      if (auto it = stageOf.find(end); it != stageOf.end())
        return end->emitError()
               << "--pipeline-file " << path << ": stage " << k
               << " ends here, but stage " << it->second
               << " already computes it (it needs it for its own ends): list "
                  "the stages in the model's order";
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (isReplicableOp(op) || stageOf.count(op))
        continue;
      stageOf[op] = k;
      for (Value operand : op->getOperands())
        if (Operation *producer = operand.getDefiningOp())
          work.push_back(producer);
    }
  }
  StageAssignment assignment;
  assignment.numStages = numStages;
  std::vector<int64_t> counts(numStages, 0);
  for (Operation *op : ops) {
    int stage = numStages - 1;
    if (auto it = stageOf.find(op); it != stageOf.end())
      stage = it->second;
    assignment.stageOfOp.push_back(stage);
    if (!isReplicableOp(op))
      ++counts[stage];
  }
  for (int k = 0; k < numStages; ++k)
    if (counts[k] == 0)
      return func.emitError()
             << "--pipeline-file " << path << ": stage " << k
             << " computes nothing: its ends are computed by earlier stages"
             << (k + 1 == numStages ? " (the last stage takes what the others "
                                      "leave, and nothing is left)"
                                    : "");
  return assignment;
}

//===----------------------------------------------------------------------===//
// The balanced rule
//===----------------------------------------------------------------------===//

double mlir::weft::tensorBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  double bytes = std::max<int64_t>(1, tensor.getElementTypeBitWidth() / 8);
  for (int64_t d : tensor.getShape())
    bytes *= static_cast<double>(d);
  return bytes;
}

double mlir::weft::opSecondsOnOneDevice(Operation *op,
                                        const plan::Cluster &cluster,
                                        int device) {
  plan::Mesh one;
  one.name = "one";
  one.shape = {1};
  one.devices = {device};
  plan::CostModel costs(cluster, one);
  // As the planner prices ops (AutoShard.cpp): a weight or constant costs
  // nothing itself (its users read it), and an operand read in part (a
  // gather's table) counts as many bytes as the result.
  if (isa<WeightOp, ConstantOp>(op))
    return 0;
  std::optional<LoopSpace> space = getLoopSpace(op);
  double flops = space ? space->flops : 0;
  double resultBytes = 0;
  for (Value v : op->getResults())
    resultBytes += tensorBytes(v.getType());
  double bytes = resultBytes;
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    double operand = tensorBytes(v.getType());
    if (space && i < space->operandReadInPart.size() &&
        space->operandReadInPart[i])
      operand = std::min(operand, resultBytes);
    bytes += operand;
  }
  return costs.computeSeconds(flops, bytes, plan::DType::F32,
                              kernelClassOf(op));
}

/// The tensors main's compute ops (numbered by `indexOf`) hold, for the memory
/// of the balanced rule's stages: the model's inputs, its weights and constants
/// (from outside the ops), and every compute op's results. Each is counted as a
/// buffer of the stage's program, 64-byte aligned, as the stage's planner
/// counts it.
static std::vector<plan::HeldTensor>
heldTensors(Block &body, const DenseMap<Operation *, int64_t> &indexOf) {
  llvm::SmallPtrSet<Value, 8> outputs;
  for (Value output : body.getTerminator()->getOperands())
    outputs.insert(output);
  std::vector<plan::HeldTensor> tensors;
  auto add = [&](Value value, int64_t producer, bool isWeight) {
    plan::HeldTensor tensor;
    double bytes = tensorBytes(value.getType());
    tensor.bytes = std::ceil(bytes / kBufferAlignment) * kBufferAlignment;
    tensor.producer = producer;
    for (Operation *user : value.getUsers())
      if (auto it = indexOf.find(user); it != indexOf.end())
        tensor.readers.push_back(it->second);
    llvm::sort(tensor.readers);
    tensor.readers.erase(llvm::unique(tensor.readers), tensor.readers.end());
    tensor.isModelOutput = producer >= 0 && outputs.contains(value);
    tensor.isWeight = isWeight;
    tensors.push_back(std::move(tensor));
  };
  for (BlockArgument input : body.getArguments())
    add(input, plan::HeldTensor::kFromOutside, /*isWeight=*/false);
  for (Operation &op : body.without_terminator()) {
    auto it = indexOf.find(&op);
    for (Value result : op.getResults()) {
      if (it == indexOf.end())
        add(result, plan::HeldTensor::kFromOutside, /*isWeight=*/true);
      else
        add(result, it->second, /*isWeight=*/false);
    }
  }
  return tensors;
}

FailureOr<StageAssignment> mlir::weft::assignBalancedStages(
    func::FuncOp func, int64_t numStages, const plan::Cluster &cluster,
    ArrayRef<int> devices, std::vector<StageRequest> &stages,
    std::vector<double> &work) {
  Block &body = func.getBody().front();
  SmallVector<Operation *> ops;
  std::vector<double> costs;
  // Weights and constants are not ops of a stage: every stage that reads
  // one holds it.
  DenseMap<Operation *, int64_t> indexOf;
  for (Operation &op : body.without_terminator()) {
    ops.push_back(&op);
    if (isReplicableOp(&op))
      continue;
    indexOf[&op] = costs.size();
    costs.push_back(opSecondsOnOneDevice(&op, cluster, devices.front()));
  }
  if (numStages > static_cast<int64_t>(costs.size()))
    return func.emitError() << "--stages=" << numStages << ": the model has "
                            << costs.size()
                            << " ops to compute, fewer than the stages";
  // Every stage's weights and activations should fit its smallest device
  // even replicated: the fastest cut among those, so that a model no single
  // device holds is spread over the stages (the planner then checks each
  // stage's plan).
  double memory = std::numeric_limits<double>::infinity();
  for (int device : devices)
    memory = std::min(memory,
                      cluster.kinds[cluster.devices[device].kind].memoryBytes);
  plan::StageCut cut =
      plan::balancedCut(costs, numStages, heldTensors(body, indexOf), memory);
  if (!cut.withinMemory) {
    size_t most = std::max_element(cut.memory.begin(), cut.memory.end()) -
                  cut.memory.begin();
    func.emitWarning() << "--stages=" << numStages << ": no cut into "
                       << numStages << " stages keeps every stage's weights "
                       << "and activations within a device's memory ("
                       << static_cast<int64_t>(memory)
                       << " bytes); cut by predicted time alone, the largest "
                       << "stage holding "
                       << static_cast<int64_t>(cut.memory[most]) << " bytes ("
                       << static_cast<int64_t>(cut.weightMemory[most])
                       << " of weights, "
                       << static_cast<int64_t>(cut.memory[most] -
                                               cut.weightMemory[most])
                       << " of activations)";
  }
  StageAssignment assignment;
  assignment.numStages = static_cast<int>(numStages);
  int64_t computeIndex = 0;
  int stage = 0;
  for (Operation *op : ops) {
    if (!isReplicableOp(op)) {
      while (computeIndex >= cut.firstOp[stage + 1])
        ++stage;
      ++computeIndex;
    }
    assignment.stageOfOp.push_back(stage);
  }
  std::vector<int64_t> counts =
      plan::allocateDevices(cut.work, static_cast<int64_t>(devices.size()));
  size_t next = 0;
  stages.clear();
  for (int64_t k = 0; k < numStages; ++k) {
    StageRequest request;
    for (int64_t i = 0; i < counts[k]; ++i)
      request.devices.push_back(devices[next++]);
    request.meshShape = {counts[k]};
    stages.push_back(std::move(request));
  }
  work = cut.work;
  return assignment;
}
