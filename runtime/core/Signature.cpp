//===- Signature.cpp - Parse and validate a program's signature ----------===//
//
// The signature text is compiled into the program by weftc, but a runtime
// that trusts it blindly would turn a code generation bug into memory
// corruption, so every record is checked against the others.
//
//===----------------------------------------------------------------------===//

#include "Signature.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

using namespace weft::rt;

/// Deepest rank a signature may give; ONNX has no limit but nothing real
/// comes near it, and it bounds what a malformed record can make us store.
static constexpr int64_t kMaxRank = 64;

/// Most slots a peer table may have: as many as transfer tags.
static constexpr int64_t kMaxPeerSlots = int64_t(1) << 20;

/// Decimal int64 without sign games: "-0" is fine, "+1", "1x", "" are not.
static bool parseInt64(const std::string &text, int64_t &out) {
  if (text.empty())
    return false;
  size_t digitsStart = text[0] == '-' ? 1 : 0;
  if (digitsStart == text.size())
    return false;
  for (size_t i = digitsStart; i < text.size(); ++i)
    if (text[i] < '0' || text[i] > '9')
      return false;
  errno = 0;
  char *end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno == ERANGE || *end != '\0')
    return false;
  out = value;
  return true;
}

static int hexValue(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

bool weft::rt::unescapeSignatureName(const std::string &text,
                                     std::string &out) {
  out.clear();
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size())
      return false;
    int high = hexValue(text[i + 1]);
    int low = hexValue(text[i + 2]);
    if (high < 0 || low < 0)
      return false;
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return true;
}

weft_rt_dtype weft::rt::parseDTypeField(const std::string &text) {
  int64_t code = 0;
  if (parseInt64(text, code))
    return code > 0 && code <= INT32_MAX &&
                   weft_rt_dtype_size(static_cast<weft_rt_dtype>(code)) != 0
               ? static_cast<weft_rt_dtype>(code)
               : 0;
  static const weft_rt_dtype known[] = {WEFT_RT_F32, WEFT_RT_U8,  WEFT_RT_I8,
                                        WEFT_RT_I32, WEFT_RT_I64, WEFT_RT_BOOL,
                                        WEFT_RT_F16, WEFT_RT_F64, WEFT_RT_BF16};
  for (weft_rt_dtype dtype : known)
    if (text == weft_rt_dtype_name(dtype))
      return dtype;
  return 0;
}

std::string weft::rt::formatTensorType(weft_rt_dtype dtype,
                                       const std::vector<int64_t> &dims) {
  std::string out = weft_rt_dtype_name(dtype);
  out += '[';
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i)
      out += ',';
    out += std::to_string(dims[i]);
  }
  out += ']';
  return out;
}

/// "[2,3]", for messages.
static std::string formatDims(const std::vector<int64_t> &dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    out += (i ? "," : "") + std::to_string(dims[i]);
  return out + "]";
}

bool weft::rt::countElements(const std::vector<int64_t> &dims,
                             size_t elementBytes, int64_t &outElements,
                             size_t &outBytes) {
  int64_t count = 1;
  bool anyZero = false;
  for (int64_t d : dims) {
    if (d < 0)
      return false;
    if (d == 0)
      anyZero = true;
  }
  // A zero dim makes the tensor empty whatever the other dims are, but huge
  // other dims still count as malformed: check the product without it too.
  for (int64_t d : dims) {
    if (d == 0)
      continue;
    if (count > INT64_MAX / d)
      return false;
    count *= d;
  }
  if (elementBytes && count > INT64_MAX / static_cast<int64_t>(elementBytes))
    return false;
  if (anyZero)
    count = 0;
  outElements = count;
  outBytes = static_cast<size_t>(count) * elementBytes;
  return true;
}

namespace {

/// Parses records one line at a time, remembering where it is for errors.
class SignatureParser {
public:
  SignatureParser(ProgramSignature &out, std::string &error)
      : out(out), error(error) {}

