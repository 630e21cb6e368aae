//===- WeightLocatorTest.cpp - Tests of in-place weight references ---------===//
//
// The protobuf wire scan that finds initializer bytes inside a model file,
// the validation of external-data references, and --input-shape parsing.
//
//===----------------------------------------------------------------------===//

#include "../../lib/Import/ONNX/WeightLocator.h"

#include "weft/Import/ONNX/Importer.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <random>

using namespace mlir;
using namespace mlir::weft;
using namespace mlir::weft::onnx_import;

namespace {

onnx::ModelProto makeModel() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  onnx::GraphProto *graph = model.mutable_graph();
  graph->set_name("g");
  onnx::TensorProto *raw = graph->add_initializer();
  raw->set_name("raw");
  raw->set_data_type(onnx::TensorProto::FLOAT);
  raw->add_dims(4);
  float values[4] = {1, 2, 3, 4};
  raw->set_raw_data(reinterpret_cast<const char *>(values), sizeof(values));
  onnx::TensorProto *packed = graph->add_initializer();
  packed->set_name("packed");
  packed->set_data_type(onnx::TensorProto::FLOAT);
  packed->add_dims(3);
  for (float v : {5.f, 6.f, 7.f})
    packed->add_float_data(v);
  onnx::TensorProto *ints = graph->add_initializer();
  ints->set_name("ints");
  ints->set_data_type(onnx::TensorProto::INT64);
  ints->add_dims(2);
  ints->add_int64_data(1);
  ints->add_int64_data(2);
  return model;
}

TEST(ScanInitializerData, FindsRawAndPackedData) {
  std::string bytes = makeModel().SerializeAsString();
  llvm::StringMap<FileRange> ranges = scanInitializerData(bytes);
  ASSERT_TRUE(ranges.count("raw"));
  ASSERT_TRUE(ranges.count("packed"));
  // int64_data is varint-encoded: not a contiguous copy of the values.
  EXPECT_FALSE(ranges.count("ints"));
  float raw[4] = {1, 2, 3, 4};
  EXPECT_EQ(ranges["raw"].size, sizeof(raw));
  EXPECT_EQ(0, std::memcmp(bytes.data() + ranges["raw"].offset, raw,
                           sizeof(raw)));
  float packed[3] = {5, 6, 7};
  EXPECT_EQ(ranges["packed"].size, sizeof(packed));
  EXPECT_EQ(0, std::memcmp(bytes.data() + ranges["packed"].offset, packed,
                           sizeof(packed)));
}

TEST(ScanInitializerData, SurvivesTruncationAndNoise) {
  std::string bytes = makeModel().SerializeAsString();
  // Every prefix and random corruption: no crash, and every reported range
  // stays inside the buffer.
  std::mt19937 rng(7);
  for (size_t n = 0; n <= bytes.size(); ++n) {
    std::string prefix = bytes.substr(0, n);
    for (auto &entry : scanInitializerData(prefix))
      EXPECT_LE(entry.second.offset + entry.second.size, prefix.size());
  }
  for (int i = 0; i < 2000; ++i) {
    std::string noisy = bytes;
    noisy[rng() % noisy.size()] = static_cast<char>(rng());
    for (auto &entry : scanInitializerData(noisy))
      EXPECT_LE(entry.second.offset + entry.second.size, noisy.size());
  }
}

/// A temporary folder holding a model folder and a file outside it.
class ExternalDataTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("weft-ext", root));
    modelDir = root;
    llvm::sys::path::append(modelDir, "model");
    ASSERT_FALSE(llvm::sys::fs::create_directories(modelDir));
    writeFile(join(modelDir, "w.bin"), std::string(32, 'x'));
    writeFile(join(root, "outside.bin"), std::string(32, 'y'));
  }
  void TearDown() override { llvm::sys::fs::remove_directories(root); }

  static std::string join(StringRef a, StringRef b) {
    SmallString<256> p(a);
    llvm::sys::path::append(p, b);
    return std::string(p);
  }
  static void writeFile(const std::string &path, const std::string &data) {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    ASSERT_FALSE(ec);
    os << data;
  }
  static onnx::TensorProto tensor(const std::string &location,
                                  const std::string &offset = "",
                                  const std::string &length = "") {
    onnx::TensorProto t;
    t.set_name("w");
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const char *key, const std::string &value) {
      if (value.empty())
        return;
      auto *entry = t.add_external_data();
      entry->set_key(key);
      entry->set_value(value);
    };
    add("location", location);
    add("offset", offset);
    add("length", length);
    return t;
  }
  bool resolve(const onnx::TensorProto &t, uint64_t bytes,
               ExternalLocation &out, std::string &error) {
    return resolveExternalData(t, modelDir, bytes, out, error);
  }

  SmallString<256> root, modelDir;
};

