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

#include "weft/Version.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <climits>
#include <set>
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
rank k runs device k, rank 0 prints, writes and checks the outputs.

Examples:
  weft-run out/ --inputs test_data_set_0                 # print the outputs
  weft-run out/ --inputs test_data_set_0 --check test_data_set_0
  weft-run out/ --input x=x.npy --output-dir results --output-format npy
  weft-run out/ --inputs test_data_set_0 --bench 100 --threads 8
  weft-run out/ --inputs test_data_set_0 --profile trace.json
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
  (--profile trace.json writes trace.rank<k>.json per rank; see
   docs/Launching.md for clusters and Slurm)

weft-run options (before OUT/, or anywhere after it):
  --verify-weights      also compare the weights' SHA-256 with the manifest
  --timeout SECONDS     stop every process after that long, exit 4 (default
                        300 for a mesh; none for one device unless given;
                        0: never)
  --hostfile FILE       mpirun's hostfile: where the ranks run
  --mpirun-args "ARGS"  more mpirun options (quoted as one argument)
  --dry-run             print the command line instead of running it
  --help, --version

For a mesh, weft-run runs: mpirun [--allow-run-as-root] [--oversubscribe]
--bind-to none [--hostfile FILE] [ARGS] -x WEFT_NUM_THREADS=<cores/ranks>
-np 1 OUT/bin/dev0 --weights OUT/weights/dev0.bin <options> : -np 1 ...
with OMPI_MCA_btl=self,vader (self,vader,tcp with hosts) and
OMPI_MCA_btl_vader_single_copy_mechanism=none unless you set them
(--oversubscribe only without hosts). With --threads N each rank uses N
threads; without it, ranks on this machine share its cores and ranks on
other hosts use the cores they are bound to.

Exit codes: those of the device programs (0 success, 1 bad options or
files, 2 --check mismatch, 70 internal error), which every rank of a mesh
shares; 1 for an incomplete package or mpirun missing; 3 when mpirun cannot
start the ranks; 4 when a rank fails, dies or does not finish in time (the
others are stopped); 70 when a single device's program is killed by a
signal.
)";
}

/// A path the manifest gives, which must stay inside the package.
static bool resolveInPackage(StringRef package, StringRef relative,
                             const char *what, std::string &out,
                             std::string &error) {
  if (relative.empty() || sys::path::is_absolute(relative)) {
    error = std::string("the manifest's ") + what + " path '" + relative.str() +
            "' must be relative to the package";
    return false;
  }
  for (StringRef part :
       make_range(sys::path::begin(relative), sys::path::end(relative)))
    if (part == "..") {
      error = std::string("the manifest's ") + what + " path '" +
              relative.str() + "' leaves the package";
      return false;
    }
  SmallString<256> path(package);
  sys::path::append(path, relative);
  out = path.str().str();
  return true;
}

/// Reads the optional "mesh": {"shape": [...]}; [1] when absent.
static bool readMesh(const json::Object &root, std::vector<int64_t> &shape,
                     std::string &error) {
  shape = {1};
  const json::Value *mesh = root.get("mesh");
  if (!mesh)
    return true;
  const json::Object *object = mesh->getAsObject();
  const json::Array *dims = object ? object->getArray("shape") : nullptr;
  if (!dims || dims->empty()) {
    error = "\"mesh\" must be {\"shape\": [d0, d1, ...]}";
    return false;
  }
  shape.clear();
  int64_t devices = 1;
  for (const json::Value &dim : *dims) {
    std::optional<int64_t> d = dim.getAsInteger();
    if (!d || *d < 1 || *d > INT_MAX / devices) {
      error = "\"mesh\" shape entries must be integers >= 1 (at most " +
              std::to_string(INT_MAX) + " devices)";
      return false;
    }
    devices *= *d;
    shape.push_back(*d);
  }
  return true;
}

static std::string formatShape(const std::vector<int64_t> &shape) {
  std::vector<std::string> dims;
  for (int64_t d : shape)
    dims.push_back(std::to_string(d));
  return "[" + join(dims, ", ") + "]";
}

