//===- RankTransfer.cpp - One rank's part of a resharding plan ------------===//
//
// Every collective here goes through weft_rt_collective with the parameter
// layouts of weft_rt.h: ALL_REDUCE_SUM in place; REDUCE_SCATTER_SUM,
// ALL_GATHER and LOCAL_SLICE as [outer, dim, inner] with the dimension's
// blocks (blockSizes) in group-rank order; ALL_TO_ALL as [outer, first,
// mid, second, inner]. SEND and RECV carry message i of the plan with tag
// i between world ranks; a broadcast call is one BROADCAST tagged with its
// first message's index, over its group or the world. Each block a collective
// makes is compared with the block of the sharding it should give: a difference
// is an internal error (a plan the runtime's collectives cannot carry out), not
// a wrong value found later.
//
//===----------------------------------------------------------------------===//

#include "RankTransfer.h"

#include "weft/Plan/ReshardText.h"
#include "weft/Plan/Sharding.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <map>
#include <set>

using namespace llvm;
using namespace weft::plan;
using namespace weft::reshard;

char RankError::ID = 0;

static Error rankError(const Twine &message, int exitCode) {
  return make_error<RankError>(message.str(), exitCode);
}

/// An invariant of the plan or of this program that does not hold.
static Error internal(const Twine &message) {
  return rankError("internal: " + message, 70);
}

int RankSetup::worldRankOf(int device) const {
  auto it = llvm::lower_bound(world, device);
  if (it == world.end() || *it != device)
    return -1;
  return static_cast<int>(it - world.begin());
}

Values RankSetup::values() const {
  const ReshardSide &source = request->problem.source;
  Values values;
  values.shape = request->problem.shape;
  values.dtype = request->dtype;
  values.members = groupSize(source.mesh.shape, source.sharding.partial);
  return values;
}

int32_t weft::reshard::runtimeDType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return WEFT_RT_F32;
  case DType::F16:
    return WEFT_RT_F16;
  case DType::BF16:
    return WEFT_RT_BF16;
  case DType::F64:
    return WEFT_RT_F64;
  case DType::I8:
    return WEFT_RT_I8;
  case DType::I32:
    return WEFT_RT_I32;
  case DType::I64:
    return WEFT_RT_I64;
  case DType::Bool:
    return WEFT_RT_BOOL;
  }
  return WEFT_RT_F32;
}

std::optional<Block> weft::reshard::makeSourceBlock(const RankSetup &setup) {
  if (setup.sourcePosition < 0)
    return std::nullopt;
  const ReshardProblem &problem = setup.request->problem;
  const ReshardSide &source = problem.source;
  Block block = Block::zeros(blockBox(problem.shape, source.sharding,
                                      source.mesh.shape, setup.sourcePosition),
                             problem.elementBytes);
  Values values = setup.values();
  int64_t member = values.members > 1
                       ? groupIndex(source.mesh.shape, source.sharding.partial,
                                    setup.sourcePosition)
                       : 0;
  fillBlock(block, values, member);
  return block;
}

//===----------------------------------------------------------------------===//
// Collectives over the source mesh
//===----------------------------------------------------------------------===//

namespace {

/// The collectives of one rank over its mesh (the source mesh).
class MeshCollectives {
public:
  MeshCollectives(const RankSetup &setup)
      : setup(setup), shape(setup.request->problem.shape),
        meshShape(setup.request->problem.source.mesh.shape),
        position(setup.sourcePosition) {}

