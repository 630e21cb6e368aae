//===- MpirunReport.h - What mpirun says about its ranks --------*- C++ -*-===//
//
// Private to lib/Launch: reads mpirun's stderr line by line, forwards what
// the ranks print, and recognizes OpenMPI's boxed reports of ranks that
// aborted, died or exited with another code, so that the launcher can say
// it in one line and pick the exit code.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_LIB_LAUNCH_MPIRUNREPORT_H
#define WEFT_LIB_LAUNCH_MPIRUNREPORT_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace weft::run {

/// Reads mpirun's stderr: forwards the ranks' lines, and recognizes
/// OpenMPI's reports (boxes between lines of dashes) of ranks that aborted
/// or died, which it keeps for one line of its own.
class MpirunReport {
public:
  void line(llvm::StringRef text) {
    if (isDashes(text)) {
      if (!inBox) {
        inBox = true;
        box.clear();
        return;
      }
      inBox = false;
      endBox();
      return;
    }
    if (inBox) {
      box.push_back(text.str());
      // Not a report after all: let it through.
      if (box.size() > 100) {
        inBox = false;
        forwardBox();
      }
      return;
    }
    llvm::SmallVector<llvm::StringRef, 4> match;
    // The driver's own last words before MPI_Abort: the reason is on the
    // line above; mpirun's box may be lost in the shutdown.
    static const llvm::Regex driverAbort(
        "\\[rank ([0-9]+)/[0-9]+\\]: note: stopping every rank \\(MPI_Abort "
        "with exit code ([0-9]+)\\)");
    if (driverAbort.match(text, &match)) {
      noteAbort(match[1], match[2]);
      return;
    }
    // Open MPI's own error log while it tears down a job that a rank
    // aborted ("Data unpack would read past end of buffer", a help text it
    // failed to print): the launcher reports the cause itself, and shows these
    // lines only when it has nothing better (see noise()).
    if (text.contains("ORTE_ERROR_LOG:")) {
      suppressed.push_back(text.str());
      return;
    }
    llvm::errs() << text << "\n";
  }

  void finish() {
    if (inBox)
      forwardBox();
    inBox = false;
  }

  /// Prints the Open MPI error log lines held back, for outcomes that have
  /// no report of their own.
  void printSuppressed() {
    for (const std::string &text : suppressed)
      llvm::errs() << text << "\n";
    suppressed.clear();
  }

  /// A rank that called MPI_Abort, one killed by a signal, one that ended
  /// without MPI_Finalize, and the first rank that exited with a non-zero
  /// code; -1 when none.
  int abortRank = -1, abortCode = 0;
  int signalRank = -1, signal = 0;
  std::string signalNode;
  int improperRank = -1;
  int exitRank = -1, exitCode = 0;
  /// mpirun said that a process returned a non-zero exit code (and its own
  /// exit code is that one), whether or not it said which.
  bool rankExitedNonZero = false;
  bool launchFailed = false;

private:
  static bool isDashes(llvm::StringRef text) {
    return text.size() >= 20 &&
           text.find_first_not_of('-') == llvm::StringRef::npos;
  }

  void noteAbort(llvm::StringRef rank, llvm::StringRef code) {
    if (abortRank >= 0)
      return;
    rank.getAsInteger(10, abortRank);
    code.getAsInteger(10, abortCode);
  }

  void endBox() {
    std::string text = llvm::join(box, " ");
    llvm::SmallVector<llvm::StringRef, 5> match;
    // Communicator names may have spaces ("MPI COMMUNICATOR 3 DUP FROM 0").
    static const llvm::Regex abort("MPI_ABORT was invoked on rank ([0-9]+) in "
                                   "communicator .* with errorcode ([0-9]+)");
    static const llvm::Regex died(
        "process rank ([0-9]+) with PID [0-9]+ on node "
        "([^ ]+) exited on signal ([0-9]+)");
    if (abort.match(text, &match)) {
      noteAbort(match[1], match[2]);
      return;
    }
    if (died.match(text, &match)) {
      if (signalRank < 0) {
        match[1].getAsInteger(10, signalRank);
        signalNode = match[2].str();
        match[3].getAsInteger(10, signal);
      }
      return;
    }
    static const llvm::Regex improper(
        "process rank ([0-9]+) with PID [0-9]+ on +"
        "node [^ ]+ exiting improperly");
    if (improper.match(text, &match)) {
      if (improperRank < 0)
        match[1].getAsInteger(10, improperRank);
      return;
    }
    static const llvm::Regex exited(
        "exited with non-zero status, thus causing.*Process name: "
        "\\[\\[[0-9]+,[0-9]+\\],([0-9]+)\\] +Exit code: +([0-9]+)");
    if (exited.match(text, &match)) {
      if (exitRank < 0) {
        match[1].getAsInteger(10, exitRank);
        match[2].getAsInteger(10, exitCode);
      }
      return;
    }
    // "Primary job terminated normally, but 1 process returned a non-zero
    // exit code": mpirun's own exit code is then that process's. The box
    // that names the process may follow, or may be lost in the teardown
    // (it is, now and then, on a loaded host).
    if (llvm::StringRef(text).contains("terminated normally, but")) {
      rankExitedNonZero = true;
      return;
    }
    if (llvm::StringRef(text).contains("unable to launch the specified "
                                       "application") ||
        llvm::StringRef(text).contains("unable to reliably start one or more "
                                       "daemons") ||
        llvm::StringRef(text).contains("not enough slots"))
      launchFailed = true;
    forwardBox();
  }

  void forwardBox() {
    std::string dashes(74, '-');
    llvm::errs() << dashes << "\n";
    for (const std::string &text : box)
      llvm::errs() << text << "\n";
    llvm::errs() << dashes << "\n";
    box.clear();
  }

  bool inBox = false;
  std::vector<std::string> box;
  std::vector<std::string> suppressed;
};

} // namespace weft::run

#endif // WEFT_LIB_LAUNCH_MPIRUNREPORT_H