TEST_F(ExternalDataTest, AcceptsRangeInsideFolder) {
  ExternalLocation loc;
  std::string error;
  ASSERT_TRUE(resolve(tensor("w.bin", "8", "16"), 16, loc, error)) << error;
  EXPECT_EQ(loc.relativePath, "w.bin");
  EXPECT_EQ(loc.range.offset, 8u);
  EXPECT_EQ(loc.range.size, 16u);
  // Without a length the data runs to the end of the file.
  ASSERT_TRUE(resolve(tensor("w.bin", "16"), 16, loc, error)) << error;
}

TEST_F(ExternalDataTest, RefusesEscapes) {
  ExternalLocation loc;
  std::string error;
  EXPECT_FALSE(resolve(tensor(join(root, "outside.bin")), 32, loc, error));
  EXPECT_NE(error.find("absolute path"), std::string::npos) << error;
  EXPECT_FALSE(resolve(tensor("../outside.bin"), 32, loc, error));
  EXPECT_NE(error.find("'..'"), std::string::npos) << error;
  ASSERT_FALSE(llvm::sys::fs::create_link(join(root, "outside.bin"),
                                          join(modelDir, "link.bin")));
  EXPECT_FALSE(resolve(tensor("link.bin"), 32, loc, error));
  EXPECT_NE(error.find("outside the model's folder"), std::string::npos)
      << error;
}

TEST_F(ExternalDataTest, RefusesBadRanges) {
  ExternalLocation loc;
  std::string error;
  EXPECT_FALSE(resolve(tensor("w.bin", "40"), 0, loc, error));
  EXPECT_NE(error.find("past the end"), std::string::npos) << error;
  EXPECT_FALSE(resolve(tensor("w.bin", "8", "32"), 32, loc, error));
  EXPECT_NE(error.find("past the end"), std::string::npos) << error;
  EXPECT_FALSE(resolve(tensor("w.bin", "0", "16"), 12, loc, error));
  EXPECT_NE(error.find("need 12"), std::string::npos) << error;
  EXPECT_FALSE(resolve(tensor("w.bin", "-1"), 12, loc, error));
  EXPECT_NE(error.find("not a non-negative integer"), std::string::npos);
  EXPECT_FALSE(resolve(tensor("nope.bin"), 12, loc, error));
  EXPECT_FALSE(resolve(tensor(""), 12, loc, error));
  EXPECT_FALSE(resolve(tensor("."), 12, loc, error)); // a folder
}

TEST(Checksum, IsStableHex) {
  EXPECT_EQ(checksumHex("").size(), 16u);
  EXPECT_EQ(checksumHex("abc"), checksumHex("abc"));
  EXPECT_NE(checksumHex("abc"), checksumHex("abd"));
}

TEST(InputShapeSpec, Parses) {
  std::string name, error;
  SmallVector<int64_t> shape;
  ASSERT_TRUE(parseInputShapeSpec("input_ids=1x128", name, shape, error));
  EXPECT_EQ(name, "input_ids");
  EXPECT_EQ(shape, (SmallVector<int64_t>{1, 128}));
  ASSERT_TRUE(parseInputShapeSpec("a=b=3", name, shape, error));
  EXPECT_EQ(name, "a=b");
  ASSERT_TRUE(parseInputShapeSpec("s=", name, shape, error));
  EXPECT_TRUE(shape.empty());
  EXPECT_FALSE(parseInputShapeSpec("noequals", name, shape, error));
  EXPECT_FALSE(parseInputShapeSpec("=1x2", name, shape, error));
  EXPECT_FALSE(parseInputShapeSpec("x=1x-2", name, shape, error));
  EXPECT_FALSE(parseInputShapeSpec("x=1xx2", name, shape, error));
  EXPECT_FALSE(parseInputShapeSpec("x=99999999999", name, shape, error));
}

} // namespace
