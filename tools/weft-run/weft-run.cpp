//===- weft-run.cpp - Run a package that weftc wrote ----------------------===//
//
// weft-run [--verify-weights] OUT/ [driver options...]
//
// Reads OUT/manifest.json, checks that the package is complete (executable,
// weights and their size; their SHA-256 with --verify-weights) and runs its
// device executable with the remaining options, returning its exit code.
// Packages of one device only so far; multi-device launching comes later.
//
//===----------------------------------------------------------------------===//

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

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

using namespace llvm;

static constexpr int kExitBadInput = 1;
static constexpr int kExitInternal = 70;

static int fail(const Twine &message) {
  WithColor::error(errs(), "weft-run") << message << "\n";
  return kExitBadInput;
}

static void printHelp() {
  outs() << R"(usage: weft-run [--verify-weights] OUT/ [device program options]

Runs a model that weftc compiled into the package folder OUT/: checks that
the package is complete, then starts its device program (OUT/bin/dev0) with
the options that follow OUT/ and returns its exit code.

Examples:
  weft-run out/ --inputs test_data_set_0                 # print the outputs
  weft-run out/ --inputs test_data_set_0 --check test_data_set_0
  weft-run out/ --input x=x.npy --output-dir results --output-format npy
  weft-run out/ --inputs test_data_set_0 --bench 100 --threads 8
  weft-run out/ --inputs test_data_set_0 --profile trace.json
  weft-run --verify-weights out/ --inputs test_data_set_0
  weft-run out/ --help          # the device program's options and the
                                # model's inputs and outputs

weft-run options (before OUT/):
  --verify-weights   also compare the weights' SHA-256 with the manifest
  --help, --version

Exit codes: those of the device program (0 success, 1 bad options or files,
2 --check mismatch, 70 internal error); 1 for an incomplete package, 70 when
the program is killed by a signal.
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

/// What weft-run needs from manifest.json.
struct Package {
  std::string executable;
  std::string weights;
  int64_t weightsBytes = 0;
  std::string weightsSha256;
  std::vector<std::string> runtimeLibraries;
};

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
  const json::Array *devices = root->getArray("devices");
  if (!devices || devices->empty())
    return bad("the manifest lists no devices");
  if (devices->size() != 1)
    return bad("this package has " + Twine(devices->size()) +
               " devices; weft-run launches single-device packages so far");
  const json::Object *device = (*devices)[0].getAsObject();
  if (!device)
    return bad("devices[0] is not an object");
  std::optional<StringRef> executable = device->getString("executable");
  std::optional<StringRef> weights = device->getString("weights");
  if (!executable || !weights)
    return bad("devices[0] needs \"executable\" and \"weights\" paths");
  if (!resolveInPackage(dir, *executable, "executable", out.executable,
                        error) ||
      !resolveInPackage(dir, *weights, "weights", out.weights, error))
    return bad(error);

  const json::Array *weightList = root->getArray("weights");
  const json::Object *entry = nullptr;
  if (weightList)
    for (const json::Value &value : *weightList)
      if (const json::Object *object = value.getAsObject())
        if (object->getString("file") == *weights)
          entry = object;
  if (!entry)
    return bad("\"weights\" has no entry for " + *weights);
  std::optional<int64_t> bytes = entry->getInteger("bytes");
  if (!bytes || *bytes < 0)
    return bad("the weights entry of " + *weights + " has no \"bytes\"");
  out.weightsBytes = *bytes;
  if (std::optional<StringRef> sha = entry->getString("sha256"))
    out.weightsSha256 = sha->lower();
  if (const json::Array *libs = root->getArray("runtime_libraries"))
    for (const json::Value &lib : *libs)
      if (std::optional<StringRef> name = lib.getAsString())
        out.runtimeLibraries.push_back(name->str());
  return true;
}

