//===- MeshUnitTest.cpp - Mesh pieces that need no mpirun ----------------===//
//
// The signature's "mesh", "pipeline" and "broadcast-group" records, the
// driver's rank lists and per-rank file names, the launcher environment it
// reads, and what a mesh or pipeline program does without a communicator, all
// in one process without MPI.
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

// Tests that a pipeline record gives the world and the mesh's world ranks,
// with or without a mesh record (in either order), and that without one
// the mesh is the whole world.
TEST(PipelineSignature, ParsesTheWorldRanks) {
  ProgramSignature signature;
  std::string error;
  ASSERT_TRUE(parseSignature(
      (std::string(kHeader) + "mesh 2\npipeline 5 3 1\n").c_str(), signature,
      error))
      << error;
  EXPECT_EQ(signature.meshWorldRanks, (std::vector<int32_t>{3, 1}));
  EXPECT_EQ(signature.worldSize, 5);
  EXPECT_EQ(signature.meshDevices, 2);
  EXPECT_TRUE(signature.pipeline());
  EXPECT_TRUE(signature.multiRank());
  // The pipeline record first; a 2x2 mesh at scattered ranks.
  ASSERT_TRUE(parseSignature(
      (std::string(kHeader) + "pipeline 8 7 0 5 2\nmesh 2 2\n").c_str(),
      signature, error))
      << error;
  EXPECT_EQ(signature.meshWorldRanks, (std::vector<int32_t>{7, 0, 5, 2}));
  EXPECT_EQ(signature.worldSize, 8);
  // A stage of one device: no mesh record, or "mesh 1".
  for (const char *mesh : {"", "mesh 1\n", "mesh 1 1\n"}) {
    ASSERT_TRUE(
        parseSignature((std::string(kHeader) + mesh + "pipeline 3 2\n").c_str(),
                       signature, error))
        << error;
    EXPECT_EQ(signature.meshWorldRanks, (std::vector<int32_t>{2}));
    EXPECT_EQ(signature.meshDevices, 1);
    EXPECT_TRUE(signature.multiRank()) << mesh;
  }
  // A pipeline of one process is a single device.
  ASSERT_TRUE(parseSignature((std::string(kHeader) + "pipeline 1 0\n").c_str(),
                             signature, error))
      << error;
  EXPECT_TRUE(signature.pipeline());
  EXPECT_FALSE(signature.multiRank());
  // Without a pipeline record the mesh is the world.
  ASSERT_TRUE(parseSignature((std::string(kHeader) + "mesh 2 2\n").c_str(),
                             signature, error))
      << error;
  EXPECT_FALSE(signature.pipeline());
  EXPECT_TRUE(signature.meshWorldRanks.empty());
  EXPECT_EQ(signature.worldSize, 4);
  ASSERT_TRUE(parseSignature(kHeader, signature, error)) << error;
  EXPECT_EQ(signature.worldSize, 1);
  EXPECT_FALSE(signature.multiRank());
}

// Tests that malformed pipeline records name the line and the problem.
TEST(PipelineSignature, RefusesBadRecords) {
  std::string header = kHeader;
  struct Case {
    std::string records, message;
  };
  std::vector<Case> cases = {
      {"pipeline\n", "line 4: expected 'pipeline <world size> <rank of mesh "
                     "position 0> ...' with at least one rank"},
      {"pipeline 4\n", "with at least one rank"},
      {"pipeline 0 0\n",
       "pipeline world size '0' is not an integer from 1 to 2147483647"},
      {"pipeline x 0\n", "pipeline world size 'x' is not an integer"},
      {"pipeline 4294967296 0\n", "pipeline world size '4294967296'"},
      {"pipeline 4 4\n",
       "pipeline rank 0 is '4', not a world rank from 0 to 3"},
      {"pipeline 4 -1\n", "pipeline rank 0 is '-1'"},
      {"mesh 2\npipeline 4 0 y\n", "pipeline rank 1 is 'y'"},
      {"mesh 2\npipeline 4 1 1\n", "line 5: pipeline world rank 1 is given "
                                   "twice"},
      {"pipeline 2 0 1 0\n",
       "the pipeline lists 3 world ranks, more than its 2 processes"},
      {"mesh 2\npipeline 4 0\n",
       "line 5: the pipeline lists 1 world ranks, but the mesh [2] has 2 "
       "devices (one world rank per mesh position)"},
      {"pipeline 4 0 1\nmesh 3\n",
       "line 4: the pipeline lists 2 world ranks, but the mesh [3] has 3"},
      {"pipeline 4 0 1\n", "but the mesh [1] (no 'mesh' record) has 1 devices"},
      {"pipeline 4 0\npipeline 4 0\n", "line 5: second 'pipeline' record"},
  };
  for (const Case &c : cases)
    EXPECT_NE(parseError(header + c.records).find(c.message), std::string::npos)
        << c.records << " gave: " << parseError(header + c.records);
}

