//===- Launch.cpp - Starting and supervising device programs --------------===//
//
// A single program runs as a child process. A job of several runs as one
// MPI rank per program under mpirun, in a process group of its own so that
// a timeout can stop all of it; mpirun's stderr passes through the
// launcher, which replaces OpenMPI's boxed reports of dead or aborted ranks
// by one line each and turns them into exit code 4. Programs that send
// heartbeats (Heartbeats.cpp) are named when they stop talking; every child
// gets SIGTERM when the launcher dies (PR_SET_PDEATHSIG), and the programs
// end themselves when the launcher's socket closes. weft-run and
// weft-reshard use it; the launcher's messages carry the tool's name.
//
//===----------------------------------------------------------------------===//

#include "weft/Launch/Launch.h"
#include "MpirunReport.h"

#include "weft/Launch/Heartbeats.h"

#include "weft/Support/WaitPolicy.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

using namespace llvm;
using namespace weft::run;

/// How long processes get to end after SIGTERM before SIGKILL.
static constexpr double kGraceSeconds = 3.0;

/// The tool whose messages these are (LaunchOptions::toolName), set when a
/// launch starts: launches run one at a time, from one thread.
static std::string toolName = "weft-run";

static raw_ostream &error() { return WithColor::error(errs(), toolName); }
static raw_ostream &note() { return WithColor::note(errs(), toolName); }

std::string weft::run::findSiblingProgram(const std::string &name) {
  static int anchor;
  std::string self = sys::fs::getMainExecutable(nullptr, &anchor);
  if (self.empty())
    return "";
  SmallString<256> path(sys::path::parent_path(self));
  sys::path::append(path, name);
  return sys::fs::can_execute(path) ? path.str().str() : "";
}

bool weft::run::splitShellWords(const std::string &text,
                                std::vector<std::string> &out,
                                std::string &message) {
  std::string word;
  bool inWord = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote == '\'') {
      if (c == '\'')
        quote = 0;
      else
        word += c;
      continue;
    }
    if (quote == '"') {
      if (c == '"')
        quote = 0;
      else if (c == '\\' && i + 1 < text.size() &&
               StringRef("\"\\$`").contains(text[i + 1]))
        word += text[++i];
      else
        word += c;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n') {
      if (inWord)
        out.push_back(word);
      word.clear();
      inWord = false;
      continue;
    }
    inWord = true;
    if (c == '\'' || c == '"')
      quote = c;
    else if (c == '\\' && i + 1 < text.size())
      word += text[++i];
    else
      word += c;
  }
  if (quote) {
    message = std::string("--mpirun-args: unterminated ") +
              (quote == '"' ? "double" : "single") + " quote in '" + text + "'";
    return false;
  }
  if (inWord)
    out.push_back(word);
  return true;
}

/// `word` quoted for a POSIX shell when it needs to be.
static std::string shellQuote(StringRef word) {
  if (!word.empty() &&
      word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU"
                             "VWXYZ0123456789_-./=:,+@%") == StringRef::npos)
    return word.str();
  std::string out = "'";
  for (char c : word)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

//===----------------------------------------------------------------------===//
// Supervising a child
//===----------------------------------------------------------------------===//

/// Where SIGINT, SIGTERM and SIGHUP go while mpirun runs in its own process
/// group (the terminal's Ctrl-C reaches only weft-run's group).
static volatile sig_atomic_t forwardGroup = 0;
static volatile sig_atomic_t forwardedSignal = 0;

static void forwardSignal(int signal) {
  forwardedSignal = signal;
  if (forwardGroup > 0)
    kill(-static_cast<pid_t>(forwardGroup), signal);
}

