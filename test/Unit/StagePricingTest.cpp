//===- StagePricingTest.cpp - Tests of StagePricer ------------------------===//
//
// Prices stages of a small MLP and of canonicalized GPT layers (the lit
// tests' inputs) and checks them against autoShard on a copy of the module:
// the same predicted seconds, memory and shardings for the whole function;
// the module untouched; repeats answered from the cache; a budget no plan
// meets answered, not refused; two halves against the whole. A benchmark
// prints the cost of a hit, of a first request and of a whole autoShard.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/StagePricing.h"
#include "weft/Plan/LayerClustering.h"
#include "weft/Transforms/StageSignature.h"
#include "weft/Transforms/AutoShard.h"
#include "weft/WeftDialect.h"
#include "weft/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <chrono>
#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace mlir::weft;

namespace {

/// Two matmuls with biases (Megatron's MLP), f32.
constexpr const char *kMlp = R"mlir(
func.func @main(%x: tensor<8x64xf32> {weft.name = "x"}) -> tensor<8x16xf32> {
  %w1 = weft.weight "w1" from "none.bin" offset 0 size 16384 checksum "0000000000000000" : tensor<64x64xf32>
  %b1 = weft.weight "b1" from "none.bin" offset 0 size 256 checksum "0000000000000000" : tensor<64xf32>
  %w2 = weft.weight "w2" from "none.bin" offset 0 size 4096 checksum "0000000000000000" : tensor<64x16xf32>
  %h = weft.matmul %x, %w1 : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %hb = weft.binary add %h, %b1 : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
  %r = weft.unary relu %hb : tensor<8x64xf32> -> tensor<8x64xf32>
  %y = weft.matmul %r, %w2 : (tensor<8x64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
)mlir";

std::unique_ptr<MLIRContext> makeContext() {
  auto context = std::make_unique<MLIRContext>();
  context->loadDialect<WeftDialect, func::FuncDialect>();
  return context;
}

OwningOpRef<ModuleOp> parse(MLIRContext &context, llvm::StringRef text) {
  return parseSourceString<ModuleOp>(text, &context);
}

/// The GPT layer of test/Transforms/Inputs/`file`, repeated `layers` times
/// (each layer's output the next one's input), canonicalized as weft-opt
/// --canonicalize does before planning.
OwningOpRef<ModuleOp> gptLayers(MLIRContext &context, llvm::StringRef file,
                                int layers) {
  std::string path = std::string(WEFT_TRANSFORMS_INPUTS_DIR) + "/" + file.str();
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(path, &context);
  if (!module)
    return nullptr;
  auto main = module->lookupSymbol<func::FuncOp>("main");
  Block &body = main.getBody().front();
  Operation *terminator = body.getTerminator();
  std::vector<Operation *> layer;
  for (Operation &op : body.without_terminator())
    layer.push_back(&op);
  OpBuilder b(terminator);
  Value layerOutput = terminator->getOperand(0);
  Value current = layerOutput;
  for (int l = 1; l < layers; ++l) {
    IRMapping mapping;
    mapping.map(body.getArgument(0), current);
    for (Operation *op : layer)
      b.clone(*op, mapping);
    current = mapping.lookup(layerOutput);
  }
  terminator->setOperand(0, current);
  PassManager pm(&context);
  pm.addPass(createCanonicalizerPass());
  if (failed(pm.run(*module)))
    return nullptr;
  return module;
}

std::string printed(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  op->print(os, OpPrintingFlags().enableDebugInfo());
  return text;
}

plan::Cluster preset(llvm::StringRef name) {
  llvm::Expected<plan::Cluster> cluster = plan::loadCluster(name);
  if (!cluster) {
    ADD_FAILURE() << llvm::toString(cluster.takeError());
    return {};
  }
  return std::move(*cluster);
}

plan::Mesh mesh(std::vector<int64_t> shape, std::vector<int> devices) {
  plan::Mesh m;
  m.name = "stage";
  m.shape = std::move(shape);
  m.devices = std::move(devices);
  return m;
}

func::FuncOp mainOf(ModuleOp module) {
  return module.lookupSymbol<func::FuncOp>("main");
}

/// autoShard of a copy of `module` on `m` (the only mesh of `cluster`).
struct Planned {
  OwningOpRef<ModuleOp> module;
  AutoShardReport report;
  bool ok = false;
  double seconds = 0;
};
Planned autoShardCopy(ModuleOp module, plan::Cluster cluster,
                      const plan::Mesh &m, ShardingMode mode,
                      Objective objective = Objective::Latency) {
  Planned planned;
  planned.module = module.clone();
  AutoShardOptions options;
  cluster.meshes = {m};
  options.cluster = std::move(cluster);
  options.mode = mode;
  options.objective = objective;
  auto start = std::chrono::steady_clock::now();
  planned.ok = succeeded(autoShard(*planned.module, options, planned.report));
  planned.seconds = std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count();
  return planned;
}

/// The stage's shardings equal the annotations autoShard wrote on the
/// copy, op by op in body order.
void expectSameShardings(const StagePrice &price, ModuleOp planned) {
  std::vector<Operation *> ops;
  for (Operation &op : mainOf(planned).getBody().front().without_terminator())
    ops.push_back(&op);
  ASSERT_EQ(price.ops.size(), ops.size());
  for (auto [sharding, op] : llvm::zip(price.ops, ops)) {
    Operation *copy = op->clone();
    writeOpSharding(copy, sharding);
    EXPECT_EQ(copy->getAttr(kShardingAttr), op->getAttr(kShardingAttr))
        << printed(op);
    EXPECT_EQ(copy->getAttr(kOperandShardingAttr),
              op->getAttr(kOperandShardingAttr))
        << printed(op);
    EXPECT_EQ(copy->getAttr(kPredictedSecondsAttr),
              op->getAttr(kPredictedSecondsAttr))
        << printed(op);
    copy->destroy();
  }
}

/// Pricing the whole body is autoShard's plan: same objective, memory,
/// tightenings and shardings.
void expectWholeMatchesAutoShard(ModuleOp module, const plan::Cluster &cluster,
                                 const plan::Mesh &m, ShardingMode mode,
                                 Objective objective = Objective::Latency) {
  Planned planned = autoShardCopy(module, cluster, m, mode, objective);
  ASSERT_TRUE(planned.ok);
  StagePricerOptions options;
  options.objective = objective;
  StagePricer pricer(mainOf(module), cluster, options);
  llvm::Expected<const StagePrice &> price =
      pricer.price(0, pricer.numOps(), m, mode);
  ASSERT_TRUE(!!price) << llvm::toString(price.takeError());
  EXPECT_TRUE(price->fits) << price->whyNot;
  EXPECT_EQ(price->seconds, planned.report.solution.objective);
  EXPECT_EQ(price->solution.choice, planned.report.solution.choice);
  EXPECT_EQ(price->memory.peakBytes, planned.report.memory.peakBytes);
  EXPECT_EQ(price->memory.residentBytes, planned.report.memory.residentBytes);
  EXPECT_EQ(price->budgetTightenings, planned.report.budgetTightenings);
  EXPECT_EQ(price->graphNodes, planned.report.graphNodes);
  EXPECT_EQ(price->graphEdges, planned.report.graphEdges);
  EXPECT_EQ(price->liveSets, planned.report.liveSets);
  EXPECT_EQ(price->ilpPeakMemoryBytes,
            planned.report.solution.peakMemoryBytes);
  expectSameShardings(*price, *planned.module);
}

TEST(StagePricingTest, WholeMlpIsAutoShardsPlan) {
  auto context = makeContext();
  OwningOpRef<ModuleOp> module = parse(*context, kMlp);
  ASSERT_TRUE(module);
  plan::Cluster cluster = preset("cpu:4");
  for (ShardingMode mode :
       {ShardingMode::Auto, ShardingMode::TensorParallel,
        ShardingMode::DataParallel, ShardingMode::Replicate}) {
    SCOPED_TRACE(shardingModeName(mode).str());
    expectWholeMatchesAutoShard(*module, cluster, mesh({2}, {0, 1}), mode);
    expectWholeMatchesAutoShard(*module, cluster, mesh({2, 2}, {0, 1, 2, 3}),
                                mode);
  }
}

TEST(StagePricingTest, WholeGptLayerIsAutoShardsPlan) {
  auto context = makeContext();
  OwningOpRef<ModuleOp> b1 = gptLayers(*context, "gpt-layer-h4096-b1.mlir", 1);
  ASSERT_TRUE(b1);
  plan::Cluster dgx = preset("dgx-h100x8");
  expectWholeMatchesAutoShard(*b1, dgx, mesh({8}, {0, 1, 2, 3, 4, 5, 6, 7}),
                              ShardingMode::Auto);
  // A sub-mesh of the second half of the node, as a stage would get.
  expectWholeMatchesAutoShard(*b1, dgx, mesh({2, 2}, {4, 5, 6, 7}),
                              ShardingMode::Auto);
  // Under a budget that makes the plan shard the weights (the lit test's
  // 380 MB case), autoShard's memory check and its tightenings included.
  OwningOpRef<ModuleOp> b64 =
      gptLayers(*context, "gpt-layer-h4096-b64.mlir", 1);
  ASSERT_TRUE(b64);
  plan::Cluster tight = dgx;
  plan::overrideDeviceMemory(tight, 380e6);
  expectWholeMatchesAutoShard(*b64, tight, mesh({8}, {0, 1, 2, 3, 4, 5, 6, 7}),
                              ShardingMode::Auto, Objective::Throughput);
}

TEST(StagePricingTest, PricingLeavesTheModuleAsItWas) {
  auto context = makeContext();
  OwningOpRef<ModuleOp> module =
      gptLayers(*context, "gpt-layer-h4096-b1.mlir", 2);
  ASSERT_TRUE(module);
  std::string before = printed(*module);
  StagePricer pricer(mainOf(*module), preset("dgx-h100x8"));
  int64_t n = pricer.numOps();
  for (auto [first, last] : {std::pair<int64_t, int64_t>{0, n},
                             {0, n / 2},
                             {n / 2, n},
                             {n / 3, 2 * n / 3}}) {
    llvm::Expected<const StagePrice &> price =
        pricer.price(first, last, mesh({4}, {0, 1, 2, 3}), ShardingMode::Auto);
    ASSERT_TRUE(!!price) << llvm::toString(price.takeError());
  }
  // A budget nothing meets goes through the memory count and the second
  // solve too.
  llvm::Expected<const StagePrice &> tiny =
      pricer.price(0, n, mesh({2}, {0, 1}), ShardingMode::Auto, 1e6);
  ASSERT_TRUE(!!tiny) << llvm::toString(tiny.takeError());
  EXPECT_EQ(printed(*module), before);
  // Unnamed constants keep their unknown locations (autoShard names them).
  EXPECT_TRUE(succeeded(verify(*module)));
}

TEST(StagePricingTest, RepeatsComeFromTheCache) {
  auto context = makeContext();
  OwningOpRef<ModuleOp> module =
      gptLayers(*context, "gpt-layer-h4096-b1.mlir", 1);
  ASSERT_TRUE(module);
  StagePricer pricer(mainOf(*module), preset("dgx-h100x8"));
  plan::Mesh m = mesh({4}, {0, 1, 2, 3});
  int64_t half = pricer.numOps() / 2;
  llvm::Expected<const StagePrice &> first =
      pricer.price(0, half, m, ShardingMode::Auto);
  ASSERT_TRUE(!!first) << llvm::toString(first.takeError());
  EXPECT_EQ(pricer.stats().hits, 0);
  EXPECT_EQ(pricer.stats().misses, 1);
  llvm::Expected<const StagePrice &> again =
      pricer.price(0, half, m, ShardingMode::Auto);
  ASSERT_TRUE(!!again);
  EXPECT_EQ(pricer.stats().hits, 1);
  EXPECT_EQ(pricer.stats().misses, 1);
  EXPECT_EQ(&*again, &*first);
  // The same ops given as a set, in any order and with a repeat, are the
  // same request.
  std::vector<Operation *> ops;
  for (int64_t i = half - 1; i >= 0; --i)
    ops.push_back(pricer.op(i));
  ops.push_back(pricer.op(0));
  llvm::Expected<const StagePrice &> asSet =
      pricer.price(ops, m, ShardingMode::Auto);
  ASSERT_TRUE(!!asSet);
  EXPECT_EQ(&*asSet, &*first);
  EXPECT_EQ(pricer.stats().hits, 2);
  // Another budget, mode or set of devices is another request.
  ASSERT_TRUE(!!pricer.price(0, half, m, ShardingMode::Auto, 50e9));
  ASSERT_TRUE(!!pricer.price(0, half, m, ShardingMode::TensorParallel));
  ASSERT_TRUE(!!pricer.price(0, half, mesh({4}, {4, 5, 6, 7}),
                             ShardingMode::Auto));
  EXPECT_EQ(pricer.stats().misses, 4);
  // Another range on a known mesh and mode reuses each op's pricing.
  StagePricer::Stats before = pricer.stats();
  llvm::Expected<const StagePrice &> whole =
      pricer.price(0, pricer.numOps(), m, ShardingMode::Auto);
  ASSERT_TRUE(!!whole);
  StagePricer::Stats after = pricer.stats();
  EXPECT_GT(after.graphs.opsReused, before.graphs.opsReused);
  EXPECT_GT(after.graphs.edgesReused, before.graphs.edgesReused);
  // An answer does not depend on what was priced before it.
  StagePricer fresh(mainOf(*module), preset("dgx-h100x8"));
  llvm::Expected<const StagePrice &> alone =
      fresh.price(0, pricer.numOps(), m, ShardingMode::Auto);
  ASSERT_TRUE(!!alone);
  EXPECT_EQ(alone->seconds, whole->seconds);
  EXPECT_EQ(alone->solution.choice, whole->solution.choice);
  EXPECT_EQ(alone->memory.peakBytes, whole->memory.peakBytes);
}

TEST(StagePricingTest, TinyBudgetIsAnAnswer) {
  auto context = makeContext();
  OwningOpRef<ModuleOp> module =
      gptLayers(*context, "gpt-layer-h4096-b64.mlir", 1);
  ASSERT_TRUE(module);
  StagePricer pricer(mainOf(*module), preset("dgx-h100x8"));
  plan::Mesh m = mesh({8}, {0, 1, 2, 3, 4, 5, 6, 7});
  llvm::Expected<const StagePrice &> roomy =
      pricer.price(0, pricer.numOps(), m, ShardingMode::Auto);
  ASSERT_TRUE(!!roomy) << llvm::toString(roomy.takeError());
  EXPECT_TRUE(roomy->fits);
  EXPECT_TRUE(roomy->whyNot.empty());
  EXPECT_EQ(roomy->budgetBytes, 80e9 /* an H100's memory */);
  llvm::Expected<const StagePrice &> tiny =
      pricer.price(0, pricer.numOps(), m, ShardingMode::Auto, 1e6);
  ASSERT_TRUE(!!tiny) << llvm::toString(tiny.takeError());
  EXPECT_FALSE(tiny->fits);
  EXPECT_NE(tiny->whyNot.find("memory budget too small"), std::string::npos)
      << tiny->whyNot;
  EXPECT_EQ(tiny->budgetBytes, 1e6);
  // What the stage needs at least: more than the budget.
  EXPECT_GT(tiny->memory.peakBytes, 1e6);
  EXPECT_TRUE(std::isfinite(tiny->seconds));
  EXPECT_EQ(tiny->ops.size(), roomy->ops.size());
  // The lit test's 120 MB: autoShard refuses it, the pricer answers.
  llvm::Expected<const StagePrice &> small =
      pricer.price(0, pricer.numOps(), m, ShardingMode::Auto, 120e6);
  ASSERT_TRUE(!!small) << llvm::toString(small.takeError());
  EXPECT_FALSE(small->fits);
}

TEST(StagePricingTest, HalvesAgainstTheWhole) {
  auto context = makeContext();
  OwningOpRef<ModuleOp> module =
      gptLayers(*context, "gpt-layer-h4096-b1.mlir", 2);
  ASSERT_TRUE(module);
  StagePricer pricer(mainOf(*module), preset("dgx-h100x8"));
  int64_t n = pricer.numOps();
  for (plan::Mesh m : {mesh({8}, {0, 1, 2, 3, 4, 5, 6, 7}),
                       mesh({2, 2}, {0, 1, 2, 3})}) {
    for (int64_t cut : {n / 4, n / 2, 3 * n / 4}) {
      SCOPED_TRACE(llvm::formatv("mesh of {0}, cut at {1} of {2}", m.size(),
                                 cut, n)
                       .str());
      // Replicated, no op communicates and each costs what it costs
      // anywhere: the halves add up to the whole.
      auto whole = pricer.price(0, n, m, ShardingMode::Replicate);
      auto first = pricer.price(0, cut, m, ShardingMode::Replicate);
      auto second = pricer.price(cut, n, m, ShardingMode::Replicate);
      ASSERT_TRUE(whole && first && second);
      EXPECT_GT(first->seconds, 0);
      EXPECT_GT(second->seconds, 0);
      EXPECT_NEAR(first->seconds + second->seconds, whole->seconds,
                  1e-12 * whole->seconds);
      // Sharded, the halves' plans together are a plan of the whole (no
      // weight is shared; between them the value goes through a whole
      // copy, which the whole plan may skip), so the whole is no slower.
      whole = pricer.price(0, n, m, ShardingMode::Auto);
      first = pricer.price(0, cut, m, ShardingMode::Auto);
      second = pricer.price(cut, n, m, ShardingMode::Auto);
      ASSERT_TRUE(whole && first && second);
      ASSERT_TRUE(whole->solution.optimal);
      EXPECT_GT(first->seconds, 0);
      EXPECT_GT(second->seconds, 0);
      EXPECT_LE(whole->seconds,
                (first->seconds + second->seconds) * (1 + 1e-9));
      // Each half does part of the whole's work: less of it than the
      // whole replicated.
      auto replicated = pricer.price(0, n, m, ShardingMode::Replicate);
      EXPECT_LT(first->seconds, replicated->seconds);
      EXPECT_LT(second->seconds, replicated->seconds);
    }
  }
}

TEST(StagePricingTest, StageScope) {
  auto context = makeContext();
  OwningOpRef<ModuleOp> module = parse(*context, kMlp);
  ASSERT_TRUE(module);
  func::FuncOp main = mainOf(*module);
  StagePricer pricer(main, preset("cpu:4"));
  // Ops 3..5: the first matmul, its bias and the relu. Their weights join
  // them; x comes in whole, the relu's result leaves whole.
  llvm::Expected<PlanScope> scope = stageScope(
      main, {pricer.op(3), pricer.op(4), pricer.op(5)});
  ASSERT_TRUE(!!scope) << llvm::toString(scope.takeError());
  ASSERT_EQ(scope->inputs.size(), 1u);
  EXPECT_EQ(scope->inputs[0], main.getArgument(0));
  std::vector<Operation *> expected = {pricer.op(0), pricer.op(1),
                                       pricer.op(3), pricer.op(4),
                                       pricer.op(5)};
  EXPECT_EQ(scope->ops, expected);
  ASSERT_EQ(scope->outputs.size(), 1u);
  EXPECT_EQ(scope->outputs[0], pricer.op(5)->getResult(0));
  // The last matmul: the relu's result comes in, w2 joins, y is returned.
  scope = stageScope(main, {pricer.op(6)});
  ASSERT_TRUE(!!scope);
  ASSERT_EQ(scope->inputs.size(), 1u);
  EXPECT_EQ(scope->inputs[0], pricer.op(5)->getResult(0));
  EXPECT_EQ(scope->ops.size(), 2u);
  ASSERT_EQ(scope->outputs.size(), 1u);
  EXPECT_EQ(scope->outputs[0], pricer.op(6)->getResult(0));
  // A weight alone used later is no output.
  scope = stageScope(main, {pricer.op(2)});
  ASSERT_TRUE(!!scope);
  EXPECT_TRUE(scope->outputs.empty());

  plan::Mesh m = mesh({2}, {0, 1});
  llvm::Expected<const StagePrice &> price =
      pricer.price(3, 6, m, ShardingMode::TensorParallel);
  ASSERT_TRUE(!!price) << llvm::toString(price.takeError());
  EXPECT_EQ(price->inputs, 1);
  EXPECT_EQ(price->outputs, 1);
  ASSERT_EQ(price->ops.size(), 5u);
  // tp: w1 split over both devices.
  EXPECT_EQ(price->ops[0].op, pricer.op(0));
  EXPECT_FALSE(price->ops[0].results[0].isReplicated());
}

TEST(StagePricingTest, BadRequestsAreErrors) {
  auto context = makeContext();
  OwningOpRef<ModuleOp> module = parse(*context, kMlp);
  ASSERT_TRUE(module);
  func::FuncOp main = mainOf(*module);
  StagePricer pricer(main, preset("cpu:4"));
  plan::Mesh m = mesh({2}, {0, 1});
  auto message = [](llvm::Expected<const StagePrice &> price) {
    return price ? std::string("no error")
                 : llvm::toString(price.takeError());
  };
  EXPECT_NE(message(pricer.price(0, 0, m, ShardingMode::Auto))
                .find("not a range"),
            std::string::npos);
  EXPECT_NE(message(pricer.price(2, pricer.numOps() + 1, m,
                                 ShardingMode::Auto))
                .find("not a range"),
            std::string::npos);
  EXPECT_NE(message(pricer.price(0, 3, mesh({2}, {0, 9}), ShardingMode::Auto)),
            "no error");
  EXPECT_NE(message(pricer.price(0, 3, mesh({3}, {0, 1}), ShardingMode::Auto)),
            "no error");
  EXPECT_NE(message(pricer.price(0, 3, m, ShardingMode::Auto, -1)),
            "no error");
  Operation *ret = main.getBody().front().getTerminator();
  EXPECT_NE(message(pricer.price({ret}, m, ShardingMode::Auto)), "no error");
  EXPECT_NE(message(pricer.price(ArrayRef<Operation *>{}, m,
                                 ShardingMode::Auto)),
            "no error");
  // Nothing was solved: every request stopped at its check.
  EXPECT_EQ(pricer.stats().misses, 0);
}

/// The ops of each copy of the longest repeated block of `func`'s compute
/// ops (weights and constants left out, as the stage planner's layers).
std::vector<std::vector<Operation *>> repeatedBlocks(func::FuncOp func) {
  std::vector<Operation *> compute;
  for (Operation &op : func.getBody().front().without_terminator())
    if (!isa<WeightOp, ConstantOp>(op))
      compute.push_back(&op);
  StageSignatures signatures;
  std::vector<uint64_t> hashes = signatures.structureHashes(compute);
  std::vector<double> cutBytes(compute.size() + 1, 1.0);
  plan::RepeatedBlocks run =
      plan::findRepeatedBlocks(hashes, cutBytes, 0, compute.size(), 4);
  std::vector<std::vector<Operation *>> blocks;
  for (int64_t k = 0; k < run.count; ++k)
    blocks.emplace_back(compute.begin() + run.first + k * run.period,
                        compute.begin() + run.first + (k + 1) * run.period);
  return blocks;
}

// Tests that runs of identical blocks share one solve, and that what they
// share is what each would get alone: the cost, memory and choice of a
// pricer without sharing, and each run's own ops in its plan. The weights
// of every layer get names and offsets of their own, which must not matter.
TEST(StagePricingTest, IdenticalBlocksArePricedOnce) {
  auto context = makeContext();
  OwningOpRef<ModuleOp> module =
      gptLayers(*context, "gpt-layer-h4096-b1.mlir", 6);
  ASSERT_TRUE(module);
  func::FuncOp main = mainOf(*module);
  int named = 0;
  main.walk([&](WeightOp weight) {
    weight.setName(llvm::formatv("w{0}", named).str());
    weight.setOffset(4096 * named++);
  });
  std::vector<std::vector<Operation *>> blocks = repeatedBlocks(main);
  ASSERT_GE(blocks.size(), 5u);

  plan::Cluster dgx = preset("dgx-h100x8");
  StagePricer shared(main, dgx);
  StagePricerOptions alone;
  alone.shareBySignature = false;
  StagePricer unshared(main, dgx, alone);
  int64_t runs = 0;
  for (const plan::Mesh &m : {mesh({4}, {0, 1, 2, 3}), mesh({2}, {4, 5})})
    for (size_t i = 0; i < blocks.size(); ++i)
      for (size_t j = i + 1; j <= blocks.size(); ++j) {
        std::vector<Operation *> ops;
        for (size_t k = i; k < j; ++k)
          ops.insert(ops.end(), blocks[k].begin(), blocks[k].end());
        llvm::Expected<const StagePrice &> one =
            shared.price(ops, m, ShardingMode::Auto);
        llvm::Expected<const StagePrice &> own =
            unshared.price(ops, m, ShardingMode::Auto);
        ASSERT_TRUE(!!one) << llvm::toString(one.takeError());
        ASSERT_TRUE(!!own) << llvm::toString(own.takeError());
        ++runs;
        EXPECT_EQ(one->fits, own->fits);
        EXPECT_EQ(one->seconds, own->seconds) << "blocks " << i << ".." << j;
        EXPECT_EQ(one->solution.choice, own->solution.choice);
        EXPECT_EQ(one->memory.peakBytes, own->memory.peakBytes);
        EXPECT_EQ(one->memory.residentBytes, own->memory.residentBytes);
        EXPECT_EQ(one->budgetTightenings, own->budgetTightenings);
        ASSERT_EQ(one->ops.size(), own->ops.size());
        for (auto [a, b] : llvm::zip(one->ops, own->ops)) {
          EXPECT_EQ(a.op, b.op);
          EXPECT_EQ(a.results, b.results);
          EXPECT_EQ(a.operands, b.operands);
          EXPECT_EQ(a.seconds, b.seconds);
        }
        llvm::Expected<StageCost> cost =
            shared.cost(ops, m, ShardingMode::Auto);
        ASSERT_TRUE(!!cost) << llvm::toString(cost.takeError());
        EXPECT_EQ(cost->seconds, own->seconds);
        EXPECT_EQ(cost->fits, own->fits);
      }
  // Middle runs of one length are one problem (the first and last blocks
  // differ: one reads the model's input, the other makes its output).
  StagePricer::Stats stats = shared.stats();
  EXPECT_EQ(unshared.stats().misses, runs);
  EXPECT_EQ(unshared.stats().shared, 0);
  EXPECT_GT(stats.shared, 0);
  EXPECT_EQ(stats.misses + stats.shared, runs);
  EXPECT_LT(stats.misses, runs / 2);
}

/// Not a check: the figures the report quotes. Prices every stage [i, j)
/// of four GPT layers cut at sixteenths on two sub-meshes, then repeats.
TEST(StagePricingTest, Benchmark) {
  auto context = makeContext();
  OwningOpRef<ModuleOp> module =
      gptLayers(*context, "gpt-layer-h4096-b1.mlir", 4);
  ASSERT_TRUE(module);
  plan::Cluster dgx = preset("dgx-h100x8");
  plan::Mesh four = mesh({4}, {0, 1, 2, 3});
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  // Twice each, the first run warming the process up.
  Planned planned;
  double coldTotal = 0, coldBuild = 0, coldSolve = 0;
  for (int run = 0; run < 2; ++run) {
    planned = autoShardCopy(*module, dgx, four, ShardingMode::Auto);
    ASSERT_TRUE(planned.ok);
    StagePricer cold(mainOf(*module), dgx);
    llvm::Expected<const StagePrice &> whole =
        cold.price(0, cold.numOps(), four, ShardingMode::Auto);
    ASSERT_TRUE(!!whole);
    EXPECT_EQ(whole->seconds, planned.report.solution.objective);
    coldTotal = whole->totalSeconds;
    coldBuild = whole->buildSeconds;
    coldSolve = whole->solution.solveSeconds;
  }

  StagePricer pricer(mainOf(*module), dgx);
  int64_t n = pricer.numOps();
  std::vector<int64_t> cuts;
  for (int k = 0; k <= 16; ++k)
    cuts.push_back(n * k / 16);
  int64_t stages = 0;
  double calls = 0, builds = 0, solves = 0, largest = 0;
  auto start = Clock::now();
  for (const plan::Mesh &m : {four, mesh({2}, {4, 5})})
    for (size_t i = 0; i < cuts.size(); ++i)
      for (size_t j = i + 1; j < cuts.size(); ++j) {
        auto call = Clock::now();
        llvm::Expected<const StagePrice &> price =
            pricer.price(cuts[i], cuts[j], m, ShardingMode::Auto);
        double seconds = since(call);
        ASSERT_TRUE(!!price) << llvm::toString(price.takeError());
        ++stages;
        calls += seconds;
        builds += price->buildSeconds;
        solves += price->solution.solveSeconds;
        largest = std::max(largest, seconds);
      }
  double sweep = since(start);
  EXPECT_EQ(pricer.stats().misses, stages);

  constexpr int kRepeats = 200000;
  start = Clock::now();
  double sum = 0;
  for (int r = 0; r < kRepeats; ++r) {
    size_t i = r % (cuts.size() - 1);
    llvm::Expected<const StagePrice &> price =
        pricer.price(cuts[i], cuts.back(), four, ShardingMode::Auto);
    sum += price->seconds;
  }
  double hit = since(start) / kRepeats;
  EXPECT_GT(sum, 0);

  StagePricer::Stats stats = pricer.stats();
  std::printf(
      "[ bench    ] 4 GPT layers (h4096, b1, f16), %lld ops, dgx-h100x8\n"
      "[ bench    ] autoShard of the whole on mesh [4]: %.3f ms (graph "
      "%.3f ms, solve %.3f ms)\n"
      "[ bench    ] pricer, the whole on mesh [4], cold caches: %.3f ms "
      "(graph %.3f ms, solve %.3f ms)\n"
      "[ bench    ] pricer, %lld new stages on meshes [4] and [2], op caches "
      "warm: %.3f ms each on average (graph %.3f ms, solve %.3f ms), "
      "largest %.3f ms, %.3f s in all\n"
      "[ bench    ] pricer, a repeated request: %.3f us (%d repeats)\n"
      "[ bench    ] hits %lld, misses %lld; ops priced %lld, reused %lld; "
      "edges priced %lld, reused %lld\n",
      static_cast<long long>(n), planned.seconds * 1e3,
      planned.report.buildSeconds * 1e3,
      planned.report.solution.solveSeconds * 1e3, coldTotal * 1e3,
      coldBuild * 1e3, coldSolve * 1e3, static_cast<long long>(stages),
      calls / stages * 1e3, builds / stages * 1e3, solves / stages * 1e3,
      largest * 1e3, sweep, hit * 1e6, kRepeats,
      static_cast<long long>(stats.hits), static_cast<long long>(stats.misses),
      static_cast<long long>(stats.graphs.opsPriced),
      static_cast<long long>(stats.graphs.opsReused),
      static_cast<long long>(stats.graphs.edgesPriced),
      static_cast<long long>(stats.graphs.edgesReused));
}

} // namespace
