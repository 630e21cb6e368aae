//===- ModelTest.cpp - Tests of models: creation, runs, profiles ----------===//
//
// Models over small hand-written programs: the arena and weights a program
// receives, the statuses and messages of every failure, and the Chrome
// trace of a profiled run.
//
//===----------------------------------------------------------------------===//

#include "Model.h"
#include "Context.h"
#include "TestFiles.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace weft::rt;
using weft::rt::test::ScratchDir;

namespace {

/// out[i] = in[i] + w[i] over 4 floats; in at 0, out at 64, weights 16
/// bytes.
const char kAddSignature[] = "weft-program 1\n"
                             "arena 128\n"
                             "weights 16\n"
                             "input in 1 1 4 0\n"
                             "output out f32 1 4 64\n"
                             "op 0 Add add%22quoted%22\n"
                             "op 1 Relu %C3%A9t%FF\n";

/// What the last run saw, for checking the descriptors.
weft_rt_byte_buffer lastArena, lastWeights;

int32_t runAdd(weft_rt_context *ctx, weft_rt_byte_buffer *arena,
               weft_rt_byte_buffer *weights) {
  lastArena = *arena;
  lastWeights = *weights;
  weft_rt_op_begin(ctx, 0);
  const float *in = reinterpret_cast<const float *>(arena->aligned);
  const float *w = reinterpret_cast<const float *>(weights->aligned);
  float *out = reinterpret_cast<float *>(arena->aligned + 64);
  for (int i = 0; i < 4; ++i)
    out[i] = in[i] + w[i];
  weft_rt_op_end(ctx, 0);
  weft_rt_op_begin(ctx, 1);
  weft_rt_op_end(ctx, 1);
  // Changing the descriptor must not affect the next run.
  arena->aligned = nullptr;
  return WEFT_RT_OK;
}

const weft_rt_program kAddProgram = {kAddSignature, runAdd};

class ModelTest : public testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(weft_rt_context_create(&ctx), WEFT_RT_OK);
    float w[4] = {10, 20, 30, 40};
    weightsPath = scratch.write(
        "w.bin", std::vector<uint8_t>(reinterpret_cast<uint8_t *>(w),
                                      reinterpret_cast<uint8_t *>(w) + 16));
  }
  void TearDown() override {
    weft_rt_model_destroy(model);
    weft_rt_context_destroy(ctx);
  }
  std::string error() const { return weft_rt_context_error(ctx); }

  ScratchDir scratch;
  std::string weightsPath;
  weft_rt_context *ctx = nullptr;
  weft_rt_model *model = nullptr;
};

TEST_F(ModelTest, RunsTheProgram) {
  ASSERT_EQ(
      weft_rt_model_create(ctx, &kAddProgram, weightsPath.c_str(), &model),
      WEFT_RT_OK)
      << error();
  ASSERT_EQ(weft_rt_model_num_inputs(model), 1);
  ASSERT_EQ(weft_rt_model_num_outputs(model), 1);
  weft_rt_tensor_info info;
  ASSERT_EQ(weft_rt_model_input_info(model, 0, &info), WEFT_RT_OK);
  EXPECT_STREQ(info.name, "in");
  EXPECT_EQ(info.dtype, WEFT_RT_F32);
  ASSERT_EQ(info.rank, 1);
  EXPECT_EQ(info.dims[0], 4);
  EXPECT_EQ(info.bytes, 16u);
  ASSERT_EQ(weft_rt_model_output_info(model, 0, &info), WEFT_RT_OK);
  EXPECT_STREQ(info.name, "out");

  float *in = static_cast<float *>(weft_rt_model_input_data(model, 0));
  ASSERT_NE(in, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(in) % 64, 0u);
  // The arena starts zeroed.
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(reinterpret_cast<const float *>(in)[i], 0.0f);
  for (int i = 0; i < 4; ++i)
    in[i] = static_cast<float>(i);
  for (int run = 0; run < 2; ++run)
    ASSERT_EQ(weft_rt_model_run(model), WEFT_RT_OK) << error();
  const float *out =
      static_cast<const float *>(weft_rt_model_output_data(model, 0));
  EXPECT_EQ(out[0], 10.0f);
  EXPECT_EQ(out[3], 43.0f);
  EXPECT_EQ(lastArena.sizes[0], 128);
  EXPECT_EQ(lastArena.strides[0], 1);
  EXPECT_EQ(lastArena.offset, 0);
  EXPECT_EQ(lastWeights.sizes[0], 16);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(lastWeights.aligned) % 64, 0u);
}

