//===- StagePlannerDetail.h - What the DP and its oracle share -*- C++ -*-===//
//
// Internal to lib/Plan: the helpers StagePlanner.cpp (the DP) and
// StageProblem.cpp (the problem, evaluation and brute force) share.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_LIB_PLAN_STAGEPLANNERDETAIL_H
#define WEFT_LIB_PLAN_STAGEPLANNERDETAIL_H

#include "weft/Plan/StagePlanner.h"

#include <limits>
#include <utility>

namespace weft::plan::detail {

inline constexpr double kInfinity = std::numeric_limits<double>::infinity();

/// A stage of `s` takes part of a node (not whole nodes).
bool isPart(const StageProblem &p, const SubMeshShape &s);

/// (primary, secondary) of the objective: smaller is better.
std::pair<double, double> objectiveKey(const StageProblem &p, double latency,
                                       double cycle);

/// The shapes a stage may take: the problem's, or every one the cluster
/// allows.
std::vector<SubMeshShape> candidateShapes(const StageProblem &p);

/// The most stages a plan may have.
int64_t stageCap(const StageProblem &p);

} // namespace weft::plan::detail

#endif // WEFT_LIB_PLAN_STAGEPLANNERDETAIL_H
