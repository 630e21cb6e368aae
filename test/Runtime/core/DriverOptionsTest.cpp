//===- DriverOptionsTest.cpp - Tests of the driver's command line ---------===//
//
// Option parsing of bin/dev<k>: both spellings of values, defaults, and each
// kind of wrong option refused with a message.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

using namespace weft::rt;

namespace {

bool parse(std::vector<std::string> args, DriverOptions &out,
           std::string &error) {
  args.insert(args.begin(), "dev0");
  std::vector<char *> argv;
  for (std::string &arg : args)
    argv.push_back(arg.data());
  return parseDriverOptions(static_cast<int>(argv.size()), argv.data(), out,
                            error);
}

TEST(DriverOptionsTest, ParsesEveryOption) {
  DriverOptions o;
  std::string error;
  ASSERT_TRUE(parse({"--weights",    "w.bin",       "--inputs=data",
                     "--output-dir", "out",         "--output-format=npy",
                     "--check",      "data",        "--rtol",
                     "0.01",         "--atol=1e-7", "--bench",
                     "10",           "--warmup",    "0",
                     "--threads",    "3",           "--profile",
                     "t.json",       "--quiet"},
                    o, error))
      << error;
  EXPECT_EQ(o.weightsPath, "w.bin");
  EXPECT_EQ(o.inputsDir, "data");
  EXPECT_EQ(o.outputDir, "out");
  EXPECT_EQ(o.outputFormat, TensorFormat::Npy);
  EXPECT_EQ(o.checkDir, "data");
  EXPECT_DOUBLE_EQ(o.tolerance.rtol, 0.01);
  EXPECT_DOUBLE_EQ(o.tolerance.atol, 1e-7);
  EXPECT_EQ(o.benchRuns, 10);
  EXPECT_EQ(o.warmupRuns, 0);
  EXPECT_EQ(o.threads, 3);
  EXPECT_EQ(o.profilePath, "t.json");
  EXPECT_TRUE(o.quiet);
}

TEST(DriverOptionsTest, Defaults) {
  DriverOptions o;
  std::string error;
  ASSERT_TRUE(parse({"--input", "x=a.pb", "--input", "y=b=c.npy"}, o, error));
  EXPECT_EQ(o.inputSpecs, (std::vector<std::string>{"x=a.pb", "y=b=c.npy"}));
  EXPECT_DOUBLE_EQ(o.tolerance.rtol, 1e-3);
  EXPECT_DOUBLE_EQ(o.tolerance.atol, 1e-5);
  EXPECT_EQ(o.benchRuns, 0);
  EXPECT_EQ(o.outputFormat, TensorFormat::OnnxPb);
  ASSERT_TRUE(parse({"--bench", "3"}, o, error));
  EXPECT_EQ(o.warmupRuns, 3);
  ASSERT_TRUE(parse({"--bench", "100"}, o, error));
  EXPECT_EQ(o.warmupRuns, 5);
  ASSERT_TRUE(parse({"--bogus", "--help"}, o, error) == false);
  ASSERT_TRUE(parse({"--help"}, o, error));
  EXPECT_TRUE(o.help);
}

// --threads is a maximum the driver may run below (ThreadAdapter) unless
// --fixed-threads pins it.
TEST(DriverOptionsTest, FixedThreads) {
  DriverOptions o;
  std::string error;
  ASSERT_TRUE(parse({"--threads", "2"}, o, error));
  EXPECT_EQ(o.threads, 2);
  EXPECT_FALSE(o.fixedThreads);
  ASSERT_TRUE(parse({"--threads", "2", "--fixed-threads"}, o, error));
  EXPECT_TRUE(o.fixedThreads);
  EXPECT_FALSE(parse({"--fixed-threads=1"}, o, error));
}

TEST(DriverOptionsTest, Streams) {
  DriverOptions o;
  std::string error;
  ASSERT_TRUE(parse({"--stream", "200", "--outputs", "out"}, o, error))
      << error;
  EXPECT_EQ(o.streamRequests, 200);
  EXPECT_EQ(o.outputDir, "out");
  EXPECT_EQ(o.warmupRuns, 5);
  ASSERT_TRUE(parse({"--stream", "3", "--warmup", "0"}, o, error)) << error;
  EXPECT_EQ(o.warmupRuns, 0);
}

TEST(DriverOptionsTest, RefusesWrongOptions) {
  struct Case {
    std::vector<std::string> args;
    const char *message;
  } cases[] = {
      {{"--bogus"}, "unknown option '--bogus'"},
      {{"-x"}, "unexpected argument '-x'"},
      {{"data"}, "unexpected argument 'data'"},
      {{"--inputs"}, "--inputs needs a value"},
      {{"--inputs="}, "--inputs needs a non-empty value"},
      {{"--inputs", "a", "--inputs", "b"}, "--inputs given twice"},
      {{"--inputs", "a", "--input", "x=b.pb"}, "not both"},
      {{"--output-format", "csv"}, "must be pb or npy, not 'csv'"},
      {{"--output-format", "npy"}, "only applies to --output-dir"},
      {{"--rtol", "-1"}, "--rtol must be a finite number >= 0"},
      {{"--atol", "nan"}, "--atol must be a finite number"},
      {{"--atol", "1e999"}, "--atol must be a finite number"},
      {{"--bench", "0"}, "--bench must be a run count >= 1, not '0'"},
      {{"--bench", "5x"}, "not '5x'"},
      {{"--bench", "99999999999999999999"}, "--bench must be"},
      {{"--warmup", "2"}, "--warmup only applies to --bench N and --stream N"},
      {{"--stream", "0"}, "--stream must be a request count >= 1, not '0'"},
      {{"--stream", "2", "--bench", "2"}, "give --stream N"},
      {{"--stream", "2", "--profile", "t.json"},
       "--profile applies to single runs and --bench, not --stream"},
      {{"--bench", "2", "--warmup", "-1"}, "--warmup must be a run count"},
      {{"--threads", "0"}, "--threads must be between 1 and 4096"},
      {{"--threads", "5000"}, "--threads must be between 1 and 4096"},
  };
  for (const Case &c : cases) {
    DriverOptions o;
    std::string error;
    EXPECT_FALSE(parse(c.args, o, error)) << c.message;
    EXPECT_NE(error.find(c.message), std::string::npos)
        << "expected '" << c.message << "' in: " << error;
  }
}

TEST(DriverOptionsTest, MedianAndMin) {
  std::vector<double> odd = {3, 1, 2};
  EXPECT_EQ(medianAndMin(odd), std::make_pair(2.0, 1.0));
  std::vector<double> even = {4, 1, 3, 2};
  EXPECT_EQ(medianAndMin(even), std::make_pair(2.5, 1.0));
}

} // namespace

