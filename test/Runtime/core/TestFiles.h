//===- TestFiles.h - Temporary files for runtime tests ----------*- C++ -*-===//
//
// A scratch folder per test and helpers to write bytes into it.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TEST_RUNTIME_CORE_TESTFILES_H
#define WEFT_TEST_RUNTIME_CORE_TESTFILES_H

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <unistd.h>

namespace weft::rt::test {

/// A fresh folder under the test temp dir, removed with its files.
class ScratchDir {
public:
  ScratchDir() {
    std::string pattern = testing::TempDir() + "weft-rt-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (mkdtemp(buffer.data()))
      dir = buffer.data();
  }
  ~ScratchDir() {
    for (const std::string &file : files)
      unlink(file.c_str());
    if (!dir.empty())
      rmdir(dir.c_str());
  }

  /// Writes `bytes` to `name` in the folder and returns its path.
  std::string write(const std::string &name,
                    const std::vector<uint8_t> &bytes) {
    std::string path = track(name);
    FILE *file = std::fopen(path.c_str(), "wb");
    EXPECT_NE(file, nullptr) << path;
    if (file) {
      if (!bytes.empty())
        std::fwrite(bytes.data(), 1, bytes.size(), file);
      std::fclose(file);
    }
    return path;
  }
  std::string write(const std::string &name, const std::string &text) {
    return write(name, std::vector<uint8_t>(text.begin(), text.end()));
  }
  /// The path of `name` in the folder, removed at the end.
  std::string track(const std::string &name) {
    std::string path = dir + "/" + name;
    files.push_back(path);
    return path;
  }
  std::string read(const std::string &path) {
    std::string out;
    FILE *file = std::fopen(path.c_str(), "rb");
    if (!file)
      return out;
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0)
      out.append(buffer, n);
    std::fclose(file);
    return out;
  }

  std::string dir;

private:
  std::vector<std::string> files;
};

} // namespace weft::rt::test

#endif // WEFT_TEST_RUNTIME_CORE_TESTFILES_H
