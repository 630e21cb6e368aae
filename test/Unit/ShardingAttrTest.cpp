//===- ShardingAttrTest.cpp - The planner's shardings and the attribute ---===//
//
// toTensorSharding and toShardingAttr carry the mesh across (the attribute's
// mesh is the sharding's, both ways), and verifyShardingsOnMesh finds a
// sharding on another mesh wherever the function holds one.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/AutoShard.h"
#include "weft/WeftDialect.h"
#include "weft/WeftOps.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::weft;

namespace {

std::unique_ptr<MLIRContext> makeContext() {
  auto context = std::make_unique<MLIRContext>();
  context->loadDialect<WeftDialect, func::FuncDialect>();
  return context;
}

ShardingAttr parseSharding(MLIRContext &context, llvm::StringRef text) {
  return cast<ShardingAttr>(parseAttribute(text, &context));
}

// Tests that the planner's form keeps the attribute's mesh, and that the
// attribute made back from it names the same mesh: a round trip.
TEST(ShardingAttr, RoundTripKeepsTheMesh) {
  auto context = makeContext();
  ShardingAttr attr = parseSharding(
      *context, "#weft.sharding<@stage1, [[0], [], [1]], partial [2]>");
  plan::TensorSharding sharding = toTensorSharding(attr);
  EXPECT_EQ(sharding.mesh, "stage1");
  EXPECT_EQ(sharding.str(), "[[0], [], [1]] partial [2]");
  EXPECT_EQ(toShardingAttr(context.get(), sharding), attr);
}

// Tests that re-targeting a sharding is what moves its attribute to
// another mesh.
TEST(ShardingAttr, OnMeshRetargetsTheAttribute) {
  auto context = makeContext();
  ShardingAttr attr =
      parseSharding(*context, "#weft.sharding<@stage0, [[0], []]>");
  ShardingAttr moved =
      toShardingAttr(context.get(), toTensorSharding(attr).onMesh("stage1"));
  EXPECT_EQ(moved,
            parseSharding(*context, "#weft.sharding<@stage1, [[0], []]>"));
  EXPECT_EQ(toShardingAttr(context.get(),
                           plan::TensorSharding::replicated("mesh", 2)),
            ShardingAttr::getReplicated(
                FlatSymbolRefAttr::get(context.get(), "mesh"), 2));
}

constexpr const char *kTwoMeshes = R"mlir(
weft.mesh @mesh shape = [2]
weft.mesh @grid shape = [2]
func.func @main(%x: tensor<8x4xf32> {weft.sharding = #weft.sharding<@mesh, [[], []]>}) -> tensor<8x4xf32> {
  %r = weft.unary relu %x {weft.sharding = [#weft.sharding<@mesh, [[0], []]>], weft.operand_sharding = [#weft.sharding<@mesh, [[0], []]>]} : tensor<8x4xf32> -> tensor<8x4xf32>
  %s = weft.shard %r to <@grid, [[0], []]> : tensor<8x4xf32>
  return %s : tensor<8x4xf32>
}
)mlir";

// Tests that verifyShardingsOnMesh accepts shardings on the mesh and names
// the first one on another (here a weft.shard's inherent sharding).
TEST(ShardingAttr, VerifyShardingsOnMesh) {
  auto context = makeContext();
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(kTwoMeshes, context.get());
  ASSERT_TRUE(module);
  auto main = module->lookupSymbol<func::FuncOp>("main");
  std::string message;
  ScopedDiagnosticHandler handler(context.get(), [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  auto mesh = FlatSymbolRefAttr::get(context.get(), "mesh");
  EXPECT_TRUE(failed(verifyShardingsOnMesh(main, mesh, "the test's mesh")));
  EXPECT_EQ(message, "'weft.shard' op has a sharding on mesh @grid, not on "
                     "the test's mesh @mesh");
  message.clear();
  main.walk([](ShardOp shard) {
    shard.getResult().replaceAllUsesWith(shard.getInput());
    shard.erase();
  });
  EXPECT_TRUE(succeeded(verifyShardingsOnMesh(main, mesh, "the test's mesh")));
  EXPECT_EQ(message, "");
}

} // namespace
