//===- ShardingFile.cpp - weftc --sharding-file ---------------------------===//
//
// Parses and checks a sharding file against the imported model and the mesh,
// then inserts one weft.shard per named tensor (GSPMD-style constraints: the
// planner keeps them, the partitioner moves data to satisfy them).
//
//===----------------------------------------------------------------------===//

#include "ShardingFile.h"

#include "weft/ModelFunction.h"
#include "weft/Support/JsonFile.h"
#include "weft/Transforms/AutoShard.h"
#include "weft/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InterleavedRange.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <limits>

using namespace mlir;
using namespace mlir::weft;

namespace {
/// One checked entry of the file.
struct Constraint {
  std::string name;
  Value value;
  SmallVector<SmallVector<int16_t>> dims;
};
} // namespace

/// `$["name"]`, the JSON path of a top-level entry.
static std::string entryPath(StringRef name) {
  std::string path = "$[\"";
  for (char c : name) {
    if (c == '"' || c == '\\')
      path += '\\';
    path += c;
  }
  return path + "\"]";
}

/// A JSON value as compact text, shortened for a message.
static std::string brief(const llvm::json::Value &value) {
  std::string text = llvm::formatv("{0}", value).str();
  if (text.size() > 40)
    text = text.substr(0, 37) + "...";
  return text;
}

/// "mesh 2x2 has axes 0 and 1".
static std::string describeAxes(ArrayRef<int64_t> meshShape) {
  std::string mesh =
      llvm::formatv("mesh {0}", llvm::interleaved(meshShape, "x"));
  size_t n = meshShape.size();
  if (n == 1)
    return mesh + " has only axis 0";
  if (n == 2)
    return mesh + " has axes 0 and 1";
  return mesh + " has axes 0 to " + std::to_string(n - 1);
}

/// The closest known tensor name, when one is close enough to be a typo.
static std::optional<std::string> closestName(StringRef name,
                                              const ImportedTensors &tensors) {
  std::optional<std::string> best;
  unsigned bestDistance = std::max<unsigned>(2, name.size() / 3) + 1;
  for (const auto &entry : tensors.values) {
    unsigned d = name.edit_distance(entry.getKey(), true, bestDistance);
    if (d < bestDistance) {
      bestDistance = d;
      best = entry.getKey().str();
    }
  }
  return best;
}

/// llvm::json keeps one of two equal keys without a word; a file that names
/// a tensor twice must not lose a constraint silently. Scans the (already
/// parsed, so well-formed) text and describes the first repeated key.
static std::optional<std::string> findRepeatedKey(StringRef text) {
  struct Frame {
    bool isObject;
    std::string path;
    std::string key;   // the current member's key (objects)
    int64_t index = 0; // the current element (arrays)
    bool expectKey = true;
    llvm::StringSet<> keys;
  };
  SmallVector<Frame> stack;
  auto childPath = [&]() -> std::string {
    if (stack.empty())
      return "$";
    const Frame &top = stack.back();
    if (!top.isObject)
      return llvm::formatv("{0}[{1}]", top.path, top.index).str();
    return top.path == "$" ? entryPath(top.key) : top.path + "." + top.key;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      size_t end = i + 1;
      while (end < text.size() && text[end] != '"')
        end += text[end] == '\\' ? 2 : 1;
      StringRef literal = text.slice(i, end + 1);
      i = end;
      if (stack.empty() || !stack.back().isObject || !stack.back().expectKey)
        continue;
      Frame &top = stack.back();
      llvm::Expected<llvm::json::Value> key = llvm::json::parse(literal);
      if (!key) {
        llvm::consumeError(key.takeError());
        continue;
      }
      top.key = key->getAsString().value_or("").str();
      top.expectKey = false;
      if (top.keys.insert(top.key).second)
        continue;
      size_t line = text.take_front(i).count('\n') + 1;
      std::string where = top.path == "$" ? "$" : top.path;
      return llvm::formatv("{0}: key \"{1}\" appears twice (line {2}); "
                           "give each once",
                           where, top.key, line)
          .str();
    }
    if (c == '{' || c == '[') {
      Frame frame;
      frame.isObject = c == '{';
      frame.path = childPath();
      stack.push_back(std::move(frame));
    } else if ((c == '}' || c == ']') && !stack.empty()) {
      stack.pop_back();
    } else if (c == ',' && !stack.empty()) {
      ++stack.back().index;
      stack.back().expectKey = true;
    }
  }
  return std::nullopt;
}

