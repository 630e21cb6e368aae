//===- EinsumTest.cpp - weft_rt_cpu_einsum against a full index loop ------===//
//
// Transposes, traces, diagonals, sums, contractions, batch products and
// outer products, written as equations and checked by summing over every
// index combination.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

#include <map>

using namespace weft::rt::test;

namespace {
/// An explicit equation such as "bij,bjk->bik" with a size per letter.
struct Equation {
  std::vector<std::string> inputs;
  std::string output;
  std::map<char, int64_t> sizes;

  Equation(const std::string &text, std::map<char, int64_t> sizes)
      : sizes(std::move(sizes)) {
    size_t arrow = text.find("->");
    output = text.substr(arrow + 2);
    std::string left = text.substr(0, arrow);
    size_t comma = left.find(',');
    inputs.push_back(left.substr(0, comma));
    if (comma != std::string::npos)
      inputs.push_back(left.substr(comma + 1));
  }
  int64_t letterIndex(char c) const {
    return std::distance(sizes.begin(), sizes.find(c));
  }
  std::vector<int64_t> dims(const std::string &term) const {
    std::vector<int64_t> result;
    for (char c : term)
      result.push_back(sizes.at(c));
    return result;
  }
  Params params(weft_rt_dtype dtype) const {
    Params p;
    p.add({dtype, static_cast<int64_t>(sizes.size())});
    for (auto &[letter, size] : sizes)
      p.add(size);
    p.add(static_cast<int64_t>(output.size()));
    for (char c : output)
      p.add(letterIndex(c));
    p.add(static_cast<int64_t>(inputs.size()));
    for (const std::string &term : inputs) {
      p.add(static_cast<int64_t>(term.size()));
      for (char c : term)
        p.add(letterIndex(c));
    }
    return p;
  }
};

class EinsumTest : public KernelTest {
protected:
  template <typename T> void check(weft_rt_dtype dtype, const Equation &e) {
    bool isFloat = std::is_floating_point_v<T>;
    std::vector<std::vector<T>> operands;
    for (size_t i = 0; i < e.inputs.size(); ++i)
      operands.push_back(randomValues<T>(product(e.dims(e.inputs[i])), 101 + i,
                                         isFloat ? -1 : -5, isFloat ? 1 : 5));
    std::vector<int64_t> all;
    for (auto &[letter, size] : e.sizes)
      all.push_back(size);
    std::vector<double> expected(product(e.dims(e.output)), 0.0);
    for (int64_t combo = 0; combo < product(all); ++combo) {
      auto value = unravel(combo, all);
      auto offsetIn = [&](const std::string &term) {
        int64_t offset = 0;
        for (char c : term)
          offset = offset * e.sizes.at(c) + value[e.letterIndex(c)];
        return offset;
      };
      double term = 1;
      for (size_t i = 0; i < e.inputs.size(); ++i)
        term *= operands[i][offsetIn(e.inputs[i])];
      expected[offsetIn(e.output)] += term;
    }
    std::vector<T> out(expected.size(), T(9));
    Params p = e.params(dtype);
    ASSERT_EQ(
        weft_rt_cpu_einsum(ctx, p.data(), operands[0].data(),
                           operands.size() > 1 ? operands[1].data() : nullptr,
                           out.data()),
        WEFT_RT_OK)
        << error();
    EXPECT_TRUE(allClose(out, expected, 1e-5, 1e-5))
        << e.inputs[0] << "->" << e.output;
  }
};
} // namespace

// Tests one-operand equations: transpose, trace, diagonal and sums.
TEST_P(EinsumTest, OneOperand) {
  check<float>(WEFT_RT_F32, {"ij->ji", {{'i', 3}, {'j', 5}}});
  check<float>(WEFT_RT_F32, {"ii->", {{'i', 4}}});
  check<double>(WEFT_RT_F64, {"ii->i", {{'i', 4}}});
  check<float>(WEFT_RT_F32, {"ij->", {{'i', 3}, {'j', 5}}});
  check<int64_t>(WEFT_RT_I64, {"ijk->ki", {{'i', 2}, {'j', 3}, {'k', 4}}});
  check<int32_t>(WEFT_RT_I32, {"iij->j", {{'i', 3}, {'j', 2}}});
}

