# The row-wise and data-movement CUDA kernels: parameter checks everywhere,
# results against the CPU kernels where a GPU is present.
add_executable(WeftCudaSimpleKernelTests SimpleKernelsTest.cpp)
target_link_libraries(WeftCudaSimpleKernelTests PRIVATE WeftRuntimeCuda
  GTest::gtest_main)
gtest_discover_tests(WeftCudaSimpleKernelTests DISCOVERY_TIMEOUT 60
  PROPERTIES LABELS cuda)