  /// Sums `block` over the group of `axes`, in place.
  Error allReduce(Block &block, ArrayRef<int> axes);
  /// The collectives below turn `block` into the block of `after` (the
  /// sharding once the step is done) and check that they agree.
  Expected<Block> reduceScatter(const Block &block, ArrayRef<int> axes, int dim,
                                const TensorSharding &after);
  Expected<Block> allGather(const Block &block, ArrayRef<int> axes, int dim,
                            const TensorSharding &after);
  Expected<Block> allToAll(const Block &block, ArrayRef<int> axes, int dim,
                           int splitDim, const TensorSharding &after);
  Expected<Block> localSlice(const Block &block, ArrayRef<int> axes, int dim,
                             const TensorSharding &after);

private:
  /// kind, dtype, A, axes[A].
  SmallVector<int64_t, 32> header(int64_t kind, ArrayRef<int> axes) const;
  Error call(ArrayRef<int64_t> params, const void *in, void *out,
             const Twine &what) const;
  /// The product of `sizes` over [begin, end).
  static int64_t product(ArrayRef<int64_t> sizes, size_t begin, size_t end);
  /// An error unless `made` is the block of `after` at this position.
  Error expectBlock(const Box &made, const TensorSharding &after,
                    const Twine &what) const;

  const RankSetup &setup;
  ArrayRef<int64_t> shape;
  ArrayRef<int64_t> meshShape;
  int64_t position;
};

} // namespace

SmallVector<int64_t, 32> MeshCollectives::header(int64_t kind,
                                                 ArrayRef<int> axes) const {
  SmallVector<int64_t, 32> params = {kind, setup.runtimeDType,
                                     static_cast<int64_t>(axes.size())};
  params.append(axes.begin(), axes.end());
  return params;
}

Error MeshCollectives::call(ArrayRef<int64_t> params, const void *in, void *out,
                            const Twine &what) const {
  weft_rt_status status = weft_rt_collective(setup.ctx, params.data(), in, out);
  if (status == WEFT_RT_OK)
    return Error::success();
  return rankError(what + ": " + weft_rt_context_error(setup.ctx),
                   status == WEFT_RT_COMM_ERROR ? 4 : 70);
}

int64_t MeshCollectives::product(ArrayRef<int64_t> sizes, size_t begin,
                                 size_t end) {
  int64_t result = 1;
  for (size_t d = begin; d < end; ++d)
    result *= sizes[d];
  return result;
}

Error MeshCollectives::expectBlock(const Box &made, const TensorSharding &after,
                                   const Twine &what) const {
  Box expected = blockBox(shape, after, meshShape, position);
  if (made == expected)
    return Error::success();
  return internal(what + " gives the block " + made.str() +
                  " at mesh position " + Twine(position) +
                  ", but the sharding " + after.str() + " has " +
                  expected.str() + " there");
}

Error MeshCollectives::allReduce(Block &block, ArrayRef<int> axes) {
  SmallVector<int64_t, 32> params = header(WEFT_RT_ALL_REDUCE_SUM, axes);
  params.push_back(block.elements());
  return call(params, block.data.data(), block.data.data(), "all_reduce");
}

Expected<Block> MeshCollectives::reduceScatter(const Block &block,
                                               ArrayRef<int> axes, int dim,
                                               const TensorSharding &after) {
  const std::vector<int64_t> &sizes = block.box.sizes;
  if (block.box.offsets[dim] != 0 || sizes[dim] != shape[dim])
    return internal(
        "reduce_scatter onto dim " + Twine(dim) +
        " of a block that does not hold all of it: " + block.box.str());
  int64_t parts = groupSize(meshShape, axes);
  int64_t member = groupIndex(meshShape, axes, position);
  std::vector<int64_t> blocks = blockSizes(shape[dim], parts);
  SmallVector<int64_t, 32> params = header(WEFT_RT_REDUCE_SCATTER_SUM, axes);
  params.append(
      {product(sizes, 0, dim), product(sizes, dim + 1, sizes.size()), parts});
  params.append(blocks.begin(), blocks.end());
  Box box = block.box;
  box.offsets[dim] = blockOffset(shape[dim], parts, member);
  box.sizes[dim] = blocks[member];
  Block out = Block::zeros(box, block.elementBytes);
  if (Error error =
          call(params, block.data.data(), out.data.data(), "reduce_scatter"))
    return std::move(error);
  if (Error error =
          expectBlock(out.box, after, "reduce_scatter onto dim " + Twine(dim)))
    return std::move(error);
  return out;
}