// Tests contractions: matrix product, batch product, dot and outer
// products.
TEST_P(EinsumTest, Contractions) {
  check<float>(WEFT_RT_F32, {"ij,jk->ik", {{'i', 4}, {'j', 5}, {'k', 3}}});
  check<float>(WEFT_RT_F32,
               {"bij,bjk->bik", {{'b', 3}, {'i', 4}, {'j', 5}, {'k', 6}}});
  check<double>(WEFT_RT_F64,
                {"bij,bkj->kbi", {{'b', 2}, {'i', 3}, {'j', 4}, {'k', 5}}});
  check<float>(WEFT_RT_F32, {"i,i->", {{'i', 7}}});
  check<float>(WEFT_RT_F32, {"i,j->ij", {{'i', 3}, {'j', 4}}});
  check<int32_t>(WEFT_RT_I32, {"ij,jk->ki", {{'i', 4}, {'j', 5}, {'k', 3}}});
  check<int64_t>(WEFT_RT_I64,
                 {"bij,bjk->bik", {{'b', 2}, {'i', 3}, {'j', 4}, {'k', 2}}});
}

// Tests indices summed in one operand only and a diagonal in the second.
TEST_P(EinsumTest, PrivateIndices) {
  check<float>(WEFT_RT_F32, {"ij,jk->k", {{'i', 4}, {'j', 5}, {'k', 3}}});
  check<float>(WEFT_RT_F32, {"ij,jj->i", {{'i', 4}, {'j', 3}}});
  check<double>(WEFT_RT_F64,
                {"abc,cd->ad", {{'a', 2}, {'b', 3}, {'c', 4}, {'d', 5}}});
}

// Tests a contraction large enough for threads, and an empty index.
TEST_P(EinsumTest, SizesAtTheEdges) {
  check<float>(WEFT_RT_F32,
               {"bhqd,bhkd->bhqk",
                {{'b', 1}, {'h', 2}, {'q', 64}, {'k', 64}, {'d', 32}}});
  check<float>(WEFT_RT_F32, {"ij,jk->ik", {{'i', 3}, {'j', 0}, {'k', 2}}});
}

// Tests that malformed equations fail with a message.
TEST_P(EinsumTest, Errors) {
  std::vector<float> x(64), out(64);
  Params three;
  three.add({WEFT_RT_F32, 1, 4, 1, 0, 3, 1, 0, 1, 0, 1, 0});
  EXPECT_EQ(
      weft_rt_cpu_einsum(ctx, three.data(), x.data(), x.data(), out.data()),
      WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("3 inputs"), std::string::npos);
  Params repeatedOut;
  repeatedOut.add({WEFT_RT_F32, 1, 4, 2, 0, 0, 1, 1, 0});
  EXPECT_EQ(weft_rt_cpu_einsum(ctx, repeatedOut.data(), x.data(), nullptr,
                               out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  Params badIndex;
  badIndex.add({WEFT_RT_F32, 1, 4, 1, 0, 1, 1, 3});
  EXPECT_EQ(
      weft_rt_cpu_einsum(ctx, badIndex.data(), x.data(), nullptr, out.data()),
      WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("names index 3 of 1"), std::string::npos);
  Params orphan;
  orphan.add({WEFT_RT_F32, 2, 4, 4, 1, 1, 1, 1, 0});
  EXPECT_EQ(
      weft_rt_cpu_einsum(ctx, orphan.data(), x.data(), nullptr, out.data()),
      WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("appears in no input"), std::string::npos);
  Params bytes;
  bytes.add({WEFT_RT_U8, 1, 4, 1, 0, 1, 1, 0});
  EXPECT_EQ(
      weft_rt_cpu_einsum(ctx, bytes.data(), x.data(), nullptr, out.data()),
      WEFT_RT_UNSUPPORTED);
  Params missing;
  missing.add({WEFT_RT_F32, 1, 4, 1, 0, 2, 1, 0, 1, 0});
  EXPECT_EQ(
      weft_rt_cpu_einsum(ctx, missing.data(), x.data(), nullptr, out.data()),
      WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("in1 is NULL"), std::string::npos);
}

WEFT_KERNEL_TEST_THREADS(EinsumTest);
