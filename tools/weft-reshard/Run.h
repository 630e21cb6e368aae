//===- Run.h - weft-reshard run ---------------------------------*- C++ -*-===//
//
// The `run` subcommand: plans a resharding as `plan` does, then executes
// the plan on CPU processes under mpirun (weft-reshard-rank, one per
// device) and checks every destination block bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TOOLS_WEFT_RESHARD_RUN_H
#define WEFT_TOOLS_WEFT_RESHARD_RUN_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace weft::reshard {

/// Runs `weft-reshard run` with the arguments after the subcommand and
/// returns the exit code: 0 passed, 1 bad options or a cluster that cannot
/// run, 2 a mismatch of data or bytes, 4 a rank failed or timed out, 70 an
/// internal error.
int runRun(llvm::ArrayRef<llvm::StringRef> args);

} // namespace weft::reshard

#endif // WEFT_TOOLS_WEFT_RESHARD_RUN_H
