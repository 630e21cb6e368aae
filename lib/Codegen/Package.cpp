//===- Package.cpp - Writing compiled packages ----------------------------===//
//
// Links device programs with the runtime through the system linker and
// writes the package folder: manifest, executables or library, each
// device's weights, the plan and the run script. Everything goes to a
// temporary folder first.
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/Package.h"
#include "weft/Codegen/RuntimeConfig.h"
#include "weft/Support/WaitPolicy.h"
#include "weft/Version.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InterleavedRange.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace mlir;
using namespace mlir::weft;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

static std::vector<std::string> splitList(StringRef text) {
  SmallVector<StringRef> parts;
  text.split(parts, ';', -1, /*KeepEmpty=*/false);
  return std::vector<std::string>(parts.begin(), parts.end());
}

RuntimeLocation mlir::weft::findRuntime(const char *argv0) {
  RuntimeLocation runtime;
  runtime.linker = WEFT_LINKER;
  runtime.systemLibraries = splitList(WEFT_RUNTIME_SYSTEM_LIBRARIES);
  runtime.sonames = splitList(WEFT_RUNTIME_SONAMES);
  runtime.cudaLibraries = splitList(WEFT_CUDA_SYSTEM_LIBRARIES);
  runtime.mpiLibraries = splitList(WEFT_MPI_LIBRARIES);
  runtime.cudaSonames = splitList(WEFT_CUDA_SONAMES);
  // A mesh of GPUs needs NCCL and MPI; one GPU neither.
  runtime.meshLibraries = splitList(WEFT_NCCL_LIBRARY);
  runtime.meshLibraries.insert(runtime.meshLibraries.end(),
                               runtime.mpiLibraries.begin(),
                               runtime.mpiLibraries.end());
  runtime.libraryDir = WEFT_RUNTIME_BUILD_LIBRARY_DIR;
  runtime.includeDir = WEFT_RUNTIME_SOURCE_INCLUDE_DIR;
  // Installed: <prefix>/bin/weftc next to <prefix>/lib/weft.
  std::string self =
      llvm::sys::fs::getMainExecutable(argv0, (void *)&findRuntime);
  if (!self.empty()) {
    SmallString<256> prefix(path::parent_path(path::parent_path(self)));
    SmallString<256> lib(prefix), include(prefix);
    path::append(lib, "lib", "weft", "libweft_rt.a");
    path::append(include, "include", "weft", "runtime");
    if (fs::exists(lib)) {
      runtime.libraryDir = path::parent_path(lib).str();
      runtime.includeDir = include.str().str();
    }
  }
  if (const char *dir = std::getenv("WEFT_RUNTIME_DIR")) {
    runtime.libraryDir = dir;
  }
  return runtime;
}

/// Runs the linker; on failure reports its command line and output.
static LogicalResult runLinker(const RuntimeLocation &runtime,
                               ArrayRef<std::string> args, Location loc,
                               StringRef scratchDir) {
  SmallVector<StringRef> argv{runtime.linker};
  for (const std::string &arg : args)
    argv.push_back(arg);
  SmallString<256> log(scratchDir);
  path::append(log, "link.log");
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(runtime.linker, argv, std::nullopt,
                                     redirects, 0, 0, &error);
  if (rc == 0)
    return success();
  std::string output;
  if (auto buffer = llvm::MemoryBuffer::getFile(log))
    output = (*buffer)->getBuffer().str();
  return emitError(loc) << "linking failed ("
                        << (error.empty() ? "exit code " + std::to_string(rc)
                                          : error)
                        << "): " << llvm::join(argv, " ") << "\n"
                        << output
                        << "\nthis is a bug in Weft or a broken "
                           "installation; please report it";
}

static void writeTensors(llvm::json::OStream &json, StringRef key,
                         ArrayRef<TensorDescription> tensors) {
  json.attributeArray(key, [&] {
    for (const TensorDescription &t : tensors)
      json.object([&] {
        json.attribute("name", t.name);
        json.attribute("dtype", t.dtype);
        json.attributeArray("shape", [&] {
          for (int64_t d : t.shape)
            json.value(d);
        });
      });
  });
}

/// The number of devices of `contents`' mesh (1 without one).
static int64_t meshSize(const PackageContents &contents) {
  int64_t n = 1;
  for (int64_t d : contents.meshShape)
    n *= d;
  return n;
}

