//===- SimulatorInternal.h - The simulator's parts, between files -*- C++
//-*-===//
//
// Private to lib/Plan: what the simulator's three parts share. The program
// side (SimulatorProgram.cpp) checks a SimProgram and pairs its
// communication into meetings; the event loop (Simulator.cpp) times them;
// the summary (SimulatorSummary.cpp) turns the timings into a SimResult.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_LIB_PLAN_SIMULATORINTERNAL_H
#define WEFT_LIB_PLAN_SIMULATORINTERNAL_H

#include "weft/Plan/Simulator.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <string>
#include <utility>
#include <vector>

namespace weft::plan {

/// Devices that meet: the participants of one occurrence of a collective
/// (in the order they were found), or a send and its receive (in that
/// order). Each member is (device, op index).
struct SimMeeting {
  std::vector<std::pair<int, int>> members;
};

/// The meetings of a program, and for every op the meeting it joins (-1
/// for compute).
struct SimMatching {
  std::vector<SimMeeting> meetings;
  std::vector<std::vector<int>> meetingOf;
};

/// Checks `program` (see verifySimProgram) and pairs its communication.
llvm::Expected<SimMatching> matchSimProgram(const Cluster &cluster,
                                            const SimProgram &program);

/// Seconds that `device`'s transfers lost because rail `rail` of `node`
/// (one direction) was shared with transfers running at the same time.
struct SimRailLoss {
  int device = 0;
  int node = 0;
  int rail = 0;
  bool outbound = true;
  double seconds = 0;
};

/// Fills every field of `result` but `timings` and `events` (which the
/// event loop set) from the timings.
void summarizeSimulation(const Cluster &cluster, const SimProgram &program,
                         llvm::ArrayRef<SimRailLoss> losses, SimResult &result);

/// "device 3 ('gpu3')", or "device 3" when the cluster has no such device.
std::string simDeviceName(const Cluster &cluster, int device);

/// The cluster's name of a device ("gpu3"), or "device 3" when it has none.
std::string simDeviceLabel(const Cluster &cluster, int device);

/// What `op` shows in a timeline: its label, or one made from it
/// ("all-reduce 4 MiB", "send to gpu3").
std::string simOpLabel(const Cluster &cluster, const SimOp &op);

/// "device 3 ('gpu3') op 5 (recv from gpu2)": where an error is.
std::string simOpPlace(const Cluster &cluster, int device, size_t index,
                       const SimOp &op);

/// An error at simOpPlace: "<place>: <what>".
llvm::Error simOpError(const Cluster &cluster, int device, size_t index,
                       const SimOp &op, const llvm::Twine &what);

} // namespace weft::plan

#endif // WEFT_LIB_PLAN_SIMULATORINTERNAL_H
