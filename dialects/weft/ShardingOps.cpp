//===- ShardingOps.cpp - Meshes, shardings and collectives ----------------===//
//
// The sharding attribute's syntax and invariants, and the verifiers of the
// mesh, the sharding constraint and the collectives.
//
//===----------------------------------------------------------------------===//

#include "weft/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/InterleavedRange.h"

using namespace mlir;
using namespace mlir::weft;

#define GET_ATTRDEF_CLASSES
#include "weft/WeftAttrs.cpp.inc"

void WeftDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "weft/WeftAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// ShardingAttr
//===----------------------------------------------------------------------===//

ShardingAttr ShardingAttr::get(FlatSymbolRefAttr mesh,
                               ArrayRef<SmallVector<int16_t>> dims,
                               ArrayRef<int16_t> partial) {
  MLIRContext *context = mesh.getContext();
  SmallVector<DenseI16ArrayAttr> dimAttrs;
  for (const SmallVector<int16_t> &axes : dims)
    dimAttrs.push_back(DenseI16ArrayAttr::get(context, axes));
  return get(context, mesh, dimAttrs, DenseI16ArrayAttr::get(context, partial));
}

ShardingAttr ShardingAttr::getReplicated(FlatSymbolRefAttr mesh,
                                         unsigned rank) {
  SmallVector<SmallVector<int16_t>> dims(rank);
  return get(mesh, dims, {});
}

bool ShardingAttr::isReplicated() const {
  return getPartial().empty() &&
         llvm::all_of(getDims(), [](DenseI16ArrayAttr a) { return a.empty(); });
}

SmallVector<int16_t> ShardingAttr::getUsedAxes() const {
  SmallVector<int16_t> axes;
  for (DenseI16ArrayAttr dim : getDims())
    llvm::append_range(axes, dim.asArrayRef());
  llvm::append_range(axes, getPartial().asArrayRef());
  return axes;
}

LogicalResult
ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                     FlatSymbolRefAttr mesh, ArrayRef<DenseI16ArrayAttr> dims,
                     DenseI16ArrayAttr partial) {
  if (!mesh)
    return emitError() << "a sharding needs a mesh";
  llvm::SmallSet<int16_t, 4> seen;
  auto check = [&](int16_t axis) -> LogicalResult {
    if (axis < 0)
      return emitError() << "mesh axis " << axis << " is negative";
    if (!seen.insert(axis).second)
      return emitError() << "mesh axis " << axis
                         << " is used more than once in one sharding";
    return success();
  };
  for (DenseI16ArrayAttr dim : dims)
    for (int16_t axis : dim.asArrayRef())
      if (failed(check(axis)))
        return failure();
  for (int16_t axis : partial.asArrayRef())
    if (failed(check(axis)))
      return failure();
  return success();
}

/// Parses `[a, b, ...]` of mesh axes.
static ParseResult parseAxisList(AsmParser &parser,
                                 SmallVectorImpl<int16_t> &axes) {
  return parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
    int16_t axis;
    if (parser.parseInteger(axis))
      return failure();
    axes.push_back(axis);
    return success();
  });
}

/// `<@mesh, [[0], [], [1]], partial [1]>`
Attribute ShardingAttr::parse(AsmParser &parser, Type) {
  FlatSymbolRefAttr mesh;
  SmallVector<SmallVector<int16_t>> dims;
  SmallVector<int16_t> partial;
  if (parser.parseLess() || parser.parseAttribute(mesh) || parser.parseComma())
    return {};
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        dims.emplace_back();
        return parseAxisList(parser, dims.back());
      }))
    return {};
  if (succeeded(parser.parseOptionalComma())) {
    if (parser.parseKeyword("partial") || parseAxisList(parser, partial))
      return {};
  }
  if (parser.parseGreater())
    return {};
  SmallVector<DenseI16ArrayAttr> dimAttrs;
  for (auto &axes : dims)
    dimAttrs.push_back(DenseI16ArrayAttr::get(parser.getContext(), axes));
  return getChecked([&] { return parser.emitError(parser.getNameLoc()); },
                    parser.getContext(), mesh, dimAttrs,
                    DenseI16ArrayAttr::get(parser.getContext(), partial));
}

void ShardingAttr::print(AsmPrinter &printer) const {
  printer << "<" << getMesh() << ", [";
  llvm::interleaveComma(getDims(), printer, [&](DenseI16ArrayAttr dim) {
    printer << "[" << llvm::interleaved(dim.asArrayRef()) << "]";
  });
  printer << "]";
  if (!getPartial().empty())
    printer << ", partial [" << llvm::interleaved(getPartial().asArrayRef())
            << "]";
  printer << ">";
}