/// bin/dev<k> with k the first device that runs program `p`.
static std::vector<std::string>
executableNames(const PackageContents &contents) {
  std::vector<std::string> names(contents.programs.size());
  for (auto [k, device] : llvm::enumerate(contents.devices))
    if (names[device.program].empty())
      names[device.program] = "dev" + std::to_string(k);
  return names;
}

/// One file of a package and its checksum, for the manifest's "files".
struct FileDigest {
  std::string path; // Relative to the package, with '/'.
  uint64_t bytes = 0;
  std::string sha256;
};

/// The package's meshes: a pipeline's, or one over every device.
static std::vector<PackageContents::Mesh>
packageMeshes(const PackageContents &contents) {
  if (!contents.meshes.empty())
    return contents.meshes;
  PackageContents::Mesh mesh;
  mesh.name = "mesh";
  mesh.shape = contents.meshShape.empty() ? std::vector<int64_t>{1}
                                          : contents.meshShape;
  for (size_t k = 0; k < contents.devices.size(); ++k)
    mesh.devices.push_back(static_cast<int64_t>(k));
  return {mesh};
}

/// Row-major coordinates of device `k` in `mesh` (which holds it).
static std::vector<int64_t> coordinatesOf(const PackageContents::Mesh &mesh,
                                          size_t k) {
  int64_t position = llvm::find(mesh.devices, static_cast<int64_t>(k)) -
                     mesh.devices.begin();
  std::vector<int64_t> coords(mesh.shape.size(), 0);
  for (size_t a = mesh.shape.size(); a-- > 0;) {
    coords[a] = position % mesh.shape[a];
    position /= mesh.shape[a];
  }
  return coords;
}

static std::string manifestText(const PackageContents &contents,
                                const RuntimeLocation &runtime, bool asLibrary,
                                const std::vector<FileDigest> &files) {
  std::vector<std::string> executables = executableNames(contents);
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream json(os, 2);
  json.object([&] {
    json.attribute("format", "weft-package");
    // Version 2 lists the meshes and each device's stage, mesh and
    // coordinates (weft-run reads versions 1 and 2).
    json.attribute("version", 2);
    json.attribute("weft_version", WEFT_VERSION_STRING);
    json.attribute("model", contents.modelName);
    json.attribute("kind", asLibrary ? "library" : "executable");
    json.attributeObject("target", [&] {
      json.attribute("backend", contents.backend);
      json.attribute("mcpu", contents.cpu);
      json.attribute("mattr", contents.features);
      if (contents.backend == "cuda")
        json.attributeArray("gpu_archs", [&] {
          for (int arch : contents.gpuArchs)
            json.value("sm_" + std::to_string(arch));
        });
    });
    if (contents.devices.size() > 1)
      json.attributeObject("mesh", [&] {
        json.attributeArray("shape", [&] {
          for (int64_t d : contents.meshShape)
            json.value(d);
        });
      });
    std::vector<PackageContents::Mesh> meshes = packageMeshes(contents);
    json.attributeArray("meshes", [&] {
      for (const PackageContents::Mesh &mesh : meshes)
        json.object([&] {
          json.attribute("name", mesh.name);
          json.attributeArray("shape", [&] {
            for (int64_t d : mesh.shape)
              json.value(d);
          });
          json.attributeArray("devices", [&] {
            for (int64_t d : mesh.devices)
              json.value(d);
          });
        });
    });
    if (!contents.planJson.empty())
      json.attribute("plan", "plan.json");
    json.attributeArray("devices", [&] {
      for (auto [k, device] : llvm::enumerate(contents.devices))
        json.object([&] {
          json.attribute("id", static_cast<int64_t>(k));
          json.attribute("stage", static_cast<int64_t>(device.mesh));
          json.attribute("mesh", meshes[device.mesh].name);
          json.attributeArray("coords", [&] {
            for (int64_t c : coordinatesOf(meshes[device.mesh], k))
              json.value(c);
          });
          json.attribute("backend", contents.backend);
          if (asLibrary)
            json.attribute("library", "lib/libweft_model.so");
          else
            json.attribute("executable", "bin/" + executables[device.program]);
          json.attribute("weights", "weights/dev" + std::to_string(k) + ".bin");
          json.attribute("arena_bytes",
                         contents.programs[device.program].arenaBytes);
        });
    });
    writeTensors(json, "inputs", contents.inputs);
    writeTensors(json, "outputs", contents.outputs);
    json.attributeArray("weights", [&] {
      for (auto [k, device] : llvm::enumerate(contents.devices))
        json.object([&] {
          json.attribute("file", "weights/dev" + std::to_string(k) + ".bin");
          json.attribute("bytes", device.weightsBytes);
          json.attribute("sha256", device.weightsSha256);
        });
    });
    // Every file but the manifest, whose own digest is beside it
    // (manifest.json.sha256): weft-run checks them before a launch.
    json.attributeArray("files", [&] {
      for (const FileDigest &file : files)
        json.object([&] {
          json.attribute("path", file.path);
          json.attribute("bytes", static_cast<int64_t>(file.bytes));
          json.attribute("sha256", file.sha256);
        });
    });
    json.attributeArray("runtime_libraries", [&] {
      // A GPU package needs the CUDA installation's libraries (and MPI's
      // for a mesh), nothing else but the C library.
      if (contents.backend == "cuda") {
        bool mesh = meshSize(contents) > 1;
        for (auto [i, soname] : llvm::enumerate(runtime.cudaSonames))
          if (mesh || i + 1 < runtime.cudaSonames.size())
            json.value(soname);
        if (mesh)
          for (const std::string &lib : runtime.mpiLibraries)
            json.value(path::filename(lib));
        for (const char *lib : {"libm.so.6", "libc.so.6"})
          json.value(lib);
        return;
      }
      for (const std::string &soname : runtime.sonames)
        json.value(soname);
    });
  });
  os << "\n";
  return text;
}