/// Checks that the executable and weights are there and whole.
static bool checkPackage(const Package &package, bool verifyWeights,
                         std::string &error) {
  if (!sys::fs::exists(package.executable)) {
    error = "the device program " + package.executable +
            " is missing (an incomplete copy of the package?)";
    return false;
  }
  if (!sys::fs::can_execute(package.executable)) {
    error = package.executable + " is not executable";
    return false;
  }
  uint64_t size = 0;
  if (std::error_code ec = sys::fs::file_size(package.weights, size)) {
    error = "cannot read the weights " + package.weights + ": " + ec.message();
    return false;
  }
  if (size != static_cast<uint64_t>(package.weightsBytes)) {
    error = package.weights + " has " + std::to_string(size) +
            " bytes; the manifest says " +
            std::to_string(package.weightsBytes) +
            " (a partial copy, or the weights of another build?)";
    return false;
  }
  if (!verifyWeights)
    return true;
  if (package.weightsSha256.empty()) {
    error =
        "--verify-weights: the manifest gives no sha256 for " + package.weights;
    return false;
  }
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer = MemoryBuffer::getFile(
      package.weights, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer) {
    error =
        "cannot read " + package.weights + ": " + buffer.getError().message();
    return false;
  }
  std::array<uint8_t, 32> digest =
      SHA256::hash(arrayRefFromStringRef<uint8_t>((*buffer)->getBuffer()));
  std::string hex = toHex(digest, /*LowerCase=*/true);
  if (hex != package.weightsSha256) {
    error = package.weights + " has SHA-256 " + hex + "; the manifest says " +
            package.weightsSha256 + " (corrupted or replaced weights)";
    return false;
  }
  return true;
}

/// Runs `args` (args[0] is the program) and returns its exit code per the
/// command-line contract.
static int runProgram(const Package &package,
                      const std::vector<std::string> &args) {
  std::vector<char *> argv;
  for (const std::string &arg : args)
    argv.push_back(const_cast<char *>(arg.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  int error = posix_spawn(&pid, package.executable.c_str(), nullptr, nullptr,
                          argv.data(), environ);
  if (error != 0)
    return fail("cannot start " + package.executable + ": " +
                std::strerror(error));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      WithColor::error(errs(), "weft-run")
          << "lost track of " << package.executable << ": "
          << std::strerror(errno) << "\n";
      return kExitInternal;
    }
  }
  if (WIFSIGNALED(status)) {
    int signal = WTERMSIG(status);
    WithColor::error(errs(), "weft-run")
        << package.executable << " was killed by signal " << signal << " ("
        << strsignal(signal) << ")"
        << (signal == SIGKILL ? "; perhaps the system ran out of memory" : "")
        << "\nthis is a bug in Weft unless something outside killed it; "
           "please report it with the model\n";
    return kExitInternal;
  }
  int code = WEXITSTATUS(status);
  // The dynamic loader's code when a shared library is missing.
  if (code == 127 && !package.runtimeLibraries.empty()) {
    errs() << "weft-run: note: " << package.executable
           << " exited with 127; if it could not start, install the "
              "libraries it needs: "
           << join(package.runtimeLibraries, ", ") << "\n";
  }
  return code;
}

int main(int argc, char **argv) {
  InitLLVM initLLVM(argc, argv);
  bool verifyWeights = false;
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
    if (arg == "--verify-weights") {
      verifyWeights = true;
      continue;
    }
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

  std::vector<std::string> args = {package.executable};
  bool weightsGiven = false;
  for (; i < argc; ++i) {
    StringRef arg = argv[i];
    if (arg == "--verify-weights") {
      verifyWeights = true;
      continue;
    }
    weightsGiven |= arg == "--weights" || arg.starts_with("--weights=");
    args.push_back(arg.str());
  }
  if (!checkPackage(package, verifyWeights, error))
    return fail(error);
  // The manifest is the authority on where the weights are.
  if (!weightsGiven) {
    args.insert(args.begin() + 1, package.weights);
    args.insert(args.begin() + 1, "--weights");
  }
  return runProgram(package, args);
}
