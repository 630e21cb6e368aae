//===- TimelineRenderTest.cpp - Timeline SVGs through a real renderer -----===//
//
// A ctest, not a gtest: writes the timeline SVG (and trace JSON) of a
// simulated 4-stage x 4-microbatch pipeline on cpu:8 and of a 64-GPU one
// (dgx-h100x8:8, 4 stages of 16 GPUs) into the folder given as argument,
// renders each to PNG with rsvg-convert (Debian's librsvg2-bin) and checks
// that it rendered without a word on stderr, at the SVG's size, and that
// the PNG holds far more than a blank page of that size. Exits 77 (ctest's
// SKIP_RETURN_CODE) when rsvg-convert is missing.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/Simulator.h"
#include "weft/Plan/Timeline.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

using namespace weft::plan;

namespace {

struct Picture {
  std::string name;
  std::string cluster;
  std::vector<double> stageMs;
  int devicesPerStage;
  int microbatches;
  double allReduceBytes, bytesToNext;
};

/// Simulates `picture` and writes NAME.svg and NAME.json into `folder`;
/// returns the SVG's layout, or std::nullopt after printing why not.
std::optional<SvgLayout> writePicture(const Picture &picture,
                                      llvm::StringRef folder) {
  llvm::Expected<Cluster> cluster = loadCluster(picture.cluster);
  if (!cluster) {
    llvm::errs() << "FAIL: " << llvm::toString(cluster.takeError()) << "\n";
    return std::nullopt;
  }
  SimPipeline pipeline;
  pipeline.microbatchesPerRequest = picture.microbatches;
  pipeline.title = std::to_string(picture.stageMs.size()) + " stages x " +
                   std::to_string(picture.microbatches) + " microbatches on " +
                   picture.cluster + " (simulated, forward GPipe)";
  int next = 0;
  for (double ms : picture.stageMs) {
    SimPipelineStage stage;
    for (int d = 0; d < picture.devicesPerStage; ++d)
      stage.devices.push_back(next++);
    stage.computeSeconds = ms * 1e-3;
    stage.allReduceBytes = picture.allReduceBytes;
    stage.bytesToNext = picture.bytesToNext;
    pipeline.stages.push_back(stage);
  }
  llvm::Expected<SimResult> result =
      simulate(*cluster, buildGPipeProgram(pipeline));
  if (!result) {
    llvm::errs() << "FAIL: " << llvm::toString(result.takeError()) << "\n";
    return std::nullopt;
  }
  llvm::outs() << picture.name << ":\n" << describeSimResult(*result);
  for (const char *extension : {"svg", "json"}) {
    llvm::SmallString<256> path(folder);
    llvm::sys::path::append(path, picture.name + "." + extension);
    std::error_code error;
    llvm::raw_fd_ostream os(path, error);
    if (error) {
      llvm::errs() << "FAIL: cannot write " << path << ": " << error.message()
                   << "\n";
      return std::nullopt;
    }
    if (llvm::StringRef(extension) == "svg")
      writeTimelineSvg(result->timeline, os);
    else
      writeTimelineTrace(result->timeline, os);
  }
  return layoutTimelineSvg(result->timeline);
}

/// Big-endian 32-bit integer at `at`.
uint32_t readBigEndian(llvm::StringRef bytes, size_t at) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i)
    value = value << 8 | static_cast<uint8_t>(bytes[at + i]);
  return value;
}

