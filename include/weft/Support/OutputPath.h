//===- OutputPath.h - Checking an output path before the work ---*- C++ -*-===//
//
// Tools check where they will write before they compile, so that a path
// they cannot use is a user error named at once, not a failure at the end.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_SUPPORT_OUTPUTPATH_H
#define WEFT_SUPPORT_OUTPUTPATH_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace weft {

/// What a tool will write at an output path.
struct OutputPathRule {
  /// A folder (created, or an existing one filled or replaced) or a file.
  bool folder = false;
  /// For messages: what is written there, e.g. "--emit=exe writes a package
  /// folder".
  std::string purpose;
  /// A folder output that exists and holds files may be replaced only if it
  /// holds this file (a package's "manifest.json"); empty: any folder may be
  /// written into.
  std::string replaceableIf;
};

/// Checks that `path` can take the output `rule` describes, before any work
/// is done: no file where a folder goes or the reverse, no file among the
/// folders above it, an existing folder that may be replaced, and a parent
/// folder (the nearest that exists: missing ones are created later) where
/// files can be created, tried by creating and removing one. The error's
/// message does not repeat the path; the caller names it and the option.
llvm::Error checkOutputPath(llvm::StringRef path, const OutputPathRule &rule);

} // namespace weft

#endif // WEFT_SUPPORT_OUTPUTPATH_H
