//===- ReshardText.h - Command-line text of a resharding --------*- C++ -*-===//
//
// Plain C++ (no IR): the one-argument syntax of a resharding side,
// SHAPE@DEVICES:SHARDING[+p[AXES]], and of a tensor shape, as weft-reshard
// and scripts write them. Parsing checks everything a side must satisfy
// and says what is wrong and where; formatting writes the same syntax back.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PLAN_RESHARDTEXT_H
#define WEFT_PLAN_RESHARDTEXT_H

#include "weft/Plan/Cluster.h"
#include "weft/Plan/Reshard.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weft::plan {

/// The most dimensions parseTensorShape accepts.
inline constexpr unsigned kMaxTensorRank = 64;

/// Parses one side of a resharding, SHAPE@DEVICES:SHARDING[+p[AXES]]:
///
///   2x4@0-7:[[0],[],[]]      mesh 2x4 over cluster devices 0..7 (row-major);
///                            tensor dim 0 split over mesh axis 0
///   2x2@4,5,8,9:[[],[0,1]]   a device list; dim 1 split over both axes,
///                            major first
///   1x4@0-3:[[1],[]]+p[0]    a pending partial sum over mesh axis 0
///   1x1@0:[[]]               one device
///
/// DEVICES joins cluster device indices and increasing ranges A-B with
/// commas (`0-3,8,10-11`); spaces are allowed inside SHARDING. Checks the
/// mesh shape (parseMeshShape), that the list names as many distinct
/// devices of `cluster` as the mesh has positions, that the sharding has
/// `tensorRank` dimensions, that every mesh axis exists and is used once,
/// and that a partial axis is not also split. Every error starts with
/// `what` (e.g. "--from") and the quoted text, then says what is wrong and
/// where. The mesh, and so the sharding, is named after `what` without its
/// dashes ("mesh" for an empty one).
llvm::Expected<ReshardSide> parseReshardSide(llvm::StringRef text,
                                             const Cluster &cluster,
                                             unsigned tensorRank,
                                             llvm::StringRef what);

/// The text of `side` in the syntax parseReshardSide reads (ranges of three
/// or more consecutive devices as A-B, no spaces), so that parsing it gives
/// `side` back.
std::string formatReshardSide(const ReshardSide &side);

/// Cluster device indices as DEVICES is written: runs of three or more
/// consecutive increasing devices as A-B, the others one by one, joined by
/// commas ("0-3,8,10,11").
std::string formatDeviceList(llvm::ArrayRef<int> devices);

/// Parses a tensor shape such as "1024x1024x512" or "4096": 1 to
/// kMaxTensorRank positive dimensions joined by 'x', at most 2^48 elements
/// in all.
llvm::Expected<std::vector<int64_t>> parseTensorShape(llvm::StringRef text);

/// "1024x1024x512".
std::string formatTensorShape(llvm::ArrayRef<int64_t> shape);

} // namespace weft::plan

#endif // WEFT_PLAN_RESHARDTEXT_H
