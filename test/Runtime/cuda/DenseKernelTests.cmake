# Tests of the dense-math CUDA kernels (runtime/cuda/kernels/DenseKernels.cmake):
# parameter checks and the matmul batch planner everywhere, the kernels
# against the CPU ones where a GPU is present. Included by CMakeLists.txt.
add_executable(WeftCudaDenseKernelTests DenseKernelsTest.cpp)
target_link_libraries(WeftCudaDenseKernelTests PRIVATE WeftRuntimeCuda
  GTest::gtest_main)
gtest_discover_tests(WeftCudaDenseKernelTests DISCOVERY_TIMEOUT 60
  PROPERTIES LABELS cuda)