static std::string libraryHeader(const PackageContents &contents) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "/* weft_model.h: the compiled model " << contents.modelName
     << " as a library.\n"
        " * Generated by weftc " WEFT_VERSION_STRING ".\n"
        " *\n"
        " *   weft_rt_context *ctx; weft_rt_model *model;\n"
        " *   weft_rt_context_create(&ctx);\n"
        " *   weft_rt_model_create(ctx, &weft_program, "
        "\"weights/dev0.bin\", &model);\n"
        " *   memcpy(weft_rt_model_input_data(model, 0), x, bytes);\n"
        " *   weft_rt_model_run(model);\n"
        " *   y = weft_rt_model_output_data(model, 0);\n"
        " *   weft_rt_model_destroy(model); weft_rt_context_destroy(ctx);\n"
        " *\n"
        " * Every call returns a status; weft_rt_context_error(ctx) says "
        "why.\n"
        " * Link: -Llib -lweft_model (and run with lib/ on the library "
        "path).\n *\n";
  for (size_t i = 0; i < contents.inputs.size(); ++i)
    os << " * input " << i << ": " << contents.inputs[i].name << " "
       << contents.inputs[i].dtype << " ["
       << llvm::join(
              llvm::map_range(contents.inputs[i].shape,
                              [](int64_t d) { return std::to_string(d); }),
              ", ")
       << "]\n";
  for (size_t i = 0; i < contents.outputs.size(); ++i)
    os << " * output " << i << ": " << contents.outputs[i].name << " "
       << contents.outputs[i].dtype << " ["
       << llvm::join(
              llvm::map_range(contents.outputs[i].shape,
                              [](int64_t d) { return std::to_string(d); }),
              ", ")
       << "]\n";
  os << " */\n#ifndef WEFT_MODEL_H\n#define WEFT_MODEL_H\n\n"
        "#include \"weft_rt.h\"\n\n#ifdef __cplusplus\nextern \"C\" {\n"
        "#endif\n\n/* The compiled program; pass it to weft_rt_model_create. "
        "*/\nextern const weft_rt_program weft_program;\n\n"
        "#ifdef __cplusplus\n}\n#endif\n\n#endif /* WEFT_MODEL_H */\n";
  return text;
}

static LogicalResult writeText(StringRef file, StringRef text, Location loc,
                               bool executable = false) {
  std::error_code ec;
  {
    llvm::raw_fd_ostream os(file, ec, fs::OF_Text);
    if (ec)
      return emitError(loc) << "cannot write " << file << ": " << ec.message();
    os << text;
    os.close();
    if (os.has_error()) {
      os.clear_error();
      return emitError(loc) << "writing " << file << " failed";
    }
  }
  if (executable)
    fs::setPermissions(file, fs::all_read | fs::all_exe | fs::owner_write);
  return success();
}

