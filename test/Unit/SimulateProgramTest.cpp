//===- SimulateProgramTest.cpp - Tests of appendRankSimOps ----------------===//
//
// Reads hand-written rank programs of a 2-stage pipeline (stage 1 on a mesh
// of two ranks that all-reduce) into a SimProgram and checks the ops: kinds,
// peers on cluster devices, bytes, the collective's group and id, compute
// priced by the cost model, microbatches repeated; then simulates them.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/SimulateProgram.h"
#include "weft/Plan/CostModel.h"
#include "weft/Transforms/ShardingRules.h"
#include "weft/WeftOps.h"
#include "weft/WeftDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::weft;
namespace plan = ::weft::plan;

namespace {

/// Rank 0 (stage 0) computes and sends to ranks 1 and 2.
constexpr const char *kRank0 = R"mlir(
weft.mesh @stage0 shape = [1] devices = [0]
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = weft.unary relu %x : tensor<4x8xf32> -> tensor<4x8xf32>
  weft.send %y to 1 tag 0 : tensor<4x8xf32>
  weft.send %y to 2 tag 1 : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
)mlir";

/// Ranks 1 and 2 (stage 1, mesh [2]) receive, compute a partial sum and
/// all-reduce it.
constexpr const char *kRank12 = R"mlir(
weft.mesh @stage1 shape = [2] devices = [1, 2]
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = weft.recv from 0 tag TAG : tensor<4x8xf32>
  %a = weft.unary relu %r : tensor<4x8xf32> -> tensor<4x8xf32> loc("/block/Relu")
  %b = weft.binary add %a, %r : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = weft.all_reduce %b on @stage1 over [0] : tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}
)mlir";

struct SimulateProgramTest : ::testing::Test {
  SimulateProgramTest() {
    context.loadDialect<WeftDialect, func::FuncDialect>();
    llvm::Expected<plan::Cluster> loaded = plan::loadCluster("cpu:4");
    EXPECT_TRUE(static_cast<bool>(loaded));
    if (loaded)
      cluster = *loaded;
  }

  OwningOpRef<ModuleOp> rank(int r) {
    std::string text = r == 0 ? kRank0 : kRank12;
    if (r > 0)
      text.replace(text.find("TAG"), 3, std::to_string(r - 1));
    return parseSourceString<ModuleOp>(text, &context);
  }

  MLIRContext context;
  plan::Cluster cluster;
  /// Ranks 0, 1, 2 run on cluster devices 3, 1, 2.
  std::vector<int64_t> devices = {3, 1, 2};
};

