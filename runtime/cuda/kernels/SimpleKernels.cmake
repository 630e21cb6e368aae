# The row-wise and data-movement CUDA kernels (weft_rt_cuda_softmax ...
# weft_rt_cuda_copy2d): two .cu files (nvcc is slow) and their host-side
# parameter checks, which build without nvcc's help.
target_sources(WeftRuntimeCuda PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/SimpleParams.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/RowKernels.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/MovementKernels.cu
)
