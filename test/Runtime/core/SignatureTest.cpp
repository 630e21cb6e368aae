//===- SignatureTest.cpp - Tests of signature parsing ---------------------===//
//
// The signature text is the program's description of itself; these tests
// check that good ones parse and that each kind of malformed one is refused
// with a message naming the line.
//
//===----------------------------------------------------------------------===//

#include "Signature.h"

#include <gtest/gtest.h>

using namespace weft::rt;

namespace {

const char *kGood = "weft-program 1\n"
                    "arena 320\n"
                    "weights 128\n"
                    "input x 1 2 2 3 0\n"
                    "input my%20ids i64 1 4 64\n"
                    "output y f32 2 2 3 128\n"
                    "output empty bool 2 0 5 192\n"
                    "output scalar f64 0 192\n"
                    "op 1 Add add%25\n"
                    "op 0 MatMul mm\n";

TEST(SignatureTest, ParsesEveryRecord) {
  ProgramSignature sig;
  std::string error;
  ASSERT_TRUE(parseSignature(kGood, sig, error)) << error;
  EXPECT_EQ(sig.abiVersion, 1);
  EXPECT_EQ(sig.arenaBytes, 320);
  EXPECT_EQ(sig.weightsBytes, 128);
  ASSERT_EQ(sig.inputs.size(), 2u);
  EXPECT_EQ(sig.inputs[0].name, "x");
  EXPECT_EQ(sig.inputs[0].dtype, WEFT_RT_F32);
  EXPECT_EQ(sig.inputs[0].dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(sig.inputs[0].bytes, 24u);
  EXPECT_EQ(sig.inputs[1].name, "my ids");
  EXPECT_EQ(sig.inputs[1].dtype, WEFT_RT_I64);
  EXPECT_EQ(sig.inputs[1].offset, 64);
  ASSERT_EQ(sig.outputs.size(), 3u);
  EXPECT_EQ(sig.outputs[1].numElements, 0);
  EXPECT_EQ(sig.outputs[1].bytes, 0u);
  EXPECT_TRUE(sig.outputs[2].dims.empty());
  EXPECT_EQ(sig.outputs[2].numElements, 1);
  EXPECT_EQ(sig.outputs[2].bytes, 8u);
  ASSERT_EQ(sig.ops.size(), 2u);
  EXPECT_EQ(sig.ops[0].kind, "MatMul");
  EXPECT_EQ(sig.ops[1].name, "add%");
}

TEST(SignatureTest, ReadsTheTarget) {
  ProgramSignature sig;
  std::string error;
  ASSERT_TRUE(parseSignature("weft-program 1\narena 0\nweights 0\n", sig,
                             error))
      << error;
  EXPECT_EQ(sig.target, "cpu");
  EXPECT_TRUE(sig.gpuArchitectures.empty());
  ASSERT_TRUE(parseSignature("weft-program 1\narena 0\nweights 0\n"
                             "target cuda sm_80 sm_90\n",
                             sig, error))
      << error;
  EXPECT_EQ(sig.target, "cuda");
  EXPECT_EQ(sig.gpuArchitectures, (std::vector<int>{80, 90}));
}

TEST(SignatureTest, ReadsTheCollectorAndMicrobatches) {
  ProgramSignature sig;
  std::string error;
  ASSERT_TRUE(parseSignature("weft-program 1\narena 128\nweights 0\n"
                             "pipeline 3 1\ncollector 2\nmicrobatches 4\n"
                             "input x f32 2 2 3 0\noutput y f32 1 2 64\n",
                             sig, error))
      << error;
  EXPECT_EQ(sig.collectorRank, 2);
  EXPECT_EQ(sig.microbatches, 4);
  EXPECT_EQ(sig.inputs[0].dims, (std::vector<int64_t>{2, 3}));
  // The driver's view: whole batches.
  ASSERT_TRUE(scaleToBatch(sig, error)) << error;
  EXPECT_EQ(sig.inputs[0].dims, (std::vector<int64_t>{8, 3}));
  EXPECT_EQ(sig.inputs[0].bytes, 96u);
  EXPECT_EQ(sig.outputs[0].dims, (std::vector<int64_t>{8}));
  EXPECT_EQ(sig.inputs[0].offset, 0);

  ASSERT_TRUE(parseSignature("weft-program 1\narena 0\nweights 0\n", sig,
                             error));
  EXPECT_EQ(sig.collectorRank, 0);
  EXPECT_EQ(sig.microbatches, 1);
}

TEST(SignatureTest, RefusesABadCollectorOrMicrobatchCount) {
  struct Case {
    const char *records;
    const char *message;
  } cases[] = {
      {"collector 3\n", "the collector is world rank 3, but the job has 1"},
      {"collector -1\n", "expected 'collector <world rank>'"},
      {"collector 0\ncollector 0\n", "second 'collector' record"},
      {"microbatches 0\n", "expected 'microbatches <count>'"},
      {"microbatches 2\nmicrobatches 2\n", "second 'microbatches' record"},
      {"microbatches 2\noutput s f32 0 0\n",
       "'s' is a scalar, but a program of microbatches"},
  };
  for (const Case &c : cases) {
    ProgramSignature sig;
    std::string error;
    std::string text =
        std::string("weft-program 1\narena 64\nweights 0\n") + c.records;
    EXPECT_FALSE(parseSignature(text.c_str(), sig, error)) << c.records;
    EXPECT_NE(error.find(c.message), std::string::npos)
        << "expected '" << c.message << "' in: " << error;
  }
}

TEST(SignatureTest, AcceptsMinimalProgram) {
  ProgramSignature sig;
  std::string error;
  EXPECT_TRUE(parseSignature("weft-program 1\narena 0\nweights 0", sig, error))
      << error;
}

TEST(SignatureTest, UnescapesNames) {
  std::string out;
  EXPECT_TRUE(unescapeSignatureName("a%20b%25c%7F", out));
  EXPECT_EQ(out, std::string("a b%c\x7f"));
  EXPECT_FALSE(unescapeSignatureName("a%2", out));
  EXPECT_FALSE(unescapeSignatureName("a%zz", out));
  EXPECT_FALSE(unescapeSignatureName("%", out));
}

TEST(SignatureTest, DTypeFields) {
  EXPECT_EQ(parseDTypeField("1"), WEFT_RT_F32);
  EXPECT_EQ(parseDTypeField("16"), WEFT_RT_BF16);
  EXPECT_EQ(parseDTypeField("bool"), WEFT_RT_BOOL);
  EXPECT_EQ(parseDTypeField("8"), 0); // STRING
  EXPECT_EQ(parseDTypeField("f128"), 0);
  EXPECT_EQ(parseDTypeField("-1"), 0);
  EXPECT_EQ(parseDTypeField("99999999999"), 0);
}

TEST(SignatureTest, CountsElementsWithoutOverflow) {
  int64_t count = 0;
  size_t bytes = 0;
  EXPECT_TRUE(countElements({2, 3}, 4, count, bytes));
  EXPECT_EQ(count, 6);
  EXPECT_EQ(bytes, 24u);
  EXPECT_TRUE(countElements({}, 8, count, bytes));
  EXPECT_EQ(count, 1);
  EXPECT_FALSE(countElements({1LL << 40, 1LL << 40}, 1, count, bytes));
  EXPECT_FALSE(countElements({1LL << 62}, 4, count, bytes));
  EXPECT_FALSE(countElements({-1, 3}, 4, count, bytes));
  // Zero elements, but the other dims still overflow: malformed.
  EXPECT_FALSE(countElements({0, 1LL << 40, 1LL << 40}, 4, count, bytes));
  EXPECT_TRUE(countElements({0, 1LL << 40}, 4, count, bytes));
  EXPECT_EQ(count, 0);
}

struct Malformed {
  const char *text;
  const char *message;
};

class MalformedSignatureTest : public testing::TestWithParam<Malformed> {};

TEST_P(MalformedSignatureTest, IsRefusedWithReason) {
  ProgramSignature sig;
  std::string error;
  EXPECT_FALSE(parseSignature(GetParam().text, sig, error));
  EXPECT_NE(error.find(GetParam().message), std::string::npos)
      << "message: " << error;
}

#define HEAD "weft-program 1\narena 256\nweights 0\n"

INSTANTIATE_TEST_SUITE_P(
    Cases, MalformedSignatureTest,
    testing::Values(
        Malformed{"", "empty signature"},
        Malformed{"arena 64\n", "line 1: the first record must be"},
        Malformed{"weft-program 2\narena 0\nweights 0\n",
                  "line 1: the program was compiled for runtime ABI "
                  "version 2"},
        Malformed{"weft-program x\n", "line 1: expected 'weft-program"},
        Malformed{"weft-program 1\nweights 0\n", "no 'arena <bytes>' record"},
        Malformed{"weft-program 1\narena 0\n", "no 'weights <bytes>' record"},
        Malformed{"weft-program 1\narena 100\nweights 0\n",
                  "line 2: arena size 100 is not a multiple of 64"},
        Malformed{"weft-program 1\narena -64\nweights 0\n",
                  "line 2: expected 'arena <bytes>'"},
        Malformed{"weft-program 1\narena 0\narena 0\n",
                  "line 3: second 'arena' record"},
        Malformed{HEAD "input x f32 2 2 3",
                  "line 4: input of rank 2 needs 7 fields, found 6"},
        Malformed{HEAD "input x f32 1 3 0 extra",
                  "line 4: input of rank 1 needs 6 fields, found 7"},
        Malformed{HEAD "input x f32 -1 0", "rank -1 is not between"},
        Malformed{HEAD "input x f32 65 0", "rank 65 is not between"},
        Malformed{HEAD "input x f33 1 3 0",
                  "line 4: input 'x' has unknown dtype 'f33'"},
        Malformed{HEAD "input x 8 1 3 0", "unknown dtype '8'"},
        Malformed{HEAD "input x f32 1 -3 0", "dim 0 is '-3', not an integer"},
        Malformed{HEAD "target tpu", "line 4: unknown target 'tpu'"},
        Malformed{HEAD "target cuda", "'target cuda' needs at least one"},
        Malformed{HEAD "target cuda 90",
                  "GPU architecture '90' is not sm_<compute capability>"},
        Malformed{HEAD "target cuda sm_9", "GPU architecture 'sm_9' is not"},
        Malformed{HEAD "target cpu sm_80", "'target cpu' takes no"},
        Malformed{HEAD "target cpu\ntarget cpu", "second 'target' record"},
        Malformed{HEAD "input x f32 1 3x 0", "dim 0 is '3x'"},
        Malformed{HEAD "input x f32 2 4294967296 4294967296 0",
                  "more bytes than fit in 64 bits"},
        Malformed{HEAD "input x f32 1 3 32", "offset 32 is not 64-byte"},
        Malformed{HEAD "input x f32 1 3 -64", "offset '-64' is not"},
        Malformed{HEAD "input x f32 1 100 0",
                  "input 'x' (f32[100], 400 bytes at offset 0) does not fit "
                  "in the 256-byte arena"},
        Malformed{HEAD "input x f32 1 3 256", "does not fit"},
        Malformed{HEAD "input x f32 1 20 0\noutput y f32 1 3 64",
                  "output 'y' at offset 64 overlaps input 'x'"},
        Malformed{HEAD "input x f32 1 60 0\ninput z f32 1 1 128\n"
                       "output y f32 1 1 192",
                  "overlaps input 'x'"},
        Malformed{HEAD "input x f32 1 3 0\ninput x f32 1 3 64",
                  "line 5: two inputs named 'x'"},
        Malformed{HEAD "input x%2 f32 1 3 0", "malformed %XX escape"},
        Malformed{HEAD "input x  f32 1 3 0", "empty field"},
        Malformed{HEAD "input x\tz f32 1 3 0", "control or non-ASCII byte"},
        Malformed{HEAD "tensor x", "line 4: unknown record 'tensor'"},
        Malformed{HEAD "op 0 Add", "expected 'op <id> <kind> <name>'"},
        Malformed{HEAD "op -1 Add a", "op id -1 is negative"},
        Malformed{HEAD "op 0 Add a\nop 0 Mul b", "op id 0 given twice"},
        Malformed{HEAD "op 0 Add a\nop 2 Mul b",
                  "op id 2 is not below the op count 2"},
        Malformed{"weft-program 1\nweft-program 1\n",
                  "line 2: 'weft-program' must be the first record"}));

} // namespace
