//===- weft-run.cpp - Run a package that weftc wrote ----------------------===//
//
// weft-run [options] OUT/ [driver options...]
//
// Reads OUT/manifest.json, checks that the package is complete (executables,
// weights and their sizes; their SHA-256 with --verify-weights) and runs it:
// a single device's program directly, a mesh of devices as one MPI rank per
// device through mpirun (Launch.cpp). Returns the programs' exit code.
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "MergeProfile.h"

#include "weft/Version.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

using namespace llvm;
using namespace weft::run;

static int fail(const Twine &message) {
  WithColor::error(errs(), "weft-run") << message << "\n";
  return kExitBadInput;
}

static void printHelp() {
  outs() << R"(usage: weft-run [weft-run options] OUT/ [device program options]

Runs a model that weftc compiled into the package folder OUT/: checks that
the package is complete, then starts its device program (OUT/bin/dev0) with
the options that follow OUT/ and returns its exit code. A package of several
devices (a mesh) runs as one MPI process per device, launched with mpirun:
rank k runs device k, rank 0 prints, writes and checks the outputs (in a
pipeline of stages, the last stage's first rank does).

Examples:
  weft-run out/ --inputs test_data_set_0                 # print the outputs
  weft-run out/ --inputs test_data_set_0 --check test_data_set_0
  weft-run out/ --input x=x.npy --output-dir results --output-format npy
  weft-run out/ --inputs test_data_set_0 --bench 100 --threads 8
  weft-run out/ --inputs test_data_set_0 --profile trace.json
  weft-run pipe/ --inputs requests --stream 200 --check expected
                                # 200 requests with the pipeline full
                                # (request_<i>/ folders); prints the
                                # throughput and p50/p99 latency
  weft-run --verify-weights out/ --inputs test_data_set_0
  weft-run out/ --help          # the device program's options and the
                                # model's inputs and outputs
A mesh package (manifest "mesh": {"shape": [2, 2]}):
  weft-run mesh/ --inputs data --check data      # 4 ranks on this machine
  weft-run --dry-run mesh/ --inputs data         # print the mpirun command
  weft-run --timeout 60 mesh/ --inputs data --bench 20
  weft-run --hostfile hosts mesh/ --inputs data --threads 16
  weft-run --mpirun-args "--map-by ppr:1:node:PE=16 --bind-to core" \
           --hostfile hosts mesh/ --inputs data
  (--profile trace.json: each rank writes trace.rank<k>.json, and weft-run
   merges them into trace.json, one process per rank on the clock the ranks
   of one host share, drawn as measured.svg beside it; see
   docs/Launching.md for clusters and Slurm)

weft-run options (before OUT/, or anywhere after it):
  --verify-weights      also compare the weights' SHA-256 with the manifest
  --timeout SECONDS     stop every process after that long, exit 4 (default
                        300 for a mesh; none for one device unless given;
                        0: never)
  --detect-after SECONDS
                        a program that sent no heartbeat for that long is
                        dead or stopped: name it, stop every process, exit 4
                        (default 10; 0: no failure detector)
  --hostfile FILE       mpirun's hostfile: where the ranks run
  --mpirun-args "ARGS"  more mpirun options (quoted as one argument)
  --dry-run             print the command line instead of running it
  --help, --version

For a mesh, weft-run runs: mpirun [--allow-run-as-root] [--oversubscribe]
--bind-to none [--hostfile FILE] [ARGS] -np 1 -x WEFT_NUM_THREADS -x ...
OUT/bin/dev0 --weights OUT/weights/dev0.bin <options> : -np 1 ... with
OMPI_MCA_btl=self,vader (self,vader,tcp with hosts) and
OMPI_MCA_btl_vader_single_copy_mechanism=none unless you set them
(--oversubscribe only without hosts). Every rank gets the same variables:
WEFT_NUM_THREADS and OMP_NUM_THREADS, GOMP_SPINCOUNT (OpenMP threads spin
briefly, then sleep; unless you set OMP_WAIT_POLICY or GOMP_SPINCOUNT), and
WEFT_HEARTBEAT / WEFT_HEARTBEAT_MS (the failure detector). With --threads N
each rank uses N threads; without it, ranks on this machine share its cores
and ranks on other hosts use the cores they are bound to.

Every process weft-run starts ends with it: mpirun gets SIGTERM when
weft-run dies (even by SIGKILL), and the device programs stop when
weft-run's heartbeat socket closes. See docs/Launching.md.

Exit codes: those of the device programs (0 success, 1 bad options or
files, 2 --check mismatch, 70 internal error), which every rank of a mesh
shares; 1 for an incomplete package or mpirun missing; 3 when mpirun cannot
start the ranks; 4 when a rank fails, dies or does not finish in time (the
others are stopped); 70 when a single device's program is killed by a
signal.
)";
}

namespace {

/// weft-run's own options, wherever they appear.
struct Options {
  bool verifyWeights = false;
  LaunchOptions launch;
};

} // namespace

