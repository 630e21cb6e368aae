//===- weft-reshard-fuzzer.cpp - libFuzzer target for weft-reshard sides --===//
//
// Feeds text as weft-reshard's --shape, --from and --to (three lines) to
// parseTensorShape and parseReshardSide on a fixed cluster of 3 nodes with
// 4 devices each (2 NIC rails), then plans the accepted problem with every
// method. Whatever the text says, the parser must end in a clean error, an
// accepted side must print back to text that parses to the same side, and
// every plan must deliver each destination element exactly once, never
// predict less than its lower bound, and keep balanced <= broadcast <=
// send-recv. Run it through scripts/fuzz.sh.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "weft/Plan/Reshard.h"
#include "weft/Plan/ReshardText.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

using namespace weft::plan;

static const char kTarget[] = "weft-reshard-fuzzer";

/// Problems with more elements than this are parsed but not planned, so
/// that each input stays fast.
static constexpr int64_t kMaxPlannedElements = 4096;

static const Cluster &cluster() {
  static const Cluster c = [] {
    llvm::Expected<Cluster> loaded = loadCluster("dgx-h100x8:2");
    if (!loaded)
      weft::fuzz::reportBug(kTarget, "the preset does not load: " +
                                         llvm::toString(loaded.takeError()));
    return *loaded;
  }();
  return c;
}

static bool sameSide(const ReshardSide &a, const ReshardSide &b) {
  return a.mesh.name == b.mesh.name && a.mesh.shape == b.mesh.shape &&
         a.mesh.devices == b.mesh.devices && a.sharding == b.sharding;
}

/// Counts how often each element of every destination block arrives (kept
/// or received); each must arrive once.
static void checkDelivery(const ReshardProblem &problem,
                          const ReshardPlan &plan) {
  ReshardSide resolved = problem.source;
  if (plan.reduction)
    resolved.sharding = plan.reduction->after;
  resolved.sharding.partial.clear();
  auto blockOf = [&](const ReshardSide &side, int device) -> Box {
    for (int64_t p = 0; p < side.mesh.size(); ++p)
      if (side.mesh.devices[p] == device)
        return {localOffsets(problem.shape, side.sharding, side.mesh.shape, p),
                localShape(problem.shape, side.sharding, side.mesh.shape, p)};
    return {std::vector<int64_t>(problem.shape.size(), 0),
            std::vector<int64_t>(problem.shape.size(), 0)};
  };
  auto linear = [&](const std::vector<int64_t> &index) {
    int64_t at = 0;
    for (size_t k = 0; k < index.size(); ++k)
      at = at * problem.shape[k] + index[k];
    return at;
  };
  auto forEach = [](const Box &box, auto &&fn) {
    if (box.elements() == 0)
      return;
    std::vector<int64_t> i = box.offsets;
    while (true) {
      fn(i);
      int k = static_cast<int>(i.size()) - 1;
      for (; k >= 0; --k) {
        if (++i[k] < box.offsets[k] + box.sizes[k])
          break;
        i[k] = box.offsets[k];
      }
      if (k < 0)
        return;
    }
  };
  for (int device : problem.destination.mesh.devices) {
    Box needed = blockOf(problem.destination, device);
    Box held = blockOf(resolved, device);
    std::map<int64_t, int> count;
    forEach(needed, [&](const std::vector<int64_t> &i) {
      count[linear(i)] = held.contains(Box{i, std::vector<int64_t>(
                                                  i.size(), 1)})
                             ? 1
                             : 0;
    });
    for (const ReshardMessage &m : plan.messages)
      if (m.to == device)
        forEach(m.box, [&](const std::vector<int64_t> &i) {
          auto it = count.find(linear(i));
          if (it == count.end())
            weft::fuzz::reportBug(kTarget, "a message delivers an element "
                                           "its receiver does not need");
          ++it->second;
        });
    for (const auto &[element, n] : count)
      if (n != 1)
        weft::fuzz::reportBug(kTarget, "element " + std::to_string(element) +
                                           " of device " +
                                           std::to_string(device) +
                                           " arrives " + std::to_string(n) +
                                           " times");
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  auto [shapeText, rest] = text.split('\n');
  auto [fromText, toText] = rest.split('\n');
  toText = toText.split('\n').first;
  llvm::Expected<std::vector<int64_t>> shape = parseTensorShape(shapeText);
  if (!shape) {
    llvm::consumeError(shape.takeError());
    return 0;
  }
  unsigned rank = shape->size();
  llvm::Expected<ReshardSide> from =
      parseReshardSide(fromText, cluster(), rank, "--from");
  llvm::Expected<ReshardSide> to =
      parseReshardSide(toText, cluster(), rank, "--to");
  if (!from || !to) {
    if (!from)
      llvm::consumeError(from.takeError());
    if (!to)
      llvm::consumeError(to.takeError());
    return 0;
  }
  // Each side parses back under its own flag, which names its mesh (the
  // sharding names that mesh too).
  std::pair<const ReshardSide *, const char *> sides[] = {{&*from, "--from"},
                                                          {&*to, "--to"}};
  for (auto [side, flag] : sides) {
    llvm::Expected<ReshardSide> again =
        parseReshardSide(formatReshardSide(*side), cluster(), rank, flag);
    if (!again)
      weft::fuzz::reportBug(kTarget, "'" + formatReshardSide(*side) +
                                         "' does not parse back: " +
                                         llvm::toString(again.takeError()));
    if (!sameSide(*again, *side))
      weft::fuzz::reportBug(kTarget, "'" + formatReshardSide(*side) +
                                         "' parses back differently");
  }
  int64_t elements = 1;
  for (int64_t n : *shape)
    elements *= n;
  if (elements > kMaxPlannedElements)
    return 0;
  ReshardProblem problem;
  problem.shape = *shape;
  problem.source = *from;
  problem.destination = *to;
  std::map<ReshardMethod, double> seconds;
  for (ReshardMethod method :
       {ReshardMethod::SendRecv, ReshardMethod::SendRecvAllGather,
        ReshardMethod::Broadcast, ReshardMethod::Balanced}) {
    llvm::Expected<ReshardPlan> plan =
        planResharding(cluster(), problem, method);
    if (!plan) {
      // The parser lets a partial destination through only to the planner.
      std::string message = llvm::toString(plan.takeError());
      if (llvm::StringRef(message).starts_with("internal"))
        weft::fuzz::reportBug(kTarget, message);
      return 0;
    }
    if (plan->inMesh)
      return 0;
    checkDelivery(problem, *plan);
    if (plan->predictedSeconds * (1 + 1e-9) < plan->bound.seconds)
      weft::fuzz::reportBug(kTarget, "predicted below the lower bound");
    seconds[method] = plan->predictedSeconds;
  }
  if (seconds[ReshardMethod::Balanced] >
          seconds[ReshardMethod::Broadcast] * (1 + 1e-9) ||
      seconds[ReshardMethod::Broadcast] >
          seconds[ReshardMethod::SendRecv] * (1 + 1e-9))
    weft::fuzz::reportBug(kTarget, "balanced > broadcast or broadcast > "
                                   "send-recv");
  return 0;
}
