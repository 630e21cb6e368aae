//===- SimulatorProgram.cpp - Device programs for the simulator -----------===//
//
// The ops of a SimProgram, their checks, and the pairing of communication
// into meetings (one occurrence of a collective, or a send and its
// receive) that the event loop in Simulator.cpp times; the names and labels
// errors and timelines show; the programs of a forward GPipe pipeline.
//
//===----------------------------------------------------------------------===//

#include "SimulatorInternal.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

using namespace llvm;

namespace weft::plan {

static Error makeError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// A number as printf's %g writes it ("-1", "2.5e-06").
static std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

StringRef simOpKindName(SimOpKind kind) {
  switch (kind) {
  case SimOpKind::Compute:
    return "compute";
  case SimOpKind::Collective:
    return "collective";
  case SimOpKind::Send:
    return "send";
  case SimOpKind::Recv:
    return "recv";
  }
  return "op";
}

SimOp SimOp::compute(double seconds, StringRef label) {
  SimOp op;
  op.kind = SimOpKind::Compute;
  op.seconds = seconds;
  op.label = label.str();
  return op;
}

SimOp SimOp::collectiveOp(CollectiveKind kind, double bytes,
                          std::vector<int> participants, int64_t id,
                          StringRef label) {
  SimOp op;
  op.kind = SimOpKind::Collective;
  op.collective = kind;
  op.bytes = bytes;
  op.participants = std::move(participants);
  op.id = id;
  op.label = label.str();
  return op;
}

SimOp SimOp::broadcast(std::vector<int> chain, double bytes, int chunks,
                       int64_t id, StringRef label) {
  SimOp op = collectiveOp(CollectiveKind::AllGather, bytes, std::move(chain),
                          id, label);
  op.chainChunks = std::max(chunks, 1);
  return op;
}

SimOp SimOp::send(int to, double bytes, int64_t tag, StringRef label) {
  SimOp op;
  op.kind = SimOpKind::Send;
  op.peer = to;
  op.bytes = bytes;
  op.tag = tag;
  op.label = label.str();
  return op;
}

SimOp SimOp::recv(int from, double bytes, int64_t tag, StringRef label) {
  SimOp op = send(from, bytes, tag, label);
  op.kind = SimOpKind::Recv;
  return op;
}

SimOp &SimOp::at(int newStage, int64_t newMicrobatch) {
  stage = newStage;
  microbatch = newMicrobatch;
  return *this;
}

//===----------------------------------------------------------------------===//
// Checks and matching
//===----------------------------------------------------------------------===//

/// "device 3 ('gpu3') op 5 (recv)": where an error is.
std::string simOpPlace(const Cluster &cluster, int device, size_t index,
                       const SimOp &op) {
  return simDeviceName(cluster, device) + " op " + std::to_string(index) +
         " (" + simOpLabel(cluster, op) + ")";
}

Error simOpError(const Cluster &cluster, int device, size_t index,
                 const SimOp &op, const Twine &what) {
  return makeError(simOpPlace(cluster, device, index, op) + ": " + what);
}

/// Empty when `device` is a device of the cluster whose node and rail exist,
/// else what is wrong with it.
static std::string checkDevice(const Cluster &cluster, int device) {
  int count = static_cast<int>(cluster.devices.size());
  if (device < 0 || device >= count)
    return "device " + std::to_string(device) + " is not in cluster '" +
           cluster.name + "', which has " + std::to_string(count) +
           " devices (0 to " + std::to_string(count - 1) + ")";
  const Device &d = cluster.devices[device];
  if (d.node < 0 || d.node >= static_cast<int>(cluster.nodes.size()) ||
      d.rail >= static_cast<int>(cluster.nodes[d.node].rails.size()))
    return simDeviceName(cluster, device) +
           " names a node or rail the cluster does not have";
  return "";
}

/// The checks of one op on its own (not its partners).
static Error checkOp(const Cluster &cluster, const SimProgram &program,
                     int device, size_t index, const SimOp &op) {
  auto fail = [&](const Twine &what) {
    return simOpError(cluster, device, index, op, what);
  };
  int64_t microbatches = program.requests * program.microbatchesPerRequest;
  if (op.stage < -1)
    return fail("stage " + Twine(op.stage) + " is negative");
  if (op.microbatch < -1 || op.microbatch >= microbatches)
    return fail("microbatch " + Twine(op.microbatch) +
                " is outside the stream's " + Twine(microbatches) +
                " microbatches (" + Twine(program.requests) + " requests of " +
                Twine(program.microbatchesPerRequest) + ")");
  if (op.kind == SimOpKind::Compute) {
    if (!std::isfinite(op.seconds) || op.seconds < 0)
      return fail("seconds must be finite and non-negative, got " +
                  number(op.seconds));
    return Error::success();
  }
  if (!std::isfinite(op.bytes) || op.bytes < 0)
    return fail("bytes must be finite and non-negative, got " +
                number(op.bytes));
  if (op.kind == SimOpKind::Collective) {
    if (op.participants.empty())
      return fail("the collective has no participants");
    std::vector<int> sorted = op.participants;
    llvm::sort(sorted);
    for (size_t i = 0; i < sorted.size(); ++i) {
      std::string bad = checkDevice(cluster, sorted[i]);
      if (!bad.empty())
        return fail("participant " + bad);
      if (i > 0 && sorted[i] == sorted[i - 1])
        return fail("participant " + Twine(sorted[i]) + " is listed twice");
    }
    if (!llvm::is_contained(op.participants, device))
      return fail("the device is not among the collective's participants");
    if (op.chainChunks < 0 ||
        (op.chainChunks > 0 && op.participants.size() < 2))
      return fail("a chain broadcast needs at least two participants and a "
                  "positive chunk count");
    return Error::success();
  }
  std::string bad = checkDevice(cluster, op.peer);
  if (!bad.empty())
    return fail("peer " + bad);
  if (op.peer == device)
    return fail("a blocking " + simOpKindName(op.kind) +
                " to itself never completes");
  return Error::success();
}

/// "participants [0, 1, 2]".
static std::string listDevices(ArrayRef<int> devices) {
  std::string text = "[";
  for (size_t i = 0; i < devices.size(); ++i)
    text += (i ? ", " : "") + std::to_string(devices[i]);
  return text + "]";
}

/// Pairs the k-th occurrence of every collective id across its
/// participants.
static Error matchCollectives(const Cluster &cluster, const SimProgram &program,
                              SimMatching &matching) {
  std::map<std::pair<int64_t, int64_t>, int> byOccurrence;
  std::map<std::pair<int, int64_t>, int64_t> seen;
  for (size_t d = 0; d < program.devices.size(); ++d) {
    int device = static_cast<int>(d);
    for (size_t i = 0; i < program.devices[d].size(); ++i) {
      const SimOp &op = program.devices[d][i];
      if (op.kind != SimOpKind::Collective)
        continue;
      int64_t occurrence = seen[{device, op.id}]++;
      auto [it, inserted] = byOccurrence.try_emplace(
          {op.id, occurrence}, static_cast<int>(matching.meetings.size()));
      if (inserted)
        matching.meetings.emplace_back();
      SimMeeting &meeting = matching.meetings[it->second];
      if (!meeting.members.empty()) {
        auto [refDevice, refIndex] = meeting.members.front();
        const SimOp &ref = program.devices[refDevice][refIndex];
        std::string what;
        if (ref.participants != op.participants)
          what = "participants " + listDevices(op.participants) + " vs " +
                 listDevices(ref.participants);
        else if (ref.collective != op.collective)
          what = "kind " + collectiveKindName(op.collective).str() + " vs " +
                 collectiveKindName(ref.collective).str();
        else if (ref.bytes != op.bytes)
          what = "bytes " + formatByteSize(op.bytes) + " vs " +
                 formatByteSize(ref.bytes);
        else if (ref.chainChunks != op.chainChunks)
          what = "chain chunks " + Twine(op.chainChunks).str() + " vs " +
                 Twine(ref.chainChunks).str();
        if (!what.empty())
          return simOpError(cluster, device, i, op,
                            "occurrence " + Twine(occurrence) + " of id " +
                                Twine(op.id) + " disagrees with " +
                                simOpPlace(cluster, refDevice, refIndex, ref) +
                                ": " + what);
      }
      meeting.members.push_back({device, static_cast<int>(i)});
      matching.meetingOf[d][i] = it->second;
    }
  }
  for (const auto &[key, index] : byOccurrence) {
    const SimMeeting &meeting = matching.meetings[index];
    auto [refDevice, refIndex] = meeting.members.front();
    const SimOp &ref = program.devices[refDevice][refIndex];
    for (int p : ref.participants) {
      bool present = llvm::any_of(
          meeting.members, [&](auto member) { return member.first == p; });
      if (present)
        continue;
      int64_t has = 0;
      if (p < static_cast<int>(program.devices.size()))
        has = llvm::count_if(program.devices[p], [&](const SimOp &other) {
          return other.kind == SimOpKind::Collective && other.id == key.first;
        });
      return simOpError(cluster, refDevice, refIndex, ref,
                        "occurrence " + Twine(key.second) + " of id " +
                            Twine(key.first) + " never meets participant " +
                            simDeviceName(cluster, p) + ", which has " +
                            Twine(has) + " collectives with that id");
    }
  }
  return Error::success();
}

/// Pairs the k-th send from A to B with tag t with the k-th receive on B
/// from A with tag t.
static Error matchTransfers(const Cluster &cluster, const SimProgram &program,
                            SimMatching &matching) {
  using Key = std::tuple<int, int, int64_t>;
  std::map<Key, std::vector<std::pair<int, int>>> sends, recvs;
  for (size_t d = 0; d < program.devices.size(); ++d) {
    int device = static_cast<int>(d);
    for (size_t i = 0; i < program.devices[d].size(); ++i) {
      const SimOp &op = program.devices[d][i];
      if (op.kind == SimOpKind::Send)
        sends[{device, op.peer, op.tag}].push_back({device, (int)i});
      else if (op.kind == SimOpKind::Recv)
        recvs[{op.peer, device, op.tag}].push_back({device, (int)i});
    }
  }
  auto pending = [&](const std::vector<std::pair<int, int>> &ops,
                     size_t matched, const Twine &what) {
    auto [device, index] = ops[matched];
    const SimOp &op = program.devices[device][index];
    return simOpError(cluster, device, index, op,
                      what + " (" + Twine(matched) + " matched before it)");
  };
  for (auto &[key, sent] : sends) {
    auto [from, to, tag] = key;
    std::vector<std::pair<int, int>> &got = recvs[key];
    size_t pairs = std::min(sent.size(), got.size());
    for (size_t k = 0; k < pairs; ++k) {
      const SimOp &send = program.devices[sent[k].first][sent[k].second];
      const SimOp &recv = program.devices[got[k].first][got[k].second];
      if (send.bytes != recv.bytes)
        return simOpError(
            cluster, got[k].first, got[k].second, recv,
            "expects " + formatByteSize(recv.bytes) + " but " +
                simOpPlace(cluster, sent[k].first, sent[k].second, send) +
                " sends " + formatByteSize(send.bytes));
      SimMeeting meeting;
      meeting.members = {sent[k], got[k]};
      matching.meetingOf[sent[k].first][sent[k].second] =
          static_cast<int>(matching.meetings.size());
      matching.meetingOf[got[k].first][got[k].second] =
          static_cast<int>(matching.meetings.size());
      matching.meetings.push_back(std::move(meeting));
    }
    if (sent.size() > pairs)
      return pending(sent, pairs,
                     "has no matching recv on " + simDeviceName(cluster, to) +
                         " (tag " + Twine(tag) + ")");
  }
  for (auto &[key, got] : recvs) {
    auto [from, to, tag] = key;
    auto it = sends.find(key);
    size_t pairs = it == sends.end() ? 0 : it->second.size();
    if (got.size() > pairs)
      return pending(got, pairs,
                     "has no matching send on " + simDeviceName(cluster, from) +
                         " (tag " + Twine(tag) + ")");
  }
  return Error::success();
}

Expected<SimMatching> matchSimProgram(const Cluster &cluster,
                                      const SimProgram &program) {
  if (program.requests < 1 || program.microbatchesPerRequest < 1)
    return makeError("a stream needs at least one request of at least one "
                     "microbatch, got " +
                     Twine(program.requests) + " requests of " +
                     Twine(program.microbatchesPerRequest));
  SimMatching matching;
  matching.meetingOf.resize(program.devices.size());
  for (size_t d = 0; d < program.devices.size(); ++d) {
    const std::vector<SimOp> &ops = program.devices[d];
    matching.meetingOf[d].assign(ops.size(), -1);
    if (ops.empty())
      continue;
    std::string bad = checkDevice(cluster, static_cast<int>(d));
    if (!bad.empty())
      return makeError(bad + ", but the program has ops for it");
    for (size_t i = 0; i < ops.size(); ++i)
      if (Error error = checkOp(cluster, program, (int)d, i, ops[i]))
        return std::move(error);
  }
  if (Error error = matchCollectives(cluster, program, matching))
    return std::move(error);
  if (Error error = matchTransfers(cluster, program, matching))
    return std::move(error);
  return matching;
}

Error verifySimProgram(const Cluster &cluster, const SimProgram &program) {
  return matchSimProgram(cluster, program).takeError();
}

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

std::string simDeviceName(const Cluster &cluster, int device) {
  std::string text = "device " + std::to_string(device);
  if (device >= 0 && device < static_cast<int>(cluster.devices.size()))
    text += " ('" + cluster.devices[device].name + "')";
  return text;
}

std::string simDeviceLabel(const Cluster &cluster, int device) {
  if (device >= 0 && device < static_cast<int>(cluster.devices.size()))
    return cluster.devices[device].name;
  return "device " + std::to_string(device);
}

std::string simOpLabel(const Cluster &cluster, const SimOp &op) {
  if (!op.label.empty())
    return op.label;
  switch (op.kind) {
  case SimOpKind::Compute:
    return "compute";
  case SimOpKind::Collective:
    return (op.chainChunks > 0 ? std::string("broadcast")
                               : collectiveKindName(op.collective).str()) +
           " " + formatByteSize(op.bytes);
  case SimOpKind::Send:
    return "send to " + simDeviceLabel(cluster, op.peer);
  case SimOpKind::Recv:
    return "recv from " + simDeviceLabel(cluster, op.peer);
  }
  return "op";
}

//===----------------------------------------------------------------------===//
// GPipe programs
//===----------------------------------------------------------------------===//

SimProgram buildGPipeProgram(const SimPipeline &pipeline) {
  SimProgram program;
  program.requests = std::max<int64_t>(1, pipeline.requests);
  program.microbatchesPerRequest =
      std::max<int64_t>(1, pipeline.microbatchesPerRequest);
  program.title = pipeline.title;
  std::vector<const SimPipelineStage *> stages;
  int devices = 0;
  for (const SimPipelineStage &stage : pipeline.stages) {
    if (stage.devices.empty())
      continue;
    stages.push_back(&stage);
    for (int d : stage.devices)
      devices = std::max(devices, d + 1);
  }
  program.devices.resize(devices);
  auto append = [&](int device, SimOp op) {
    if (device >= 0)
      program.devices[device].push_back(std::move(op));
  };
  int64_t microbatches = program.requests * program.microbatchesPerRequest;
  for (int64_t m = 0; m < microbatches; ++m) {
    for (size_t k = 0; k < stages.size(); ++k) {
      const SimPipelineStage &stage = *stages[k];
      int s = static_cast<int>(k);
      for (int d : stage.devices)
        append(d, SimOp::compute(stage.computeSeconds,
                                 "stage " + std::to_string(k))
                      .at(s, m));
      if (stage.allReduceBytes > 0 && stage.devices.size() > 1)
        for (int d : stage.devices)
          append(d, SimOp::collectiveOp(CollectiveKind::AllReduce,
                                        stage.allReduceBytes, stage.devices,
                                        /*id=*/s)
                        .at(s, m));
      if (k + 1 == stages.size())
        continue;
      // Sender i mod s to receiver i mod r, in order of i: both ends meet
      // their messages in the same order, so the exchange cannot deadlock.
      const std::vector<int> &from = stage.devices;
      const std::vector<int> &to = stages[k + 1]->devices;
      size_t messages = std::max(from.size(), to.size());
      double bytes = stage.bytesToNext / messages;
      for (size_t i = 0; i < messages; ++i) {
        int sender = from[i % from.size()], receiver = to[i % to.size()];
        append(sender, SimOp::send(receiver, bytes, s + 1).at(s, m));
        // Appended now, the receive still follows the receiver's earlier
        // microbatches and precedes its compute of this one.
        append(receiver, SimOp::recv(sender, bytes, s + 1).at(s + 1, m));
      }
    }
  }
  return program;
}

} // namespace weft::plan