namespace {

/// What became of a supervised child.
struct Ending {
  int status = 0;
  bool timedOut = false;
  /// A rank the failure detector found dead, stopped or failed.
  std::optional<RankFailure> failure;
};

/// Reads lines from a pipe and hands them on; keeps a trailing piece.
class LineReader {
public:
  template <typename Fn> void feed(const char *data, size_t size, Fn onLine) {
    partial.append(data, size);
    size_t start = 0;
    for (size_t newline;
         (newline = partial.find('\n', start)) != std::string::npos;
         start = newline + 1)
      onLine(StringRef(partial).slice(start, newline));
    partial.erase(0, start);
  }
  template <typename Fn> void finish(Fn onLine) {
    if (!partial.empty())
      onLine(StringRef(partial));
    partial.clear();
  }

private:
  std::string partial;
};

/// How to watch a child: its stderr, its time limit, its heartbeats.
struct Watch {
  /// The child's stderr (-1: not captured).
  int errFd = -1;
  int64_t timeoutSeconds = 0;
  /// Null: no failure detector.
  HeartbeatListener *heartbeats = nullptr;
  double detectAfterSeconds = 0;
  /// Ranks that must say hello; one missing after the bound plus
  /// kStartupSeconds is reported as not started.
  size_t expectedRanks = 0;
};

} // namespace

/// Extra time a program gets to say hello: mpirun may start ranks on other
/// hosts over ssh.
static constexpr double kStartupSeconds = 20.0;

/// The first rank that never said hello, as a failure.
static RankFailure missingRank(const HeartbeatListener &heartbeats,
                               size_t expected, double since) {
  RankFailure failure;
  failure.rank = heartbeats.firstRankNotHeard(expected);
  failure.silentSeconds = since;
  return failure;
}

/// Waits for `pid`, passing the lines of `watch.errFd` to `onLine` and
/// reading heartbeats. After the timeout (0: never), or when the failure
/// detector names a rank, it sends SIGCONT and SIGTERM to `target` (a pid,
/// or a negated process group: stopped processes only act on SIGTERM once
/// continued), and SIGKILL kGraceSeconds later.
template <typename Fn>
static Ending supervise(pid_t pid, pid_t target, Watch watch, Fn onLine) {
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  Ending ending;
  bool exited = false, stopping = false, killed = false;
  double stopAt = 0;
  LineReader reader;
  char buffer[4096];
  int errFd = watch.errFd;
  auto stopAll = [&](double now) {
    stopping = true;
    stopAt = now;
    kill(target, SIGCONT);
    kill(target, SIGTERM);
  };
  while (true) {
    if (!exited) {
      pid_t done = waitpid(pid, &ending.status, WNOHANG);
      if (done == pid || (done < 0 && errno != EINTR))
        exited = true;
    }
    if (exited && errFd < 0)
      break;
    double now = elapsed();
    if (watch.timeoutSeconds > 0 && !stopping &&
        now >= watch.timeoutSeconds) {
      ending.timedOut = true;
      stopAll(now);
    }
    if (watch.heartbeats && !stopping && !exited) {
      watch.heartbeats->poll(Clock::now());
      if (watch.detectAfterSeconds > 0) {
        ending.failure = watch.heartbeats->check(
            Clock::now(),
            std::chrono::duration<double>(watch.detectAfterSeconds));
        if (!ending.failure &&
            watch.heartbeats->ranksHeard() < watch.expectedRanks &&
            now >= watch.detectAfterSeconds + kStartupSeconds)
          ending.failure =
              missingRank(*watch.heartbeats, watch.expectedRanks, now);
        if (ending.failure)
          stopAll(now);
      }
    }
    if (stopping && !killed && now >= stopAt + kGraceSeconds) {
      kill(target, SIGKILL);
      killed = true;
    }
    int waitMs = exited ? 0 : 20;
    std::vector<pollfd> pollers;
    if (errFd >= 0)
      pollers.push_back({errFd, POLLIN, 0});
    if (watch.heartbeats && !exited)
      for (int fd : watch.heartbeats->descriptors())
        pollers.push_back({fd, POLLIN, 0});
    int ready = pollers.empty()
                    ? (std::this_thread::sleep_for(
                           std::chrono::milliseconds(waitMs)),
                       0)
                    : poll(pollers.data(), pollers.size(), waitMs);
    if (ready < 0 && errno == EINTR)
      continue;
    if (errFd < 0)
      continue;
    bool errReady = ready > 0 && pollers[0].revents != 0;
    ssize_t n = 0;
    if (errReady) {
      n = read(errFd, buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR)
        continue;
    }
    if (n > 0) {
      reader.feed(buffer, static_cast<size_t>(n), onLine);
      continue;
    }
    // End of the stream (n == 0 after POLLIN/POLLHUP), or nothing more once
    // the child is gone (a grandchild may hold the pipe open).
    if (errReady || exited) {
      reader.finish(onLine);
      close(errFd);
      errFd = -1;
    }
  }
  // A rank that outlived mpirun (killed from outside) goes too.
  if (target < 0 && exited && WIFSIGNALED(ending.status))
    kill(target, SIGKILL);
  return ending;
}

