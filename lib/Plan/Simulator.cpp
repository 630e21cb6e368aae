//===- Simulator.cpp - Event simulation of per-device programs ------------===//
//
// The event loop that times a checked and paired SimProgram
// (SimulatorProgram.cpp): devices run their ops in order, a meeting starts
// when its last member arrives, and transfers share NIC rails fluidly: at
// every start and end the rate of each transfer is recomputed from the
// transfers using the same rails. SimulatorSummary.cpp turns the timings
// into the result.
//
//===----------------------------------------------------------------------===//

#include "SimulatorInternal.h"

#include "weft/Plan/Reshard.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

using namespace llvm;

namespace weft::plan {

static constexpr double kInf = std::numeric_limits<double>::infinity();

static Error makeError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

//===----------------------------------------------------------------------===//
// The event loop
//===----------------------------------------------------------------------===//

namespace {

/// The uncontended cost of a meeting: `alpha` seconds of latency, then
/// `data` seconds of moving bytes at `beta` bytes/s per member, over rails
/// `uses` (resource index, members of the meeting on it).
struct MeetingCost {
  double alpha = 0, data = 0, beta = kInf;
  std::vector<std::pair<int, int>> uses;
};

/// A meeting under way.
struct Transfer {
  int meeting = 0;
  /// The end of its latency phase; its data phase starts then.
  double latencyEnd = 0;
  bool inData = false;
  /// Seconds of data phase left at full speed.
  double remaining = 0;
  /// The fraction of full speed it runs at now, and the rail that limits it
  /// (-1: none).
  double speed = 1;
  int binding = -1;
  double beta = kInf;
  std::vector<std::pair<int, int>> uses;
};

enum class DeviceState { Ready, Computing, Meeting, Done };

class Engine {
public:
  Engine(const Cluster &cluster, const SimProgram &program,
         const SimMatching &matching, const SimOptions &options);

  /// Runs the program to its end; fills result.timings and result.events.
  Error run(SimResult &result);
  /// Per device and rail direction, what sharing cost.
  std::vector<SimRailLoss> losses() const;

private:
  Error dispatch(double now);
  Error startMeeting(int meeting, double now);
  Expected<MeetingCost> cost(int meeting);
  /// A chain broadcast's cost (SimOp::chainChunks).
  MeetingCost chainCost(const SimOp &op) const;
  double nextEventTime(double now) const;
  void advance(double now, double next);
  void finish(double now);
  void updateSpeeds();
  Error deadlock(double now) const;
  int railResource(int device, bool outbound) const;

