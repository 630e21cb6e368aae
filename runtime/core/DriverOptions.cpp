//===- DriverOptions.cpp - The driver's command line ----------------------===//
//
// Parses the options of bin/dev<k> by hand: the driver is linked into every
// device executable and must not pull in a command-line library.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

using namespace weft::rt;

static bool parseInteger(const std::string &text, int64_t low, int64_t high,
                         int64_t &out) {
  if (text.empty() || (text[0] != '-' && (text[0] < '0' || text[0] > '9')))
    return false;
  errno = 0;
  char *end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno == ERANGE || *end != '\0' || value < low || value > high)
    return false;
  out = value;
  return true;
}

static bool parseTolerance(const std::string &text, double &out) {
  if (text.empty())
    return false;
  errno = 0;
  char *end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (errno == ERANGE || *end != '\0' || !std::isfinite(value) || value < 0)
    return false;
  out = value;
  return true;
}

bool weft::rt::parseDriverOptions(int argc, char **argv, DriverOptions &out,
                                  std::string &error) {
  out = DriverOptions();
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      out.help = true;
      continue;
    }
    if (arg == "--version") {
      out.version = true;
      continue;
    }
    if (arg == "--quiet" || arg == "-q") {
      out.quiet = true;
      continue;
    }
    if (arg == "--fixed-threads") {
      out.fixedThreads = true;
      continue;
    }
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) {
      error = "unexpected argument '" + arg +
              "' (inputs are given with --inputs DIR or --input NAME=FILE)";
      return false;
    }
    // --name=value or --name value.
    std::string name = arg, value;
    bool hasValue = false;
    size_t equals = arg.find('=');
    if (equals != std::string::npos) {
      name = arg.substr(0, equals);
      value = arg.substr(equals + 1);
      hasValue = true;
    }
    static const char *withValue[] = {
        "--weights",       "--inputs", "--input",   "--output-dir",
        "--output-format", "--check",  "--rtol",    "--atol",
        "--bench",         "--warmup", "--threads", "--profile",
        "--stream",        "--outputs"};
    bool known = false;
    for (const char *option : withValue)
      known |= name == option;
    if (!known) {
      error = "unknown option '" + name + "' (see --help)";
      return false;
    }
    if (!hasValue) {
      if (i + 1 >= argc) {
        error = name + " needs a value (see --help)";
        return false;
      }
      value = argv[++i];
    }
    if (value.empty()) {
      error = name + " needs a non-empty value";
      return false;
    }

    int64_t number = 0;
    if (name == "--weights") {
      out.weightsPath = value;
    } else if (name == "--inputs") {
      if (!out.inputsDir.empty()) {
        error = "--inputs given twice";
        return false;
      }
      out.inputsDir = value;
    } else if (name == "--input") {
      out.inputSpecs.push_back(value);
    } else if (name == "--output-dir" || name == "--outputs") {
      out.outputDir = value;
    } else if (name == "--output-format") {
      if (value == "pb") {
        out.outputFormat = TensorFormat::OnnxPb;
      } else if (value == "npy") {
        out.outputFormat = TensorFormat::Npy;
      } else {
        error = "--output-format must be pb or npy, not '" + value + "'";
        return false;
      }
      out.outputFormatGiven = true;
    } else if (name == "--check") {
      out.checkDir = value;
    } else if (name == "--rtol" || name == "--atol") {
      double &slot = name == "--rtol" ? out.tolerance.rtol : out.tolerance.atol;
      if (!parseTolerance(value, slot)) {
        error = name + " must be a finite number >= 0, not '" + value + "'";
        return false;
      }
    } else if (name == "--bench") {
      if (!parseInteger(value, 1, 1000000000, number)) {
        error = "--bench must be a run count >= 1, not '" + value + "'";
        return false;
      }
      out.benchRuns = number;
    } else if (name == "--stream") {
      if (!parseInteger(value, 1, 1000000000, number)) {
        error = "--stream must be a request count >= 1, not '" + value + "'";
        return false;
      }
      out.streamRequests = number;
    } else if (name == "--warmup") {
      if (!parseInteger(value, 0, 1000000000, number)) {
        error = "--warmup must be a run count >= 0, not '" + value + "'";
        return false;
      }
      out.warmupRuns = number;
    } else if (name == "--threads") {
      if (!parseInteger(value, 1, 4096, number)) {
        error = "--threads must be between 1 and 4096, not '" + value + "'";
        return false;
      }
      out.threads = static_cast<int32_t>(number);
    } else if (name == "--profile") {
      out.profilePath = value;
    }
  }
  if (out.help || out.version)
    return true;
  if (!out.inputsDir.empty() && !out.inputSpecs.empty()) {
    error = "give inputs either with --inputs DIR or with --input "
            "NAME=FILE, not both";
    return false;
  }
  if (out.warmupRuns >= 0 && out.benchRuns == 0 && out.streamRequests == 0) {
    error = "--warmup only applies to --bench N and --stream N";
    return false;
  }
  if (out.streamRequests && out.benchRuns) {
    error = "give --stream N (requests with the pipeline full) or --bench N "
            "(one request at a time), not both";
    return false;
  }
  if (out.streamRequests && !out.profilePath.empty()) {
    error = "--profile applies to single runs and --bench, not --stream";
    return false;
  }
  if (out.outputFormatGiven && out.outputDir.empty()) {
    error = "--output-format only applies to --output-dir DIR";
    return false;
  }
  if (out.warmupRuns < 0)
    out.warmupRuns =
        std::min<int64_t>(std::max(out.benchRuns, out.streamRequests), 5);
  return true;
}

