//===- PackageTest.cpp - Tests of package writing and program signatures --===//
//
// Writes single- and multi-device packages with a stand-in linker (a script
// that records its command line into the output) and checks the folder,
// the manifest and the run script; checks the signature's mesh line.
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/Package.h"
#include "weft/Codegen/ObjectEmitter.h"
#include "weft/Codegen/Passes.h"
#include "weft/Version.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::weft;
namespace fs = llvm::sys::fs;

namespace {

//===----------------------------------------------------------------------===//
// Program signature
//===----------------------------------------------------------------------===//

std::string signatureOf(llvm::StringRef meshAttr) {
  DialectRegistry registry;
  registerCodegenDialects(registry);
  MLIRContext context(registry);
  std::string text = "module attributes {weft.arena_bytes = 128 : i64, " +
                     meshAttr.str() +
                     "weft.program_io = \"input x 1 1 4 0\\0A\", "
                     "weft.program_ops = \"op 0 all_reduce s\\0A\"} {}";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
  if (!module)
    return "<parse error>";
  return buildProgramSignature(*module, 64);
}

TEST(ProgramSignatureTest, MeshLineFollowsWeights) {
  EXPECT_EQ(signatureOf("weft.mesh_shape = array<i64: 2, 2>, "),
            "weft-program 1\narena 128\nweights 64\nmesh 2 2\n"
            "input x 1 1 4 0\nop 0 all_reduce s\n");
  EXPECT_EQ(signatureOf("weft.mesh_shape = array<i64: 1, 3>, "),
            "weft-program 1\narena 128\nweights 64\nmesh 1 3\n"
            "input x 1 1 4 0\nop 0 all_reduce s\n");
}

TEST(ProgramSignatureTest, NoMeshLineForOneDevice) {
  std::string single = "weft-program 1\narena 128\nweights 64\n"
                       "input x 1 1 4 0\nop 0 all_reduce s\n";
  EXPECT_EQ(signatureOf(""), single);
  EXPECT_EQ(signatureOf("weft.mesh_shape = array<i64: 1, 1>, "), single);
}

//===----------------------------------------------------------------------===//
// Packages
//===----------------------------------------------------------------------===//

/// A scratch folder with a stand-in runtime (empty archives) and linker.
class PackageTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(fs::createUniqueDirectory("weft-package", dir));
    runtime.libraryDir = path("rt");
    runtime.includeDir = path("rt");
    ASSERT_FALSE(fs::create_directories(runtime.libraryDir));
    write("rt/libweft_rt.a", "");
    write("rt/libweft_rt_main.a", "");
    write("rt/weft_rt.h", "/* weft_rt.h */\n");
    // Writes its command line into the file after -o.
    runtime.linker = path("fake-ld");
    write("fake-ld", "#!/bin/sh\nout=\nprev=\nfor a in \"$@\"; do\n"
                     "  [ \"$prev\" = -o ] && out=$a\n  prev=$a\ndone\n"
                     "echo \"$@\" > \"$out\"\n");
    fs::setPermissions(runtime.linker,
                       fs::all_read | fs::all_exe | fs::owner_write);
    runtime.sonames = {"libexample.so.1"};
  }
  void TearDown() override { fs::remove_directories(dir); }

  std::string path(llvm::StringRef name) {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, name);
    return p.str().str();
  }
  void write(llvm::StringRef name, llvm::StringRef text) {
    std::error_code ec;
    llvm::raw_fd_ostream os(path(name), ec);
    ASSERT_FALSE(ec) << name.str();
    os << text;
  }
  static std::string sha256(llvm::StringRef bytes) {
    return llvm::toHex(
        llvm::SHA256::hash(llvm::arrayRefFromStringRef<uint8_t>(bytes)),
        /*LowerCase=*/true);
  }
  /// The manifest's "files" entry of out/`name`, as weftc indents it.
  std::string fileEntry(llvm::StringRef name) {
    std::string bytes = read(("out/" + name).str());
    return "    {\n      \"path\": \"" + name.str() + "\",\n      \"bytes\": " +
           std::to_string(bytes.size()) + ",\n      \"sha256\": \"" +
           sha256(bytes) + "\"\n    }";
  }
  std::string read(llvm::StringRef name) {
    auto buffer = llvm::MemoryBuffer::getFile(path(name));
    return buffer ? (*buffer)->getBuffer().str() : "<missing>";
  }

  /// A package of `numPrograms` programs over the devices `programOf`.
  PackageContents contents(std::vector<int> programOf,
                           std::vector<int64_t> mesh, int numPrograms) {
    PackageContents c;
    c.modelName = "m.onnx";
    c.cpu = "x86-64-v3";
    c.inputs = {{"x", "f32", {2, 3}}};
    c.outputs = {{"y", "f32", {2}}};
    c.meshShape = mesh;
    for (int p = 0; p < numPrograms; ++p) {
      std::string object = "p" + std::to_string(p) + ".o";
      write(object, "object");
      c.programs.push_back({path(object), 1024 * (p + 1), "sig"});
    }
    for (auto [k, p] : llvm::enumerate(programOf)) {
      std::string weights = "w" + std::to_string(k) + ".bin";
      write(weights, "weights of " + std::to_string(k));
      c.devices.push_back({p, path(weights), static_cast<int64_t>(k + 11),
                           "sha" + std::to_string(k)});
    }
    return c;
  }

  /// Writes `c` into OUT/ and collects the diagnostics in `errors`.
  LogicalResult writeOut(const PackageContents &c, bool asLibrary) {
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
      errors += d.str() + "\n";
      return success();
    });
    return writePackage(c, runtime, path("out"), asLibrary,
                        UnknownLoc::get(&context));
  }

  llvm::SmallString<256> dir;
  RuntimeLocation runtime;
  MLIRContext context;
  std::string errors;
};