/// Checks one entry; on success fills `out`, else returns the message (which
/// starts with the JSON path).
static std::optional<std::string> checkEntry(StringRef name,
                                             const llvm::json::Value &entry,
                                             ArrayRef<int64_t> meshShape,
                                             const ImportedTensors &tensors,
                                             Constraint &out) {
  std::string at = entryPath(name);
  auto it = tensors.values.find(name);
  if (it == tensors.values.end()) {
    if (tensors.dropped.contains(name))
      return at + ": tensor '" + name.str() +
             "' has no value in the imported program (no graph output "
             "depends on it, or weft computed it while importing, as it "
             "does shapes), so it cannot be sharded";
    std::string message =
        at + ": the model has no tensor named '" + name.str() + "'";
    if (std::optional<std::string> close = closestName(name, tensors))
      message += "; did you mean '" + *close + "'?";
    return message;
  }
  Value value = it->second;
  if (value.use_empty())
    return at + ": the model's outputs do not depend on tensor '" + name.str() +
           "', so it cannot be sharded";
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type)
    return at + ": tensor '" + name.str() + "' is not a ranked tensor";

  const llvm::json::Object *object = entry.getAsObject();
  if (!object)
    return at +
           ": expected an object {\"dims\": [[mesh axes] per tensor "
           "dimension]}, got " +
           brief(entry);
  // Keys in a fixed order, so that the first complaint is always the same.
  SmallVector<std::string> keys;
  for (const auto &member : *object)
    keys.push_back(member.first.str());
  llvm::sort(keys);
  for (const std::string &key : keys)
    if (key != "dims")
      return at + "." + key + ": unknown key (an entry has only \"dims\")";
  const llvm::json::Value *dimsValue = object->get("dims");
  if (!dimsValue)
    return at + ": missing \"dims\" (for each tensor dimension, the list of "
                "mesh axes it is split over)";
  const llvm::json::Array *dims = dimsValue->getAsArray();
  if (!dims)
    return at +
           ".dims: expected a list with one list of mesh axes per "
           "tensor dimension, got " +
           brief(*dimsValue);
  std::string typeText;
  llvm::raw_string_ostream(typeText) << type;
  if (dims->size() != static_cast<size_t>(type.getRank()))
    return llvm::formatv("{0}.dims: {1} entr{2}, but tensor '{3}' has rank "
                         "{4} ({5})",
                         at, dims->size(), dims->size() == 1 ? "y" : "ies",
                         name, type.getRank(), typeText)
        .str();

  // Where each axis was first used, for the "used twice" message.
  llvm::DenseMap<int64_t, std::string> usedAt;
  out.dims.clear();
  for (auto [d, axesValue] : llvm::enumerate(*dims)) {
    std::string dimAt = llvm::formatv("{0}.dims[{1}]", at, d).str();
    const llvm::json::Array *axes = axesValue.getAsArray();
    if (!axes)
      return dimAt +
             ": expected a list of mesh axes (such as [0], or [] "
             "for a whole dimension), got " +
             brief(axesValue);
    SmallVector<int16_t> list;
    for (auto [k, axisValue] : llvm::enumerate(*axes)) {
      std::string axisAt = llvm::formatv("{0}[{1}]", dimAt, k).str();
      std::optional<int64_t> axis = axisValue.getAsInteger();
      if (!axis)
        return axisAt + ": a mesh axis must be an integer, got " +
               brief(axisValue);
      if (*axis < 0 || *axis >= static_cast<int64_t>(meshShape.size()))
        return llvm::formatv("{0}: mesh axis {1} does not exist: {2}", axisAt,
                             *axis, describeAxes(meshShape))
            .str();
      auto [first, inserted] = usedAt.try_emplace(*axis, axisAt);
      if (!inserted)
        return llvm::formatv("{0}: mesh axis {1} is used twice (also at "
                             "{2}); a tensor is split at most once over an "
                             "axis",
                             axisAt, *axis, first->second)
            .str();
      list.push_back(static_cast<int16_t>(*axis));
    }
    out.dims.push_back(std::move(list));
  }
  out.name = name.str();
  out.value = value;
  return std::nullopt;
}