/// Starts `path` like posix_spawn, but in a child that gets SIGTERM when
/// weft-run dies (even by SIGKILL) and, with `newGroup`, leads a process
/// group of its own. Its stderr goes to `errFd` unless -1. Returns 0 or the
/// errno of the failed start.
static int spawnChild(const std::string &path, char *const argv[],
                      char *const envp[], int errFd, bool newGroup,
                      pid_t &out) {
  // The child reports a failed exec through a close-on-exec pipe.
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0)
    return errno;
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int error = errno;
    close(report[0]);
    close(report[1]);
    return error;
  }
  if (pid == 0) {
    close(report[0]);
    if (newGroup)
      setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    // weft-run died between fork and prctl: the signal would never come.
    if (getppid() != parent)
      _exit(127);
    if (errFd >= 0)
      dup2(errFd, STDERR_FILENO);
    execve(path.c_str(), argv, envp);
    int error = errno;
    ssize_t ignored = write(report[1], &error, sizeof(error));
    (void)ignored;
    _exit(127);
  }
  close(report[1]);
  int error = 0;
  ssize_t n;
  do
    n = read(report[0], &error, sizeof(error));
  while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n == static_cast<ssize_t>(sizeof(error))) {
    waitpid(pid, nullptr, 0);
    return error;
  }
  out = pid;
  return 0;
}

/// The failure detector's report: which rank, where, doing what.
static void reportFailure(const RankFailure &failure,
                          double detectAfterSeconds) {
  auto where = [&] {
    std::string text = "rank " + std::to_string(failure.rank);
    if (!failure.host.empty())
      text += " (pid " + std::to_string(failure.pid) + " on " + failure.host +
              ")";
    return text;
  };
  if (!failure.reportedFailure.empty()) {
    error() << where() << " failed: " << failure.reportedFailure
            << "; its last activity: " << failure.lastActivity
            << "; stopped every rank\n";
    return;
  }
  if (failure.host.empty()) {
    error() << "rank " << failure.rank << " never reached weft-run's failure "
            << "detector (" << format("%.1f", failure.silentSeconds)
            << " s after the launch): it did not start, or stopped at once; "
               "stopped every rank\n";
    return;
  }
  error() << where() << " stopped responding: no heartbeat for "
          << format("%.1f", failure.silentSeconds) << " s (--detect-after "
          << format("%g", detectAfterSeconds)
          << "; the process was stopped, died in the kernel or the machine "
             "is overloaded); its last activity: "
          << failure.lastActivity << "; stopped every rank\n";
}

/// Describes a signal for messages: "6 (Aborted)".
static std::string signalText(int signal) {
  return std::to_string(signal) + " (" + strsignal(signal) + ")";
}

//===----------------------------------------------------------------------===//
// The programs' environment
//===----------------------------------------------------------------------===//

