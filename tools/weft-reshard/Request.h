//===- Request.h - weft-reshard's flags and what they ask -------*- C++ -*-===//
//
// What weft-reshard and its rank program (weft-reshard-rank) share: the
// flags of a subcommand, read into a cluster, a resharding problem and the
// methods to plan, with errors that name the flag; and readable units.
// The rank program reads the same flags as `run` so that every rank plans
// exactly what weft-reshard planned (the planner is deterministic). The
// summary lines of a plan, which both print.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TOOLS_WEFT_RESHARD_REQUEST_H
#define WEFT_TOOLS_WEFT_RESHARD_REQUEST_H

#include "weft/Plan/Cluster.h"
#include "weft/Plan/Reshard.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace weft::reshard {

/// The flags of one subcommand as given.
struct Flags {
  /// Flags that take a value, by name ("--shape").
  std::map<std::string, std::string> values;
  /// Flags without a value that were given ("--json").
  std::set<std::string> switches;

  /// True when `name` was given (with a value or as a switch).
  bool has(llvm::StringRef name) const {
    return values.count(name.str()) || switches.count(name.str());
  }
  /// The value of `name`; empty when it was not given.
  llvm::StringRef value(llvm::StringRef name) const;
};

/// Which flags a subcommand takes.
struct FlagSpec {
  /// The subcommand, for messages ("plan").
  llvm::StringRef subcommand;
  std::vector<llvm::StringRef> valueFlags;
  std::vector<llvm::StringRef> switchFlags;
  /// Accepted, but not listed in messages (testing aids).
  std::vector<llvm::StringRef> hiddenSwitches;
};

/// Reads `args` (`--flag value` or `--flag=value`); the error names the
/// flag, or lists the subcommand's flags for an unknown one.
llvm::Expected<Flags> parseFlags(llvm::ArrayRef<llvm::StringRef> args,
                                 const FlagSpec &spec);

/// What to plan: the cluster, the tensor and its two sides, the methods.
struct PlanRequest {
  plan::Cluster cluster;
  plan::ReshardProblem problem;
  plan::DType dtype = plan::DType::F32;
  std::vector<plan::ReshardMethod> methods;
  /// --max-broadcast-groups: the most sub-communicators a run creates for
  /// its broadcast calls (0 to 1024; default 16).
  int64_t maxBroadcastGroups = 16;
};

/// The broadcast groups of the plans' calls, as a run creates them once at
/// start-up: in plan, then transfer order, deduplicated by device set,
/// capped at `cap` (plan::BroadcastGroups).
struct PlanGroups {
  /// Each group's cluster devices, increasing.
  std::vector<std::vector<int>> sets;
  /// Per plan, per transfer: its group; -1 for a call over the world
  /// (beyond the cap) or a transfer that is no call.
  std::vector<std::vector<int64_t>> groupOf;
};
PlanGroups assignBroadcastGroups(llvm::ArrayRef<plan::ReshardPlan> plans,
                                 int64_t cap);

/// Builds the request from --cluster, --from, --to, --shape (required),
/// --dtype, --max-broadcast-groups and --method (`defaultMethod` when absent: a
/// method's name or "all"). Errors name the flag and the value.
llvm::Expected<PlanRequest> buildPlanRequest(const Flags &flags,
                                             llvm::StringRef subcommand,
                                             llvm::StringRef defaultMethod);

/// Plans every method of `request`; a planner error says which method
/// (starting with "internal" when the planner found a broken invariant).
llvm::Expected<std::vector<plan::ReshardPlan>>
planAll(const PlanRequest &request);

/// The tensor's size in bytes.
int64_t tensorBytes(const plan::ReshardProblem &problem);

/// "1.5 s", "12.3 ms", "456 us", "0 s".
std::string formatSeconds(double seconds);

/// "0 B", "512 B", "1.5 KiB", "256 MiB", "2 GiB".
std::string formatBytes(double bytes);

/// "[0,1]".
std::string formatAxes(llvm::ArrayRef<int> axes);

/// predicted / bound; 1 when both are zero, nullopt when only the bound is.
std::optional<double> boundRatio(const plan::ReshardPlan &plan);

/// "tensor 64x64 f32 (16 KiB) from SIDE to SIDE on CLUSTER (N devices, K
/// nodes)" and the cluster's note.
void printHeader(llvm::raw_ostream &os, const PlanRequest &request);

/// The column names of printSummary's line.
void printSummaryHeader(llvm::raw_ostream &os);

/// One line per plan (method, predicted, bound, ratio, bytes, transfers,
/// messages), then its bound's reason, reduction, in-mesh steps and note.
void printSummary(llvm::raw_ostream &os, const plan::ReshardPlan &plan);

} // namespace weft::reshard

#endif // WEFT_TOOLS_WEFT_RESHARD_REQUEST_H