/// Renders SVG `svg` to PNG `png`; returns the PNG's size in bytes, or -1
/// after printing why it failed (an exit code, anything on stderr, not a
/// PNG, or not `width` x `height`).
int64_t render(llvm::StringRef rsvg, llvm::StringRef svg, llvm::StringRef png,
               double width, double height) {
  llvm::SmallString<256> stderrPath(png);
  stderrPath += ".stderr";
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, std::nullopt,
                                                llvm::StringRef(stderrPath)};
  std::string message;
  int code = llvm::sys::ExecuteAndWait(
      rsvg, {rsvg, "--format=png", "-o", png, svg}, std::nullopt, redirects,
      /*SecondsToWait=*/120, /*MemoryLimit=*/0, &message);
  auto stderrText = llvm::MemoryBuffer::getFile(stderrPath);
  if (code != 0 || (stderrText && (*stderrText)->getBufferSize() > 0)) {
    llvm::errs() << "FAIL: rsvg-convert " << svg << " exited with " << code
                 << " " << message << "\n";
    if (stderrText)
      llvm::errs() << (*stderrText)->getBuffer() << "\n";
    return -1;
  }
  auto file = llvm::MemoryBuffer::getFile(png);
  if (!file) {
    llvm::errs() << "FAIL: no PNG at " << png << "\n";
    return -1;
  }
  llvm::StringRef bytes = (*file)->getBuffer();
  // The signature, then the IHDR chunk: length, "IHDR", width, height.
  if (bytes.size() < 24 || !bytes.starts_with("\x89PNG\r\n\x1a\n") ||
      bytes.substr(12, 4) != "IHDR") {
    llvm::errs() << "FAIL: " << png << " is not a PNG\n";
    return -1;
  }
  uint32_t w = readBigEndian(bytes, 16), h = readBigEndian(bytes, 20);
  if (w != static_cast<uint32_t>(std::lround(width)) ||
      h != static_cast<uint32_t>(std::lround(height))) {
    llvm::errs() << "FAIL: " << png << " is " << w << "x" << h
                 << ", the SVG says " << std::lround(width) << "x"
                 << std::lround(height) << "\n";
    return -1;
  }
  return static_cast<int64_t>(bytes.size());
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    llvm::errs() << "usage: " << argv[0] << " OUTPUT-FOLDER\n";
    return 2;
  }
  llvm::StringRef folder = argv[1];
  if (std::error_code error = llvm::sys::fs::create_directories(folder)) {
    llvm::errs() << "FAIL: cannot create " << folder << ": " << error.message()
                 << "\n";
    return 1;
  }
  const Picture pictures[] = {
      {"pipeline-cpu8", "cpu:8", {3.0, 4.0, 3.5, 2.5}, 2, 4, 1 << 20, 4 << 20},
      {"pipeline-gpu64",
       "dgx-h100x8:8",
       {2.0, 2.4, 2.2, 1.8},
       16,
       8,
       64 << 20,
       256 << 20},
  };
  std::vector<std::pair<std::string, SvgLayout>> written;
  for (const Picture &picture : pictures) {
    std::optional<SvgLayout> layout = writePicture(picture, folder);
    if (!layout)
      return 1;
    written.push_back({picture.name, *layout});
  }

  llvm::ErrorOr<std::string> rsvg =
      llvm::sys::findProgramByName("rsvg-convert");
  if (!rsvg) {
    llvm::outs() << "SKIP: rsvg-convert not found; install Debian's "
                    "librsvg2-bin (scripts/install-deps.sh lists it) to "
                    "render the timelines written to "
                 << folder << "\n";
    return 77;
  }
  int failures = 0;
  for (const auto &[name, layout] : written) {
    llvm::SmallString<256> svg(folder), png(folder), blankSvg(folder),
        blankPng(folder);
    llvm::sys::path::append(svg, name + ".svg");
    llvm::sys::path::append(png, name + ".png");
    llvm::sys::path::append(blankSvg, name + "-blank.svg");
    llvm::sys::path::append(blankPng, name + "-blank.png");
    {
      // A white page of the same size: what an empty render compresses to.
      std::error_code error;
      llvm::raw_fd_ostream os(blankSvg, error);
      os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << layout.width
         << "\" height=\"" << layout.height
         << "\"><rect width=\"100%\" height=\"100%\" fill=\"#fff\"/></svg>\n";
    }
    int64_t size = render(*rsvg, svg, png, layout.width, layout.height);
    int64_t blank =
        render(*rsvg, blankSvg, blankPng, layout.width, layout.height);
    if (size < 0 || blank < 0) {
      ++failures;
      continue;
    }
    // Bars, text and grid compress far worse than a blank page.
    if (size < 10 * blank || size < 20000) {
      llvm::errs() << "FAIL: " << png << " has only " << size
                   << " bytes (a blank page: " << blank << ")\n";
      ++failures;
      continue;
    }
    llvm::outs() << "rendered " << png << ": " << std::lround(layout.width)
                 << "x" << std::lround(layout.height) << ", " << size
                 << " bytes (blank " << blank << ")\n";
  }
  return failures == 0 ? 0 : 1;
}
