//===- Launch.cpp - A package's devices as launcher jobs ------------------===//
//
// Turns a package into what lib/Launch starts: device 0's program alone, or
// one MPI rank per device (rank k runs bin/dev<k> with its own weights and
// the driver options), with the thread count the driver options name.
//
//===----------------------------------------------------------------------===//

#include "Launch.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"

using namespace llvm;
using namespace weft::run;

int weft::run::runSingleDevice(const Package &package,
                               const std::vector<std::string> &args,
                               const LaunchOptions &options) {
  return runProgram(args, package.runtimeLibraries, options);
}

int weft::run::runMesh(const Package &package,
                       const std::vector<std::string> &driverArgs,
                       const LaunchOptions &options) {
  MpiJob job;
  job.runtimeLibraries = package.runtimeLibraries;
  job.purpose = "a package of " + std::to_string(package.devices.size()) +
                " devices runs one MPI process per device";
  // --threads N of the driver goes to every rank as OMP_NUM_THREADS.
  for (size_t i = 0; i < driverArgs.size(); ++i) {
    StringRef arg = driverArgs[i];
    if (arg == "--threads" && i + 1 < driverArgs.size())
      job.threads = driverArgs[i + 1];
    else if (arg.consume_front("--threads="))
      job.threads = arg.str();
  }
  for (const Device &device : package.devices) {
    SmallString<256> executable(device.executable), weights(device.weights);
    sys::fs::make_absolute(executable);
    sys::fs::make_absolute(weights);
    std::vector<std::string> rank = {executable.str().str(), "--weights",
                                     weights.str().str()};
    rank.insert(rank.end(), driverArgs.begin(), driverArgs.end());
    job.ranks.push_back(std::move(rank));
  }
  return runMpiJob(job, options);
}