void weft::rt::printDriverUsage(FILE *out, const std::string &exeName,
                                const ProgramSignature *signature) {
  const char *exe = exeName.c_str();
  std::fprintf(
      out,
      "usage: %s [options]\n"
      "\n"
      "Runs this compiled model on tensors read from files and prints,\n"
      "writes or checks its outputs; --bench times it.\n"
      "\n"
      "Options:\n"
      "  --inputs DIR         an ONNX test-data folder (input_0.pb, "
      "input_1.pb, ...;\n"
      "                       .npy too); files are matched to inputs by the\n"
      "                       name they carry, else by position\n"
      "  --input NAME=FILE    one input from a .pb or .npy file "
      "(repeatable)\n"
      "  --weights FILE       the weights (default: ../weights/%s.bin next "
      "to this\n"
      "                       executable; ../weights/dev<rank>.bin for a "
      "mesh)\n"
      "  --output-dir DIR     write output_<i>.pb (or .npy) files into DIR\n"
      "                       (--outputs DIR is the same)\n"
      "  --output-format F    pb (ONNX TensorProto, default) or npy\n"
      "  --check DIR          compare the outputs with DIR/output_<i>.pb;\n"
      "                       exit 2 on a mismatch\n"
      "  --rtol R, --atol A   --check passes when |got - expected| <= A + R "
      "*\n"
      "                       |expected| (defaults 1e-3 and 1e-5); NaN only\n"
      "                       where NaN, integers exact\n"
      "  --bench N            time N runs; prints 'median X ms  min Y ms'\n"
      "  --warmup K           untimed runs (or requests) before them\n"
      "                       (default min(N, 5))\n"
      "  --stream N           run N requests back to back with several in\n"
      "                       flight (a pipeline's stages all busy); prints\n"
      "                       'throughput: X requests/s (N requests, p50 A ms,\n"
      "                       p99 B ms)'. --inputs DIR may hold request_<i>/\n"
      "                       folders, used in turn (else one set for all);\n"
      "                       --output-dir writes DIR/request_<i>/; --check\n"
      "                       DIR compares request i with DIR/request_<i>/\n"
      "                       (or with DIR itself)\n"
      "  --threads N          kernel threads at most (default: "
      "WEFT_NUM_THREADS,\n"
      "                       else all cores available); a run uses fewer "
      "when\n"
      "                       fewer were faster (a busy machine), measured "
      "as it goes\n"
      "  --fixed-threads      always exactly --threads N\n"
      "  --profile FILE       write a per-op Chrome trace (open it in\n"
      "                       ui.perfetto.dev or chrome://tracing)\n"
      "  --quiet              print no output values\n"
      "  --help, --version\n"
      "\n"
      "Examples:\n"
      "  %s --inputs test_data_set_0            # print the outputs\n"
      "  %s --inputs test_data_set_0 --check test_data_set_0\n"
      "  %s --input x=x.npy --output-dir out --output-format npy\n"
      "  %s --inputs test_data_set_0 --bench 100 --threads 8\n"
      "  %s --inputs test_data_set_0 --profile trace.json\n"
      "  %s --inputs requests --stream 200 --check expected\n",
      exe, exe, exe, exe, exe, exe, exe, exe);
  if (signature) {
    std::fprintf(out, "\nThis model:\n");
    for (const TensorSpec &spec : signature->inputs)
      std::fprintf(out, "  input  %s  %s\n", spec.name.c_str(),
                   formatTensorType(spec.dtype, spec.dims).c_str());
    for (const TensorSpec &spec : signature->outputs)
      std::fprintf(out, "  output %s  %s\n", spec.name.c_str(),
                   formatTensorType(spec.dtype, spec.dims).c_str());
    std::fprintf(out, "  %lld bytes of weights, %lld-byte arena, %zu ops\n",
                 static_cast<long long>(signature->weightsBytes),
                 static_cast<long long>(signature->arenaBytes),
                 signature->ops.size());
    if (signature->microbatches > 1)
      std::fprintf(out,
                   "  a batch of %lld microbatches: the program runs once per "
                   "block of %lld rows\n  (dimension 0) of the inputs, and "
                   "the outputs' blocks are joined\n",
                   static_cast<long long>(signature->microbatches),
                   static_cast<long long>(
                       signature->inputs.empty()
                           ? 0
                           : signature->inputs[0].dims[0] /
                                 signature->microbatches));
    std::string mesh;
    for (int64_t d : signature->mesh)
      mesh += (mesh.empty() ? "" : ",") + std::to_string(d);
    if (signature->pipeline() && signature->multiRank()) {
      std::string ranks;
      for (int32_t r : signature->meshWorldRanks)
        ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
      long long world = static_cast<long long>(signature->worldSize);
      std::fprintf(out,
                   "  one stage of a pipeline of %lld processes: the mesh "
                   "[%s] at world ranks\n  %s; run every stage with weft-run "
                   "PKG, or mpirun with one app context\n  per stage (one "
                   "process per world rank); world rank %d (the last\n  "
                   "stage's first) prints, writes and checks the outputs\n",
                   world, mesh.empty() ? "1" : mesh.c_str(), ranks.c_str(),
                   signature->collectorRank);
    } else if (signature->meshDevices > 1) {
      long long devices = static_cast<long long>(signature->meshDevices);
      std::fprintf(out,
                   "  one device of the mesh [%s]: run all %lld devices with "
                   "weft-run PKG,\n  or mpirun -np %lld (one process per "
                   "device, rank = mesh position);\n  rank 0 prints, writes "
                   "and checks the outputs\n",
                   mesh.c_str(), devices, devices);
    }
  }
  std::fprintf(out, "\nExit codes: 0 success, 1 bad options or files, 2 "
                    "--check mismatch,\n3 no usable device (GPU programs), 4 "
                    "another device of the mesh failed,\n70 internal error "
                    "(a bug in Weft).\n");
}