namespace {
/// The environment readLaunchInfo sees in the next test.
std::map<std::string, std::string> launchEnvironment;
const char *fromLaunchEnvironment(const char *name) {
  auto it = launchEnvironment.find(name);
  return it == launchEnvironment.end() ? nullptr : it->second.c_str();
}
} // namespace

// Tests the world ranks of a rank's mpirun app context, read from Open MPI's
// environment, and that anything inconsistent leaves them unknown.
TEST(DriverOptionsTest, LaunchAppContextRanks) {
  auto ranksOf = [](std::map<std::string, std::string> environment) {
    launchEnvironment = std::move(environment);
    return readLaunchInfo(fromLaunchEnvironment).appContextRanks;
  };
  auto openMpi = [](const char *rank, const char *app, const char *counts) {
    return std::map<std::string, std::string>{
        {"OMPI_COMM_WORLD_SIZE", "5"},
        {"OMPI_COMM_WORLD_RANK", rank},
        {"OMPI_MCA_orte_app_num", app},
        {"OMPI_APP_CTX_NUM_PROCS", counts}};
  };
  using Ranks = std::vector<int64_t>;
  EXPECT_EQ(ranksOf(openMpi("0", "0", "2 3")), (Ranks{0, 1}));
  EXPECT_EQ(ranksOf(openMpi("3", "1", "2 3")), (Ranks{2, 3, 4}));
  EXPECT_EQ(ranksOf(openMpi("4", "4", "1 1 1 1 1")), (Ranks{4}));
  // Not adding up to the world, a rank outside its context, a context
  // past the list, words that are not counts: unknown.
  EXPECT_EQ(ranksOf(openMpi("0", "0", "2 2")), Ranks{});
  EXPECT_EQ(ranksOf(openMpi("2", "0", "2 3")), Ranks{});
  EXPECT_EQ(ranksOf(openMpi("0", "2", "2 3")), Ranks{});
  EXPECT_EQ(ranksOf(openMpi("0", "0", "2 x3")), Ranks{});
  EXPECT_EQ(ranksOf(openMpi("0", "0", "0 5")), Ranks{});
  EXPECT_EQ(ranksOf(openMpi("0", "-1", "2 3")), Ranks{});
  // MPICH's hydra says nothing of app contexts.
  EXPECT_EQ(ranksOf({{"PMI_SIZE", "2"}, {"PMI_RANK", "1"}}), Ranks{});
  launchEnvironment = {{"PMI_SIZE", "2"}, {"PMI_RANK", "1"}};
  LaunchInfo hydra = readLaunchInfo(fromLaunchEnvironment);
  EXPECT_TRUE(hydra.launched);
  EXPECT_EQ(hydra.rank, 1);
  EXPECT_EQ(hydra.worldSize, 2);
}