/// Checks `sharding` against the mesh it names (looked up from `op`) and the
/// rank of the value it describes.
LogicalResult mlir::weft::verifyShardingFor(Operation *op,
                                           ShardingAttr sharding,
                                           RankedTensorType type,
                                           SymbolTableCollection *tables) {
  if (sharding.getDims().size() != static_cast<size_t>(type.getRank()))
    return op->emitOpError("sharding has ")
           << sharding.getDims().size() << " dimension(s) but the value "
           << type << " has rank " << type.getRank();
  MeshOp mesh =
      tables ? tables->lookupNearestSymbolFrom<MeshOp>(op, sharding.getMesh())
             : SymbolTable::lookupNearestSymbolFrom<MeshOp>(
                   op, sharding.getMesh());
  if (!mesh)
    return op->emitOpError("sharding names mesh ")
           << sharding.getMesh() << ", which is not a weft.mesh in scope";
  int64_t numAxes = mesh.getShape().size();
  for (int16_t axis : sharding.getUsedAxes())
    if (axis >= numAxes)
      return op->emitOpError("sharding uses mesh axis ")
             << axis << " but mesh " << sharding.getMesh() << " has "
             << numAxes << " axes";
  return success();
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

LogicalResult MeshOp::verify() {
  if (getShape().empty())
    return emitOpError("a mesh needs at least one axis");
  for (int64_t size : getShape())
    if (size < 1)
      return emitOpError("mesh axis sizes must be >= 1, got [")
             << llvm::interleaved(getShape()) << "]";
  if (std::optional<ArrayRef<int64_t>> devices = getDevices()) {
    if (static_cast<int64_t>(devices->size()) != getNumDevices())
      return emitOpError("lists ")
             << devices->size() << " devices for a mesh of "
             << getNumDevices() << " positions";
    llvm::SmallSet<int64_t, 8> seen;
    for (int64_t device : *devices)
      if (device < 0 || !seen.insert(device).second)
        return emitOpError("devices must be distinct and >= 0, got [")
               << llvm::interleaved(*devices) << "]";
  }
  return success();
}

LogicalResult ShardOp::verify() { return success(); }

LogicalResult ShardOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyShardingFor(*this, getSharding(),
                           cast<RankedTensorType>(getType()), &tables);
}

/// Checks a collective's axes: non-empty, distinct, non-negative and, when
/// the module declares one mesh, inside it.
static LogicalResult verifyAxes(Operation *op, ArrayRef<int16_t> axes) {
  if (axes.empty())
    return op->emitOpError("needs at least one mesh axis");
  llvm::SmallSet<int16_t, 4> seen;
  for (int16_t axis : axes)
    if (axis < 0 || !seen.insert(axis).second)
      return op->emitOpError("mesh axes must be distinct and >= 0, got [")
             << llvm::interleaved(axes) << "]";
  return success();
}

static int64_t sum(ArrayRef<int64_t> sizes) {
  int64_t total = 0;
  for (int64_t s : sizes)
    total += s;
  return total;
}

LogicalResult AllReduceOp::verify() { return verifyAxes(*this, getAxes()); }

/// For the block collectives: `wholeType` has the full dimension and
/// `blockType` one member's block; other dimensions agree.
static LogicalResult verifyBlocks(Operation *op, ArrayRef<int16_t> axes,
                                  int64_t dim, ArrayRef<int64_t> sizes,
                                  RankedTensorType wholeType,
                                  RankedTensorType blockType) {
  if (failed(verifyAxes(op, axes)))
    return failure();
  if (wholeType.getElementType() != blockType.getElementType())
    return op->emitOpError("operand and result element types differ");
  if (wholeType.getRank() != blockType.getRank())
    return op->emitOpError("operand and result ranks differ");
  if (dim < 0 || dim >= wholeType.getRank())
    return op->emitOpError("dim ") << dim << " is out of range for rank "
                                   << wholeType.getRank();
  if (sizes.empty() || llvm::any_of(sizes, [](int64_t s) { return s < 0; }))
    return op->emitOpError("block sizes must be >= 0, one per member");
  for (int64_t d = 0; d < wholeType.getRank(); ++d) {
    int64_t whole = wholeType.getDimSize(d), block = blockType.getDimSize(d);
    if (ShapedType::isDynamic(whole) || ShapedType::isDynamic(block))
      continue;
    if (d != dim && whole != block)
      return op->emitOpError("dimension ")
             << d << " must be the same in " << wholeType << " and "
             << blockType;
    if (d == dim && whole != sum(sizes))
      return op->emitOpError("the block sizes [")
             << llvm::interleaved(sizes) << "] add up to " << sum(sizes)
             << ", not " << whole << " (dimension " << dim << " of "
             << wholeType << ")";
    if (d == dim && !llvm::is_contained(sizes, block))
      return op->emitOpError("a block of ")
             << block << " along dimension " << dim
             << " is none of the members' sizes [" << llvm::interleaved(sizes)
             << "]";
  }
  return success();
}

