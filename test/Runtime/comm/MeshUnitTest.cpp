//===- MeshUnitTest.cpp - Mesh pieces that need no mpirun ----------------===//
//
// The signature's "mesh" record, the driver's rank lists and per-rank file
// names, the launcher environment it reads, and what a mesh program does
// without a communicator, all in one process without MPI.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"
#include "Signature.h"
#include "weft_rt.h"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace weft::rt;

namespace {

std::string parseError(const std::string &text) {
  ProgramSignature signature;
  std::string error;
  EXPECT_FALSE(parseSignature(text.c_str(), signature, error)) << text;
  return error;
}

const char *kHeader = "weft-program 1\narena 0\nweights 0\n";

// Tests that a mesh record gives the shape and device count.
TEST(MeshSignature, ParsesTheShape) {
  ProgramSignature signature;
  std::string error;
  ASSERT_TRUE(parseSignature((std::string(kHeader) + "mesh 2 3\n").c_str(),
                             signature, error))
      << error;
  EXPECT_EQ(signature.mesh, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(signature.meshDevices, 6);
  ASSERT_TRUE(parseSignature(kHeader, signature, error)) << error;
  EXPECT_TRUE(signature.mesh.empty());
  EXPECT_EQ(signature.meshDevices, 1);
}

// Tests that malformed mesh records name the line and the problem.
TEST(MeshSignature, RefusesBadRecords) {
  std::string header = kHeader;
  EXPECT_NE(parseError(header + "mesh\n").find("line 4: expected 'mesh <d0>"),
            std::string::npos);
  EXPECT_NE(parseError(header + "mesh 2 0\n")
                .find("mesh dim 1 is '0', not an integer >= 1"),
            std::string::npos);
  EXPECT_NE(parseError(header + "mesh 2 x\n").find("mesh dim 1 is 'x'"),
            std::string::npos);
  EXPECT_NE(parseError(header + "mesh 2\nmesh 2\n").find("second 'mesh'"),
            std::string::npos);
  EXPECT_NE(parseError(header + "mesh 1 1 1 1 1 1 1 1 1\n").find("1 to 8 dims"),
            std::string::npos);
  EXPECT_NE(parseError(header + "mesh 65536 65536\n")
                .find("more than 2147483647 devices"),
            std::string::npos);
}

// Tests the rank lists of the driver's messages.
TEST(MeshDriver, FormatsRanks) {
  EXPECT_EQ(formatRanks({1}, 4), "[rank 1/4]");
  EXPECT_EQ(formatRanks({0, 1, 2, 3}, 4), "[ranks 0-3/4]");
  EXPECT_EQ(formatRanks({1, 3}, 4), "[ranks 1,3/4]");
  EXPECT_EQ(formatRanks({0, 1, 3, 4, 5, 7}, 8), "[ranks 0,1,3-5,7/8]");
}

// Tests the per-rank names of --profile files.
TEST(MeshDriver, NamesFilesPerRank) {
  EXPECT_EQ(rankedPath("trace.json", 1), "trace.rank1.json");
  EXPECT_EQ(rankedPath("out/trace.json", 0), "out/trace.rank0.json");
  EXPECT_EQ(rankedPath("trace", 2), "trace.rank2");
  EXPECT_EQ(rankedPath("run.d/trace", 3), "run.d/trace.rank3");
  EXPECT_EQ(rankedPath(".trace", 3), ".trace.rank3");
}

// Tests that the launcher's environment is read without touching MPI.
TEST(MeshDriver, ReadsTheLauncherEnvironment) {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                           "PMI_SIZE", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"})
    unsetenv(name);
  EXPECT_FALSE(readLaunchInfo().launched);
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  setenv("OMPI_COMM_WORLD_RANK", "2", 1);
  LaunchInfo info = readLaunchInfo();
  EXPECT_TRUE(info.launched);
  EXPECT_EQ(info.worldSize, 4);
  EXPECT_EQ(info.rank, 2);
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("OMPI_COMM_WORLD_RANK");
  setenv("PMIX_RANK", "1", 1);
  info = readLaunchInfo();
  EXPECT_TRUE(info.launched);
  EXPECT_EQ(info.worldSize, -1);
  EXPECT_EQ(info.rank, 1);
  unsetenv("PMIX_RANK");
}

int32_t runNothing(weft_rt_context *, weft_rt_byte_buffer *,
                   weft_rt_byte_buffer *) {
  return WEFT_RT_OK;
}

// Tests that a mesh program refuses to run without a communicator, and that
// a mesh of one device needs none.
TEST(MeshModel, NeedsACommunicator) {
  weft_rt_context *ctx = nullptr;
  ASSERT_EQ(weft_rt_context_create(&ctx), WEFT_RT_OK);
  weft_rt_program mesh = {"weft-program 1\narena 0\nweights 0\nmesh 2 2\n",
                          runNothing};
  weft_rt_model *model = nullptr;
  ASSERT_EQ(weft_rt_model_create(ctx, &mesh, nullptr, &model), WEFT_RT_OK);
  EXPECT_EQ(weft_rt_model_run(model), WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(weft_rt_context_error(ctx))
                .find("one device of the mesh [2,2] (4 devices) and needs a "
                      "communicator"),
            std::string::npos)
      << weft_rt_context_error(ctx);
  weft_rt_model_destroy(model);
  weft_rt_program one = {"weft-program 1\narena 0\nweights 0\nmesh 1 1\n",
                         runNothing};
  ASSERT_EQ(weft_rt_model_create(ctx, &one, nullptr, &model), WEFT_RT_OK);
  EXPECT_EQ(weft_rt_model_run(model), WEFT_RT_OK) << weft_rt_context_error(ctx);
  weft_rt_model_destroy(model);
  weft_rt_context_destroy(ctx);
}

// Tests the ABI's argument checks that come before MPI.
TEST(MeshComm, RefusesBadArguments) {
  weft_rt_context *ctx = nullptr;
  ASSERT_EQ(weft_rt_context_create(&ctx), WEFT_RT_OK);
  weft_rt_comm *comm = nullptr;
  int64_t dims[] = {2, 2};
  EXPECT_EQ(weft_rt_comm_create_mpi(ctx, 2, dims, nullptr),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_EQ(weft_rt_comm_create_mpi(ctx, 9, dims, &comm),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_EQ(weft_rt_comm_create_mpi(ctx, 2, nullptr, &comm),
            WEFT_RT_INVALID_ARGUMENT);
  int64_t negative[] = {2, -1};
  EXPECT_EQ(weft_rt_comm_create_mpi(ctx, 2, negative, &comm),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_EQ(comm, nullptr);
  EXPECT_EQ(weft_rt_comm_create_mpi(nullptr, 2, dims, &comm),
            WEFT_RT_INVALID_ARGUMENT);
  weft_rt_comm_destroy(nullptr);
  EXPECT_EQ(weft_rt_comm_rank(nullptr), 0);
  weft_rt_context_destroy(ctx);
}

} // namespace