// Version 2: one mesh of one device, and the device's stage and coordinates.
TEST_F(PackageTest, SingleDeviceManifestIsUnchanged) {
  ASSERT_TRUE(succeeded(writeOut(contents({0}, {}, 1), false))) << errors;
  std::string expected =
      std::string("{\n  \"format\": \"weft-package\",\n  \"version\": 2,\n"
                  "  \"weft_version\": \"") +
      WEFT_VERSION_STRING +
      "\",\n  \"model\": \"m.onnx\",\n  \"kind\": \"executable\",\n"
      "  \"target\": {\n    \"backend\": \"cpu\",\n    \"mcpu\": "
      "\"x86-64-v3\",\n    \"mattr\": \"\"\n  },\n"
      "  \"meshes\": [\n    {\n      \"name\": \"mesh\",\n      \"shape\": "
      "[\n        1\n      ],\n      \"devices\": [\n        0\n      ]\n"
      "    }\n  ],\n"
      "  \"devices\": [\n    {\n      \"id\": 0,\n      \"stage\": 0,\n"
      "      \"mesh\": \"mesh\",\n      \"coords\": [\n        0\n      ],\n"
      "      \"backend\": "
      "\"cpu\",\n      \"executable\": \"bin/dev0\",\n      \"weights\": "
      "\"weights/dev0.bin\",\n      \"arena_bytes\": 1024\n    }\n  ],\n"
      "  \"inputs\": [\n    {\n      \"name\": \"x\",\n      \"dtype\": "
      "\"f32\",\n      \"shape\": [\n        2,\n        3\n      ]\n    }\n"
      "  ],\n  \"outputs\": [\n    {\n      \"name\": \"y\",\n      "
      "\"dtype\": \"f32\",\n      \"shape\": [\n        2\n      ]\n    }\n"
      "  ],\n  \"weights\": [\n    {\n      \"file\": \"weights/dev0.bin\",\n"
      "      \"bytes\": 11,\n      \"sha256\": \"sha0\"\n    }\n  ],\n"
      "  \"files\": [\n" +
      fileEntry("bin/dev0") + ",\n" + fileEntry("run.sh") + ",\n" +
      // The weights' digest is the one weftc computed as it wrote them.
      "    {\n      \"path\": \"weights/dev0.bin\",\n      \"bytes\": 11,\n"
      "      \"sha256\": \"sha0\"\n    }\n  ],\n"
      "  \"runtime_libraries\": [\n    \"libexample.so.1\"\n  ]\n}\n";
  EXPECT_EQ(read("out/manifest.json"), expected);
  // The manifest's own digest, as sha256sum writes it.
  EXPECT_EQ(read("out/manifest.json.sha256"),
            sha256(read("out/manifest.json")) + "  manifest.json\n");
  EXPECT_EQ(read("out/run.sh"),
            "#!/bin/sh\n# Runs this package's model; options as `weft-run` "
            "(run.sh --help).\nhere=$(cd \"$(dirname \"$0\")\" && pwd)\n"
            "# OpenMP threads spin briefly at a barrier, then sleep (as "
            "weft-run sets it).\n"
            "if [ -z \"${OMP_WAIT_POLICY}${GOMP_SPINCOUNT}\" ]; then\n"
            "  GOMP_SPINCOUNT=10000; export GOMP_SPINCOUNT\n"
            "fi\n"
            "exec \"$here/bin/dev0\" --weights \"$here/weights/dev0.bin\" "
            "\"$@\"\n");
  EXPECT_EQ(read("out/weights/dev0.bin"), "weights of 0");
  EXPECT_NE(read("out/bin/dev0").find(path("p0.o")), std::string::npos);
  EXPECT_FALSE(fs::exists(path("out/plan.json")));
  EXPECT_FALSE(fs::exists(path("out.weftc-partial")));
}