static bool readManifest(StringRef dir, Package &out, std::string &error) {
  SmallString<256> manifestPath(dir);
  sys::path::append(manifestPath, "manifest.json");
  std::string where = manifestPath.str().str();
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
      MemoryBuffer::getFile(manifestPath);
  if (!buffer) {
    error = "cannot read " + where + ": " + buffer.getError().message() +
            " (is '" + dir.str() + "' a package folder written by weftc?)";
    return false;
  }
  Expected<json::Value> parsed = json::parse((*buffer)->getBuffer());
  if (!parsed) {
    error = where + " is not valid JSON: " + toString(parsed.takeError());
    return false;
  }
  const json::Object *root = parsed->getAsObject();
  auto bad = [&](const Twine &why) {
    error = (where + ": " + why).str();
    return false;
  };
  if (!root)
    return bad("the manifest is not a JSON object");
  std::optional<StringRef> format = root->getString("format");
  if (!format || *format != "weft-package")
    return bad("not a Weft package manifest (\"format\" is not "
               "\"weft-package\")");
  std::optional<int64_t> version = root->getInteger("version");
  if (!version || *version != 1)
    return bad("manifest version " +
               (version ? Twine(*version) : Twine("(none)")) +
               " is not one this weft-run reads (version 1)");
  if (!readMesh(*root, out.meshShape, error))
    return bad(error);
  int64_t meshDevices = 1;
  for (int64_t d : out.meshShape)
    meshDevices *= d;
  const json::Array *devices = root->getArray("devices");
  if (!devices || devices->empty())
    return bad("the manifest lists no devices");
  if (static_cast<int64_t>(devices->size()) != meshDevices)
    return bad(root->get("mesh")
                   ? "the mesh " + formatShape(out.meshShape) + " has " +
                         Twine(meshDevices) +
                         " devices, but \"devices\" "
                         "lists " +
                         Twine(devices->size())
                   : "this package has " + Twine(devices->size()) +
                         " devices but no \"mesh\" shape to run them on");

  const json::Array *weightList = root->getArray("weights");
  out.devices.assign(devices->size(), Device());
  std::set<int64_t> seen;
  for (size_t k = 0; k < devices->size(); ++k) {
    std::string name = "devices[" + std::to_string(k) + "]";
    const json::Object *device = (*devices)[k].getAsObject();
    if (!device)
      return bad(name + " is not an object");
    std::optional<int64_t> id = device->getInteger("id");
    if (!id)
      id = static_cast<int64_t>(k);
    if (*id < 0 || *id >= static_cast<int64_t>(devices->size()) ||
        !seen.insert(*id).second)
      return bad(name + " has id " + Twine(*id) +
                 "; ids run from 0 to the device count - 1, each once");
    Device &entry = out.devices[*id];
    entry.id = *id;
    std::optional<StringRef> executable = device->getString("executable");
    std::optional<StringRef> weights = device->getString("weights");
    if (!executable || !weights)
      return bad(name + " needs \"executable\" and \"weights\" paths" +
                 (device->get("library")
                      ? " (a library package is loaded by your program, "
                        "not run)"
                      : ""));
    if (!resolveInPackage(dir, *executable, "executable", entry.executable,
                          error) ||
        !resolveInPackage(dir, *weights, "weights", entry.weights, error))
      return bad(error);
    const json::Object *weightsEntry = nullptr;
    if (weightList)
      for (const json::Value &value : *weightList)
        if (const json::Object *object = value.getAsObject())
          if (object->getString("file") == *weights)
            weightsEntry = object;
    if (!weightsEntry)
      return bad("\"weights\" has no entry for " + *weights);
    std::optional<int64_t> bytes = weightsEntry->getInteger("bytes");
    if (!bytes || *bytes < 0)
      return bad("the weights entry of " + *weights + " has no \"bytes\"");
    entry.weightsBytes = *bytes;
    if (std::optional<StringRef> sha = weightsEntry->getString("sha256"))
      entry.weightsSha256 = sha->lower();
  }
  if (const json::Array *libs = root->getArray("runtime_libraries"))
    for (const json::Value &lib : *libs)
      if (std::optional<StringRef> name = lib.getAsString())
        out.runtimeLibraries.push_back(name->str());
  return true;
}

/// Checks that a device's executable and weights are there and whole.
static bool checkDevice(const Device &device, bool verifyWeights,
                        std::string &error) {
  if (!sys::fs::exists(device.executable)) {
    error = "the device program " + device.executable +
            " is missing (an incomplete copy of the package?)";
    return false;
  }
  if (!sys::fs::can_execute(device.executable)) {
    error = device.executable + " is not executable";
    return false;
  }
  uint64_t size = 0;
  if (std::error_code ec = sys::fs::file_size(device.weights, size)) {
    error = "cannot read the weights " + device.weights + " of device " +
            std::to_string(device.id) + ": " + ec.message();
    return false;
  }
  if (size != static_cast<uint64_t>(device.weightsBytes)) {
    error = device.weights + " has " + std::to_string(size) +
            " bytes; the manifest says " + std::to_string(device.weightsBytes) +
            " (a partial copy, or the weights of another build?)";
    return false;
  }
  if (!verifyWeights)
    return true;
  if (device.weightsSha256.empty()) {
    error =
        "--verify-weights: the manifest gives no sha256 for " + device.weights;
    return false;
  }
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer = MemoryBuffer::getFile(
      device.weights, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer) {
    error =
        "cannot read " + device.weights + ": " + buffer.getError().message();
    return false;
  }
  std::array<uint8_t, 32> digest =
      SHA256::hash(arrayRefFromStringRef<uint8_t>((*buffer)->getBuffer()));
  std::string hex = toHex(digest, /*LowerCase=*/true);
  if (hex != device.weightsSha256) {
    error = device.weights + " has SHA-256 " + hex + "; the manifest says " +
            device.weightsSha256 + " (corrupted or replaced weights)";
    return false;
  }
  return true;
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
  if (name != "--timeout" && name != "--hostfile" && name != "--mpirun-args")
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
    return runMesh(package, driverArgs, options.launch);
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