TEST_F(SimulateProgramTest, ReadsEveryOp) {
  plan::SimProgram program;
  program.microbatchesPerRequest = 2;
  SimCollectiveIds ids;
  for (int r = 0; r < 3; ++r) {
    OwningOpRef<ModuleOp> module = rank(r);
    ASSERT_TRUE(module);
    RankSimInfo info{r, r == 0 ? 0 : 1, devices};
    ASSERT_TRUE(
        succeeded(appendRankSimOps(*module, info, cluster, ids, program)));
  }
  ASSERT_EQ(program.devices.size(), 4u);
  EXPECT_TRUE(program.devices[0].empty());

  // Rank 0 on device 3: compute, two sends, twice.
  const std::vector<plan::SimOp> &first = program.devices[3];
  ASSERT_EQ(first.size(), 6u);
  EXPECT_EQ(first[0].kind, plan::SimOpKind::Compute);
  EXPECT_EQ(first[0].label, "stage 0");
  EXPECT_EQ(first[1].kind, plan::SimOpKind::Send);
  EXPECT_EQ(first[1].peer, 1);
  EXPECT_EQ(first[1].bytes, 128);
  EXPECT_EQ(first[2].peer, 2);
  EXPECT_EQ(first[2].tag, 1);
  EXPECT_EQ(first[3].microbatch, 1);
  EXPECT_EQ(first[3].stage, 0);

  // The roofline of relu on 4x8 f32: 32 FLOPs, 256 bytes, on stage 0's mesh.
  plan::Mesh mesh0;
  mesh0.shape = {1};
  mesh0.devices = {3};
  plan::CostModel costs0(cluster, mesh0);
  EXPECT_DOUBLE_EQ(first[0].seconds,
                   costs0.computeSeconds(32, 256, plan::DType::F32));

  // Ranks 1 and 2: receive, one compute for relu + add, all-reduce.
  for (int device : {1, 2}) {
    const std::vector<plan::SimOp> &ops = program.devices[device];
    ASSERT_EQ(ops.size(), 6u);
    EXPECT_EQ(ops[0].kind, plan::SimOpKind::Recv);
    EXPECT_EQ(ops[0].peer, 3);
    EXPECT_EQ(ops[1].kind, plan::SimOpKind::Compute);
    EXPECT_EQ(ops[1].label, "stage 1");
    EXPECT_EQ(ops[2].kind, plan::SimOpKind::Collective);
    EXPECT_EQ(ops[2].collective, plan::CollectiveKind::AllReduce);
    EXPECT_EQ(ops[2].bytes, 128);
    EXPECT_EQ(ops[2].participants, (std::vector<int>{1, 2}));
    EXPECT_EQ(ops[2].id, program.devices[1][2].id);
    EXPECT_EQ(ops[5].microbatch, 1);
  }
  plan::Mesh mesh1;
  mesh1.shape = {2};
  mesh1.devices = {1, 2};
  plan::CostModel costs1(cluster, mesh1);
  // relu's result feeds only the add, so codegen fuses the two into one
  // loop: relu reads its 128 bytes and writes nothing; add reads the
  // received 128 bytes (not relu's) and writes 128.
  EXPECT_DOUBLE_EQ(program.devices[1][1].seconds,
                   costs1.computeSeconds(32, 128, plan::DType::F32) +
                       costs1.computeSeconds(32, 256, plan::DType::F32));
  // The run's ops, named as a profile names them: the ONNX node where the
  // location has one, else the op's kind; shared by every microbatch.
  const plan::TimelineOps &parts = program.devices[1][1].ops;
  ASSERT_TRUE(parts);
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].name, "/block/Relu");
  EXPECT_EQ((*parts)[0].kind, "unary");
  EXPECT_DOUBLE_EQ((*parts)[0].seconds,
                   costs1.computeSeconds(32, 128, plan::DType::F32));
  EXPECT_EQ((*parts)[1].name, "binary");
  EXPECT_EQ(program.devices[1][4].ops, parts);

  llvm::Expected<plan::SimResult> result = plan::simulate(cluster, program);
  ASSERT_TRUE(static_cast<bool>(result)) << toString(result.takeError());
  EXPECT_GT(result->makespanSeconds, 0);
}

TEST_F(SimulateProgramTest, RepeatsRequests) {
  plan::SimProgram program;
  program.microbatchesPerRequest = 2;
  program.requests = 3;
  SimCollectiveIds ids;
  OwningOpRef<ModuleOp> module = rank(0);
  ASSERT_TRUE(module);
  ASSERT_TRUE(succeeded(
      appendRankSimOps(*module, {0, 0, devices}, cluster, ids, program)));
  ASSERT_EQ(program.devices[3].size(), 18u);
  EXPECT_EQ(program.devices[3].back().microbatch, 5);
}

