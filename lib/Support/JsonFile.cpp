//===- JsonFile.cpp - JSON input with depth and size limits ---------------===//
//
// parseJson: a scan that counts open objects and arrays outside strings, then
// llvm::json::parse on text that passed it.
//
//===----------------------------------------------------------------------===//

#include "weft/Support/JsonFile.h"

#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

/// "[LINE:COLUMN, byte=OFFSET]: MESSAGE", the form of json::parse's errors,
/// counted as it counts them (lines from 1, columns from 0), so that both
/// kinds of error point alike.
static Error errorAt(StringRef text, size_t offset, const Twine &message) {
  StringRef before = text.take_front(offset);
  size_t line = before.count('\n') + 1;
  size_t lineStart = before.rfind('\n');
  size_t column =
      lineStart == StringRef::npos ? offset : offset - lineStart - 1;
  return createStringError(
      formatv("[{0}:{1}, byte={2}]: {3}", line, column, offset, message.str())
          .str());
}

Expected<json::Value> weft::parseJson(StringRef text,
                                      const JsonLimits &limits) {
  if (text.size() > limits.maxBytes)
    return createStringError(formatv("{0} bytes, more than the {1} bytes a "
                                     "JSON input may hold",
                                     text.size(), limits.maxBytes)
                                 .str());
  // Only brackets outside strings nest; a backslash in a string escapes the
  // next character, so "\"" and "\\" are read whole. Malformed text is left
  // for json::parse to describe.
  unsigned depth = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '{' || c == '[') {
      if (++depth > limits.maxDepth)
        return errorAt(text, i,
                       formatv("objects and arrays nested more than {0} "
                               "levels deep",
                               limits.maxDepth));
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return json::parse(text);
}
