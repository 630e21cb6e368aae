//===- ReshardTimeline.h - Resource timeline of a resharding ----*- C++ -*-===//
//
// Private to lib/Plan: the resources a resharding's messages occupy (each
// device's send and receive port, each NIC rail's two directions) and when
// each is free next. The planner places candidate transfers on a copy to
// compare them; simulateMessages places a whole plan.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_LIB_PLAN_RESHARDTIMELINE_H
#define WEFT_LIB_PLAN_RESHARDTIMELINE_H

#include "weft/Plan/Cluster.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <utility>
#include <vector>

namespace weft::plan {

class ReshardTimeline {
public:
  /// `fullDuplex`: a device's sends and receives use separate ports; else
  /// one port serves both (ReshardOptions::fullDuplex), except inside a
  /// broadcast call (enterCall, place's `inCall`).
  ReshardTimeline(const Cluster &cluster, bool fullDuplex);

  /// Places a message of `bytes` from `from` to `to` that may start at
  /// `ready` (when its sender has the data): it starts once every resource
  /// it uses is free and holds them all until it ends. `inCall`: a hop of a
  /// broadcast call, which uses the sender's send port and the receiver's
  /// receive port alone even without full duplex. Returns {start, end}.
  std::pair<double, double> place(int from, int to, double bytes, double ready,
                                  bool inCall = false);
  /// Without full duplex, the devices of a broadcast call enter it (before
  /// its first hop) or leave it (after its last): each one's two ports are
  /// free from the later of the two on, so that the call starts after the
  /// device's earlier messages and its later messages wait for its part of
  /// the call. Nothing with full duplex.
  void syncPorts(llvm::ArrayRef<int> devices);
  /// When the last placed message ends.
  double finishTime() const { return finish; }
  /// When a device's send or receive port is free next (without full
  /// duplex: its port).
  double sendFreeAt(int device) const;
  double receiveFreeAt(int device) const;
  /// When the NIC rail `device` uses is free next in one direction (its
  /// own port when its node lists no rails).
  double railFreeAt(int device, bool out) const;

private:
  void resources(int from, int to, bool inCall,
                 llvm::SmallVectorImpl<int> &out) const;

  const Cluster *cluster;
  bool fullDuplex;
  /// Indexed: send ports, receive ports, then per rail out and in. Without
  /// full duplex a message outside a call holds both ports of both ends.
  std::vector<double> freeAt;
  int railBase = 0;
  /// Per node, the index of its first rail among all rails.
  std::vector<int> firstRail;
  double finish = 0;
};

} // namespace weft::plan

#endif // WEFT_LIB_PLAN_RESHARDTIMELINE_H
