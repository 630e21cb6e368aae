//===- CudaMeshDriverMain.cpp - main() of a GPU mesh package's executables ===//
//
// One rank per GPU: the driver creates the MPI mesh communicator, the CUDA
// backend its NCCL communicators.
//
//===----------------------------------------------------------------------===//

#include "cuda/CudaBackend.h"

extern "C" const weft_rt_program weft_program;

int main(int argc, char **argv) {
  weft::rt::cuda::installCudaMeshBackend();
  return weft_rt_driver_main(&weft_program, argc, argv);
}