/// The SHA-256 of `file` in lower-case hex, and its size; false with
/// `error` when it cannot be read.
static bool digestFile(StringRef file, FileDigest &out, std::string &error) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(file, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer) {
    error = "cannot read " + file.str() + ": " + buffer.getError().message();
    return false;
  }
  StringRef bytes = (*buffer)->getBuffer();
  out.bytes = bytes.size();
  out.sha256 = llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef<
                               uint8_t>(bytes)),
                           /*LowerCase=*/true);
  return true;
}

/// Every regular file under `root` (but the manifest) with its digest, in
/// path order, so that the manifest is the same for the same package.
/// `known` gives digests already computed (the weights, which may be large).
static LogicalResult
digestPackage(StringRef root, const std::map<std::string, FileDigest> &known,
              std::vector<FileDigest> &out, Location loc) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, ec), end; it != end && !ec;
       it.increment(ec)) {
    if (it->type() != fs::file_type::regular_file)
      continue;
    StringRef full = it->path();
    std::string relative = full.drop_front(root.size()).ltrim('/').str();
    if (relative == "manifest.json")
      continue;
    FileDigest digest;
    auto found = known.find(relative);
    if (found != known.end()) {
      digest = found->second;
    } else {
      std::string error;
      if (!digestFile(full, digest, error))
        return emitError(loc) << error;
    }
    digest.path = relative;
    out.push_back(std::move(digest));
  }
  if (ec)
    return emitError(loc) << "cannot list " << root << ": " << ec.message();
  llvm::sort(out, [](const FileDigest &a, const FileDigest &b) {
    return a.path < b.path;
  });
  return success();
}

/// Checks that `contents` describes a package weftc can write: programs
/// and devices that refer to each other, a mesh of as many devices.
static LogicalResult checkContents(const PackageContents &contents,
                                   bool asLibrary, Location loc) {
  if (contents.devices.empty() || contents.programs.empty())
    return emitError(loc) << "a package needs at least one program and one "
                             "device";
  if (llvm::any_of(contents.meshShape, [](int64_t d) { return d < 1; }) ||
      meshSize(contents) != static_cast<int64_t>(contents.devices.size()))
    return emitError(loc) << "the mesh ["
                          << llvm::interleaved(contents.meshShape)
                          << "] does not have the package's "
                          << contents.devices.size() << " devices";
  std::vector<PackageContents::Mesh> meshes = packageMeshes(contents);
  for (auto [k, device] : llvm::enumerate(contents.devices))
    if (device.mesh < 0 || static_cast<size_t>(device.mesh) >= meshes.size() ||
        !llvm::is_contained(meshes[device.mesh].devices,
                            static_cast<int64_t>(k)))
      return emitError(loc) << "internal: device " << k
                            << " is not in its mesh " << device.mesh;
  std::vector<bool> used(contents.programs.size(), false);
  for (auto [k, device] : llvm::enumerate(contents.devices)) {
    if (device.program < 0 ||
        static_cast<size_t>(device.program) >= contents.programs.size())
      return emitError(loc)
             << "device " << k << " runs program " << device.program << " of "
             << contents.programs.size();
    used[device.program] = true;
  }
  for (auto [p, isUsed] : llvm::enumerate(used))
    if (!isUsed)
      return emitError(loc) << "program " << p << " is run by no device";
  if (asLibrary && contents.devices.size() > 1)
    return emitError(loc)
           << "a library package (--emit=lib) holds one device's program, "
              "but this model is compiled for "
           << contents.devices.size()
           << " devices: multi-device libraries are not supported (the "
              "embedding API runs a single device); use --emit=exe";
  return success();
}

