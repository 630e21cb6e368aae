//===- TempFolder.cpp - Scratch folders that never outlive a tool ---------===//
//
// The live folders are kept in one list. A signal handler only writes the
// signal's number to a pipe; a thread that waits on it does the removal in
// ordinary code (removing folders is not async-signal-safe), then re-raises
// the signal with its default action.
//
//===----------------------------------------------------------------------===//

#include "weft/Support/TempFolder.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Signals.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

using namespace llvm;

static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};

namespace {
/// The folders to remove however the process ends. Never destroyed, so that
/// exit() and crash handlers can still read it.
struct LiveFolders {
  std::mutex mutex;
  std::vector<std::string> paths;
};
} // namespace

static LiveFolders &liveFolders() {
  static LiveFolders *folders = [] {
    auto *created = new LiveFolders;
    // At exit(): a library that calls exit() skips the TempFolder
    // destructors.
    std::atexit([] {
      LiveFolders &live = liveFolders();
      std::lock_guard<std::mutex> lock(live.mutex);
      for (const std::string &path : live.paths)
        sys::fs::remove_directories(path);
    });
    // On a crash (LLVM's handlers for SIGSEGV, SIGABRT, ...): the crashing
    // thread may hold the lock, so only try it.
    sys::AddSignalHandler(
        [](void *) {
          LiveFolders &live = liveFolders();
          std::unique_lock<std::mutex> lock(live.mutex, std::try_to_lock);
          if (!lock.owns_lock())
            return;
          for (const std::string &path : live.paths)
            sys::fs::remove_directories(path);
        },
        nullptr);
    return created;
  }();
  return *folders;
}

static void removeLiveFolders() {
  LiveFolders &live = liveFolders();
  std::lock_guard<std::mutex> lock(live.mutex);
  for (const std::string &path : live.paths)
    sys::fs::remove_directories(path);
  live.paths.clear();
}

weft::InheritedSignals weft::readInheritedSignals() {
  InheritedSignals inherited;
  for (int i = 0; i < 3; ++i) {
    struct sigaction current;
    inherited.ignored[i] = sigaction(kSignals[i], nullptr, &current) == 0 &&
                           current.sa_handler == SIG_IGN;
  }
  return inherited;
}

/// The write end of the pipe the handler wakes the cleaning thread with.
static int wakeFd = -1;

static void onTerminationSignal(int signal) {
  int savedErrno = errno;
  unsigned char number = static_cast<unsigned char>(signal);
  ssize_t written = write(wakeFd, &number, 1);
  (void)written;
  errno = savedErrno;
}

void weft::removeTempFoldersOnSignals(const InheritedSignals &inherited) {
  liveFolders();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return; // Signals then keep LLVM's handlers: files go, folders stay.
  wakeFd = fds[1];
  int readFd = fds[0];
  std::thread([readFd] {
    unsigned char number = 0;
    while (read(readFd, &number, 1) != 1)
      if (errno != EINTR)
        return;
    removeLiveFolders();
    sys::RunInterruptHandlers();
    int signal = number;
    std::signal(signal, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signal);
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    raise(signal);
    _exit(128 + signal);
  }).detach();

  for (int i = 0; i < 3; ++i) {
    if (inherited.ignored[i]) {
      std::signal(kSignals[i], SIG_IGN);
      continue;
    }
    struct sigaction action = {};
    action.sa_handler = onTerminationSignal;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(kSignals[i], &action, nullptr);
  }
}

Expected<std::unique_ptr<weft::TempFolder>>
weft::TempFolder::create(StringRef prefix) {
  // Under the lock, so that a signal cannot end the process between the
  // folder's creation and its listing.
  LiveFolders &live = liveFolders();
  std::lock_guard<std::mutex> lock(live.mutex);
  SmallString<128> path;
  if (std::error_code ec = sys::fs::createUniqueDirectory(prefix, path))
    return createStringError(ec, "cannot create a temporary folder: " +
                                     ec.message());
  live.paths.push_back(path.str().str());
  return std::unique_ptr<TempFolder>(new TempFolder(path.str().str()));
}

weft::TempFolder::~TempFolder() {
  LiveFolders &live = liveFolders();
  std::lock_guard<std::mutex> lock(live.mutex);
  sys::fs::remove_directories(folder);
  live.paths.erase(std::remove(live.paths.begin(), live.paths.end(), folder),
                   live.paths.end());
}