LogicalResult mlir::weft::applyShardingFile(
    ModuleOp module, StringRef path, ArrayRef<int64_t> meshShape,
    const ImportedTensors &tensors, std::vector<std::string> &constrained) {
  MLIRContext *context = module.getContext();
  Location fileLoc = FileLineColLoc::get(context, path, 0, 0);
  std::string prefix = "--sharding-file '" + path.str() + "': ";
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return emitError(fileLoc) << "cannot read --sharding-file '" << path
                              << "': " << buffer.getError().message();
  llvm::Expected<llvm::json::Value> parsed =
      ::weft::parseJson((*buffer)->getBuffer());
  if (!parsed)
    return emitError(fileLoc)
           << prefix
           << "not valid JSON: " << llvm::toString(parsed.takeError());
  if (std::optional<std::string> repeated =
          findRepeatedKey((*buffer)->getBuffer()))
    return emitError(fileLoc) << prefix << *repeated;
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    return emitError(fileLoc)
           << prefix
           << "$: expected an object mapping ONNX tensor names to "
              "{\"dims\": [[mesh axes] per tensor dimension]}, got "
           << brief(*parsed);
  std::string noModel;
  func::FuncOp func = lookupModelFunction(module, &noModel);
  if (!func)
    return emitError(fileLoc) << prefix << noModel;

  SmallVector<std::string> names;
  for (const auto &member : *root)
    names.push_back(member.first.str());
  llvm::sort(names);
  std::vector<Constraint> constraints;
  llvm::DenseMap<Value, size_t> byValue;
  bool ok = true;
  for (const std::string &name : names) {
    Constraint c;
    std::optional<std::string> problem =
        checkEntry(name, *root->get(name), meshShape, tensors, c);
    if (!problem) {
      auto [it, inserted] = byValue.try_emplace(c.value, constraints.size());
      if (inserted) {
        constraints.push_back(std::move(c));
        continue;
      }
      // Two names for one value: the same constraint is fine, two are not.
      const Constraint &first = constraints[it->second];
      if (first.dims == c.dims)
        continue;
      problem = entryPath(name) + ": tensor '" + name +
                "' is the same value as '" + first.name +
                "' in the imported program (an Identity, or an op weft "
                "folds away), which the file shards differently";
    }
    emitError(fileLoc) << prefix << *problem;
    ok = false;
  }
  if (!ok)
    return failure();
  if (constraints.empty())
    emitWarning(fileLoc) << prefix
                         << "names no tensor: the plan is unconstrained";

  // The mesh the constraints name; autoShard declares it again, equal.
  OpBuilder b(context);
  if (auto old = module.lookupSymbol<MeshOp>(kMeshName))
    old.erase();
  b.setInsertionPointToStart(module.getBody());
  MeshOp::create(b, module.getLoc(), kMeshName, meshShape);
  auto meshRef = FlatSymbolRefAttr::get(context, kMeshName);

  // Arguments' constraints go first in the body, in argument order.
  Block &body = func.getBody().front();
  llvm::sort(constraints, [](const Constraint &a, const Constraint &b) {
    auto argA = dyn_cast<BlockArgument>(a.value);
    auto argB = dyn_cast<BlockArgument>(b.value);
    if (argA && argB)
      return argA.getArgNumber() < argB.getArgNumber();
    return argA && !argB;
  });
  OpBuilder::InsertPoint afterArguments(&body, body.begin());
  for (const Constraint &c : constraints) {
    Value value = c.value;
    if (isa<BlockArgument>(value))
      b.restoreInsertionPoint(afterArguments);
    else
      b.setInsertionPointAfterValue(value);
    // The tensor's name, in the sharding file: plan.json and --report name
    // the constraint after the tensor.
    Location loc = NameLoc::get(StringAttr::get(context, c.name), fileLoc);
    auto shard =
        ShardOp::create(b, loc, value, ShardingAttr::get(meshRef, c.dims, {}));
    value.replaceAllUsesExcept(shard.getResult(), shard);
    if (isa<BlockArgument>(value))
      afterArguments = b.saveInsertionPoint();
    constrained.push_back(c.name);
  }
  return success();
}

LogicalResult
mlir::weft::checkConstraintsAfterFolding(ModuleOp module, StringRef path,
                                         ArrayRef<std::string> constrained) {
  func::FuncOp func = lookupModelFunction(module);
  if (!func)
    return success();
  Location fileLoc = FileLineColLoc::get(module.getContext(), path, 0, 0);
  std::string prefix = "--sharding-file '" + path.str() + "': ";
  auto nameOf = [](Operation *op) {
    if (auto named = dyn_cast<NameLoc>(op->getLoc()))
      return named.getName().str();
    return op->getName().getStringRef().str();
  };
  bool ok = true;
  llvm::StringSet<> present;
  func.walk([&](ShardOp shard) {
    present.insert(nameOf(shard));
    for (Operation *user : shard.getResult().getUsers()) {
      bool unknown = llvm::any_of(user->getResultTypes(), [](Type t) {
        auto tensor = dyn_cast<RankedTensorType>(t);
        return tensor && !tensor.hasStaticShape();
      });
      if (!unknown)
        continue;
      emitError(fileLoc) << prefix << "tensor '" << nameOf(shard)
                         << "' is read as a shape by node '" << nameOf(user)
                         << "' (" << user->getName()
                         << "), whose result shape then cannot be known "
                            "when compiling; only data tensors can be "
                            "sharded: remove '"
                         << nameOf(shard) << "' from the file";
      ok = false;
      return;
    }
  });
  for (const std::string &name : constrained) {
    if (present.contains(name))
      continue;
    emitError(fileLoc) << prefix << "tensor '" << name
                       << "' is only read as a shape or an index, not as "
                          "data: weftc folds it into the ops that read it, "
                          "so a sharding cannot apply; remove '"
                       << name << "' from the file";
    ok = false;
  }
  return success(ok);
}