  const Cluster &cluster;
  const SimProgram &program;
  const SimMatching &matching;
  SimOptions options;
  std::vector<std::vector<SimOpTiming>> timings;
  std::vector<DeviceState> state;
  std::vector<size_t> pc;
  std::vector<double> busyUntil;
  /// Per meeting: members arrived so far, and the last of them.
  std::vector<int> arrived;
  std::vector<std::pair<int, int>> lastArrival;
  std::vector<Transfer> active;
  /// Per rail direction (2 x rail + inbound): capacity, node and rail.
  std::vector<double> capacity;
  std::vector<std::pair<int, int>> railOf;
  std::vector<int> firstRail;
  /// Per (device, rail direction): the seconds sharing cost its transfers.
  std::map<std::pair<int, int>, double> lost;
  /// Collective costs by (kind, bytes, participants).
  std::map<std::tuple<int, double, std::vector<int>>, MeetingCost> costCache;
  int64_t events = 0;
};

} // namespace

Engine::Engine(const Cluster &cluster, const SimProgram &program,
               const SimMatching &matching, const SimOptions &options)
    : cluster(cluster), program(program), matching(matching), options(options) {
  size_t devices = program.devices.size();
  timings.resize(devices);
  for (size_t d = 0; d < devices; ++d)
    timings[d].resize(program.devices[d].size());
  state.assign(devices, DeviceState::Ready);
  pc.assign(devices, 0);
  busyUntil.assign(devices, 0);
  arrived.assign(matching.meetings.size(), 0);
  lastArrival.assign(matching.meetings.size(), {-1, -1});
  for (size_t n = 0; n < cluster.nodes.size(); ++n) {
    firstRail.push_back(static_cast<int>(capacity.size() / 2));
    for (size_t r = 0; r < cluster.nodes[n].rails.size(); ++r)
      for (int direction = 0; direction < 2; ++direction) {
        capacity.push_back(cluster.nodes[n].rails[r].bandwidthBytesPerS);
        railOf.push_back({static_cast<int>(n), static_cast<int>(r)});
      }
  }
}

int Engine::railResource(int device, bool outbound) const {
  const Device &d = cluster.devices[device];
  if (d.rail < 0)
    return -1;
  return 2 * (firstRail[d.node] + d.rail) + (outbound ? 0 : 1);
}

Expected<MeetingCost> Engine::cost(int meeting) {
  auto [device, index] = matching.meetings[meeting].members.front();
  const SimOp &op = program.devices[device][index];
  MeetingCost out;
  auto noLink = [&](double seconds) -> Error {
    if (std::isfinite(seconds))
      return Error::success();
    return simOpError(cluster, device, index, op,
                      "the link it needs has no bandwidth");
  };
  if (op.kind != SimOpKind::Collective) {
    int from = op.kind == SimOpKind::Send ? device : op.peer;
    int to = op.kind == SimOpKind::Send ? op.peer : device;
    GroupLink link = messageLink(cluster, from, to);
    double total = messageSeconds(link, op.bytes);
    if (Error error = noLink(total))
      return std::move(error);
    out.alpha = op.bytes > 0 ? link.alpha : 0;
    out.data = total - out.alpha;
    out.beta = link.beta;
    if (cluster.devices[from].node != cluster.devices[to].node) {
      if (int r = railResource(from, true); r >= 0)
        out.uses.push_back({r, 1});
      if (int r = railResource(to, false); r >= 0)
        out.uses.push_back({r, 1});
    }
    return out;
  }

  if (op.chainChunks > 0)
    return chainCost(op);
  auto key = std::make_tuple(static_cast<int>(op.collective), op.bytes,
                             op.participants);
  if (auto it = costCache.find(key); it != costCache.end())
    return it->second;
  int64_t p = static_cast<int64_t>(op.participants.size());
  if (p > 1 && op.bytes > 0) {
    // The cost model's time over a one-axis mesh of the participants. It is
    // affine in the bytes (alpha terms + bytes / beta terms), so two sizes
    // split it into its latency and its data phase without restating the
    // ring and tree formulas here.
    Mesh group{"simulated-group", {p}, op.participants};
    CostModel model(cluster, group);
    std::string algorithm =
        model.collectiveAlgorithm(op.collective, op.bytes, {0});
    double once =
        model.collectiveSecondsWith(op.collective, algorithm, op.bytes, {0});
    double twice = model.collectiveSecondsWith(op.collective, algorithm,
                                               2 * op.bytes, {0});
    if (Error error = noLink(twice))
      return std::move(error);
    out.data = std::clamp(twice - once, 0.0, once);
    out.alpha = once - out.data;
    out.beta = model.groupLinks({0}).front().beta;
    // A group spanning nodes sends through the rails of its members, as
    // CostModel::groupLinks assumes; each member is one stream on its rail.
    bool spans = llvm::any_of(op.participants, [&](int member) {
      return cluster.devices[member].node !=
             cluster.devices[op.participants.front()].node;
    });
    std::map<int, int> perRail;
    if (spans)
      for (int member : op.participants)
        for (bool outbound : {true, false})
          if (int r = railResource(member, outbound); r >= 0)
            ++perRail[r];
    out.uses.assign(perRail.begin(), perRail.end());
  }
  costCache.emplace(std::move(key), out);
  return out;
}

MeetingCost Engine::chainCost(const SimOp &op) const {
  // The planner's closed form over the chain's hops; its data phase is the
  // slowest hop carrying every byte (at least that much of the total), on
  // the rails of each hop that crosses nodes.
  std::vector<GroupLink> hops;
  std::map<int, int> perRail;
  for (size_t i = 1; i < op.participants.size(); ++i) {
    int from = op.participants[i - 1], to = op.participants[i];
    hops.push_back(messageLink(cluster, from, to));
    if (cluster.devices[from].node == cluster.devices[to].node)
      continue;
    if (int r = railResource(from, true); r >= 0)
      ++perRail[r];
    if (int r = railResource(to, false); r >= 0)
      ++perRail[r];
  }
  MeetingCost out;
  if (op.bytes <= 0)
    return out;
  double total = chainSeconds(hops, op.bytes, op.chainChunks);
  double slowest = kInf;
  for (const GroupLink &hop : hops)
    slowest = std::min(slowest, hop.beta);
  out.data = slowest < kInf ? std::min(total, op.bytes / slowest) : 0;
  out.alpha = total - out.data;
  out.beta = slowest;
  out.uses.assign(perRail.begin(), perRail.end());
  return out;
}

Error Engine::startMeeting(int meeting, double now) {
  Expected<MeetingCost> price = cost(meeting);
  if (!price)
    return price.takeError();
  auto [lastDevice, lastOp] = lastArrival[meeting];
  for (auto [device, index] : matching.meetings[meeting].members) {
    SimOpTiming &timing = timings[device][index];
    timing.start = now;
    timing.startedBy = lastDevice;
    timing.startedByOp = lastOp;
  }
  Transfer transfer;
  transfer.meeting = meeting;
  transfer.latencyEnd = now + price->alpha;
  transfer.remaining = price->data;
  transfer.beta = price->beta;
  transfer.uses = std::move(price->uses);
  active.push_back(std::move(transfer));
  return Error::success();
}

Error Engine::dispatch(double now) {
  for (size_t d = 0; d < state.size(); ++d) {
    if (state[d] != DeviceState::Ready)
      continue;
    const std::vector<SimOp> &ops = program.devices[d];
    if (pc[d] == ops.size()) {
      state[d] = DeviceState::Done;
      continue;
    }
    const SimOp &op = ops[pc[d]];
    SimOpTiming &timing = timings[d][pc[d]];
    timing.arrive = timing.start = now;
    if (op.kind == SimOpKind::Compute) {
      state[d] = DeviceState::Computing;
      busyUntil[d] = now + op.seconds;
      continue;
    }
    state[d] = DeviceState::Meeting;
    int meeting = matching.meetingOf[d][pc[d]];
    // The last to arrive started the meeting; on a tie, the lowest index
    // (devices reach one time in several rounds of zero-length events).
    auto [last, lastOp] = lastArrival[meeting];
    if (arrived[meeting] == 0 || timings[last][lastOp].arrive < now ||
        static_cast<int>(d) < last)
      lastArrival[meeting] = {static_cast<int>(d), static_cast<int>(pc[d])};
    if (++arrived[meeting] ==
        static_cast<int>(matching.meetings[meeting].members.size()))
      if (Error error = startMeeting(meeting, now))
        return error;
  }
  return Error::success();
}

double Engine::nextEventTime(double now) const {
  double next = kInf;
  for (size_t d = 0; d < state.size(); ++d)
    if (state[d] == DeviceState::Computing)
      next = std::min(next, busyUntil[d]);
  for (const Transfer &t : active)
    next =
        std::min(next, t.inData ? now + t.remaining / t.speed : t.latencyEnd);
  return next;
}

void Engine::advance(double now, double next) {
  double dt = next - now;
  // Transfers due within a rounding error of `next` end there.
  double slack = 1e-12 * std::max(next, 1e-9);
  for (Transfer &t : active) {
    if (!t.inData)
      continue;
    if (now + t.remaining / t.speed <= next + slack) {
      double spent = t.remaining / t.speed;
      if (t.binding >= 0)
        for (auto [device, index] : matching.meetings[t.meeting].members)
          lost[{device, t.binding}] += spent * (1 - t.speed);
      t.remaining = 0;
      continue;
    }
    t.remaining -= dt * t.speed;
    if (t.binding >= 0)
      for (auto [device, index] : matching.meetings[t.meeting].members)
        lost[{device, t.binding}] += dt * (1 - t.speed);
  }
}

void Engine::finish(double now) {
  for (size_t d = 0; d < state.size(); ++d)
    if (state[d] == DeviceState::Computing && busyUntil[d] <= now) {
      timings[d][pc[d]].end = busyUntil[d];
      ++pc[d];
      state[d] = DeviceState::Ready;
    }
  std::vector<Transfer> running;
  for (Transfer &t : active) {
    if (!t.inData && t.latencyEnd <= now)
      t.inData = true;
    if (!t.inData || t.remaining > 0) {
      running.push_back(std::move(t));
      continue;
    }
    for (auto [device, index] : matching.meetings[t.meeting].members) {
      timings[device][index].end = now;
      ++pc[device];
      state[device] = DeviceState::Ready;
    }
  }
  active = std::move(running);
}

void Engine::updateSpeeds() {
  // Fluid sharing: a rail direction's bandwidth is split evenly among the
  // streams using it (a collective is one stream per member on it); a
  // transfer runs at the share of its tightest rail, never faster than its
  // own link.
  std::vector<int> load(capacity.size(), 0);
  for (const Transfer &t : active)
    if (t.inData)
      for (auto [resource, streams] : t.uses)
        load[resource] += streams;
  for (Transfer &t : active) {
    t.speed = 1;
    t.binding = -1;
    if (!options.contention || !t.inData || !(t.beta < kInf))
      continue;
    for (auto [resource, streams] : t.uses) {
      double share = capacity[resource] / load[resource] / t.beta;
      if (share < t.speed) {
        t.speed = share;
        t.binding = resource;
      }
    }
  }
}

Error Engine::deadlock(double now) const {
  std::string text =
      "deadlock at " + formatSeconds(now) + ": no device can make progress";
  for (size_t d = 0; d < state.size(); ++d) {
    if (state[d] != DeviceState::Meeting)
      continue;
    const SimOp &op = program.devices[d][pc[d]];
    text += "; " + simOpPlace(cluster, static_cast<int>(d), pc[d], op) +
            " waits for";
    int meeting = matching.meetingOf[d][pc[d]];
    bool first = true;
    for (auto [device, index] : matching.meetings[meeting].members) {
      if (pc[device] == static_cast<size_t>(index))
        continue;
      text += (first ? " " : ", ") + simDeviceName(cluster, device);
      if (pc[device] < program.devices[device].size())
        text += " (at op " + std::to_string(pc[device]) + ")";
      else
        text += " (finished)";
      first = false;
    }
  }
  return makeError(text);
}

Error Engine::run(SimResult &result) {
  double now = 0;
  while (true) {
    if (Error error = dispatch(now))
      return error;
    double next = nextEventTime(now);
    if (next == kInf) {
      if (llvm::all_of(state,
                       [](DeviceState s) { return s == DeviceState::Done; }))
        break;
      return deadlock(now);
    }
    if (++events > options.maxEvents)
      return makeError(
          "the simulation stopped after " + Twine(options.maxEvents) +
          " events (SimOptions::maxEvents) at " + formatSeconds(now));
    advance(now, next);
    now = next;
    finish(now);
    updateSpeeds();
  }
  result.timings = std::move(timings);
  result.events = events;
  return Error::success();
}

std::vector<SimRailLoss> Engine::losses() const {
  std::vector<SimRailLoss> out;
  for (const auto &[key, seconds] : lost) {
    auto [node, rail] = railOf[key.second];
    out.push_back({key.first, node, rail, key.second % 2 == 0, seconds});
  }
  return out;
}

Expected<SimResult> simulate(const Cluster &cluster, const SimProgram &program,
                             const SimOptions &options) {
  Expected<SimMatching> matching = matchSimProgram(cluster, program);
  if (!matching)
    return matching.takeError();
  Engine engine(cluster, program, *matching, options);
  SimResult result;
  if (Error error = engine.run(result))
    return std::move(error);
  summarizeSimulation(cluster, program, engine.losses(), result);
  return result;
}

} // namespace weft::plan