TEST_F(ModelTest, RefusesIndicesOutOfRange) {
  ASSERT_EQ(
      weft_rt_model_create(ctx, &kAddProgram, weightsPath.c_str(), &model),
      WEFT_RT_OK);
  weft_rt_tensor_info info;
  EXPECT_EQ(weft_rt_model_input_info(model, 1, &info),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "input index 1 is out of range (the model has 1)");
  EXPECT_EQ(weft_rt_model_output_info(model, -1, &info),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_EQ(weft_rt_model_output_info(model, 0, nullptr),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_EQ(weft_rt_model_input_data(model, 1), nullptr);
  EXPECT_EQ(weft_rt_model_output_data(model, 5), nullptr);
}

TEST_F(ModelTest, ChecksTheWeightsFile) {
  std::string shortFile = scratch.write("short.bin", std::string(12, '\0'));
  EXPECT_EQ(weft_rt_model_create(ctx, &kAddProgram, shortFile.c_str(), &model),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_EQ(model, nullptr);
  EXPECT_NE(error().find("short.bin' has 12 bytes; the program was compiled "
                         "with 16 bytes of weights"),
            std::string::npos)
      << error();
  std::string missing = scratch.dir + "/missing.bin";
  EXPECT_EQ(weft_rt_model_create(ctx, &kAddProgram, missing.c_str(), &model),
            WEFT_RT_IO_ERROR);
  EXPECT_NE(error().find("cannot open weights file"), std::string::npos);
  EXPECT_EQ(
      weft_rt_model_create(ctx, &kAddProgram, scratch.dir.c_str(), &model),
      WEFT_RT_IO_ERROR);
  EXPECT_NE(error().find("is not a regular file"), std::string::npos);
  EXPECT_EQ(weft_rt_model_create(ctx, &kAddProgram, nullptr, &model),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("needs a 16-byte weights file"), std::string::npos);
}

int32_t runNothing(weft_rt_context *, weft_rt_byte_buffer *arena,
                   weft_rt_byte_buffer *weights) {
  return arena->aligned && weights->aligned ? WEFT_RT_OK : WEFT_RT_INTERNAL;
}

TEST_F(ModelTest, ProgramsWithoutWeightsNeedNoFile) {
  weft_rt_program program = {"weft-program 1\narena 0\nweights 0\n",
                             runNothing};
  ASSERT_EQ(weft_rt_model_create(ctx, &program, nullptr, &model), WEFT_RT_OK)
      << error();
  EXPECT_EQ(weft_rt_model_run(model), WEFT_RT_OK) << error();
  weft_rt_model_destroy(model);
  model = nullptr;
  // An empty file is the same; a non-empty one is someone else's weights.
  std::string empty = scratch.write("empty.bin", std::string());
  ASSERT_EQ(weft_rt_model_create(ctx, &program, empty.c_str(), &model),
            WEFT_RT_OK)
      << error();
  weft_rt_model_destroy(model);
  model = nullptr;
  EXPECT_EQ(weft_rt_model_create(ctx, &program, weightsPath.c_str(), &model),
            WEFT_RT_INVALID_ARGUMENT);
}

TEST_F(ModelTest, RefusesBadPrograms) {
  weft_rt_program broken = {"weft-program 1\narena 64\nweights 0\n"
                            "input x f32 1 32 0\n",
                            runNothing};
  EXPECT_EQ(weft_rt_model_create(ctx, &broken, nullptr, &model),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("does not fit in the 64-byte arena"),
            std::string::npos)
      << error();
  weft_rt_program noRun = {kAddSignature, nullptr};
  EXPECT_EQ(weft_rt_model_create(ctx, &noRun, nullptr, &model),
            WEFT_RT_INVALID_ARGUMENT);
  weft_rt_program noText = {nullptr, runNothing};
  EXPECT_EQ(weft_rt_model_create(ctx, &noText, nullptr, &model),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("no signature text"), std::string::npos);
  EXPECT_EQ(weft_rt_model_create(ctx, &kAddProgram, nullptr, nullptr),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_EQ(weft_rt_model_create(nullptr, &kAddProgram, nullptr, &model),
            WEFT_RT_INVALID_ARGUMENT);
}

// A GPU program needs the CUDA backend, which this test's runtime (the
// core and CPU runtime alone) does not install: a clear refusal.
TEST_F(ModelTest, RefusesGpuProgramsWithoutCudaBackend) {
  weft_rt_program gpu = {"weft-program 1\narena 0\nweights 0\n"
                         "target cuda sm_90\n",
                         runNothing};
  EXPECT_EQ(weft_rt_model_create(ctx, &gpu, nullptr, &model),
            WEFT_RT_UNSUPPORTED);
  EXPECT_EQ(model, nullptr);
  EXPECT_NE(error().find("compiled for CUDA GPUs (--target=cuda), but this "
                         "executable's runtime has no CUDA backend"),
            std::string::npos)
      << error();
}

int32_t failWithMessage(weft_rt_context *ctx, weft_rt_byte_buffer *,
                        weft_rt_byte_buffer *) {
  return weft_rt_fail(ctx, WEFT_RT_UNSUPPORTED, "no kernel for %s", "f16");
}
int32_t failSilently(weft_rt_context *, weft_rt_byte_buffer *,
                     weft_rt_byte_buffer *) {
  return WEFT_RT_INVALID_ARGUMENT;
}
int32_t failStrangely(weft_rt_context *, weft_rt_byte_buffer *,
                      weft_rt_byte_buffer *) {
  return 42;
}

TEST_F(ModelTest, PassesRunFailuresOn) {
  const char *sig = "weft-program 1\narena 0\nweights 0\n";
  weft_rt_program withMessage = {sig, failWithMessage};
  ASSERT_EQ(weft_rt_model_create(ctx, &withMessage, nullptr, &model),
            WEFT_RT_OK);
  EXPECT_EQ(weft_rt_model_run(model), WEFT_RT_UNSUPPORTED);
  EXPECT_EQ(error(), "no kernel for f16");
  weft_rt_model_destroy(model);

  weft_rt_program silent = {sig, failSilently};
  ASSERT_EQ(weft_rt_model_create(ctx, &silent, nullptr, &model), WEFT_RT_OK);
  EXPECT_EQ(weft_rt_model_run(model), WEFT_RT_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "the program failed with status 1 and no message");
  weft_rt_model_destroy(model);

  weft_rt_program strange = {sig, failStrangely};
  ASSERT_EQ(weft_rt_model_create(ctx, &strange, nullptr, &model), WEFT_RT_OK);
  EXPECT_EQ(weft_rt_model_run(model), WEFT_RT_INTERNAL);
  EXPECT_NE(error().find("returned status 42"), std::string::npos);
}

TEST_F(ModelTest, WritesChromeTrace) {
  ASSERT_EQ(
      weft_rt_model_create(ctx, &kAddProgram, weightsPath.c_str(), &model),
      WEFT_RT_OK);
  std::string path = scratch.track("trace.json");
  EXPECT_EQ(weft_rt_model_write_profile(model, path.c_str()),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("profiling was not enabled"), std::string::npos);

  // Unprofiled runs record nothing.
  ASSERT_EQ(weft_rt_model_run(model), WEFT_RT_OK);
  EXPECT_TRUE(ctx->events.empty());
  weft_rt_model_enable_profile(model);
  ASSERT_EQ(weft_rt_model_run(model), WEFT_RT_OK);
  ASSERT_EQ(weft_rt_model_run(model), WEFT_RT_OK);
  ASSERT_EQ(ctx->events.size(), 6u); // (run, op 0, op 1) x 2
  EXPECT_EQ(ctx->events[0].opId, kRunEventId);
  EXPECT_EQ(ctx->events[1].opId, 0);
  EXPECT_GE(ctx->events[0].durationUs, ctx->events[1].durationUs);
  ASSERT_EQ(weft_rt_model_write_profile(model, path.c_str()), WEFT_RT_OK)
      << error();
  std::string json = scratch.read(path);
  EXPECT_EQ(json.rfind("{\"traceEvents\":[", 0), 0u) << json;
  EXPECT_NE(json.find("\"name\":\"run 1\",\"cat\":\"run\",\"ph\":\"X\""),
            std::string::npos)
      << json;
  // Quotes escaped, valid UTF-8 kept, a stray byte replaced.
  // Ops are category "op" with their kind in args, as weftc's timeline.json.
  EXPECT_NE(json.find("\"name\":\"add\\\"quoted\\\"\",\"cat\":\"op\""),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"name\":\"\xc3\xa9t\\ufffd\",\"cat\":\"op\""),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"kind\":\"Relu\"}"), std::string::npos) << json;
  EXPECT_NE(json.find("\"ts\":0.000,"), std::string::npos);

  EXPECT_EQ(weft_rt_model_write_profile(
                model, (scratch.dir + "/no/such/trace.json").c_str()),
            WEFT_RT_IO_ERROR);
  EXPECT_NE(error().find("cannot create profile"), std::string::npos);
}

TEST(JsonTest, EscapesStrings) {
  EXPECT_EQ(escapeJson("a\"b\\c\n\x01"), "a\\\"b\\\\c\\u000a\\u0001");
  EXPECT_EQ(escapeJson("\xe2\x82\xac"), "\xe2\x82\xac"); // The euro sign.
  EXPECT_EQ(escapeJson("\xe2\x82"), "\\ufffd\\ufffd");
  EXPECT_EQ(escapeJson("\xed\xa0\x80"), "\\ufffd\\ufffd\\ufffd"); // Surrogate.
  EXPECT_EQ(escapeJson("\xc0\xaf"), "\\ufffd\\ufffd");            // Overlong.
}

} // namespace
