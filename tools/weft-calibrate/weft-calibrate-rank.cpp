//===- weft-calibrate-rank.cpp - MPI ping-pong for weft-calibrate ---------===//
//
// weft-calibrate-rank --out FILE [--quick]
//
// What `weft-calibrate` starts under mpirun as two ranks on this host: rank
// 0 and rank 1 bounce messages back and forth with MPI_Send/MPI_Recv (the
// transport mpirun picks between processes of one host, shared memory for
// OpenMPI). Small messages give the latency (the median round trip / 2),
// 4, 16 and 64 MiB messages (64 MiB alone with --quick) the bandwidth of one
// direction at each size (bytes / (best round trip / 2)). Rank 0 writes to
// FILE:
//   latency_seconds <number>
//   bandwidth <message bytes> <bytes per second>     (one line per size)
//
//===----------------------------------------------------------------------===//

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

/// `count` round trips of `bytes` between ranks 0 and 1; rank 0's time of
/// each, in seconds (rank 1's vector stays empty).
std::vector<double> pingPong(int rank, std::vector<char> &buffer, size_t bytes,
                             int count) {
  std::vector<double> times;
  int size = static_cast<int>(bytes);
  for (int i = 0; i < count; ++i) {
    if (rank == 0) {
      double start = MPI_Wtime();
      MPI_Send(buffer.data(), size, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buffer.data(), size, MPI_BYTE, 1, 0, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
      times.push_back(MPI_Wtime() - start);
    } else {
      MPI_Recv(buffer.data(), size, MPI_BYTE, 0, 0, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
      MPI_Send(buffer.data(), size, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
  }
  return times;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::string out;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--out") && i + 1 < argc)
      out = argv[++i];
    else if (!std::strcmp(argv[i], "--quick"))
      quick = true;
    else
      out.clear(), i = argc;
  }
  if (out.empty() || size != 2) {
    if (rank == 0)
      std::fprintf(stderr,
                   "usage: mpirun -np 2 weft-calibrate-rank --out FILE "
                   "[--quick]\n\nOne of the two MPI ranks of weft-calibrate's "
                   "ping-pong (started by weft-calibrate).\n");
    MPI_Finalize();
    return 1;
  }

  const size_t kMiB = size_t(1) << 20;
  std::vector<char> buffer(64 * kMiB, 1);

  // Latency: 8-byte messages after a warm-up.
  int latencyTrips = quick ? 200 : 1000;
  pingPong(rank, buffer, 8, 50);
  std::vector<double> small = pingPong(rank, buffer, 8, latencyTrips);

  // Bandwidth: the best of a few round trips per size.
  std::vector<size_t> sizes =
      quick ? std::vector<size_t>{64 * kMiB}
            : std::vector<size_t>{4 * kMiB, 16 * kMiB, 64 * kMiB};
  std::vector<double> bandwidths;
  for (size_t bytes : sizes) {
    pingPong(rank, buffer, bytes, 1);
    std::vector<double> times = pingPong(rank, buffer, bytes, quick ? 2 : 10);
    if (rank == 0) {
      double best = *std::min_element(times.begin(), times.end());
      bandwidths.push_back(static_cast<double>(bytes) / (best / 2));
    }
  }

  int code = 0;
  if (rank == 0) {
    double latency = median(small) / 2;
    FILE *file = std::fopen(out.c_str(), "w");
    bool ok = file && std::fprintf(file, "latency_seconds %.9g\n", latency) > 0;
    for (size_t i = 0; ok && i < sizes.size(); ++i)
      ok = std::fprintf(file, "bandwidth %zu %.9g\n", sizes[i], bandwidths[i]) >
           0;
    if (file && std::fclose(file) != 0)
      ok = false;
    if (!ok) {
      std::fprintf(stderr, "weft-calibrate-rank: error: cannot write '%s'\n",
                   out.c_str());
      code = 1;
    }
  }
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return code;
}
