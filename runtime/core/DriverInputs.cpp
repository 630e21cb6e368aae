//===- DriverInputs.cpp - Finding the driver's tensor files ---------------===//
//
// Binds tensor files to the model's inputs and outputs: ONNX test-data
// folders (input_<i>.pb, output_<i>.pb) by the name a file carries, else by
// its position, and --input NAME=FILE options by name.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <dirent.h>

using namespace weft::rt;

namespace {

/// A file `<prefix><position>.<ext>` of a test-data folder.
struct NumberedFile {
  int64_t position;
  std::string path;
};

} // namespace

/// Lists `<prefix><n>.pb` and `<prefix><n>.npy` in `dir`, sorted by n.
static bool listNumberedFiles(const std::string &dir, const char *prefix,
                              std::vector<NumberedFile> &out,
                              std::string &error) {
  DIR *handle = opendir(dir.c_str());
  if (!handle) {
    error = "cannot open folder '" + dir + "': " + std::strerror(errno);
    return false;
  }
  size_t prefixSize = std::strlen(prefix);
  while (struct dirent *entry = readdir(handle)) {
    std::string name = entry->d_name;
    if (name.compare(0, prefixSize, prefix) != 0)
      continue;
    size_t dot = name.find('.', prefixSize);
    if (dot == std::string::npos || dot == prefixSize || dot - prefixSize > 9)
      continue;
    std::string digits = name.substr(prefixSize, dot - prefixSize);
    std::string ext = name.substr(dot);
    if (digits.find_first_not_of("0123456789") != std::string::npos ||
        (ext != ".pb" && ext != ".npy"))
      continue;
    out.push_back({std::stoll(digits), dir + "/" + name});
  }
  closedir(handle);
  std::sort(out.begin(), out.end(),
            [](const NumberedFile &a, const NumberedFile &b) {
              return a.position < b.position ||
                     (a.position == b.position && a.path < b.path);
            });
  for (size_t i = 1; i < out.size(); ++i)
    if (out[i].position == out[i - 1].position) {
      error = "both '" + out[i - 1].path + "' and '" + out[i].path + "' are " +
              prefix + std::to_string(out[i].position);
      return false;
    }
  return true;
}

static std::string describeSpecs(const std::vector<TensorSpec> &specs) {
  std::string out;
  for (const TensorSpec &spec : specs)
    out += (out.empty() ? "" : ", ") + spec.name + " " +
           formatTensorType(spec.dtype, spec.dims);
  return out.empty() ? "none" : out;
}

/// Reads the numbered files of `dir` and orders them as `specs`: a file
/// goes to the spec its name names, or (no name, or a name no spec has) to
/// the spec at its position.
static bool loadFolder(const std::string &dir, const char *kind,
                       const std::vector<TensorSpec> &specs,
                       std::vector<LoadedTensor> &out,
                       std::vector<std::string> &notes, std::string &error) {
  std::string prefix = std::string(kind) + "_";
  std::vector<NumberedFile> files;
  if (!listNumberedFiles(dir, prefix.c_str(), files, error))
    return false;
  std::vector<LoadedTensor> loaded(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    loaded[i].path = files[i].path;
    if (!readTensorFile(files[i].path, loaded[i].tensor, error))
      return false;
  }

  std::vector<int> fileOfSpec(specs.size(), -1);
  auto bind = [&](size_t spec, size_t file) {
    if (fileOfSpec[spec] >= 0) {
      error = "both '" + loaded[fileOfSpec[spec]].path + "' and '" +
              loaded[file].path + "' give " + kind + " '" + specs[spec].name +
              "'";
      return false;
    }
    fileOfSpec[spec] = static_cast<int>(file);
    return true;
  };
  std::vector<size_t> byPosition;
  for (size_t f = 0; f < loaded.size(); ++f) {
    const std::string &name = loaded[f].tensor.name;
    auto it = std::find_if(specs.begin(), specs.end(),
                           [&](const TensorSpec &s) { return s.name == name; });
    if (!name.empty() && it != specs.end()) {
      if (!bind(it - specs.begin(), f))
        return false;
      continue;
    }
    byPosition.push_back(f);
  }
  for (size_t f : byPosition) {
    int64_t position = files[f].position;
    if (position >= static_cast<int64_t>(specs.size())) {
      error = "'" + loaded[f].path + "' is " + kind + " " +
              std::to_string(position) +
              (loaded[f].tensor.name.empty()
                   ? std::string()
                   : " named '" + printableText(loaded[f].tensor.name) + "'") +
              ", but the model has " + std::to_string(specs.size()) + " " +
              kind + "s: " + describeSpecs(specs);
      return false;
    }
    if (!loaded[f].tensor.name.empty())
      notes.push_back("'" + loaded[f].path + "' names " + kind + " '" +
                      printableText(loaded[f].tensor.name) +
                      "', which the model lacks; "
                      "using it by position as " +
                      kind + " '" + specs[position].name + "'");
    if (!bind(static_cast<size_t>(position), f))
      return false;
  }
  for (size_t s = 0; s < specs.size(); ++s)
    if (fileOfSpec[s] < 0) {
      error = "'" + dir + "' has no file for " + kind + " '" + specs[s].name +
              "' (" + formatTensorType(specs[s].dtype, specs[s].dims) +
              "); expected " + prefix + std::to_string(s) + ".pb";
      return false;
    }
  out.clear();
  for (size_t s = 0; s < specs.size(); ++s)
    out.push_back(std::move(loaded[fileOfSpec[s]]));
  return true;
}

