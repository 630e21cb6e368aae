//===- WeightsFileTest.cpp - Tests of the device weights file -------------===//
//
// Lays out whole weights and blocks of stored tensors from a small source
// file, writes the device's weights file and checks its bytes.
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/WeightsFile.h"
#include "weft/Codegen/Passes.h"
#include "weft/WeftDialect.h"
#include "weft/WeftOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace mlir;
using namespace mlir::weft;

namespace {

std::string checksumOf(llvm::StringRef bytes) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format_hex_no_prefix(
      llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(
          reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size())),
      16);
  return text;
}

/// A folder with `source.bin`: 16 bytes of junk, A = f32[4, 6] holding
/// 0..23 at offset 16, B = i8[2, 3, 4] holding 0..23 at offset 112.
class WeightsFileTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("weft-weights", dir));
    source = path("source.bin");
    bytes.assign(16, '\x7f');
    for (int i = 0; i < 24; ++i) {
      float f = static_cast<float>(i);
      bytes.append(reinterpret_cast<const char *>(&f), sizeof(f));
    }
    for (int i = 0; i < 24; ++i)
      bytes.push_back(static_cast<char>(i));
    writeSource(bytes);
    checksumA = checksumOf(llvm::StringRef(bytes).substr(16, 96));
    checksumB = checksumOf(llvm::StringRef(bytes).substr(112, 24));
    registerCodegenDialects(registry);
    context = std::make_unique<MLIRContext>(registry);
    context->loadAllAvailableDialects();
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }

  std::string path(llvm::StringRef name) {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, name);
    return p.str().str();
  }
  void writeSource(const std::string &contents) {
    std::error_code ec;
    llvm::raw_fd_ostream os(source, ec);
    ASSERT_FALSE(ec);
    os << contents;
  }
  /// `weft.weight` of A (block `block` when not empty) of type `type`.
  std::string weightA(llvm::StringRef name, llvm::StringRef block,
                      llvm::StringRef type) {
    return llvm::formatv("  %{0} = weft.weight \"{0}\" from \"source.bin\" "
                         "offset 16 size 96 checksum \"{1}\" {2} : {3}\n",
                         name, checksumA, block, type)
        .str();
  }
  OwningOpRef<ModuleOp> parse(const std::string &body) {
    std::string text = "module attributes {weft.weights_dir = \"" +
                       dir.str().str() + "\"} {\n func.func @main() {\n" +
                       body + "  return\n }\n}\n";
    return parseSourceString<ModuleOp>(text, context.get());
  }
  std::string readFile(const std::string &file) {
    auto buffer = llvm::MemoryBuffer::getFile(file);
    if (!buffer)
      return "<missing>";
    return (*buffer)->getBuffer().str();
  }

  llvm::SmallString<256> dir;
  std::string source, bytes, checksumA, checksumB;
  DialectRegistry registry;
  std::unique_ptr<MLIRContext> context;
};

std::string floats(std::initializer_list<float> values) {
  std::string out;
  for (float f : values)
    out.append(reinterpret_cast<const char *>(&f), sizeof(f));
  return out;
}

TEST_F(WeightsFileTest, BlocksAreExtractedAndPlacedOnce) {
  std::string body =
      weightA("b12", "block [1, 2] of [4, 6]", "tensor<2x3xf32>") +
      weightA("whole", "", "tensor<4x6xf32>") +
      weightA("b12again", "block [1, 2] of [4, 6]", "tensor<2x3xf32>") +
      weightA("all", "block [0, 0] of [4, 6]", "tensor<4x6xf32>") +
      llvm::formatv("  %b = weft.weight \"b\" from \"source.bin\" offset 112 "
                    "size 24 checksum \"{0}\" block [1, 0, 1] of [2, 3, 4] : "
                    "tensor<1x3x2xi8>\n",
                    checksumB)
          .str() +
      weightA("rows", "block [2, 0] of [4, 6]", "tensor<2x6xf32>") +
      weightA("empty", "block [4, 0] of [4, 6]", "tensor<0x6xf32>");
  OwningOpRef<ModuleOp> module = parse(body);
  ASSERT_TRUE(module);

  WeightsFileLayout layout = layoutWeights(*module, "dev0.bin");
  // b12 (24 bytes), whole (96), b (6), rows (48), empty (0); duplicates and
  // the block that is the whole tensor share a place.
  ASSERT_EQ(layout.copies.size(), 5u);
  EXPECT_EQ(layout.copies[0].offset, 0);
  EXPECT_EQ(layout.copies[1].offset, 64);
  EXPECT_EQ(layout.copies[2].offset, 192);
  EXPECT_EQ(layout.copies[3].offset, 256);
  EXPECT_EQ(layout.copies[4].offset, 320);
  EXPECT_EQ(layout.bytes, 320);
  EXPECT_FALSE(layout.copies[1].isBlock());

  // Every op now reads a plain weight of its own size from dev0.bin.
  std::vector<int64_t> offsets, sizes;
  module->walk([&](WeightOp w) {
    EXPECT_EQ(w.getFile(), "dev0.bin");
    EXPECT_FALSE(w.getBlockOffsets().has_value());
    EXPECT_FALSE(w.getFullShape().has_value());
    EXPECT_TRUE(succeeded(w.verify()));
    offsets.push_back(w.getOffset());
    sizes.push_back(w.getSize());
  });
  EXPECT_EQ(offsets, (std::vector<int64_t>{0, 64, 0, 64, 192, 256, 320}));
  EXPECT_EQ(sizes, (std::vector<int64_t>{24, 96, 24, 96, 6, 48, 0}));
  EXPECT_FALSE((*module)->hasAttr("weft.weights_dir"));

  std::string out = path("dev0.bin"), sha;
  ASSERT_TRUE(succeeded(
      writeWeightsFile(layout, out, UnknownLoc::get(context.get()), sha)));
  std::string file = readFile(out);
  ASSERT_EQ(file.size(), 320u);
  std::string expected;
  expected += floats({8, 9, 10, 14, 15, 16});
  expected.resize(64, '\0');
  expected += llvm::StringRef(bytes).substr(16, 96).str();
  expected.resize(192, '\0');
  expected += std::string{13, 14, 17, 18, 21, 22};
  expected.resize(256, '\0');
  expected += floats({12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23});
  expected.resize(320, '\0');
  EXPECT_EQ(file, expected);
  EXPECT_EQ(sha, llvm::toHex(llvm::SHA256::hash(llvm::ArrayRef<uint8_t>(
                                 reinterpret_cast<const uint8_t *>(file.data()),
                                 file.size())),
                             /*LowerCase=*/true));
  EXPECT_FALSE(llvm::sys::fs::exists(out + ".partial"));
}