namespace {

/// Variables weft-run sets for every program it starts, on top of its own
/// environment (a name already in the environment is replaced).
class ProgramEnvironment {
public:
  void set(const std::string &name, const std::string &value) {
    for (auto &entry : entries)
      if (entry.first == name) {
        entry.second = value;
        return;
      }
    entries.push_back({name, value});
  }
  const std::vector<std::pair<std::string, std::string>> &added() const {
    return entries;
  }
  /// NAME=VALUE strings: the added ones, then the rest of `environ`.
  std::vector<std::string> strings() const {
    std::vector<std::string> out;
    for (const auto &[name, value] : entries)
      out.push_back(name + "=" + value);
    for (char **entry = environ; *entry; ++entry) {
      StringRef text(*entry);
      StringRef name = text.split('=').first;
      if (llvm::none_of(entries, [&](const auto &e) { return e.first == name; }))
        out.push_back(text.str());
    }
    return out;
  }

private:
  std::vector<std::pair<std::string, std::string>> entries;
};

/// Pointers into `strings`, null-terminated, for execve.
std::vector<char *> pointersTo(std::vector<std::string> &strings) {
  std::vector<char *> out;
  for (std::string &text : strings)
    out.push_back(text.data());
  out.push_back(nullptr);
  return out;
}

} // namespace

/// How often a program sends a heartbeat: often enough that a detection
/// bound of S seconds spans ten of them.
static std::string heartbeatMilliseconds(double detectAfterSeconds) {
  double ms = std::clamp(detectAfterSeconds * 100.0, 50.0, 1000.0);
  return std::to_string(static_cast<int64_t>(ms));
}

/// Adds the wait policy and, unless the detector is off, the heartbeat
/// address to `env`; starts `listener` when it is needed.
static bool addCommonEnvironment(ProgramEnvironment &env,
                                 HeartbeatListener &listener, bool remote,
                                 const LaunchOptions &options) {
  if (!std::getenv("OMP_WAIT_POLICY") && !std::getenv("GOMP_SPINCOUNT"))
    env.set("GOMP_SPINCOUNT", weft::kOpenMpSpinCount);
  if (options.detectAfterSeconds <= 0 || options.dryRun)
    return true;
  std::string address, message;
  if (!listener.listen(remote, address, message)) {
    error() << message << "\n";
    return false;
  }
  env.set("WEFT_HEARTBEAT", address);
  env.set("WEFT_HEARTBEAT_MS",
          heartbeatMilliseconds(options.detectAfterSeconds));
  return true;
}

int weft::run::runProgram(const std::vector<std::string> &args,
                          const std::vector<std::string> &runtimeLibraries,
                          const LaunchOptions &options) {
  toolName = options.toolName;
  if (args.empty()) {
    error() << "internal: no program to run\n";
    return kExitInternal;
  }
  const std::string &executable = args[0];
  if (options.dryRun) {
    std::vector<std::string> words;
    for (const std::string &arg : args)
      words.push_back(shellQuote(arg));
    outs() << join(words, " ") << "\n";
    return kExitOk;
  }
  ProgramEnvironment env;
  HeartbeatListener listener;
  if (!addCommonEnvironment(env, listener, /*remote=*/false, options))
    return kExitInternal;
  std::vector<std::string> envStrings = env.strings();
  std::vector<char *> envp = pointersTo(envStrings);
  std::vector<std::string> argStrings = args;
  std::vector<char *> argv = pointersTo(argStrings);
  pid_t pid = 0;
  int spawnError = spawnChild(executable, argv.data(), envp.data(), -1,
                              /*newGroup=*/false, pid);
  if (spawnError != 0) {
    error() << "cannot start " << executable << ": "
            << std::strerror(spawnError) << "\n";
    return kExitBadInput;
  }
  Watch watch;
  watch.timeoutSeconds = options.timeoutGiven ? options.timeoutSeconds : 0;
  watch.heartbeats = options.detectAfterSeconds > 0 ? &listener : nullptr;
  watch.detectAfterSeconds = options.detectAfterSeconds;
  watch.expectedRanks = 1;
  Ending ending = supervise(pid, pid, watch, [](StringRef) {});
  if (ending.failure) {
    reportFailure(*ending.failure, options.detectAfterSeconds);
    return kExitPeerFailed;
  }
  if (ending.timedOut) {
    error() << executable << " did not finish within " << options.timeoutSeconds
            << " s (--timeout); stopped it\n";
    return kExitPeerFailed;
  }
  int status = ending.status;
  if (WIFSIGNALED(status)) {
    int signal = WTERMSIG(status);
    error() << executable << " was killed by signal " << signalText(signal)
            << (signal == SIGKILL ? "; perhaps the system ran out of memory"
                                  : "")
            << "\nthis is a bug in Weft unless something outside killed it; "
               "please report it with the model\n";
    return kExitInternal;
  }
  int code = WEXITSTATUS(status);
  // The dynamic loader's code when a shared library is missing.
  if (code == 127 && !runtimeLibraries.empty())
    note() << executable
           << " exited with 127; if it could not start, install the "
              "libraries it needs: "
           << join(runtimeLibraries, ", ") << "\n";
  return code;
}

