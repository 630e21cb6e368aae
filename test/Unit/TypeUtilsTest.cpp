//===- TypeUtilsTest.cpp - Tests of the weft shape helpers -----------------===//
//
// Broadcasting, axis normalization and type compatibility, as used by the
// type inference of every weft op.
//
//===----------------------------------------------------------------------===//

#include "weft/WeftTypeUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::weft;

static constexpr int64_t kDyn = ShapedType::kDynamic;

namespace {

TEST(BroadcastShapes, NumpyRules) {
  SmallVector<int64_t> a = {2, 1, 4}, b = {3, 1};
  auto out = broadcastShapes({a, b}, std::nullopt);
  ASSERT_TRUE(succeeded(out));
  EXPECT_EQ(*out, (SmallVector<int64_t>{2, 3, 4}));
}

TEST(BroadcastShapes, ScalarAndEmpty) {
  SmallVector<int64_t> scalar = {}, v = {0, 5};
  auto out = broadcastShapes({scalar, v}, std::nullopt);
  ASSERT_TRUE(succeeded(out));
  EXPECT_EQ(*out, (SmallVector<int64_t>{0, 5}));
}

TEST(BroadcastShapes, DynamicDimensions) {
  // A dynamic size against 1 stays dynamic; against 7 it must be 1 or 7, so
  // the result is 7.
  SmallVector<int64_t> a = {kDyn, kDyn}, b = {1, 7};
  auto out = broadcastShapes({a, b}, std::nullopt);
  ASSERT_TRUE(succeeded(out));
  EXPECT_EQ(*out, (SmallVector<int64_t>{kDyn, 7}));
}

TEST(BroadcastShapes, Mismatch) {
  SmallVector<int64_t> a = {2, 3}, b = {4, 3};
  EXPECT_TRUE(failed(broadcastShapes({a, b}, std::nullopt)));
}

TEST(NormalizeAxis, NegativeAndOutOfRange) {
  EXPECT_EQ(*normalizeAxis(-1, 4, std::nullopt), 3);
  EXPECT_EQ(*normalizeAxis(2, 4, std::nullopt), 2);
  EXPECT_TRUE(failed(normalizeAxis(4, 4, std::nullopt)));
  EXPECT_TRUE(failed(normalizeAxis(-5, 4, std::nullopt)));
}

TEST(NormalizeAxes, RejectsDuplicates) {
  SmallVector<int64_t> axes = {1, -3};
  EXPECT_TRUE(failed(normalizeAxes(axes, 4, std::nullopt)));
  SmallVector<int64_t> ok = {-1, 0};
  EXPECT_EQ(*normalizeAxes(ok, 4, std::nullopt),
            (SmallVector<int64_t>{3, 0}));
}

TEST(FormatShape, Readable) {
  EXPECT_EQ(formatShape({2, kDyn, 4}), "2x?x4");
  EXPECT_EQ(formatShape({}), "scalar");
}

TEST(CompatibleTypes, DynamicMatchesStatic) {
  MLIRContext context;
  Builder b(&context);
  auto dyn = RankedTensorType::get({kDyn, 4}, b.getF32Type());
  auto stat = RankedTensorType::get({3, 4}, b.getF32Type());
  auto other = RankedTensorType::get({3, 5}, b.getF32Type());
  auto ints = RankedTensorType::get({3, 4}, b.getI64Type());
  EXPECT_TRUE(areCompatibleTensorTypes(TypeRange{stat}, TypeRange{dyn}));
  EXPECT_FALSE(areCompatibleTensorTypes(TypeRange{stat}, TypeRange{other}));
  EXPECT_FALSE(areCompatibleTensorTypes(TypeRange{stat}, TypeRange{ints}));
  EXPECT_EQ(joinShapes(dyn.getShape(), stat.getShape()),
            (SmallVector<int64_t>{3, 4}));
}

} // namespace