/// Parses weft-run option argv[i] (and its value); returns 0 when argv[i]
/// is not one of them, 1 when consumed, -1 on an error (message printed).
static int parseOwnOption(int argc, char **argv, int &i, Options &options) {
  StringRef arg = argv[i];
  if (arg == "--verify-weights") {
    options.verifyWeights = true;
    return 1;
  }
  if (arg == "--dry-run") {
    options.launch.dryRun = true;
    return 1;
  }
  StringRef name = arg, value;
  bool inlineValue = false;
  if (arg.starts_with("--") && arg.contains('=')) {
    std::tie(name, value) = arg.split('=');
    inlineValue = true;
  }
  if (name != "--timeout" && name != "--hostfile" && name != "--mpirun-args" &&
      name != "--detect-after")
    return 0;
  if (!inlineValue) {
    if (i + 1 >= argc) {
      fail(name + " needs a value (see --help)");
      return -1;
    }
    value = argv[++i];
  }
  if (name == "--timeout") {
    int64_t seconds = 0;
    if (value.getAsInteger(10, seconds) || seconds < 0 || seconds > 100000000) {
      fail("--timeout must be a number of seconds >= 0 (0: never), not '" +
           value + "'");
      return -1;
    }
    options.launch.timeoutSeconds = seconds;
    options.launch.timeoutGiven = true;
    return 1;
  }
  if (name == "--detect-after") {
    double seconds = 0;
    if (value.getAsDouble(seconds) || !(seconds >= 0) || seconds > 86400 ||
        (seconds > 0 && seconds < 0.5)) {
      fail("--detect-after must be a number of seconds, 0 (no failure "
           "detector) or from 0.5 to 86400, not '" +
           value + "'");
      return -1;
    }
    options.launch.detectAfterSeconds = seconds;
    return 1;
  }
  if (value.empty()) {
    fail(name + " needs a non-empty value");
    return -1;
  }
  if (name == "--hostfile") {
    if (!sys::fs::exists(value)) {
      fail("--hostfile '" + value + "' does not exist");
      return -1;
    }
    options.launch.hostfile = value.str();
    return 1;
  }
  std::string error;
  if (!splitShellWords(value.str(), options.launch.mpirunArgs, error)) {
    fail(error);
    return -1;
  }
  return 1;
}

int main(int argc, char **argv) {
  InitLLVM initLLVM(argc, argv);
  Options options;
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; ++i) {
    StringRef arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      printHelp();
      return 0;
    }
    if (arg == "--version") {
      outs() << "weft-run (Weft) " << WEFT_VERSION_STRING << "\n"
             << "  built on LLVM " << LLVM_VERSION_STRING << "\n";
      return 0;
    }
    int own = parseOwnOption(argc, argv, i, options);
    if (own < 0)
      return kExitBadInput;
    if (own > 0)
      continue;
    return fail("unknown option '" + arg +
                "' before the package folder (the device program's options "
                "go after it; see --help)");
  }
  if (i >= argc)
    return fail("no package folder given (usage: weft-run OUT/ [options]; "
                "see --help)");
  std::string dir = argv[i++];
  if (!sys::fs::is_directory(dir))
    return fail("'" + dir +
                "' is not a folder (weft-run takes the package "
                "folder that weftc wrote)");

  Package package;
  std::string error;
  if (!readManifest(dir, package, error))
    return fail(error);

  std::vector<std::string> driverArgs;
  bool weightsGiven = false;
  for (; i < argc; ++i) {
    int own = parseOwnOption(argc, argv, i, options);
    if (own < 0)
      return kExitBadInput;
    if (own > 0)
      continue;
    StringRef arg = argv[i];
    weightsGiven |= arg == "--weights" || arg.starts_with("--weights=");
    driverArgs.push_back(arg.str());
  }
  for (const Device &device : package.devices)
    if (!checkDevice(device, options.verifyWeights, error))
      return fail(error);

  bool helpOnly = false;
  for (StringRef arg : driverArgs)
    helpOnly |= arg == "--help" || arg == "-h" || arg == "--version";
  if (package.devices.size() > 1 && !helpOnly) {
    if (weightsGiven)
      return fail("--weights names one device's weights; the " +
                  std::to_string(package.devices.size()) +
                  " devices of this package each read their own "
                  "(the manifest's weights/dev<k>.bin)");
    int code = runMesh(package, driverArgs, options.launch);
    std::string profile = profilePathOf(driverArgs);
    if (code != 0 || profile.empty())
      return code;
    if (int merged = mergeRankProfiles(package, profile))
      return merged;
    if (!llvm::is_contained(driverArgs, "--quiet"))
      llvm::outs() << "profile: the " << package.devices.size()
                   << " ranks' traces merged into " << profile
                   << ", drawn in measured.svg beside it\n";
    return 0;
  }
  // --help needs no MPI: device 0's program answers alone.
  if (package.devices.size() == 1 &&
      (!options.launch.hostfile.empty() || !options.launch.mpirunArgs.empty()))
    return fail("--hostfile and --mpirun-args apply to packages of several "
                "devices; this one has a single device");
  std::vector<std::string> args = {package.devices[0].executable};
  // The manifest is the authority on where the weights are.
  if (!weightsGiven)
    args.insert(args.end(), {"--weights", package.devices[0].weights});
  args.insert(args.end(), driverArgs.begin(), driverArgs.end());
  return runSingleDevice(package, args, options.launch);
}