//===----------------------------------------------------------------------===//
// Meshes under mpirun
//===----------------------------------------------------------------------===//

/// True when an mpirun argument names hosts (then the ranks may run
/// elsewhere, with cores weft-run cannot count).
static bool namesHosts(const std::vector<std::string> &args) {
  for (StringRef arg : args)
    if (arg == "--host" || arg == "-H" || arg == "-host" ||
        arg.starts_with("--host=") || arg == "--hostfile" ||
        arg == "-hostfile" || arg == "--machinefile" || arg == "-machinefile" ||
        arg == "--default-hostfile")
      return true;
  return std::getenv("SLURM_JOB_ID") != nullptr;
}

static int availableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

/// mpirun's command line for `job` (its own options, then one app context
/// per rank) and the environment every rank gets, in `command` and `env`.
static bool buildMpirunCommand(const std::string &mpirun, const MpiJob &job,
                               const LaunchOptions &options,
                               HeartbeatListener &listener,
                               std::vector<std::string> &command,
                               ProgramEnvironment &env) {
  size_t ranks = job.ranks.size();
  bool remote = !options.hostfile.empty() || namesHosts(options.mpirunArgs);

  command = {mpirun};
  if (geteuid() == 0)
    command.push_back("--allow-run-as-root");
  // More ranks than cores is fine on one machine (a test); on a cluster,
  // too few slots is worth an error. No binding: a rank's threads may use
  // every core it is given. The user's options come last, so that theirs
  // win (--bind-to core, --map-by ...).
  if (!remote)
    command.push_back("--oversubscribe");
  command.insert(command.end(), {"--bind-to", "none"});
  if (!options.hostfile.empty())
    command.insert(command.end(), {"--hostfile", options.hostfile});
  command.insert(command.end(), options.mpirunArgs.begin(),
                 options.mpirunArgs.end());

  // Every rank gets the same environment: set in mpirun's own (which the
  // ranks on this machine inherit) and exported by name in every app
  // context (`-x` applies to the context it is in, and carries the value to
  // other hosts). Threads per rank: --threads N goes to every rank as it
  // is; otherwise ranks on this machine share its cores, and ranks on other
  // hosts use the cores they are bound to (the driver's default).
  if (job.threads) {
    env.set("OMP_NUM_THREADS", *job.threads);
  } else if (const char *n = std::getenv("WEFT_NUM_THREADS")) {
    env.set("WEFT_NUM_THREADS", n);
  } else if (!remote) {
    int perRank = std::max<int>(1, availableCores() / static_cast<int>(ranks));
    env.set("WEFT_NUM_THREADS", std::to_string(perRank));
    env.set("OMP_NUM_THREADS", std::to_string(perRank));
  }
  if (!addCommonEnvironment(env, listener, remote, options))
    return false;
  // Shared memory without the single-copy path that containers refuse;
  // TCP too when ranks run on other hosts. mpirun's own settings; the
  // user's win.
  std::vector<std::pair<std::string, std::string>> mpirunSettings = {
      {"OMPI_MCA_btl", remote ? "self,vader,tcp" : "self,vader"},
      {"OMPI_MCA_btl_vader_single_copy_mechanism", "none"}};
  std::vector<std::string> exported;
  for (const auto &[name, value] : env.added())
    exported.push_back(name);
  for (const auto &[name, value] : mpirunSettings)
    if (!std::getenv(name.c_str()))
      env.set(name, value);

  for (size_t k = 0; k < ranks; ++k) {
    if (k)
      command.push_back(":");
    command.insert(command.end(), {"-np", "1"});
    for (const std::string &name : exported)
      command.insert(command.end(), {"-x", name});
    command.insert(command.end(), job.ranks[k].begin(), job.ranks[k].end());
  }
  return true;
}