TEST_F(SimulateProgramTest, RefusesARankOutsideTheMesh) {
  plan::SimProgram program;
  SimCollectiveIds ids;
  OwningOpRef<ModuleOp> module = rank(1);
  ASSERT_TRUE(module);
  std::string message;
  ScopedDiagnosticHandler capture(&context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  // Rank 0 is not in @stage1.
  EXPECT_TRUE(failed(
      appendRankSimOps(*module, {0, 1, devices}, cluster, ids, program)));
  EXPECT_NE(message.find("not in mesh @stage1"), std::string::npos) << message;
}

/// One rank of a one-device mesh computing `body` (a function of %x:
/// 1x8x16x16 and %w: 8x8x3x3 returning %out); the seconds of its compute.
static double computeSecondsOf(MLIRContext &context,
                               const plan::Cluster &cluster,
                               const std::string &body,
                               const std::string &result =
                                   "tensor<1x8x16x16xf32>") {
  std::string text =
      "weft.mesh @m shape = [1] devices = [0]\n"
      "func.func @main(%x: tensor<1x8x16x16xf32>, %w: tensor<8x8x3x3xf32>)"
      " -> " + result + " {\n" + body + "  return %out : " + result + "\n}\n";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
  EXPECT_TRUE(module);
  if (!module)
    return -1;
  plan::SimProgram program;
  SimCollectiveIds ids;
  std::vector<int64_t> device0 = {0};
  EXPECT_TRUE(succeeded(
      appendRankSimOps(*module, {0, 0, device0}, cluster, ids, program)));
  return program.devices[0].at(0).seconds;
}

TEST_F(SimulateProgramTest, ViewsAndFusedClampsCostNothingOnCpus) {
  const std::string conv =
      "  %y = weft.conv %x, %w strides [1, 1] pads [1, 1, 1, 1] dilations "
      "[1, 1] : (tensor<1x8x16x16xf32>, tensor<8x8x3x3xf32>) -> "
      "tensor<1x8x16x16xf32>\n";
  std::string convAlone = conv;
  convAlone.replace(convAlone.find("%y"), 2, "%out");
  double alone = computeSecondsOf(context, cluster, convAlone);
  ASSERT_GT(alone, 0);
  // The Relu runs inside the convolution on CPUs (weft/ConvClamp.h).
  EXPECT_DOUBLE_EQ(
      computeSecondsOf(context, cluster,
                       conv + "  %out = weft.unary relu %y : "
                              "tensor<1x8x16x16xf32> -> "
                              "tensor<1x8x16x16xf32>\n"),
      alone);
  // A sigmoid is not a clamp: it costs a pass.
  EXPECT_GT(computeSecondsOf(context, cluster,
                             conv + "  %out = weft.unary sigmoid %y : "
                                    "tensor<1x8x16x16xf32> -> "
                                    "tensor<1x8x16x16xf32>\n"),
            alone);
  // A view moves nothing.
  EXPECT_DOUBLE_EQ(
      computeSecondsOf(context, cluster,
                       conv + "  %out = weft.unsqueeze %y axes = [4] : "
                              "tensor<1x8x16x16xf32> -> "
                              "tensor<1x8x16x16x1xf32>\n",
                       "tensor<1x8x16x16x1xf32>"),
      alone);
}

} // namespace

// Tests that convolutions are priced by the kernel class the backends run
// them with (the spec's kernel_rates): depthwise, 1x1, 3x3 of stride 1,
// and any other window.
TEST_F(SimulateProgramTest, ConvolutionsHaveTheirKernelClass) {
  const char *text = R"mlir(
func.func @main(%x: tensor<1x8x16x16xf32>, %w3: tensor<8x8x3x3xf32>,
                %w1: tensor<4x8x1x1xf32>, %wd: tensor<8x1x3x3xf32>)
    -> (tensor<1x8x16x16xf32>, tensor<1x8x8x8xf32>, tensor<1x4x16x16xf32>,
        tensor<1x8x16x16xf32>) {
  %a = weft.conv %x, %w3 strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] : (tensor<1x8x16x16xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x16x16xf32>
  %b = weft.conv %x, %w3 strides [2, 2] pads [1, 1, 1, 1] dilations [1, 1] : (tensor<1x8x16x16xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x8x8xf32>
  %c = weft.conv %x, %w1 strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] : (tensor<1x8x16x16xf32>, tensor<4x8x1x1xf32>) -> tensor<1x4x16x16xf32>
  %d = weft.conv %x, %wd strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] group 8 : (tensor<1x8x16x16xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x16x16xf32>
  return %a, %b, %c, %d : tensor<1x8x16x16xf32>, tensor<1x8x8x8xf32>, tensor<1x4x16x16xf32>, tensor<1x8x16x16xf32>
}
)mlir";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
  ASSERT_TRUE(module);
  std::vector<plan::KernelClass> classes;
  module->walk([&](Operation *op) {
    if (isa<ConvOp>(op))
      classes.push_back(kernelClassOf(op));
  });
  EXPECT_EQ(classes,
            (std::vector<plan::KernelClass>{
                plan::KernelClass::Conv3x3, plan::KernelClass::Conv,
                plan::KernelClass::PointwiseConv,
                plan::KernelClass::DepthwiseConv}));
  module->walk([&](func::ReturnOp op) {
    EXPECT_EQ(kernelClassOf(op), plan::KernelClass::Generic);
  });
}