/// The run script: the device program itself for one device, weft-run
/// (which launches one process per device) for more.
static std::string runScript(const PackageContents &contents) {
  if (contents.devices.size() == 1)
    return "#!/bin/sh\n"
           "# Runs this package's model; options as `weft-run` "
           "(run.sh --help).\n"
           "here=$(cd \"$(dirname \"$0\")\" && pwd)\n"
           "# OpenMP threads spin briefly at a barrier, then sleep (as "
           "weft-run sets it).\n"
           "if [ -z \"${OMP_WAIT_POLICY}${GOMP_SPINCOUNT}\" ]; then\n"
           "  GOMP_SPINCOUNT=" +
           std::string(::weft::kOpenMpSpinCount) +
           "; export GOMP_SPINCOUNT\n"
           "fi\n"
           "exec \"$here/bin/dev0\" --weights \"$here/weights/dev0.bin\" "
           "\"$@\"\n";
  std::string devices = std::to_string(contents.devices.size());
  return "#!/bin/sh\n"
         "# Runs this package's model on its " +
         devices +
         " devices with weft-run (one process per device); options as "
         "`weft-run` (run.sh --help).\n"
         "here=$(cd \"$(dirname \"$0\")\" && pwd)\n"
         "run=${WEFT_RUN:-weft-run}\n"
         "if ! command -v \"$run\" >/dev/null 2>&1; then\n"
         "  echo \"run.sh: this package runs on " +
         devices +
         " devices and needs weft-run: put it on PATH or set "
         "WEFT_RUN=/path/to/weft-run\" >&2\n"
         "  exit 1\n"
         "fi\n"
         "exec \"$run\" \"$here\" \"$@\"\n";
}