// A weight stored permuted (weft-conv-channels-last's kernel-first
// weights): the file holds the permuted elements, of the whole tensor or of
// a block, placed apart from the unpermuted ones, and the ops become plain
// weights of the permuted shape.
TEST_F(WeightsFileTest, PermutedWeightsAreStoredPermuted) {
  std::string body =
      weightA("whole", "", "tensor<4x6xf32>") +
      weightA("transposed", "permuted [1, 0]", "tensor<6x4xf32>") +
      weightA("block", "block [1, 2] of [4, 6] permuted [1, 0]",
              "tensor<3x2xf32>");
  OwningOpRef<ModuleOp> module = parse(body);
  ASSERT_TRUE(module);
  WeightsFileLayout layout = layoutWeights(*module, "dev0.bin");
  ASSERT_EQ(layout.copies.size(), 3u);
  module->walk([&](WeightOp w) {
    EXPECT_FALSE(w.getPerm().has_value());
    EXPECT_TRUE(succeeded(w.verify()));
  });
  std::string out = path("dev0.bin"), sha;
  ASSERT_TRUE(succeeded(
      writeWeightsFile(layout, out, UnknownLoc::get(context.get()), sha)));
  std::string file = readFile(out);
  std::string expected = llvm::StringRef(bytes).substr(16, 96).str();
  expected.resize(128, '\0');
  expected += floats({0, 6, 12, 18, 1, 7, 13, 19, 2, 8, 14, 20,
                      3, 9, 15, 21, 4, 10, 16, 22, 5, 11, 17, 23});
  expected.resize(256, '\0');
  expected += floats({8, 14, 9, 15, 10, 16});
  expected.resize(layout.bytes, '\0');
  EXPECT_EQ(file, expected);
}

// A permutation that is not one, or a block that the permutation puts
// outside the stored tensor, is refused by the verifier.
TEST_F(WeightsFileTest, BadPermutationsAreRefused) {
  std::string message;
  ScopedDiagnosticHandler handler(context.get(), [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  EXPECT_FALSE(parse(weightA("w", "permuted [0, 0]", "tensor<4x6xf32>")));
  EXPECT_NE(message.find("is not a permutation of [0, 2)"), std::string::npos)
      << message;
  // The block is 3x2 before the permutation: rows 2..4 of 4.
  EXPECT_FALSE(parse(weightA("w", "block [2, 4] of [4, 6] permuted [1, 0]",
                             "tensor<2x3xf32>")));
  EXPECT_NE(message.find("is outside the stored [4, 6]"), std::string::npos)
      << message;
}

TEST_F(WeightsFileTest, ChangedSourceIsRefusedBeforeExtracting) {
  OwningOpRef<ModuleOp> module =
      parse(weightA("w", "block [0, 3] of [4, 6]", "tensor<4x3xf32>"));
  ASSERT_TRUE(module);
  WeightsFileLayout layout = layoutWeights(*module, "dev1.bin");
  // A byte outside the block changed: the whole stored tensor is checked.
  std::string changed = bytes;
  changed[16] ^= 1;
  writeSource(changed);

  std::string message;
  ScopedDiagnosticHandler handler(context.get(), [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  std::string out = path("dev1.bin"), sha;
  EXPECT_TRUE(failed(
      writeWeightsFile(layout, out, UnknownLoc::get(context.get()), sha)));
  EXPECT_NE(message.find("weight 'w'"), std::string::npos) << message;
  EXPECT_NE(message.find("was the file changed?"), std::string::npos)
      << message;
  EXPECT_FALSE(llvm::sys::fs::exists(out));
  EXPECT_FALSE(llvm::sys::fs::exists(out + ".partial"));
}

TEST_F(WeightsFileTest, MalformedBlockIsAnError) {
  WeightsFileLayout layout;
  WeightCopy copy;
  copy.name = "bad";
  copy.sourcePath = source;
  copy.sourceOffset = 16;
  copy.size = 96;
  copy.checksum = checksumA;
  copy.fullShape = {4, 6};
  copy.blockOffsets = {3, 0};
  copy.blockShape = {2, 6}; // rows 3..4 of 4
  copy.elementBytes = 4;
  layout.copies.push_back(copy);
  layout.bytes = 64;
  std::string message;
  ScopedDiagnosticHandler handler(context.get(), [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  std::string out = path("dev2.bin"), sha;
  EXPECT_TRUE(failed(
      writeWeightsFile(layout, out, UnknownLoc::get(context.get()), sha)));
  EXPECT_NE(message.find("does not fit its stored tensor"), std::string::npos)
      << message;
  EXPECT_FALSE(llvm::sys::fs::exists(out));
}

} // namespace