/// The exit code of a job that `ending` and `report` describe, after one
/// line that says what went wrong (nothing when the ranks agreed).
static int mpirunVerdict(const Ending &ending, MpirunReport &report,
                         const MpiJob &job, const LaunchOptions &options) {
  if (ending.failure) {
    reportFailure(*ending.failure, options.detectAfterSeconds);
    return kExitPeerFailed;
  }
  if (ending.timedOut) {
    error() << "rank(s) did not finish within " << options.timeoutSeconds
            << " s (--timeout); stopped mpirun and every rank\n";
    return kExitPeerFailed;
  }
  if (int signal = forwardedSignal) {
    // As a shell reports a command that a signal stopped.
    error() << "interrupted by signal " << signalText(signal)
            << "; mpirun stopped every rank\n";
    return 128 + signal;
  }
  if (report.abortRank >= 0) {
    error() << "rank " << report.abortRank << " stopped the run (exit code "
            << report.abortCode
            << "; its message is above); mpirun stopped the other ranks\n";
    // The rank's own verdict (bad input, a missing device, a bug) is the
    // run's, as on one device; a rank that lost a peer says 4 itself.
    switch (report.abortCode) {
    case kExitBadInput:
    case kExitMismatch:
    case kExitDeviceUnavailable:
    case kExitInternal:
      return report.abortCode;
    default:
      return kExitPeerFailed;
    }
  }
  if (report.signalRank >= 0) {
    error() << "rank " << report.signalRank << " (on " << report.signalNode
            << ") was killed by signal " << signalText(report.signal)
            << (report.signal == SIGKILL
                    ? "; perhaps the system ran out of memory"
                    : "")
            << "; mpirun stopped the other ranks\n";
    return kExitPeerFailed;
  }
  if (report.improperRank >= 0) {
    error() << "rank " << report.improperRank
            << " ended without finishing MPI (it exited before MPI_Init or "
               "without MPI_Finalize: not a Weft device program, or stopped "
               "from outside?); mpirun stopped the other ranks\n";
    return kExitPeerFailed;
  }
  int status = ending.status;
  if (WIFSIGNALED(status)) {
    error() << "mpirun was killed by signal " << signalText(WTERMSIG(status))
            << "\n";
    return kExitPeerFailed;
  }
  int code = WEXITSTATUS(status);
  switch (code) {
  case kExitOk:
  case kExitBadInput:
  case kExitMismatch:
  case kExitDeviceUnavailable:
  case kExitPeerFailed:
  case kExitInternal:
    // Every rank exits with the code the ranks agreed on.
    return code;
  default:
    break;
  }
  if (report.exitRank >= 0 || (report.rankExitedNonZero && code != 0)) {
    int exitCode = report.exitRank >= 0 ? report.exitCode : code;
    if (report.exitRank >= 0)
      error() << "rank " << report.exitRank;
    else
      error() << "a rank (mpirun did not say which)";
    errs() << " exited with code " << exitCode
           << ", which no Weft device program returns; mpirun stopped the "
              "other ranks\n";
    if (exitCode == 127 && !job.runtimeLibraries.empty())
      note() << "if it could not start, install the libraries it needs: "
             << join(job.runtimeLibraries, ", ") << "\n";
    return kExitPeerFailed;
  }
  report.printSuppressed();
  if (report.launchFailed || code < 128) {
    error() << "mpirun could not start every rank (exit code " << code
            << "; its message is above)\n";
    return kExitDeviceUnavailable;
  }
  error() << "mpirun exited with " << code << ": a rank was killed by signal "
          << signalText(code - 128) << "\n";
  return kExitPeerFailed;
}