LogicalResult mlir::weft::writePackage(const PackageContents &contents,
                                       const RuntimeLocation &runtime,
                                       StringRef outDir, bool asLibrary,
                                       Location loc) {
  if (failed(checkContents(contents, asLibrary, loc)))
    return failure();
  SmallString<256> staging(outDir);
  path::remove_dots(staging, /*remove_dot_dot=*/true);
  while (path::is_separator(staging.back()) && staging.size() > 1)
    staging.pop_back();
  std::string finalDir = staging.str().str();
  staging += ".weftc-partial";
  fs::remove_directories(staging);
  auto cleanupAndFail = [&]() {
    fs::remove_directories(staging);
    return failure();
  };
  auto sub = [&](StringRef a, StringRef b = "") {
    SmallString<256> p(staging);
    path::append(p, a);
    if (!b.empty())
      path::append(p, b);
    return p.str().str();
  };
  for (StringRef dir : asLibrary
                           ? SmallVector<StringRef>{"lib", "include", "weights"}
                           : SmallVector<StringRef>{"bin", "weights"})
    if (std::error_code ec = fs::create_directories(sub(dir))) {
      emitError(loc) << "cannot create " << sub(dir) << ": " << ec.message();
      return cleanupAndFail();
    }

  bool cuda = contents.backend == "cuda";
  std::string rtLib = runtime.libraryDir + "/libweft_rt.a";
  std::string rtMain = runtime.libraryDir + "/libweft_rt_main.a";
  // A GPU program's executable: the CUDA backend's main and library first.
  std::string cudaLib = runtime.libraryDir + "/cuda/libWeftRuntimeCuda.a";
  if (cuda) {
    rtMain = runtime.libraryDir + (meshSize(contents) > 1
                                       ? "/cuda/libWeftRuntimeCudaMeshMain.a"
                                       : "/cuda/libWeftRuntimeCudaMain.a");
    if (asLibrary || !fs::exists(rtMain) || !fs::exists(cudaLib) ||
        runtime.cudaLibraries.empty()) {
      emitError(loc) << (asLibrary
                             ? "a CUDA package is executables only"
                             : "the Weft runtime in " + runtime.libraryDir +
                                   " has no CUDA backend (Weft was "
                                   "built without CUDA)");
      return cleanupAndFail();
    }
  }
  if (!fs::exists(rtLib) || (!asLibrary && !fs::exists(rtMain))) {
    emitError(loc) << "the Weft runtime is not in " << runtime.libraryDir
                   << " (set WEFT_RUNTIME_DIR to the folder with "
                      "libweft_rt.a)";
    return cleanupAndFail();
  }

  // Each distinct program is linked once.
  std::vector<std::string> executables = executableNames(contents);
  for (auto [p, program] : llvm::enumerate(contents.programs)) {
    std::vector<std::string> args{"-fuse-ld=lld", "-Wl,--build-id=none",
                                  "-Wl,-O1", "-o"};
    if (asLibrary) {
      args.push_back(sub("lib", "libweft_model.so"));
      args.insert(args.begin(), {"-shared", "-Wl,-soname,libweft_model.so"});
      args.push_back(program.objectPath);
      args.push_back("-Wl,--whole-archive");
      args.push_back(rtLib);
      args.push_back("-Wl,--no-whole-archive");
    } else {
      args.push_back(sub("bin", executables[p]));
      args.push_back(program.objectPath);
      args.push_back(rtMain);
      if (cuda)
        args.push_back(cudaLib);
      args.push_back(rtLib);
    }
    if (cuda) {
      // Only CUDA's libraries (and MPI's for a mesh): no OpenBLAS, oneDNN
      // or OpenMP, which the GPU's kernels do not use, and the C++ runtime
      // statically, so that the package runs on a machine with CUDA alone.
      for (const std::string &lib : runtime.cudaLibraries)
        args.push_back(lib);
      if (meshSize(contents) > 1)
        for (const std::string &lib : runtime.meshLibraries)
          args.push_back(lib);
      for (const char *arg :
           {"-Wl,-Bstatic", "-lstdc++", "-Wl,-Bdynamic", "-lm", "-lpthread"})
        args.push_back(arg);
    } else {
      for (const std::string &lib : runtime.systemLibraries)
        args.push_back(lib);
    }
    if (failed(runLinker(runtime, args, loc, staging)))
      return cleanupAndFail();
    fs::remove(sub("link.log"));
  }

  for (auto [k, device] : llvm::enumerate(contents.devices)) {
    std::string name = "dev" + std::to_string(k) + ".bin";
    if (std::error_code ec =
            fs::copy_file(device.weightsPath, sub("weights", name))) {
      emitError(loc) << "cannot copy device " << k << "'s weights from "
                     << device.weightsPath << ": " << ec.message();
      return cleanupAndFail();
    }
  }
  if (!contents.planJson.empty() &&
      failed(writeText(sub("plan.json"), contents.planJson, loc)))
    return cleanupAndFail();
  if (asLibrary) {
    if (std::error_code ec = fs::copy_file(runtime.includeDir + "/weft_rt.h",
                                           sub("include", "weft_rt.h"))) {
      emitError(loc) << "cannot copy weft_rt.h: " << ec.message();
      return cleanupAndFail();
    }
    if (failed(writeText(sub("include", "weft_model.h"),
                         libraryHeader(contents), loc)))
      return cleanupAndFail();
  } else {
    if (failed(writeText(sub("run.sh"), runScript(contents), loc,
                         /*executable=*/true)))
      return cleanupAndFail();
  }

  // The manifest last: it lists every other file with its checksum.
  std::map<std::string, FileDigest> knownDigests;
  for (auto [k, device] : llvm::enumerate(contents.devices)) {
    FileDigest digest;
    digest.bytes = static_cast<uint64_t>(device.weightsBytes);
    digest.sha256 = device.weightsSha256;
    if (!digest.sha256.empty())
      knownDigests["weights/dev" + std::to_string(k) + ".bin"] = digest;
  }
  std::vector<FileDigest> files;
  if (failed(digestPackage(staging, knownDigests, files, loc)))
    return cleanupAndFail();
  std::string manifest = manifestText(contents, runtime, asLibrary, files);
  std::string manifestDigest = llvm::toHex(
      llvm::SHA256::hash(llvm::arrayRefFromStringRef<uint8_t>(manifest)),
      /*LowerCase=*/true);
  // sha256sum's format: `sha256sum -c manifest.json.sha256` checks it too.
  if (failed(writeText(sub("manifest.json"), manifest, loc)) ||
      failed(writeText(sub("manifest.json.sha256"),
                       manifestDigest + "  manifest.json\n", loc)))
    return cleanupAndFail();

  // Replace an old package only now that the new one is whole.
  if (fs::exists(finalDir)) {
    SmallString<256> manifest(finalDir);
    path::append(manifest, "manifest.json");
    if (!fs::exists(manifest) && !fs::is_directory(finalDir)) {
      emitError(loc) << finalDir << " exists and is not a package folder";
      return cleanupAndFail();
    }
    bool empty = true;
    std::error_code ec;
    for (fs::directory_iterator it(finalDir, ec), end; it != end && !ec;
         it.increment(ec)) {
      empty = false;
      break;
    }
    if (!empty && !fs::exists(manifest))
      return emitError(loc) << finalDir
                            << " is not empty and holds no package "
                               "(manifest.json); refusing to replace it",
             cleanupAndFail();
    fs::remove_directories(finalDir);
  }
  if (std::error_code ec = fs::rename(staging, finalDir)) {
    emitError(loc) << "cannot move the package to " << finalDir << ": "
                   << ec.message();
    return cleanupAndFail();
  }
  return success();
}
