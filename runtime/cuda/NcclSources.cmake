# Collectives of mesh programs on NCCL (NcclMesh, weft_rt_cuda_collective,
# SEND and RECV on their own stream, broadcasts over groups or the world):
# host C++ only; blocks are packed with cudaMemcpy2DAsync, so no kernel.
target_sources(WeftRuntimeCuda PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/NcclBroadcast.cpp
  ${CMAKE_CURRENT_LIST_DIR}/NcclComm.cpp
  ${CMAKE_CURRENT_LIST_DIR}/NcclTransfer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/NcclWatchdog.cpp
)