Expected<Block> MeshCollectives::allGather(const Block &block,
                                           ArrayRef<int> axes, int dim,
                                           const TensorSharding &after) {
  const std::vector<int64_t> &sizes = block.box.sizes;
  int64_t parts = groupSize(meshShape, axes);
  int64_t member = groupIndex(meshShape, axes, position);
  std::vector<int64_t> blocks = blockSizes(shape[dim], parts);
  if (sizes[dim] != blocks[member] ||
      block.box.offsets[dim] != blockOffset(shape[dim], parts, member))
    return internal("all_gather of dim " + Twine(dim) + ": the block " +
                    block.box.str() + " is not block " + Twine(member) +
                    " of " + Twine(parts));
  SmallVector<int64_t, 32> params = header(WEFT_RT_ALL_GATHER, axes);
  params.append(
      {product(sizes, 0, dim), product(sizes, dim + 1, sizes.size()), parts});
  params.append(blocks.begin(), blocks.end());
  Box box = block.box;
  box.offsets[dim] = 0;
  box.sizes[dim] = shape[dim];
  Block out = Block::zeros(box, block.elementBytes);
  if (Error error =
          call(params, block.data.data(), out.data.data(), "all_gather"))
    return std::move(error);
  if (Error error =
          expectBlock(out.box, after, "all_gather of dim " + Twine(dim)))
    return std::move(error);
  return out;
}

Expected<Block> MeshCollectives::allToAll(const Block &block,
                                          ArrayRef<int> axes, int dim,
                                          int splitDim,
                                          const TensorSharding &after) {
  // `dim` is split and becomes whole (gathered); `splitDim` is whole and
  // becomes split.
  const std::vector<int64_t> &sizes = block.box.sizes;
  int64_t parts = groupSize(meshShape, axes);
  int64_t member = groupIndex(meshShape, axes, position);
  std::vector<int64_t> gather = blockSizes(shape[dim], parts);
  std::vector<int64_t> split = blockSizes(shape[splitDim], parts);
  if (sizes[dim] != gather[member] || sizes[splitDim] != shape[splitDim])
    return internal("all_to_all of dims " + Twine(dim) + " and " +
                    Twine(splitDim) + ": unexpected block " + block.box.str());
  int first = std::min(dim, splitDim), second = std::max(dim, splitDim);
  SmallVector<int64_t, 32> params = header(WEFT_RT_ALL_TO_ALL, axes);
  params.append({product(sizes, 0, first), product(sizes, first + 1, second),
                 product(sizes, second + 1, sizes.size()),
                 // gather_first: the gathered dim comes first.
                 dim < splitDim ? 1 : 0, parts});
  params.append(split.begin(), split.end());
  params.append(gather.begin(), gather.end());
  Box box = block.box;
  box.offsets[dim] = 0;
  box.sizes[dim] = shape[dim];
  box.offsets[splitDim] = blockOffset(shape[splitDim], parts, member);
  box.sizes[splitDim] = split[member];
  Block out = Block::zeros(box, block.elementBytes);
  if (Error error =
          call(params, block.data.data(), out.data.data(), "all_to_all"))
    return std::move(error);
  if (Error error = expectBlock(out.box, after,
                                "all_to_all of dims " + Twine(dim) + " and " +
                                    Twine(splitDim)))
    return std::move(error);
  return out;
}

