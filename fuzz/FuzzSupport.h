//===- FuzzSupport.h - Helpers shared by the reader fuzz targets -*- C++
//-*-===//
//
// What the fuzz targets of file readers have in common: a private scratch
// folder for readers that take a path, and the way a target reports a bug
// (an input the reader accepted but mishandled) so that libFuzzer saves it.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_FUZZ_FUZZSUPPORT_H
#define WEFT_FUZZ_FUZZSUPPORT_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <ftw.h>
#include <unistd.h>

namespace weft::fuzz {

/// Stops the run with `what`: libFuzzer saves the input as a crash.
[[noreturn]] inline void reportBug(const char *target,
                                   const std::string &what) {
  std::fprintf(stderr, "%s: %s\n", target, what.c_str());
  std::fflush(stderr);
  std::abort();
}

/// A folder of this process's own, created on first use under $TMPDIR (or
/// /tmp) and removed at a normal exit, so that parallel fuzzing jobs (-jobs,
/// -fork) never share files.
inline const std::string &scratchDir() {
  // Never destroyed: the exit handler registered below still reads it.
  static const std::string *dir = [] {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/weft-fuzz-XXXXXX";
    if (!mkdtemp(pattern.data())) {
      std::perror("weft fuzz target: mkdtemp");
      std::abort();
    }
    auto *path = new std::string(pattern);
    std::atexit([] {
      nftw(
          scratchDir().c_str(),
          [](const char *file, const struct stat *, int, struct FTW *) {
            return ::remove(file);
          },
          8, FTW_DEPTH | FTW_PHYS);
    });
    return path;
  }();
  return *dir;
}

/// Writes `size` bytes to `path`, replacing it; aborts when it cannot (a
/// full disk must not look like a finding).
inline void writeFileOrDie(const std::string &path, const uint8_t *data,
                           size_t size) {
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file || (size && std::fwrite(data, 1, size, file) != size) ||
      std::fclose(file) != 0) {
    std::perror(path.c_str());
    std::abort();
  }
}

} // namespace weft::fuzz

#endif // WEFT_FUZZ_FUZZSUPPORT_H