LogicalResult AllGatherOp::verify() {
  return verifyBlocks(*this, getAxes(), getDim(), getSizes(),
                      cast<RankedTensorType>(getResult().getType()),
                      cast<RankedTensorType>(getInput().getType()));
}

LogicalResult ReduceScatterOp::verify() {
  return verifyBlocks(*this, getAxes(), getDim(), getSizes(),
                      cast<RankedTensorType>(getInput().getType()),
                      cast<RankedTensorType>(getResult().getType()));
}

LogicalResult LocalSliceOp::verify() {
  return verifyBlocks(*this, getAxes(), getDim(), getSizes(),
                      cast<RankedTensorType>(getInput().getType()),
                      cast<RankedTensorType>(getResult().getType()));
}

LogicalResult AllToAllOp::verify() {
  if (failed(verifyAxes(*this, getAxes())))
    return failure();
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  int64_t rank = in.getRank();
  int64_t splitDim = getSplitDim(), gatherDim = getGatherDim();
  if (in.getElementType() != out.getElementType() || out.getRank() != rank)
    return emitOpError("operand and result must have the same rank and "
                       "element type");
  if (splitDim < 0 || splitDim >= rank || gatherDim < 0 ||
      gatherDim >= rank || splitDim == gatherDim)
    return emitOpError("split_dim and gather_dim must be distinct "
                       "dimensions of the rank-")
           << rank << " operand";
  ArrayRef<int64_t> splitSizes = getSplitSizes(),
                    gatherSizes = getGatherSizes();
  if (splitSizes.size() != gatherSizes.size() || splitSizes.empty())
    return emitOpError("split_sizes and gather_sizes need one entry per "
                       "member");
  for (int64_t d = 0; d < rank; ++d) {
    int64_t a = in.getDimSize(d), b = out.getDimSize(d);
    if (ShapedType::isDynamic(a) || ShapedType::isDynamic(b))
      continue;
    if (d == splitDim && (a != sum(splitSizes) ||
                          !llvm::is_contained(splitSizes, b)))
      return emitOpError("split_dim ")
             << d << ": the operand must hold all " << sum(splitSizes)
             << " and the result one member's block";
    if (d == gatherDim && (b != sum(gatherSizes) ||
                           !llvm::is_contained(gatherSizes, a)))
      return emitOpError("gather_dim ")
             << d << ": the operand must hold one member's block and the "
             << "result all " << sum(gatherSizes);
    if (d != splitDim && d != gatherDim && a != b)
      return emitOpError("dimension ") << d << " must not change";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// The mesh a collective names
//===----------------------------------------------------------------------===//

/// The collective's mesh exists, its axes are inside it and, for `members`
/// >= 0, one block size is given per member of the group.
static LogicalResult verifyCollectiveMesh(Operation *op,
                                          FlatSymbolRefAttr meshRef,
                                          ArrayRef<int16_t> axes,
                                          int64_t members,
                                          SymbolTableCollection &tables) {
  auto mesh = tables.lookupNearestSymbolFrom<MeshOp>(op, meshRef);
  if (!mesh)
    return op->emitOpError("names mesh ")
           << meshRef << ", which is not a weft.mesh in scope";
  ArrayRef<int64_t> shape = mesh.getShape();
  int64_t group = 1;
  for (int16_t axis : axes) {
    if (axis >= static_cast<int64_t>(shape.size()))
      return op->emitOpError("runs over mesh axis ")
             << axis << " but mesh " << meshRef << " has " << shape.size()
             << " axes";
    group *= shape[axis];
  }
  if (members >= 0 && members != group)
    return op->emitOpError("gives ")
           << members << " block sizes but its group (axes ["
           << llvm::interleaved(axes) << "] of mesh " << meshRef << " ["
           << llvm::interleaved(shape) << "]) has " << group << " devices";
  return success();
}

LogicalResult AllReduceOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyCollectiveMesh(*this, getMeshAttr(), getAxes(), -1, tables);
}
LogicalResult AllGatherOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyCollectiveMesh(*this, getMeshAttr(), getAxes(),
                              getSizes().size(), tables);
}
LogicalResult ReduceScatterOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyCollectiveMesh(*this, getMeshAttr(), getAxes(),
                              getSizes().size(), tables);
}
LogicalResult LocalSliceOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyCollectiveMesh(*this, getMeshAttr(), getAxes(),
                              getSizes().size(), tables);
}
LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyCollectiveMesh(*this, getMeshAttr(), getAxes(),
                              getSplitSizes().size(), tables);
}
