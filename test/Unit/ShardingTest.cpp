//===- ShardingTest.cpp - Tests of plan::TensorSharding and planReshard ---===//
//
// A sharding names its mesh: equality tells meshes apart, re-targeting is
// explicit, the printed form stays the layout alone, and the in-mesh
// resharding planner's steps stay on the mesh they start from.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/Sharding.h"

#include <gtest/gtest.h>

using namespace weft::plan;

namespace {

TensorSharding sharding(std::string mesh, std::vector<AxisList> dims,
                        AxisList partial = {}) {
  TensorSharding s;
  s.mesh = std::move(mesh);
  s.dims = std::move(dims);
  s.partial = std::move(partial);
  return s;
}

// Tests that replicated() names its mesh and splits nothing.
TEST(TensorSharding, ReplicatedNamesItsMesh) {
  TensorSharding whole = TensorSharding::replicated("stage1", 3);
  EXPECT_EQ(whole.mesh, "stage1");
  EXPECT_EQ(whole.dims.size(), 3u);
  EXPECT_TRUE(whole.isReplicated());
}

// Tests that the same layout on two meshes is two shardings, and that
// onMesh re-targets the layout and nothing else.
TEST(TensorSharding, EqualityTellsMeshesApart) {
  TensorSharding onA = sharding("a", {{0}, {}}, {1});
  TensorSharding onB = sharding("b", {{0}, {}}, {1});
  EXPECT_NE(onA, onB);
  EXPECT_EQ(onA, sharding("a", {{0}, {}}, {1}));
  EXPECT_NE(onA, sharding("a", {{0}, {}}));
  EXPECT_NE(onA, sharding("a", {{}, {0}}, {1}));
  EXPECT_EQ(onA.onMesh("b"), onB);
  EXPECT_EQ(onA.mesh, "a");
  EXPECT_NE(TensorSharding::replicated("a", 2),
            TensorSharding::replicated("b", 2));
}

// Tests that str() prints the layout only (plan.json, reports and lit tests
// read it), whatever the mesh.
TEST(TensorSharding, StrIsTheLayout) {
  EXPECT_EQ(sharding("a", {{0}, {}, {1}}, {2}).str(),
            "[[0], [], [1]] partial [2]");
  EXPECT_EQ(sharding("b", {{0}, {}, {1}}, {2}).str(),
            "[[0], [], [1]] partial [2]");
  EXPECT_EQ(TensorSharding::replicated("a", 2).str(), "[[], []]");
}

// Tests that every step of an in-mesh resharding stays on the source's
// mesh: a reduce-scatter, then a slice.
TEST(PlanReshard, StepsStayOnTheSourceMesh) {
  TensorSharding from = sharding("m", {{}, {}}, {0});
  TensorSharding to = sharding("m", {{0}, {1}});
  std::optional<std::vector<ReshardStep>> steps =
      planReshard({8, 8}, from, to, {2, 2});
  ASSERT_TRUE(steps);
  ASSERT_EQ(steps->size(), 2u);
  EXPECT_EQ((*steps)[0].kind, ReshardKind::ReduceScatter);
  EXPECT_EQ((*steps)[1].kind, ReshardKind::LocalSlice);
  for (const ReshardStep &step : *steps)
    EXPECT_EQ(step.after.mesh, "m");
  EXPECT_EQ(steps->back().after, to);
}

} // namespace
