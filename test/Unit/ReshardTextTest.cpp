//===- ReshardTextTest.cpp - Tests of the resharding side syntax ----------===//
//
// parseReshardSide, formatReshardSide and parseTensorShape: the examples of
// weft-reshard's --help parse to what they say, every bad input is an error
// that names the flag, quotes the text and says what is wrong (a TEST_P
// table), and formatting then parsing gives the side back.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/ReshardText.h"

#include "weft/Plan/Cluster.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace weft::plan;
using llvm::Expected;
using llvm::StringRef;

#define ASSERT_OK(expected)                                                    \
  ASSERT_TRUE(static_cast<bool>(expected))                                     \
      << llvm::toString((expected).takeError())

namespace {

/// Three p3.8xlarge nodes: devices 0 to 11.
const Cluster &twelveDevices() {
  static const Cluster cluster = [] {
    Expected<Cluster> loaded = loadCluster("p3.8xlarge:3");
    if (!loaded) {
      ADD_FAILURE() << llvm::toString(loaded.takeError());
      return Cluster();
    }
    return std::move(*loaded);
  }();
  return cluster;
}

/// The error of parsing `text` as --from of a rank-`rank` tensor, or ""
/// (a test failure) if it parsed.
std::string sideError(StringRef text, unsigned rank) {
  Expected<ReshardSide> side =
      parseReshardSide(text, twelveDevices(), rank, "--from");
  if (side) {
    ADD_FAILURE() << "parsed although it should not: " << text.str();
    return "";
  }
  return llvm::toString(side.takeError());
}

std::vector<int> range(int first, int last) {
  std::vector<int> devices;
  for (int device = first; device <= last; ++device)
    devices.push_back(device);
  return devices;
}

// Tests that the four examples of --help mean what --help says.
TEST(ReshardText, HelpExamples) {
  Expected<ReshardSide> rows =
      parseReshardSide("2x4@0-7:[[0],[],[]]", twelveDevices(), 3, "--from");
  ASSERT_OK(rows);
  EXPECT_EQ(rows->mesh.name, "from");
  EXPECT_EQ(rows->sharding.mesh, "from");
  EXPECT_EQ(rows->mesh.shape, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(rows->mesh.devices, range(0, 7));
  ASSERT_EQ(rows->sharding.dims.size(), 3u);
  EXPECT_EQ(rows->sharding.dims[0], (AxisList{0}));
  EXPECT_TRUE(rows->sharding.dims[1].empty());
  EXPECT_TRUE(rows->sharding.partial.empty());

  Expected<ReshardSide> list =
      parseReshardSide("2x2@4,5,8,9:[[],[0,1]]", twelveDevices(), 2, "--to");
  ASSERT_OK(list);
  EXPECT_EQ(list->mesh.name, "to");
  EXPECT_EQ(list->mesh.devices, (std::vector<int>{4, 5, 8, 9}));
  EXPECT_EQ(list->sharding.dims[1], (AxisList{0, 1}));

  Expected<ReshardSide> partial =
      parseReshardSide("1x4@0-3:[[1],[]]+p[0]", twelveDevices(), 2, "--from");
  ASSERT_OK(partial);
  EXPECT_EQ(partial->sharding.dims[0], (AxisList{1}));
  EXPECT_EQ(partial->sharding.partial, (AxisList{0}));

  Expected<ReshardSide> one =
      parseReshardSide("1x1@0:[[]]", twelveDevices(), 1, "--to");
  ASSERT_OK(one);
  EXPECT_EQ(one->mesh.devices, (std::vector<int>{0}));
  EXPECT_EQ(one->sharding, TensorSharding::replicated("to", 1));
}

// Tests that device lists mix ranges and single devices, in the order given,
// and that spaces inside the sharding do not matter.
TEST(ReshardText, MixedDeviceListsAndSpaces) {
  Expected<ReshardSide> side = parseReshardSide(
      "2x4@0-3,8,10-11,5:[ [0] , [ 1 ] ]", twelveDevices(), 2, "--from");
  ASSERT_OK(side);
  EXPECT_EQ(side->mesh.devices, (std::vector<int>{0, 1, 2, 3, 8, 10, 11, 5}));
  EXPECT_EQ(side->sharding.dims[1], (AxisList{1}));

  side = parseReshardSide("4@7-7,3,2,1:[[0]]", twelveDevices(), 1, "--to");
  ASSERT_OK(side);
  EXPECT_EQ(side->mesh.devices, (std::vector<int>{7, 3, 2, 1}));
}

// Tests that a rank-0 tensor has the sharding [].
TEST(ReshardText, ScalarSharding) {
  Expected<ReshardSide> side =
      parseReshardSide("2@0,1:[]+p[0]", twelveDevices(), 0, "--from");
  ASSERT_OK(side);
  EXPECT_TRUE(side->sharding.dims.empty());
  EXPECT_EQ(side->sharding.partial, (AxisList{0}));
}

// Tests that formatting and parsing again gives the same side, and that the
// format is the compact one --help shows.
TEST(ReshardText, RoundTrip) {
  struct Case {
    const char *text;
    unsigned rank;
    const char *formatted;
  } cases[] = {
      {"2x4@0-7:[[0],[],[]]", 3, "2x4@0-7:[[0],[],[]]"},
      {"2x2@4,5,8,9:[[],[0,1]]", 2, "2x2@4,5,8,9:[[],[0,1]]"},
      {"1x4@0-3:[[1],[]]+p[0]", 2, "1x4@0-3:[[1],[]]+p[0]"},
      {"1x1@0:[[]]", 1, "1x1@0:[[]]"},
      {"8@0-3,8,10-11,5:[[0]]", 1, "8@0-3,8,10,11,5:[[0]]"},
      {"2x2x2@11,10,9,8,0,1,2,3:[[2,0],[],[1]]", 3,
       "2x2x2@11,10,9,8,0-3:[[2,0],[],[1]]"},
      {"2x3@0-5:[ [] , [] ] +p[1,0]", 2, "2x3@0-5:[[],[]]+p[1,0]"},
      {"4@0-3:[]+p[0]", 0, "4@0-3:[]+p[0]"},
  };
  for (const Case &c : cases) {
    Expected<ReshardSide> side =
        parseReshardSide(c.text, twelveDevices(), c.rank, "--to");
    ASSERT_OK(side);
    std::string text = formatReshardSide(*side);
    EXPECT_EQ(text, c.formatted) << c.text;
    Expected<ReshardSide> again =
        parseReshardSide(text, twelveDevices(), c.rank, "--to");
    ASSERT_OK(again);
    EXPECT_EQ(again->mesh.shape, side->mesh.shape) << c.text;
    EXPECT_EQ(again->mesh.devices, side->mesh.devices) << c.text;
    EXPECT_EQ(again->sharding, side->sharding) << c.text;
  }
}

// Tests that device lists print runs of three or more as ranges.
TEST(ReshardText, DeviceLists) {
  EXPECT_EQ(formatDeviceList({}), "");
  EXPECT_EQ(formatDeviceList({5}), "5");
  EXPECT_EQ(formatDeviceList({4, 5, 8, 9}), "4,5,8,9");
  EXPECT_EQ(formatDeviceList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10,11");
  EXPECT_EQ(formatDeviceList({3, 2, 1, 0}), "3,2,1,0");
  EXPECT_EQ(formatDeviceList({7, 0, 1, 2}), "7,0-2");
}

struct BadSide {
  const char *text;
  unsigned rank;
  /// Fragments the message must contain, in order.
  std::vector<const char *> fragments;
};

class ReshardSideErrors : public ::testing::TestWithParam<BadSide> {};

// Tests that every error names the flag, quotes the text and says what is
// wrong.
TEST_P(ReshardSideErrors, NamesFlagTextAndProblem) {
  const BadSide &bad = GetParam();
  std::string message = sideError(bad.text, bad.rank);
  std::string prefix = std::string("--from '") + bad.text + "': ";
  EXPECT_EQ(message.rfind(prefix, 0), 0u) << message;
  size_t pos = 0;
  for (const char *fragment : bad.fragments) {
    size_t found = message.find(fragment, pos);
    EXPECT_NE(found, std::string::npos)
        << "missing '" << fragment << "' in: " << message;
    if (found != std::string::npos)
      pos = found;
  }
}

INSTANTIATE_TEST_SUITE_P(
    EveryCase, ReshardSideErrors,
    ::testing::Values(
        BadSide{"", 1, {"it is empty", "SHAPE@DEVICES:SHARDING"}},
        BadSide{"2x4", 1, {"there is no '@'"}},
        BadSide{"2x4@0-7", 1, {"there is no ':' after the devices"}},
        BadSide{"2x@0-7:[[0]]",
                1,
                {"invalid mesh shape '2x'", "a dimension is missing"}},
        BadSide{"0x4@0-7:[[0]]", 1, {"invalid mesh shape '0x4'"}},
        BadSide{"1x1x1x1x1x1x1x1x1@0:[[]]", 1, {"9 axes", "at most 8"}},
        BadSide{"2x4@0-6:[[0]]",
                1,
                {"the mesh 2x4 has 8 devices, the list names 7"}},
        BadSide{"4x4@0-11:[[0]]",
                1,
                {"the mesh 4x4 has 16 devices, the list names 12",
                 "cluster 'p3.8xlarge:3' has 12"}},
        BadSide{
            "1x1@0,1:[[]]", 1, {"the mesh 1x1 has 1 device, the list names 2"}},
        BadSide{"2@:[[0]]", 1, {"the device list at character 3 is empty"}},
        BadSide{"2@0,,1:[[0]]", 1, {"empty entry at character 5"}},
        BadSide{"2@0,1,:[[0]]", 1, {"empty entry at character 7"}},
        BadSide{"2@0,a:[[0]]", 1, {"'a' at character 5 is not a device index"}},
        BadSide{"2@-1,0:[[0]]", 1, {"'-1' at character 3"}},
        BadSide{"2@0-1-2:[[0]]", 1, {"'0-1-2'", "not a device index"}},
        BadSide{"2@5-4:[[0]]", 1, {"the range '5-4'", "goes down", "4-5"}},
        BadSide{"2@0,12:[[0]]",
                1,
                {"device 12 at character 5 does not exist",
                 "cluster 'p3.8xlarge:3' has devices 0 to 11"}},
        BadSide{"2@10-99999999999:[[0]]", 1, {"does not exist"}},
        BadSide{
            "4@0-2,1:[[0]]", 1, {"device 1 at character 7 is listed twice"}},
        BadSide{"2@0,1:[[0]",
                1,
                {"the sharding: expected ']' at character 11, found the end"}},
        BadSide{"2@0,1:[0]",
                1,
                {"the sharding of dimension 0: expected '[' at character 8, "
                 "found '0'"}},
        BadSide{"2@0,1:[[0,]]",
                1,
                {"dimension 0: expected a mesh axis at character 11"}},
        BadSide{"2@0,1:[[x]]", 1, {"expected a mesh axis at character 9"}},
        BadSide{
            "2@0,1:[[0]]x",
            1,
            {"unexpected 'x' at character 12 after the sharding", "+p[AXES]"}},
        BadSide{"2@0,1:[[0]]+q[0]",
                1,
                {"expected 'p' at character 13 after '+', found 'q'"}},
        BadSide{"2@0,1:[[]]+p[]", 1, {"+p[] at character 11 names no"}},
        BadSide{"2@0,1:[[]]+p[0", 1, {"+p: expected ']'", "the end"}},
        BadSide{"2@0,1:[[]]+p[0] [1]",
                1,
                {"unexpected '[' at character 17 after the partial axes"}},
        BadSide{"2x4@0-7:[[0]]",
                3,
                {"the sharding has 1 dimension, the tensor has rank 3"}},
        BadSide{"2x4@0-7:[[0],[],[],[]]",
                3,
                {"the sharding has 4 dimensions, the tensor has rank 3"}},
        BadSide{"2x4@0-7:[[2],[]]",
                2,
                {"mesh axis 2 at character 11 does not exist",
                 "the mesh 2x4 has axes 0 and 1"}},
        BadSide{"8@0-7:[[],[1]]",
                2,
                {"mesh axis 1", "does not exist", "has only axis 0"}},
        BadSide{"2x2x2@0-7:[[],[3]]", 2, {"has axes 0 to 2"}},
        BadSide{"2x4@0-7:[[99999999999]]",
                1,
                {"mesh axis 99999999999 at character 11 does not exist"}},
        BadSide{"2x4@0-7:[[0,0],[]]",
                2,
                {"mesh axis 0 at character 13 appears twice in dimension 0"}},
        BadSide{"2x4@0-7:[[0],[1,0]]",
                2,
                {"mesh axis 0 at character 17 is used by both dimension 0 "
                 "and dimension 1"}},
        BadSide{"2x4@0-7:[[0],[]]+p[0]",
                2,
                {"mesh axis 0 at character 20 is used by both dimension 0 "
                 "and the partial sum"}},
        BadSide{"2x4@0-7:[[],[]]+p[1,1]",
                2,
                {"mesh axis 1", "appears twice in the partial sum"}}));

// Tests that the flag's name starts the message, whatever it is.
TEST(ReshardText, ErrorsNameTheFlag) {
  Expected<ReshardSide> side =
      parseReshardSide("2x4@0-6:[[0]]", twelveDevices(), 1, "--to");
  ASSERT_FALSE(static_cast<bool>(side));
  EXPECT_EQ(llvm::toString(side.takeError()),
            "--to '2x4@0-6:[[0]]': the mesh 2x4 has 8 devices, the list "
            "names 7");
}

// Tests tensor shapes: a single number or dimensions joined by 'x'.
TEST(ReshardText, TensorShapes) {
  Expected<std::vector<int64_t>> shape = parseTensorShape("1024x1024x512");
  ASSERT_OK(shape);
  EXPECT_EQ(*shape, (std::vector<int64_t>{1024, 1024, 512}));
  shape = parseTensorShape("4096");
  ASSERT_OK(shape);
  EXPECT_EQ(*shape, (std::vector<int64_t>{4096}));
  EXPECT_EQ(formatTensorShape({1024, 1024, 512}), "1024x1024x512");

  struct Bad {
    const char *text;
    const char *fragment;
  } bads[] = {
      {"", "it is empty"},
      {"1024x", "a dimension is missing"},
      {"x4", "a dimension is missing"},
      {"4x0", "dimension 0 is not positive"},
      {"4x-2", "dimension -2 is not positive"},
      {"4xa", "'a' is not an integer"},
      {"1.5", "'1.5' is not an integer"},
      {"99999999999999999999", "is not an integer"},
      {"16777216x16777216x2", "more than 2^48 elements"},
  };
  for (const Bad &bad : bads) {
    Expected<std::vector<int64_t>> parsed = parseTensorShape(bad.text);
    ASSERT_FALSE(static_cast<bool>(parsed)) << bad.text;
    std::string message = llvm::toString(parsed.takeError());
    EXPECT_EQ(message.rfind(
                  std::string("invalid tensor shape '") + bad.text + "': ", 0),
              0u)
        << message;
    EXPECT_NE(message.find(bad.fragment), std::string::npos) << message;
  }
  std::string many = "1";
  for (int i = 0; i < 64; ++i)
    many += "x1";
  Expected<std::vector<int64_t>> tooMany = parseTensorShape(many);
  ASSERT_FALSE(static_cast<bool>(tooMany));
  EXPECT_NE(llvm::toString(tooMany.takeError()).find("65 dimensions"),
            std::string::npos);
}

} // namespace
