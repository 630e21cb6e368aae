//===- TempFolder.h - Scratch folders that never outlive a tool -*- C++ -*-===//
//
// A tool's scratch folder under $TMPDIR goes away when the tool returns,
// fails, exits, crashes or is stopped by SIGINT, SIGTERM or SIGHUP; a
// signal the tool was started with ignored stays ignored.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_SUPPORT_TEMPFOLDER_H
#define WEFT_SUPPORT_TEMPFOLDER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace weft {

/// Which of SIGINT, SIGTERM and SIGHUP the process was started with ignored
/// (nohup, `trap '' INT`, the background jobs of a script).
struct InheritedSignals {
  bool ignored[3] = {false, false, false};
};

/// Reads the inherited dispositions. Call it first in main: llvm::InitLLVM
/// puts LLVM's handlers on these signals, ignored or not.
InheritedSignals readInheritedSignals();

/// From now on SIGINT, SIGTERM and SIGHUP remove every live TempFolder and
/// the files given to llvm::sys::RemoveFileOnSignal, then end the process by
/// the same signal, so that its parent sees why it stopped (exit 128 + the
/// signal in a shell). A signal in `inherited` is ignored again instead:
/// LLVM's handler would delete the files being written and carry on. Call
/// it once, after llvm::InitLLVM and before any thread starts.
void removeTempFoldersOnSignals(const InheritedSignals &inherited);

/// A new folder under the system's temporary folder ($TMPDIR), removed with
/// all it holds when this object dies, when a signal of
/// removeTempFoldersOnSignals ends the process, on a crash, or at exit().
class TempFolder {
public:
  /// Creates "$TMPDIR/<prefix>-XXXXXX".
  static llvm::Expected<std::unique_ptr<TempFolder>>
  create(llvm::StringRef prefix);
  ~TempFolder();
  TempFolder(const TempFolder &) = delete;
  TempFolder &operator=(const TempFolder &) = delete;

  llvm::StringRef path() const { return folder; }

private:
  explicit TempFolder(std::string folder) : folder(std::move(folder)) {}
  std::string folder;
};

} // namespace weft

#endif // WEFT_SUPPORT_TEMPFOLDER_H
