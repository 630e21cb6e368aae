//===- OutputPath.cpp - Checking an output path before the work -----------===//
//
// checkOutputPath: the path's kind, the folders above it, and a probe file in
// the folder that will hold it.
//
//===----------------------------------------------------------------------===//

#include "weft/Support/OutputPath.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace llvm;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

/// Whether `dir` holds anything; an unreadable folder counts as full.
static bool holdsFiles(StringRef dir) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  return ec || it != end;
}

/// Creates and removes a file in `dir`: the one sure test that files can be
/// made there (permission bits say nothing for root, nor for /proc).
static Error tryCreatingFileIn(StringRef dir) {
  SmallString<256> model(dir);
  path::append(model, ".weft-write-test-%%%%%%%%");
  int fd = -1;
  SmallString<256> probe;
  if (std::error_code ec = fs::createUniqueFile(model, fd, probe))
    return createStringError(ec, "cannot create files in '" + dir +
                                     "': " + ec.message());
  fs::closeFile(fd);
  fs::remove(probe);
  return Error::success();
}

Error weft::checkOutputPath(StringRef pathText, const OutputPathRule &rule) {
  SmallString<256> full(pathText);
  if (std::error_code ec = fs::make_absolute(full))
    return createStringError(ec, "cannot resolve the path: " + ec.message());
  path::remove_dots(full, /*remove_dot_dot=*/true);

  fs::file_status status;
  if (!fs::status(full, status) && fs::exists(status)) {
    bool isFolder = fs::is_directory(status);
    if (rule.folder && !isFolder)
      return createStringError("is a file; " + rule.purpose +
                               ": give a new path or remove the file");
    if (!rule.folder && isFolder)
      return createStringError("is a folder; " + rule.purpose);
    if (isFolder && !rule.replaceableIf.empty() && holdsFiles(full)) {
      SmallString<256> marker(full);
      path::append(marker, rule.replaceableIf);
      if (!fs::exists(marker))
        return createStringError(
            "the folder holds files but no " + rule.replaceableIf +
            ", so it is not one to replace (" + rule.purpose +
            "): give a new or empty folder");
    }
  }

  // The nearest folder above that exists: a folder output creates the
  // missing ones; a file output needs its parent.
  StringRef parent = path::parent_path(full);
  while (!parent.empty() && !fs::exists(parent)) {
    if (!rule.folder)
      return createStringError("the folder '" + parent + "' does not exist");
    parent = path::parent_path(parent);
  }
  if (parent.empty())
    return Error::success();
  if (!fs::is_directory(parent))
    return createStringError("'" + parent + "' is a file, not a folder");
  return tryCreatingFileIn(parent);
}
