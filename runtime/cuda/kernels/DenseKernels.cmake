# The dense-math kernels of weft_rt_cuda.h: matmul on cuBLAS, conv on cuDNN,
# pool, batch norm and einsum as kernels of our own (one .cu file, so that
# nvcc runs once). Included by runtime/cuda/CMakeLists.txt.
target_sources(WeftRuntimeCuda PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/Conv.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/DenseKernels.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/DenseOps.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/DenseParams.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/Matmul.cpp
)