Expected<Block> MeshCollectives::localSlice(const Block &block,
                                            ArrayRef<int> axes, int dim,
                                            const TensorSharding &after) {
  const std::vector<int64_t> &sizes = block.box.sizes;
  int64_t parts = groupSize(meshShape, axes);
  int64_t member = groupIndex(meshShape, axes, position);
  std::vector<int64_t> blocks = blockSizes(sizes[dim], parts);
  SmallVector<int64_t, 32> params = header(WEFT_RT_LOCAL_SLICE, axes);
  params.append(
      {product(sizes, 0, dim), product(sizes, dim + 1, sizes.size()), parts});
  params.append(blocks.begin(), blocks.end());
  Box box = block.box;
  box.offsets[dim] += blockOffset(sizes[dim], parts, member);
  box.sizes[dim] = blocks[member];
  Block out = Block::zeros(box, block.elementBytes);
  if (Error error =
          call(params, block.data.data(), out.data.data(), "local_slice"))
    return std::move(error);
  if (Error error =
          expectBlock(out.box, after, "local_slice of dim " + Twine(dim)))
    return std::move(error);
  return out;
}

/// The plan's reduction of the source's partial sums, on `block`.
static Expected<Block> reduceSource(MeshCollectives &mesh, Block block,
                                    const ReshardReduction &reduction) {
  if (reduction.kind == ReshardKind::AllReduce) {
    if (Error error = mesh.allReduce(block, reduction.axes))
      return std::move(error);
    return block;
  }
  if (reduction.kind != ReshardKind::ReduceScatter || reduction.dim < 0)
    return internal(Twine("a source reduction of kind ") +
                    reshardKindName(reduction.kind));
  // The group ranks follow the order of the axes the dimension is split
  // over once the reduction is done.
  return mesh.reduceScatter(block, reduction.after.dims[reduction.dim],
                            reduction.dim, reduction.after);
}

/// The in-mesh steps of `plan` on `block`.
static Expected<Block> runInMesh(MeshCollectives &mesh, Block block,
                                 const ReshardPlan &plan) {
  for (const ReshardStep &step : plan.inMeshSteps) {
    Expected<Block> next = [&]() -> Expected<Block> {
      switch (step.kind) {
      case ReshardKind::AllReduce:
        if (Error error = mesh.allReduce(block, step.axes))
          return std::move(error);
        return std::move(block);
      case ReshardKind::ReduceScatter:
        return mesh.reduceScatter(block, step.axes, step.dim, step.after);
      case ReshardKind::AllGather:
        return mesh.allGather(block, step.axes, step.dim, step.after);
      case ReshardKind::AllToAll:
        return mesh.allToAll(block, step.axes, step.dim, step.splitDim,
                             step.after);
      case ReshardKind::LocalSlice:
        return mesh.localSlice(block, step.axes, step.dim, step.after);
      }
      return internal("an unknown in-mesh step");
    }();
    if (!next)
      return next.takeError();
    block = std::move(*next);
  }
  return block;
}

//===----------------------------------------------------------------------===//
// Messages
//===----------------------------------------------------------------------===//

/// SEND or RECV (`kind`) of `buffer` with world rank `peer`, tagged with
/// the message's index; a failure says `what` and the runtime's message.
static Error transfer(const RankSetup &setup, int64_t kind, int peer,
                      size_t index, Block &buffer, const Twine &what) {
  // A = 0: point-to-point transfers name no mesh axes.
  int64_t tag = static_cast<int64_t>(index), count = buffer.elements();
  int64_t params[] = {kind, setup.runtimeDType, 0, peer, tag, count};
  weft_rt_status status = weft_rt_collective(
      setup.ctx, params, buffer.data.data(), buffer.data.data());
  if (status == WEFT_RT_OK)
    return Error::success();
  return rankError(what + ": " + weft_rt_context_error(setup.ctx),
                   status == WEFT_RT_COMM_ERROR ? 4 : 70);
}