int weft::run::runMpiJob(const MpiJob &job, const LaunchOptions &options) {
  toolName = options.toolName;
  ErrorOr<std::string> mpirun = sys::findProgramByName("mpirun");
  if (!mpirun) {
    error() << "mpirun not found: install openmpi-bin (or put mpirun on "
               "PATH); "
            << job.purpose << "\n";
    return kExitBadInput;
  }
  size_t devices = job.ranks.size();
  if (devices == 0 ||
      llvm::any_of(job.ranks, [](const auto &rank) { return rank.empty(); })) {
    error() << "internal: an MPI job without ranks or programs\n";
    return kExitInternal;
  }
  std::vector<std::string> command;
  ProgramEnvironment env;
  HeartbeatListener listener;
  if (!buildMpirunCommand(*mpirun, job, options, listener, command, env))
    return kExitInternal;

  if (options.dryRun) {
    std::vector<std::string> words;
    for (const auto &[name, value] : env.added())
      words.push_back(name + "=" + shellQuote(value));
    for (const std::string &word : command)
      words.push_back(shellQuote(word));
    outs() << join(words, " ") << "\n";
    return kExitOk;
  }

  std::vector<std::string> envStrings = env.strings();
  std::vector<char *> envp = pointersTo(envStrings);
  std::vector<char *> argv = pointersTo(command);

  int pipeFds[2];
  if (pipe2(pipeFds, O_CLOEXEC) != 0) {
    error() << "cannot create a pipe: " << std::strerror(errno) << "\n";
    return kExitInternal;
  }
  // A group of its own: a timeout stops mpirun and all it started.
  pid_t pid = 0;
  int spawnError = spawnChild(*mpirun, argv.data(), envp.data(), pipeFds[1],
                              /*newGroup=*/true, pid);
  close(pipeFds[1]);
  if (spawnError != 0) {
    close(pipeFds[0]);
    error() << "cannot start " << *mpirun << ": " << std::strerror(spawnError)
            << "\n";
    return kExitDeviceUnavailable;
  }

  forwardGroup = pid;
  struct sigaction forward = {}, saved[3];
  forward.sa_handler = forwardSignal;
  sigemptyset(&forward.sa_mask);
  const int forwarded[3] = {SIGINT, SIGTERM, SIGHUP};
  for (int i = 0; i < 3; ++i)
    sigaction(forwarded[i], &forward, &saved[i]);
  MpirunReport report;
  Watch watch;
  watch.errFd = pipeFds[0];
  watch.timeoutSeconds = options.timeoutSeconds;
  watch.heartbeats = options.detectAfterSeconds > 0 ? &listener : nullptr;
  watch.detectAfterSeconds = options.detectAfterSeconds;
  watch.expectedRanks = devices;
  Ending ending =
      supervise(pid, -pid, watch, [&](StringRef text) { report.line(text); });
  report.finish();
  for (int i = 0; i < 3; ++i)
    sigaction(forwarded[i], &saved[i], nullptr);
  forwardGroup = 0;

  return mpirunVerdict(ending, report, job, options);
}
