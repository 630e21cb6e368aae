//===- DriverLaunch.cpp - What the driver learns of its launch without MPI ===//
//
// Reading mpirun's environment, naming ranks and per-rank files: the parts
// of running as one rank of a mesh that need no MPI call, apart from
// DriverMesh.cpp so that single-device executables link without MPI.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "weft/Support/WaitPolicy.h"

#include <cstdlib>
#include <sstream>
#include <unistd.h>
#include <string>
#include <vector>

using namespace weft::rt;

/// The non-negative integer `text`, or -1.
static int64_t parseCount(const char *text) {
  if (!text || !*text)
    return -1;
  char *end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  return *end == '\0' && value >= 0 ? value : -1;
}

/// The world ranks of app context `app` from Open MPI's list of every
/// context's process count ("1 2"); empty when the list is malformed, does
/// not add up to `worldSize` or leaves `rank` out.
static std::vector<int64_t> appContextRanks(int64_t app, const char *counts,
                                            int64_t worldSize, int64_t rank) {
  if (app < 0 || !counts || rank < 0)
    return {};
  std::vector<int64_t> sizes;
  std::istringstream list(counts);
  std::string word;
  while (list >> word) {
    int64_t size = parseCount(word.c_str());
    if (size <= 0)
      return {};
    sizes.push_back(size);
  }
  int64_t total = 0;
  for (int64_t size : sizes)
    total += size;
  if (app >= static_cast<int64_t>(sizes.size()) ||
      (worldSize >= 0 && total != worldSize))
    return {};
  int64_t first = 0;
  for (int64_t k = 0; k < app; ++k)
    first += sizes[k];
  if (rank < first || rank >= first + sizes[app])
    return {};
  std::vector<int64_t> ranks;
  for (int64_t r = first; r < first + sizes[app]; ++r)
    ranks.push_back(r);
  return ranks;
}

LaunchInfo
weft::rt::readLaunchInfo(const char *(*environment)(const char *)) {
  LaunchInfo info;
  // OpenMPI's mpirun, then PMI (MPICH's hydra, Slurm's PMI-2); PMIx and
  // srun give the rank but not always the size (MPI will tell).
  static const char *sizes[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
  static const char *ranks[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                                "SLURM_PROCID"};
  for (const char *name : sizes)
    if (info.worldSize < 0)
      info.worldSize = parseCount(environment(name));
  for (const char *name : ranks)
    if (info.rank < 0)
      info.rank = parseCount(environment(name));
  info.launched = info.worldSize >= 0 || info.rank >= 0;
  info.appContextRanks = appContextRanks(
      parseCount(environment("OMPI_MCA_orte_app_num")),
      environment("OMPI_APP_CTX_NUM_PROCS"), info.worldSize, info.rank);
  return info;
}

LaunchInfo weft::rt::readLaunchInfo() {
  return readLaunchInfo(
      [](const char *name) -> const char * { return std::getenv(name); });
}

std::string weft::rt::formatRanks(const std::vector<int> &ranks,
                                  int worldSize) {
  std::string list;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
      ++j;
    if (!list.empty())
      list += ',';
    list += std::to_string(ranks[i]);
    if (j > i)
      list += (j == i + 1 ? "," : "-") + std::to_string(ranks[j]);
    i = j + 1;
  }
  return std::string(ranks.size() == 1 ? "[rank " : "[ranks ") + list + "/" +
         std::to_string(worldSize) + "]";
}

std::string weft::rt::rankedPath(const std::string &path, int rank) {
  size_t slash = path.rfind('/');
  size_t dot = path.rfind('.');
  std::string tag = ".rank" + std::to_string(rank);
  // A dot that starts the file name (".trace") is not an extension.
  size_t nameStart = slash == std::string::npos ? 0 : slash + 1;
  if (dot == std::string::npos || dot <= nameStart)
    return path + tag;
  return path.substr(0, dot) + tag + path.substr(dot);
}

void weft::rt::applyOpenMpWaitPolicy(char **argv) {
  // libgomp reads its wait policy once, when it loads, so setting it now
  // takes a fresh start of this executable (same pid: a launcher such as
  // mpirun does not notice). A user's own setting is left alone.
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT"))
    return;
  if (setenv("GOMP_SPINCOUNT", weft::kOpenMpSpinCount, /*overwrite=*/0) != 0)
    return;
  // On failure, go on with libgomp's default policy.
  execv("/proc/self/exe", argv);
}