  bool parse(const char *text);

private:
  bool fail(const char *format, ...) __attribute__((format(printf, 2, 3)));
  bool parseLine(const std::vector<std::string> &fields);
  bool parseTensor(const std::vector<std::string> &fields,
                   std::vector<TensorSpec> &into);
  bool parseOp(const std::vector<std::string> &fields);
  bool parseMesh(const std::vector<std::string> &fields);
  bool parseTarget(const std::vector<std::string> &fields);
  bool parsePipeline(const std::vector<std::string> &fields);
  bool parseCollector(const std::vector<std::string> &fields);
  bool parseMicrobatches(const std::vector<std::string> &fields);
  bool parsePeers(const std::vector<std::string> &fields);
  bool parseBroadcastGroup(const std::vector<std::string> &fields);
  bool checkWhole();

  ProgramSignature &out;
  std::string &error;
  int lineNumber = 0;
  bool sawArena = false, sawWeights = false, sawMesh = false, sawTarget = false,
       sawPipeline = false, sawCollector = false, sawMicrobatches = false,
       sawPeers = false;
  /// The lines of the "pipeline", "collector" and "broadcast-group"
  /// records, for checks at the end.
  int pipelineLine = 0, collectorLine = 0, peersLine = 0;
  std::vector<int> broadcastGroupLines;
  /// Op ids as given, checked for density at the end.
  std::vector<int64_t> opIds;
  std::vector<OpSpec> opsInOrder;
};

} // namespace