/// Binds --input NAME=FILE options to inputs. NAME may itself hold '=', so
/// the split is the first one whose left side is an input's name.
static bool loadInputOptions(const std::vector<std::string> &specsGiven,
                             const std::vector<TensorSpec> &specs,
                             std::vector<LoadedTensor> &out,
                             std::string &error) {
  std::vector<LoadedTensor> bound(specs.size());
  std::vector<bool> given(specs.size(), false);
  for (const std::string &option : specsGiven) {
    size_t equals = option.find('=');
    if (equals == std::string::npos || equals == 0) {
      error = "--input expects NAME=FILE, not '" + option + "'";
      return false;
    }
    int index = -1;
    for (size_t at = equals; at != std::string::npos && index < 0;
         at = option.find('=', at + 1))
      for (size_t s = 0; s < specs.size(); ++s)
        if (option.compare(0, at, specs[s].name) == 0 &&
            specs[s].name.size() == at) {
          index = static_cast<int>(s);
          equals = at;
          break;
        }
    if (index < 0) {
      error = "--input " + option + ": the model has no input '" +
              option.substr(0, equals) + "'; its inputs are " +
              describeSpecs(specs);
      return false;
    }
    if (given[index]) {
      error = "--input gives input '" + specs[index].name + "' twice";
      return false;
    }
    given[index] = true;
    bound[index].path = option.substr(equals + 1);
    if (bound[index].path.empty()) {
      error = "--input " + option + ": no file after '='";
      return false;
    }
    if (!readTensorFile(bound[index].path, bound[index].tensor, error))
      return false;
  }
  for (size_t s = 0; s < specs.size(); ++s)
    if (!given[s]) {
      error = "no --input for input '" + specs[s].name + "' (" +
              formatTensorType(specs[s].dtype, specs[s].dims) + ")";
      return false;
    }
  out = std::move(bound);
  return true;
}

bool weft::rt::loadInputs(const DriverOptions &options,
                          const ProgramSignature &signature,
                          std::vector<LoadedTensor> &out,
                          std::vector<std::string> &notes, std::string &error) {
  const std::vector<TensorSpec> &specs = signature.inputs;
  if (!options.inputsDir.empty()) {
    if (!loadFolder(options.inputsDir, "input", specs, out, notes, error))
      return false;
  } else if (!options.inputSpecs.empty() || !specs.empty()) {
    if (options.inputSpecs.empty()) {
      error = "no inputs given: pass --inputs DIR or --input NAME=FILE for " +
              describeSpecs(specs);
      return false;
    }
    if (!loadInputOptions(options.inputSpecs, specs, out, error))
      return false;
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    const Tensor &tensor = out[i].tensor;
    if (tensor.dtype == specs[i].dtype && tensor.dims == specs[i].dims)
      continue;
    error = "input '" + specs[i].name + "' expects " +
            formatTensorType(specs[i].dtype, specs[i].dims) + ", but '" +
            out[i].path + "' holds " +
            formatTensorType(tensor.dtype, tensor.dims);
    return false;
  }
  return true;
}

bool weft::rt::loadExpectedOutputs(const std::string &dir,
                                   const ProgramSignature &signature,
                                   std::vector<LoadedTensor> &out,
                                   std::vector<std::string> &notes,
                                   std::string &error) {
  return loadFolder(dir, "output", signature.outputs, out, notes, error);
}