/// How a broadcast call cuts `box` into chunks (weft_rt.h): {rows, elements
/// per row}, the rows being its outermost dimension longer than one, as the
/// planner cuts a chain's chunks.
static std::pair<int64_t, int64_t> broadcastRows(const Box &box) {
  if (box.elements() == 0)
    return {0, 1};
  for (size_t d = 0; d < box.sizes.size(); ++d)
    if (box.sizes[d] >= 2) {
      int64_t inner = 1;
      for (size_t k = d + 1; k < box.sizes.size(); ++k)
        inner *= box.sizes[k];
      return {box.sizes[d], inner};
    }
  return {1, 1};
}

/// This rank's part of broadcast call `index` of `plan` (its first message
/// has index `first`, its tag): the root sends the tile from its source
/// block, the others receive it (and relays forward it, inside the call)
/// and copy what their destination block needs.
static Error runCall(const RankSetup &setup, const ReshardPlan &plan,
                     size_t index, size_t first, int64_t group,
                     const std::optional<Block> &source,
                     std::optional<Block> &destination,
                     TransferCounts &counts) {
  const ReshardTransfer &call = plan.transfers[index];
  std::vector<int> devices = broadcastChain(call);
  auto at = llvm::find(devices, setup.device);
  if (at == devices.end())
    return Error::success();
  std::vector<int64_t> params = {WEFT_RT_BROADCAST, setup.runtimeDType, 0,
                                 group, static_cast<int64_t>(first)};
  const Box &tile = plan.tiles[call.tile].box;
  auto [rows, rowElements] = broadcastRows(tile);
  params.insert(params.end(), {rows, rowElements, call.chunks,
                               static_cast<int64_t>(devices.size())});
  for (int device : devices) {
    int rank = setup.worldRankOf(device);
    if (rank < 0)
      return internal("broadcast " + Twine(index) +
                      " involves a device outside the two meshes");
    params.push_back(rank);
  }
  std::string what = "broadcast call " + std::to_string(index) + " (" +
                     tile.str() + " along devices " +
                     formatDeviceList(devices) + ")";
  Block buffer = Block::zeros(tile, setup.request->problem.elementBytes);
  bool root = at == devices.begin();
  if (root) {
    if (!source || !source->box.contains(tile))
      return internal(what + ": the root does not hold the tile");
    copyBox(*source, buffer, tile);
  }
  weft_rt_status status = weft_rt_collective(
      setup.ctx, params.data(), buffer.data.data(), buffer.data.data());
  if (status != WEFT_RT_OK)
    return rankError(what + ": " + weft_rt_context_error(setup.ctx),
                     status == WEFT_RT_COMM_ERROR ? 4 : 70);
  // What the call moved on this rank: every rank but the last sends the
  // tile on, every rank but the root receives it.
  if (at + 1 != devices.end())
    counts.bytesSent += buffer.bytes();
  if (root)
    return Error::success();
  counts.bytesReceived += buffer.bytes();
  if (destination)
    if (std::optional<Box> common = intersect(buffer.box, destination->box))
      copyBox(buffer, *destination, *common);
  return Error::success();
}

