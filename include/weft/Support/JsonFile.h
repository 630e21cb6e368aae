//===- JsonFile.h - JSON input with depth and size limits -------*- C++ -*-===//
//
// The one JSON reader of Weft's tools: a cheap, non-recursive scan refuses
// text nested too deep or too long before llvm::json::parse sees it, because
// that parser recurses once per level and overflows the stack on deep input.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_SUPPORT_JSONFILE_H
#define WEFT_SUPPORT_JSONFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>

namespace weft {

/// What parseJson accepts. Weft's own files (cluster specs, sharding files,
/// package manifests) nest fewer than 10 levels and hold kilobytes.
struct JsonLimits {
  /// Objects and arrays nested deeper than this are refused.
  unsigned maxDepth = 64;
  /// Text longer than this many bytes is refused.
  uint64_t maxBytes = uint64_t(64) << 20;
};

/// Parses `text` as llvm::json::parse does, after checking it against
/// `limits` without recursion. Errors read as json::parse's do,
/// "[LINE:COLUMN, byte=OFFSET]: MESSAGE" (a depth error points at the
/// bracket that passes the limit), and name no file: the caller adds it.
llvm::Expected<llvm::json::Value> parseJson(llvm::StringRef text,
                                            const JsonLimits &limits = {});

} // namespace weft

#endif // WEFT_SUPPORT_JSONFILE_H
