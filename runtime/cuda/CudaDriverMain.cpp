//===- CudaDriverMain.cpp - main() of a one-GPU package's executable ------===//
//
// As runtime/core/DriverMain.cpp, with the CUDA backend installed first so
// that the driver can run the "target cuda" program it is linked with. The
// driver gets no mesh support: the executable links no MPI, and a package
// of one GPU runs wherever the CUDA libraries are.
//
//===----------------------------------------------------------------------===//

#include "core/Driver.h"
#include "cuda/CudaBackend.h"

extern "C" const weft_rt_program weft_program;

int main(int argc, char **argv) {
  weft::rt::cuda::installCudaBackend();
  return weft::rt::runDriver(&weft_program, argc, argv, /*mesh=*/nullptr);
}