bool SignatureParser::fail(const char *format, ...) {
  char buffer[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  error = lineNumber > 0
              ? "signature line " + std::to_string(lineNumber) + ": " + buffer
              : std::string("signature: ") + buffer;
  return false;
}

bool SignatureParser::parse(const char *text) {
  if (!text)
    return fail("the program has no signature text");
  const char *cursor = text;
  while (*cursor) {
    ++lineNumber;
    const char *end = cursor;
    while (*end && *end != '\n')
      ++end;
    std::string line(cursor, end);
    cursor = *end ? end + 1 : end;
    if (line.empty())
      continue;
    std::vector<std::string> fields;
    size_t start = 0;
    while (true) {
      size_t space = line.find(' ', start);
      fields.push_back(line.substr(start, space - start));
      if (space == std::string::npos)
        break;
      start = space + 1;
    }
    for (const std::string &field : fields) {
      if (field.empty())
        return fail("empty field (fields are separated by one space)");
      for (char c : field)
        if (static_cast<unsigned char>(c) < 0x20 ||
            static_cast<unsigned char>(c) >= 0x7f)
          return fail("control or non-ASCII byte 0x%02x in '%s' (names "
                      "escape them as %%XX)",
                      static_cast<unsigned char>(c), line.c_str());
    }
    if (lineNumber == 1 && fields[0] != "weft-program")
      return fail("the first record must be 'weft-program <version>', not "
                  "'%s'",
                  line.c_str());
    if (!parseLine(fields))
      return false;
  }
  lineNumber = 0;
  return checkWhole();
}

bool SignatureParser::parseLine(const std::vector<std::string> &fields) {
  const std::string &kind = fields[0];
  if (kind == "weft-program") {
    if (lineNumber != 1)
      return fail("'weft-program' must be the first record");
    int64_t version = 0;
    if (fields.size() != 2 || !parseInt64(fields[1], version))
      return fail("expected 'weft-program <version>'");
    if (version != WEFT_RT_ABI_VERSION)
      return fail("the program was compiled for runtime ABI version %lld; "
                  "this runtime implements version %d: recompile the model "
                  "with a matching weftc",
                  static_cast<long long>(version), WEFT_RT_ABI_VERSION);
    out.abiVersion = static_cast<int32_t>(version);
    return true;
  }
  if (kind == "arena" || kind == "weights") {
    bool &seen = kind == "arena" ? sawArena : sawWeights;
    if (seen)
      return fail("second '%s' record", kind.c_str());
    seen = true;
    int64_t bytes = 0;
    if (fields.size() != 2 || !parseInt64(fields[1], bytes) || bytes < 0)
      return fail("expected '%s <bytes>' with bytes >= 0", kind.c_str());
    if (kind == "arena") {
      if (bytes % 64 != 0)
        return fail("arena size %lld is not a multiple of 64",
                    static_cast<long long>(bytes));
      out.arenaBytes = bytes;
    } else {
      out.weightsBytes = bytes;
    }
    return true;
  }
  if (kind == "input")
    return parseTensor(fields, out.inputs);
  if (kind == "output")
    return parseTensor(fields, out.outputs);
  if (kind == "op")
    return parseOp(fields);
  if (kind == "mesh")
    return parseMesh(fields);
  if (kind == "target")
    return parseTarget(fields);
  if (kind == "pipeline")
    return parsePipeline(fields);
  if (kind == "collector")
    return parseCollector(fields);
  if (kind == "microbatches")
    return parseMicrobatches(fields);
  if (kind == "peers")
    return parsePeers(fields);
  if (kind == "broadcast-group")
    return parseBroadcastGroup(fields);
  return fail("unknown record '%s'", kind.c_str());
}

/// Most microbatches per batch a signature may give.
static constexpr int64_t kMaxMicrobatches = 1 << 20;

/// Most mesh axes and devices a signature may give (the communicator's
/// limits: one MPI communicator per subset of axes, int ranks).
static constexpr size_t kMaxMeshAxes = 8;
static constexpr int64_t kMaxMeshDevices = INT32_MAX;

bool SignatureParser::parseTarget(const std::vector<std::string> &fields) {
  if (sawTarget)
    return fail("second 'target' record");
  sawTarget = true;
  if (fields.size() < 2)
    return fail("expected 'target cpu' or 'target cuda <sm_XX>...'");
  if (fields[1] == "cpu") {
    if (fields.size() != 2)
      return fail("'target cpu' takes no architectures");
    out.target = "cpu";
    return true;
  }
  if (fields[1] != "cuda")
    return fail("unknown target '%s' (expected cpu or cuda)",
                fields[1].c_str());
  if (fields.size() < 3)
    return fail("'target cuda' needs at least one GPU architecture (sm_80)");
  out.target = "cuda";
  for (size_t i = 2; i < fields.size(); ++i) {
    int64_t arch = 0;
    if (fields[i].rfind("sm_", 0) != 0 ||
        !parseInt64(fields[i].substr(3), arch) || arch < 10 || arch > 1000)
      return fail("GPU architecture '%s' is not sm_<compute capability>, as "
                  "sm_90",
                  fields[i].c_str());
    out.gpuArchitectures.push_back(static_cast<int>(arch));
  }
  return true;
}

bool SignatureParser::parseMesh(const std::vector<std::string> &fields) {
  if (sawMesh)
    return fail("second 'mesh' record");
  sawMesh = true;
  if (fields.size() < 2 || fields.size() > 1 + kMaxMeshAxes)
    return fail("expected 'mesh <d0> <d1> ...' with 1 to %zu dims",
                kMaxMeshAxes);
  int64_t devices = 1;
  for (size_t i = 1; i < fields.size(); ++i) {
    int64_t dim = 0;
    if (!parseInt64(fields[i], dim) || dim < 1)
      return fail("mesh dim %zu is '%s', not an integer >= 1", i - 1,
                  fields[i].c_str());
    if (dim > kMaxMeshDevices / devices)
      return fail("the mesh has more than %lld devices",
                  static_cast<long long>(kMaxMeshDevices));
    devices *= dim;
    out.mesh.push_back(dim);
  }
  out.meshDevices = devices;
  return true;
}

bool SignatureParser::parsePipeline(const std::vector<std::string> &fields) {
  if (sawPipeline)
    return fail("second 'pipeline' record");
  sawPipeline = true;
  pipelineLine = lineNumber;
  if (fields.size() < 3)
    return fail("expected 'pipeline <world size> <rank of mesh position 0> "
                "...' with at least one rank");
  int64_t worldSize = 0;
  if (!parseInt64(fields[1], worldSize) || worldSize < 1 ||
      worldSize > kMaxMeshDevices)
    return fail("pipeline world size '%s' is not an integer from 1 to %lld",
                fields[1].c_str(), static_cast<long long>(kMaxMeshDevices));
  // More ranks than processes cannot all be distinct: say so before
  // reading them all.
  if (static_cast<int64_t>(fields.size() - 2) > worldSize)
    return fail("the pipeline lists %zu world ranks, more than its %lld "
                "processes",
                fields.size() - 2, static_cast<long long>(worldSize));
  std::vector<bool> seen(static_cast<size_t>(worldSize), false);
  for (size_t i = 2; i < fields.size(); ++i) {
    int64_t rank = 0;
    if (!parseInt64(fields[i], rank) || rank < 0 || rank >= worldSize)
      return fail("pipeline rank %zu is '%s', not a world rank from 0 to %lld",
                  i - 2, fields[i].c_str(),
                  static_cast<long long>(worldSize - 1));
    if (seen[static_cast<size_t>(rank)])
      return fail("pipeline world rank %lld is given twice",
                  static_cast<long long>(rank));
    seen[static_cast<size_t>(rank)] = true;
    out.meshWorldRanks.push_back(static_cast<int32_t>(rank));
  }
  out.worldSize = worldSize;
  return true;
}

bool SignatureParser::parseCollector(const std::vector<std::string> &fields) {
  if (sawCollector)
    return fail("second 'collector' record");
  sawCollector = true;
  collectorLine = lineNumber;
  int64_t rank = 0;
  if (fields.size() != 2 || !parseInt64(fields[1], rank) || rank < 0 ||
      rank > kMaxMeshDevices)
    return fail("expected 'collector <world rank>'");
  out.collectorRank = static_cast<int32_t>(rank);
  return true;
}

bool SignatureParser::parseMicrobatches(
    const std::vector<std::string> &fields) {
  if (sawMicrobatches)
    return fail("second 'microbatches' record");
  sawMicrobatches = true;
  int64_t count = 0;
  if (fields.size() != 2 || !parseInt64(fields[1], count) || count < 1 ||
      count > kMaxMicrobatches)
    return fail("expected 'microbatches <count>' with a count from 1 to %lld",
                static_cast<long long>(kMaxMicrobatches));
  out.microbatches = count;
  return true;
}

bool SignatureParser::parsePeers(const std::vector<std::string> &fields) {
  if (sawPeers)
    return fail("second 'peers' record");
  sawPeers = true;
  peersLine = lineNumber;
  int64_t offset = 0, slots = 0;
  if (fields.size() != 3 || !parseInt64(fields[1], offset) ||
      !parseInt64(fields[2], slots) || offset < 0 || offset % 8 != 0 ||
      slots < 1 || slots > kMaxPeerSlots)
    return fail("expected 'peers <offset> <slots>' with an offset that is a "
                "multiple of 8 and from 1 to %lld slots",
                static_cast<long long>(kMaxPeerSlots));
  out.peerTableOffset = offset;
  out.peerSlots = slots;
  return true;
}

bool SignatureParser::parseBroadcastGroup(
    const std::vector<std::string> &fields) {
  broadcastGroupLines.push_back(lineNumber);
  if (static_cast<int64_t>(out.broadcastGroups.size()) >= kMaxBroadcastGroups)
    return fail("more than %d 'broadcast-group' records", kMaxBroadcastGroups);
  if (fields.size() < 3)
    return fail("expected 'broadcast-group <world rank> <world rank> ...' "
                "with at least two ranks");
  std::vector<int32_t> ranks;
  for (size_t i = 1; i < fields.size(); ++i) {
    int64_t rank = 0;
    if (!parseInt64(fields[i], rank) || rank < 0 || rank >= kMaxMeshDevices)
      return fail("broadcast group rank '%s' is not a world rank",
                  fields[i].c_str());
    if (!ranks.empty() && rank <= ranks.back())
      return fail("broadcast group ranks must increase, but %lld follows %d",
                  static_cast<long long>(rank), ranks.back());
    ranks.push_back(static_cast<int32_t>(rank));
  }
  out.broadcastGroups.push_back(std::move(ranks));
  return true;
}

bool SignatureParser::parseTensor(const std::vector<std::string> &fields,
                                  std::vector<TensorSpec> &into) {
  const char *kind = fields[0].c_str();
  int64_t rank = 0;
  if (fields.size() < 5 || !parseInt64(fields[3], rank))
    return fail("expected '%s <name> <dtype> <rank> <dims...> <offset>'", kind);
  if (rank < 0 || rank > kMaxRank)
    return fail("%s rank %lld is not between 0 and %lld", kind,
                static_cast<long long>(rank), static_cast<long long>(kMaxRank));
  if (fields.size() != static_cast<size_t>(5 + rank))
    return fail("%s of rank %lld needs %lld fields, found %zu", kind,
                static_cast<long long>(rank), static_cast<long long>(5 + rank),
                fields.size());
  TensorSpec spec;
  if (!unescapeSignatureName(fields[1], spec.name))
    return fail("malformed %%XX escape in %s name '%s'", kind,
                fields[1].c_str());
  spec.dtype = parseDTypeField(fields[2]);
  if (!spec.dtype)
    return fail("%s '%s' has unknown dtype '%s'", kind, spec.name.c_str(),
                fields[2].c_str());
  for (int64_t i = 0; i < rank; ++i) {
    int64_t dim = 0;
    if (!parseInt64(fields[4 + i], dim) || dim < 0)
      return fail("%s '%s' dim %lld is '%s', not an integer >= 0", kind,
                  spec.name.c_str(), static_cast<long long>(i),
                  fields[4 + i].c_str());
    spec.dims.push_back(dim);
  }
  if (!countElements(spec.dims, weft_rt_dtype_size(spec.dtype),
                     spec.numElements, spec.bytes))
    return fail("%s '%s' of type %s has more bytes than fit in 64 bits", kind,
                spec.name.c_str(),
                formatTensorType(spec.dtype, spec.dims).c_str());
  if (!parseInt64(fields.back(), spec.offset) || spec.offset < 0)
    return fail("%s '%s' offset '%s' is not an integer >= 0", kind,
                spec.name.c_str(), fields.back().c_str());
  if (spec.offset % 64 != 0)
    return fail("%s '%s' offset %lld is not 64-byte aligned", kind,
                spec.name.c_str(), static_cast<long long>(spec.offset));
  for (const TensorSpec &other : into)
    if (other.name == spec.name)
      return fail("two %ss named '%s'", kind, spec.name.c_str());
  into.push_back(std::move(spec));
  return true;
}

bool SignatureParser::parseOp(const std::vector<std::string> &fields) {
  int64_t id = 0;
  if (fields.size() != 4 || !parseInt64(fields[1], id))
    return fail("expected 'op <id> <kind> <name>'");
  if (id < 0)
    return fail("op id %lld is negative", static_cast<long long>(id));
  OpSpec op;
  if (!unescapeSignatureName(fields[2], op.kind) ||
      !unescapeSignatureName(fields[3], op.name))
    return fail("malformed %%XX escape in op %lld", static_cast<long long>(id));
  opIds.push_back(id);
  opsInOrder.push_back(std::move(op));
  return true;
}

/// Checks what no single record can: required records, tensors inside the
/// arena and apart from each other, dense op ids.
bool SignatureParser::checkWhole() {
  if (out.abiVersion == 0)
    return fail("empty signature (no 'weft-program' record)");
  if (!sawArena)
    return fail("no 'arena <bytes>' record");
  if (!sawWeights)
    return fail("no 'weights <bytes>' record");
  if (sawPipeline) {
    // The mesh record may come after the pipeline's: compare them now.
    if (static_cast<int64_t>(out.meshWorldRanks.size()) != out.meshDevices) {
      lineNumber = pipelineLine;
      return fail("the pipeline lists %zu world ranks, but the mesh %s has "
                  "%lld devices (one world rank per mesh position)",
                  out.meshWorldRanks.size(),
                  sawMesh ? formatDims(out.mesh).c_str()
                          : "[1] (no 'mesh' record)",
                  static_cast<long long>(out.meshDevices));
    }
  } else {
    out.worldSize = out.meshDevices;
  }
  if (out.microbatches > 1)
    for (const std::vector<TensorSpec> *specs : {&out.inputs, &out.outputs})
      for (const TensorSpec &spec : *specs)
        if (spec.dims.empty())
          return fail("'%s' is a scalar, but a program of microbatches "
                      "needs the batch in dimension 0 of every input and "
                      "output",
                      spec.name.c_str());
  for (size_t g = 0; g < out.broadcastGroups.size(); ++g)
    if (out.broadcastGroups[g].back() >= out.worldSize) {
      lineNumber = broadcastGroupLines[g];
      return fail("broadcast group %zu lists world rank %d, but the job has "
                  "%lld processes",
                  g, out.broadcastGroups[g].back(),
                  static_cast<long long>(out.worldSize));
    }
  if (sawPeers &&
      (!sawPipeline ||
       out.peerTableOffset > out.weightsBytes ||
       out.peerSlots * 16 > out.weightsBytes - out.peerTableOffset)) {
    lineNumber = peersLine;
    if (!sawPipeline)
      return fail("a 'peers' record needs a 'pipeline' record (transfers "
                  "run between the ranks of a job)");
    return fail("the peer table (%lld slots at offset %lld) does not fit in "
                "the %lld bytes of weights",
                static_cast<long long>(out.peerSlots),
                static_cast<long long>(out.peerTableOffset),
                static_cast<long long>(out.weightsBytes));
  }
  if (sawCollector && out.collectorRank >= out.worldSize) {
    lineNumber = collectorLine;
    return fail("the collector is world rank %d, but the job has %lld "
                "processes",
                out.collectorRank, static_cast<long long>(out.worldSize));
  }

  struct Placed {
    const TensorSpec *spec;
    const char *kind;
  };
  std::vector<Placed> placed;
  for (const TensorSpec &spec : out.inputs)
    placed.push_back({&spec, "input"});
  for (const TensorSpec &spec : out.outputs)
    placed.push_back({&spec, "output"});
  for (const Placed &p : placed) {
    const TensorSpec &s = *p.spec;
    if (s.offset > out.arenaBytes ||
        s.bytes > static_cast<uint64_t>(out.arenaBytes - s.offset))
      return fail("%s '%s' (%s, %zu bytes at offset %lld) does not fit in "
                  "the %lld-byte arena",
                  p.kind, s.name.c_str(),
                  formatTensorType(s.dtype, s.dims).c_str(), s.bytes,
                  static_cast<long long>(s.offset),
                  static_cast<long long>(out.arenaBytes));
  }
  std::sort(placed.begin(), placed.end(), [](const Placed &a, const Placed &b) {
    return a.spec->offset < b.spec->offset;
  });
  // Sorted by offset, a tensor overlaps an earlier one iff it starts before
  // the furthest end of those (empty tensors take no bytes).
  const Placed *furthest = nullptr;
  int64_t furthestEnd = 0;
  for (const Placed &p : placed) {
    if (p.spec->bytes == 0)
      continue;
    if (furthest && p.spec->offset < furthestEnd)
      return fail("%s '%s' at offset %lld overlaps %s '%s' (bytes %lld to "
                  "%lld)",
                  p.kind, p.spec->name.c_str(),
                  static_cast<long long>(p.spec->offset), furthest->kind,
                  furthest->spec->name.c_str(),
                  static_cast<long long>(furthest->spec->offset),
                  static_cast<long long>(furthestEnd));
    int64_t end = p.spec->offset + static_cast<int64_t>(p.spec->bytes);
    if (!furthest || end > furthestEnd) {
      furthest = &p;
      furthestEnd = end;
    }
  }

  out.ops.assign(opsInOrder.size(), OpSpec());
  std::vector<bool> seen(opsInOrder.size(), false);
  for (size_t i = 0; i < opIds.size(); ++i) {
    int64_t id = opIds[i];
    if (id >= static_cast<int64_t>(opsInOrder.size()))
      return fail("op id %lld is not below the op count %zu (ids run from "
                  "0)",
                  static_cast<long long>(id), opsInOrder.size());
    if (seen[id])
      return fail("op id %lld given twice", static_cast<long long>(id));
    seen[id] = true;
    out.ops[id] = std::move(opsInOrder[i]);
  }
  return true;
}

bool weft::rt::parseSignature(const char *text, ProgramSignature &out,
                              std::string &error) {
  out = ProgramSignature();
  return SignatureParser(out, error).parse(text);
}

bool weft::rt::scaleToBatch(ProgramSignature &signature, std::string &error) {
  int64_t m = signature.microbatches;
  if (m <= 1)
    return true;
  for (std::vector<TensorSpec> *specs : {&signature.inputs, &signature.outputs})
    for (TensorSpec &spec : *specs) {
      int64_t rows = spec.dims[0];
      if (rows > INT64_MAX / m) {
        error = "signature: '" + spec.name + "' has more rows than fit in " +
                "64 bits over " + std::to_string(m) + " microbatches";
        return false;
      }
      spec.dims[0] = rows * m;
      if (!countElements(spec.dims, weft_rt_dtype_size(spec.dtype),
                         spec.numElements, spec.bytes)) {
        error = "signature: '" + spec.name + "' of a batch of " +
                std::to_string(m) + " microbatches has more bytes than fit " +
                "in 64 bits";
        return false;
      }
    }
  return true;
}
