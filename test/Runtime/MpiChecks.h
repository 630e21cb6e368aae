//===- MpiChecks.h - Checks for test programs run under mpirun ---*- C++ -*-===//
//
// gtest does not run under mpirun (every rank would print and decide on its
// own): rank-level test programs count their checks with EXPECT and end with
// finishMpiChecks, which sums them over the ranks and makes every rank's
// exit code 1 if any rank failed.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TEST_RUNTIME_MPICHECKS_H
#define WEFT_TEST_RUNTIME_MPICHECKS_H

#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdio>

namespace weft::test {
inline int worldRank = 0;
inline int worldSize = 1;
inline int failures = 0;
inline int checks = 0;

/// Sums the checks over `comm`, prints the totals on rank 0 and returns the
/// exit code every rank should use: 1 if any rank failed.
inline int finishMpiChecks(MPI_Comm comm) {
  int mine[2] = {failures, checks}, total[2] = {0, 0};
  MPI_Reduce(mine, total, 2, MPI_INT, MPI_SUM, 0, comm);
  int anyFailed = 0;
  MPI_Allreduce(&failures, &anyFailed, 1, MPI_INT, MPI_MAX, comm);
  if (worldRank == 0)
    std::printf("%d ranks: %d checks, %d failed\n", worldSize, total[1],
                total[0]);
  return anyFailed ? 1 : 0;
}
} // namespace weft::test

/// Counts a check; on failure prints the rank, the place, the condition and
/// a printf-style explanation, and counts the failure.
#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    ++::weft::test::checks;                                                    \
    if (!(cond)) {                                                             \
      ++::weft::test::failures;                                                \
      std::fprintf(stderr, "[rank %d] %s:%d: FAILED: %s: ",                    \
                   ::weft::test::worldRank, __FILE__, __LINE__, #cond);        \
      std::fprintf(stderr, __VA_ARGS__);                                       \
      std::fprintf(stderr, "\n");                                              \
    }                                                                          \
  } while (0)

#endif // WEFT_TEST_RUNTIME_MPICHECKS_H
