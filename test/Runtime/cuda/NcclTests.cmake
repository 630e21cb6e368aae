# Tests of the NCCL collectives (label cuda). NcclCollectiveTest: parameter
# blocks without a GPU, groups of one device with one. NcclMeshTest under
# mpirun on 1 and 2 ranks: without a GPU NcclMesh::create must fail on every
# rank (and none hang); with GPUs every collective kind is compared with the
# MPI weft_rt_collective. Included by CMakeLists.txt, which defines
# WEFT_MPIRUN and _weft_cuda_mpi_env.
add_executable(WeftNcclCollectiveTests NcclCollectiveTest.cpp)
target_link_libraries(WeftNcclCollectiveTests PRIVATE WeftRuntimeCuda
  GTest::gtest_main)
gtest_discover_tests(WeftNcclCollectiveTests DISCOVERY_TIMEOUT 60
  PROPERTIES LABELS cuda)

add_executable(WeftNcclMeshTest NcclMeshTest.cpp)
target_link_libraries(WeftNcclMeshTest PRIVATE WeftRuntimeCuda)
target_include_directories(WeftNcclMeshTest PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/..) # MpiChecks.h
foreach(ranks 1 2)
  add_test(NAME weft-cuda-nccl-mesh-${ranks}
    COMMAND ${WEFT_MPIRUN} --oversubscribe --bind-to none -np ${ranks}
            $<TARGET_FILE:WeftNcclMeshTest>)
  set_tests_properties(weft-cuda-nccl-mesh-${ranks} PROPERTIES
    ENVIRONMENT "${_weft_cuda_mpi_env}" TIMEOUT 300 LABELS cuda
    PROCESSORS ${ranks}
    PASS_REGULAR_EXPRESSION "${ranks} ranks: [0-9]+ checks, 0 failed")
endforeach()

# The NCCL watchdog (the failure detector's health check) against a stand-in
# for NCCL: runs without a GPU.
add_executable(WeftNcclWatchdogTests NcclWatchdogTest.cpp)
target_link_libraries(WeftNcclWatchdogTests PRIVATE WeftRuntimeCuda
  GTest::gtest_main)
target_include_directories(WeftNcclWatchdogTests PRIVATE
  ${PROJECT_SOURCE_DIR}/runtime)
gtest_discover_tests(WeftNcclWatchdogTests DISCOVERY_TIMEOUT 60
  PROPERTIES LABELS cuda)

# SEND and RECV's transfer stream: the event protocol against a model of
# CUDA's stream order, the SEND ops' staging against a fake allocator, and
# the choice of the stream. No GPU needed.
add_executable(WeftNcclTransferTests NcclTransferTest.cpp)
target_link_libraries(WeftNcclTransferTests PRIVATE WeftRuntimeCuda
  GTest::gtest_main)
gtest_discover_tests(WeftNcclTransferTests DISCOVERY_TIMEOUT 60
  PROPERTIES LABELS cuda)