/// The plan's messages in order: this rank sends those from its device and
/// receives those to it, keeping what a later message forwards; a
/// broadcast call's messages run as one call, at its first.
static Error runMessages(const RankSetup &setup, const ReshardPlan &plan,
                         ArrayRef<int64_t> groupOf,
                         const std::optional<Block> &source,
                         std::optional<Block> &destination,
                         TransferCounts &counts) {
  std::set<int> forwarded;
  for (const ReshardMessage &message : plan.messages)
    if (message.dependsOn >= 0)
      forwarded.insert(message.dependsOn);
  std::map<int, Block> kept;
  int64_t elementBytes = setup.request->problem.elementBytes;
  for (size_t i = 0; i < plan.messages.size(); ++i) {
    const ReshardMessage &message = plan.messages[i];
    if (plan.transfers[message.transfer].broadcastCall) {
      if (i > 0 && plan.messages[i - 1].transfer == message.transfer)
        continue;
      if (Error error =
              runCall(setup, plan, message.transfer, i,
                      groupOf[message.transfer], source, destination, counts))
        return error;
      continue;
    }
    if (message.from != setup.device && message.to != setup.device)
      continue;
    std::string what = "message " + std::to_string(i) + " (" +
                       message.box.str() + " from device " +
                       std::to_string(message.from) + " to device " +
                       std::to_string(message.to) + ")";
    if (message.from == message.to)
      return internal(what + " goes from a device to itself");
    if (message.bytes != message.box.elements() * elementBytes)
      return internal(what + " has " + Twine(message.bytes) +
                      " bytes, its box " +
                      Twine(message.box.elements() * elementBytes));
    int peer = setup.worldRankOf(message.from == setup.device ? message.to
                                                              : message.from);
    if (peer < 0)
      return internal(what + " involves a device outside the two meshes");
    Block buffer = Block::zeros(message.box, elementBytes);
    if (message.from == setup.device) {
      const Block *holder = nullptr;
      if (message.dependsOn < 0) {
        holder = source ? &*source : nullptr;
      } else {
        auto it = kept.find(message.dependsOn);
        holder = it == kept.end() ? nullptr : &it->second;
      }
      if (!holder || !holder->box.contains(message.box))
        return internal(what + ": the sender does not hold the box (" +
                        (message.dependsOn < 0
                             ? std::string("its source block")
                             : "message " + std::to_string(message.dependsOn)) +
                        ")");
      copyBox(*holder, buffer, message.box);
      if (Error error = transfer(setup, WEFT_RT_SEND, peer, i, buffer,
                                 "the send of " + what))
        return error;
      counts.bytesSent += buffer.bytes();
      continue;
    }
    if (Error error = transfer(setup, WEFT_RT_RECV, peer, i, buffer,
                               "the receive of " + what))
      return error;
    counts.bytesReceived += buffer.bytes();
    if (destination)
      if (std::optional<Box> common = intersect(buffer.box, destination->box))
        copyBox(buffer, *destination, *common);
    if (forwarded.count(static_cast<int>(i)))
      kept.emplace(static_cast<int>(i), std::move(buffer));
  }
  return Error::success();
}

Expected<std::optional<Block>> weft::reshard::executePlan(
    const RankSetup &setup, const ReshardPlan &plan, ArrayRef<int64_t> groupOf,
    std::optional<Block> source, TransferCounts &counts) {
  const ReshardProblem &problem = setup.request->problem;
  MeshCollectives mesh(setup);
  if (plan.inMesh) {
    if (!source)
      return internal("an in-mesh plan on a device outside the mesh");
    Expected<Block> block = runInMesh(mesh, std::move(*source), plan);
    if (!block)
      return block.takeError();
    Box expected =
        blockBox(problem.shape, problem.destination.sharding,
                 problem.destination.mesh.shape, setup.destinationPosition);
    if (!(block->box == expected))
      return internal("the in-mesh steps end with the block " +
                      block->box.str() + ", the destination's is " +
                      expected.str());
    block->written.assign(static_cast<size_t>(block->elements()), 1);
    return std::optional<Block>(std::move(*block));
  }

  if (source && plan.reduction) {
    Expected<Block> reduced =
        reduceSource(mesh, std::move(*source), *plan.reduction);
    if (!reduced)
      return reduced.takeError();
    source = std::move(*reduced);
  }
  std::optional<Block> destination;
  if (setup.destinationPosition >= 0)
    destination = Block::zeros(
        blockBox(problem.shape, problem.destination.sharding,
                 problem.destination.mesh.shape, setup.destinationPosition),
        problem.elementBytes, /*track=*/true);
  // A device in both meshes keeps what its two blocks share.
  if (source && destination)
    if (std::optional<Box> common = intersect(source->box, destination->box))
      copyBox(*source, *destination, *common);
  if (Error error =
          runMessages(setup, plan, groupOf, source, destination, counts))
    return std::move(error);
  return destination;
}