TEST_F(PackageTest, DevicesShareExecutablesOfOneProgram) {
  PackageContents c = contents({0, 0, 1, 1}, {2, 2}, 2);
  c.planJson = "{\"devices\": 4}\n";
  ASSERT_TRUE(succeeded(writeOut(c, false))) << errors;

  // Program 0 is linked as bin/dev0, program 1 as bin/dev2.
  EXPECT_NE(read("out/bin/dev0").find(path("p0.o")), std::string::npos);
  EXPECT_NE(read("out/bin/dev2").find(path("p1.o")), std::string::npos);
  EXPECT_FALSE(fs::exists(path("out/bin/dev1")));
  EXPECT_FALSE(fs::exists(path("out/bin/dev3")));
  for (int k = 0; k < 4; ++k)
    EXPECT_EQ(read("out/weights/dev" + std::to_string(k) + ".bin"),
              "weights of " + std::to_string(k));
  EXPECT_EQ(read("out/plan.json"), "{\"devices\": 4}\n");

  llvm::Expected<llvm::json::Value> manifest =
      llvm::json::parse(read("out/manifest.json"));
  ASSERT_TRUE(bool(manifest)) << llvm::toString(manifest.takeError());
  const llvm::json::Object *root = manifest->getAsObject();
  ASSERT_TRUE(root);
  const llvm::json::Array *shape =
      root->getObject("mesh") ? root->getObject("mesh")->getArray("shape")
                              : nullptr;
  ASSERT_TRUE(shape);
  EXPECT_EQ(*shape, llvm::json::Array({2, 2}));
  EXPECT_EQ(root->getString("plan"), "plan.json");
  const llvm::json::Array *devices = root->getArray("devices");
  ASSERT_TRUE(devices && devices->size() == 4);
  const char *executables[] = {"bin/dev0", "bin/dev0", "bin/dev2", "bin/dev2"};
  for (int k = 0; k < 4; ++k) {
    const llvm::json::Object *device = (*devices)[k].getAsObject();
    ASSERT_TRUE(device);
    EXPECT_EQ(device->getInteger("id"), k);
    EXPECT_EQ(device->getString("executable"), executables[k]);
    EXPECT_EQ(device->getString("weights"),
              "weights/dev" + std::to_string(k) + ".bin");
    EXPECT_EQ(device->getInteger("arena_bytes"), k < 2 ? 1024 : 2048);
  }
  const llvm::json::Array *weights = root->getArray("weights");
  ASSERT_TRUE(weights && weights->size() == 4);
  const llvm::json::Object *w3 = (*weights)[3].getAsObject();
  EXPECT_EQ(w3->getString("file"), "weights/dev3.bin");
  EXPECT_EQ(w3->getInteger("bytes"), 14);
  EXPECT_EQ(w3->getString("sha256"), "sha3");

  std::string script = read("out/run.sh");
  EXPECT_NE(script.find("exec \"$run\" \"$here\" \"$@\""), std::string::npos)
      << script;
  EXPECT_NE(script.find("run=${WEFT_RUN:-weft-run}"), std::string::npos);
  EXPECT_FALSE(fs::exists(path("out.weftc-partial")));
}

TEST_F(PackageTest, MultiDeviceLibraryIsRefused) {
  EXPECT_TRUE(failed(writeOut(contents({0, 0}, {2}, 1), true)));
  EXPECT_NE(errors.find("multi-device libraries are not supported"),
            std::string::npos)
      << errors;
  EXPECT_FALSE(fs::exists(path("out")));
}

TEST_F(PackageTest, InconsistentContentsAreRefused) {
  EXPECT_TRUE(failed(writeOut(contents({0, 0, 0}, {2, 2}, 1), false)));
  EXPECT_NE(errors.find("the mesh [2, 2] does not have the package's 3 "
                        "devices"),
            std::string::npos)
      << errors;
  errors.clear();
  EXPECT_TRUE(failed(writeOut(contents({0, 2}, {2}, 2), false)));
  EXPECT_NE(errors.find("device 1 runs program 2 of 2"), std::string::npos)
      << errors;
  errors.clear();
  EXPECT_TRUE(failed(writeOut(contents({0, 0}, {2}, 2), false)));
  EXPECT_NE(errors.find("program 1 is run by no device"), std::string::npos)
      << errors;
  EXPECT_FALSE(fs::exists(path("out")));
}

TEST_F(PackageTest, OldPackageIsReplacedWhole) {
  ASSERT_TRUE(succeeded(writeOut(contents({0, 1}, {1, 2}, 2), false)))
      << errors;
  EXPECT_TRUE(fs::exists(path("out/bin/dev1")));
  ASSERT_TRUE(succeeded(writeOut(contents({0}, {1}, 1), false))) << errors;
  EXPECT_FALSE(fs::exists(path("out/bin/dev1")));
  EXPECT_FALSE(fs::exists(path("out/weights/dev1.bin")));
  // One device: no mesh shape (version 1's key) is left from the old one.
  EXPECT_EQ(read("out/manifest.json").find("\"mesh\": {"), std::string::npos);
}

} // namespace