// Tests that broadcast-group records list the job's groups in order, and
// that malformed ones name the line and the problem.
TEST(PipelineSignature, BroadcastGroups) {
  ProgramSignature signature;
  std::string error;
  ASSERT_TRUE(parseSignature((std::string(kHeader) +
                              "pipeline 5 0\nbroadcast-group 0 2 3\n"
                              "broadcast-group 1 4\n")
                                 .c_str(),
                             signature, error))
      << error;
  EXPECT_EQ(signature.broadcastGroups,
            (std::vector<std::vector<int32_t>>{{0, 2, 3}, {1, 4}}));
  std::string header = std::string(kHeader) + "pipeline 5 0\n";
  struct Case {
    std::string records, message;
  };
  std::vector<Case> cases = {
      {"broadcast-group 3\n",
       "line 5: expected 'broadcast-group <world rank> <world rank> ...' with "
       "at least two ranks"},
      {"broadcast-group 0 x\n", "broadcast group rank 'x' is not a world rank"},
      {"broadcast-group 2 2\n", "ranks must increase, but 2 follows 2"},
      {"broadcast-group 3 1\n", "ranks must increase, but 1 follows 3"},
      {"broadcast-group 0 1\nbroadcast-group 1 5\n",
       "line 6: broadcast group 1 lists world rank 5, but the job has 5 "
       "processes"},
  };
  for (const Case &c : cases)
    EXPECT_NE(parseError(header + c.records).find(c.message), std::string::npos)
        << c.records << " gave: " << parseError(header + c.records);
}

// Tests that a peers record locates the peer table inside the weights, and
// that malformed ones name the line and the problem.
TEST(PipelineSignature, PeerTable) {
  ProgramSignature signature;
  std::string error;
  ASSERT_TRUE(parseSignature("weft-program 1\narena 0\nweights 128\n"
                             "pipeline 4 0\npeers 64 4\n",
                             signature, error))
      << error;
  EXPECT_EQ(signature.peerTableOffset, 64);
  EXPECT_EQ(signature.peerSlots, 4);
  ASSERT_TRUE(parseSignature(kHeader, signature, error)) << error;
  EXPECT_EQ(signature.peerSlots, 0);
  std::string header = "weft-program 1\narena 0\nweights 128\n";
  struct Case {
    std::string records, message;
  };
  std::vector<Case> cases = {
      {"pipeline 4 0\npeers 64\n",
       "line 5: expected 'peers <offset> <slots>' with an offset that is a "
       "multiple of 8 and from 1 to 1048576 slots"},
      {"pipeline 4 0\npeers 60 1\n", "multiple of 8"},
      {"pipeline 4 0\npeers 0 0\n", "from 1 to 1048576 slots"},
      {"pipeline 4 0\npeers -8 1\n", "expected 'peers <offset> <slots>'"},
      {"pipeline 4 0\npeers 64 5\n",
       "line 5: the peer table (5 slots at offset 64) does not fit in the 128 "
       "bytes of weights"},
      {"pipeline 4 0\npeers 136 1\n", "does not fit in the 128 bytes"},
      {"peers 0 1\n", "line 4: a 'peers' record needs a 'pipeline' record"},
      {"pipeline 4 0\npeers 0 1\npeers 0 1\n", "line 6: second 'peers' record"},
  };
  for (const Case &c : cases)
    EXPECT_NE(parseError(header + c.records).find(c.message), std::string::npos)
        << c.records << " gave: " << parseError(header + c.records);
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

// Tests that a stage of a pipeline refuses to run without a communicator,
// even a stage of one device (its transfers need the world).
TEST(MeshModel, PipelineStageNeedsACommunicator) {
  weft_rt_context *ctx = nullptr;
  ASSERT_EQ(weft_rt_context_create(&ctx), WEFT_RT_OK);
  weft_rt_program stage = {"weft-program 1\narena 0\nweights 0\n"
                           "pipeline 3 2\n",
                           runNothing};
  weft_rt_model *model = nullptr;
  ASSERT_EQ(weft_rt_model_create(ctx, &stage, nullptr, &model), WEFT_RT_OK);
  EXPECT_EQ(weft_rt_model_run(model), WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(weft_rt_context_error(ctx))
                .find("the program is the mesh [1] at world ranks {2} of a "
                      "pipeline of 3 processes and needs a communicator"),
            std::string::npos)
      << weft_rt_context_error(ctx);
  weft_rt_model_destroy(model);
  weft_rt_program alone = {"weft-program 1\narena 0\nweights 0\n"
                           "pipeline 1 0\n",
                           runNothing};
  ASSERT_EQ(weft_rt_model_create(ctx, &alone, nullptr, &model), WEFT_RT_OK);
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
  // The pipeline's other checks are collective (they need MPI); these two
  // leave nothing to report to or into.
  int32_t ranks[] = {0, 1, 2, 3};
  EXPECT_EQ(weft_rt_comm_create_mpi_pipeline(nullptr, 2, dims, ranks, 4, &comm),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_EQ(weft_rt_comm_create_mpi_pipeline(ctx, 2, dims, ranks, 4, nullptr),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(weft_rt_context_error(ctx)).find("out_comm is NULL"),
            std::string::npos);
  weft_rt_comm_destroy(nullptr);
  EXPECT_EQ(weft_rt_comm_rank(nullptr), 0);
  EXPECT_EQ(weft_rt_comm_mesh_position(nullptr), 0);
  EXPECT_EQ(weft_rt_comm_mesh_size(nullptr), 0);
  weft_rt_context_destroy(ctx);
}

} // namespace
