//===- ReshardText.cpp - Command-line text of a resharding ----------------===//
//
// Parses and prints SHAPE@DEVICES:SHARDING[+p[AXES]] (one side of a
// resharding) and tensor shapes, for weft-reshard and its tests. Every
// error quotes the text and says where it goes wrong.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/ReshardText.h"

#include "weft/Plan/Sharding.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"

#include <algorithm>

using namespace llvm;

namespace weft::plan {

static Error makeError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

static const char *const kSideExample = "SHAPE@DEVICES:SHARDING, e.g. "
                                        "2x4@0-7:[[0],[],[]]";

std::string formatTensorShape(ArrayRef<int64_t> shape) {
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "x" : "") + std::to_string(shape[i]);
  return text;
}

/// "0 and 1", "0 to 3" or "only 0": the axes of a mesh of `rank` axes.
static std::string axisRange(size_t rank) {
  if (rank == 1)
    return "only axis 0";
  if (rank == 2)
    return "axes 0 and 1";
  return "axes 0 to " + std::to_string(rank - 1);
}

Expected<std::vector<int64_t>> parseTensorShape(StringRef text) {
  auto bad = [&](const Twine &why) {
    return makeError("invalid tensor shape '" + text + "': " + why +
                     " (expected positive integers joined by 'x', e.g. "
                     "1024x1024x512 or 4096)");
  };
  StringRef trimmed = text.trim();
  if (trimmed.empty())
    return bad("it is empty");
  SmallVector<StringRef> parts;
  trimmed.split(parts, 'x', /*MaxSplit=*/-1, /*KeepEmpty=*/true);
  if (parts.size() > kMaxTensorRank)
    return bad("it has " + Twine(parts.size()) + " dimensions; at most " +
               Twine(kMaxTensorRank) + " are supported");
  const int64_t maxElements = int64_t(1) << 48;
  std::vector<int64_t> shape;
  int64_t elements = 1;
  for (StringRef part : parts) {
    int64_t dim = 0;
    if (part.empty())
      return bad("a dimension is missing");
    if (part.getAsInteger(10, dim))
      return bad("'" + part + "' is not an integer");
    if (dim < 1)
      return bad("dimension " + part + " is not positive");
    if (dim > maxElements / elements)
      return bad("it has more than 2^48 elements");
    elements *= dim;
    shape.push_back(dim);
  }
  return shape;
}

namespace {

/// Reads one side's text, remembering where it is for the errors.
class SideParser {
public:
  SideParser(StringRef text, const Cluster &cluster, unsigned tensorRank,
             StringRef what)
      : text(text), cluster(cluster), tensorRank(tensorRank), what(what) {}

  Expected<ReshardSide> parse();

private:
  /// An error that names the flag and the text.
  Error fail(const Twine &why) const {
    return makeError(what + " '" + text + "': " + why);
  }
  /// "at character N" for the 0-based offset `pos` into the text.
  static std::string at(size_t pos) {
    return "at character " + std::to_string(pos + 1);
  }
  /// What is at `pos`: "'x'" or "the end".
  std::string found(size_t pos) const {
    if (pos >= text.size())
      return "the end";
    return "'" + std::string(1, text[pos]) + "'";
  }

  Error parseDevices(size_t begin, size_t end, std::vector<int> &devices);
  Error parseSharding(size_t begin, TensorSharding &sharding);
  Error checkAxes(const TensorSharding &sharding, ArrayRef<int64_t> meshShape);

  void skipSpaces() {
    while (pos < text.size() && isSpace(text[pos]))
      ++pos;
  }
  /// Consumes `c` after spaces, or fails naming `context`.
  Error expect(char c, StringRef context);
  /// Reads a list of mesh axes "[A,B,...]" at pos.
  Error parseAxes(AxisList &axes, std::vector<size_t> &positions,
                  StringRef context);

  StringRef text;
  const Cluster &cluster;
  unsigned tensorRank;
  StringRef what;
  /// The cursor in the sharding part.
  size_t pos = 0;
  /// Where each axis of the sharding was written: per dimension, then the
  /// partial axes.
  std::vector<std::vector<size_t>> dimAxisPositions;
  std::vector<size_t> partialPositions;
};

} // namespace

Error SideParser::parseDevices(size_t begin, size_t end,
                               std::vector<int> &devices) {
  int64_t count = static_cast<int64_t>(cluster.devices.size());
  std::vector<bool> listed(cluster.devices.size());
  if (text.slice(begin, end).trim().empty())
    return fail("the device list " + at(begin) + " is empty");
  size_t itemBegin = begin;
  while (itemBegin <= end) {
    size_t comma = text.find(',', itemBegin);
    size_t itemEnd = std::min(comma, end);
    StringRef item = text.slice(itemBegin, itemEnd);
    size_t itemPos = itemBegin + (item.size() - item.ltrim().size());
    item = item.trim();
    if (item.empty())
      return fail("the device list has an empty entry " + at(itemBegin));
    StringRef first = item, last = item;
    if (item.contains('-'))
      std::tie(first, last) = item.split('-');
    first = first.trim();
    last = last.trim();
    uint64_t lo = 0, hi = 0;
    if (first.getAsInteger(10, lo) || last.getAsInteger(10, hi))
      return fail("'" + item + "' " + at(itemPos) +
                  " is not a device index or a range A-B of them");
    if (lo > hi)
      return fail("the range '" + item + "' " + at(itemPos) +
                  " goes down (write " + Twine(hi) + "-" + Twine(lo) +
                  " or list the devices one by one)");
    if (hi >= static_cast<uint64_t>(count))
      return fail("device " + Twine(hi) + " " + at(itemPos) +
                  " does not exist: cluster '" + cluster.name + "' has " +
                  (count == 1 ? Twine("only device 0")
                              : "devices 0 to " + Twine(count - 1)));
    for (uint64_t device = lo; device <= hi; ++device) {
      if (listed[device])
        return fail("device " + Twine(device) + " " + at(itemPos) +
                    " is listed twice");
      listed[device] = true;
      devices.push_back(static_cast<int>(device));
    }
    itemBegin = itemEnd + 1;
  }
  return Error::success();
}

Error SideParser::expect(char c, StringRef context) {
  skipSpaces();
  if (pos < text.size() && text[pos] == c) {
    ++pos;
    return Error::success();
  }
  return fail(context + ": expected '" + Twine(c) + "' " + at(pos) +
              ", found " + found(pos));
}

Error SideParser::parseAxes(AxisList &axes, std::vector<size_t> &positions,
                            StringRef context) {
  if (Error error = expect('[', context))
    return error;
  skipSpaces();
  if (pos < text.size() && text[pos] == ']') {
    ++pos;
    return Error::success();
  }
  while (true) {
    skipSpaces();
    size_t start = pos;
    while (pos < text.size() && isDigit(text[pos]))
      ++pos;
    StringRef digits = text.slice(start, pos);
    unsigned axis = 0;
    if (digits.empty())
      return fail(context + ": expected a mesh axis " + at(start) + ", found " +
                  found(start));
    if (digits.getAsInteger(10, axis) || axis > 1000000)
      return fail(context + ": mesh axis " + digits + " " + at(start) +
                  " does not exist");
    axes.push_back(static_cast<int>(axis));
    positions.push_back(start);
    skipSpaces();
    if (pos < text.size() && text[pos] == ',') {
      ++pos;
      continue;
    }
    return expect(']', context);
  }
}

Error SideParser::parseSharding(size_t begin, TensorSharding &sharding) {
  pos = begin;
  if (Error error = expect('[', "the sharding"))
    return error;
  skipSpaces();
  if (pos < text.size() && text[pos] == ']') {
    ++pos;
  } else {
    while (true) {
      sharding.dims.emplace_back();
      dimAxisPositions.emplace_back();
      std::string context = "the sharding of dimension " +
                            std::to_string(sharding.dims.size() - 1);
      if (Error error =
              parseAxes(sharding.dims.back(), dimAxisPositions.back(), context))
        return error;
      skipSpaces();
      if (pos < text.size() && text[pos] == ',') {
        ++pos;
        continue;
      }
      if (Error error = expect(']', "the sharding"))
        return error;
      break;
    }
  }
  skipSpaces();
  if (pos == text.size())
    return Error::success();
  size_t plus = pos;
  if (text[pos] != '+')
    return fail("unexpected " + found(pos) + " " + at(pos) +
                " after the sharding (a partial sum is written +p[AXES])");
  ++pos;
  skipSpaces();
  if (pos >= text.size() || text[pos] != 'p')
    return fail("expected 'p' " + at(pos) + " after '+', found " + found(pos) +
                " (a partial sum is written +p[AXES])");
  ++pos;
  if (Error error = parseAxes(sharding.partial, partialPositions, "+p"))
    return error;
  if (sharding.partial.empty())
    return fail("+p[] " + at(plus) +
                " names no mesh axis (leave +p out when there is no "
                "partial sum)");
  skipSpaces();
  if (pos != text.size())
    return fail("unexpected " + found(pos) + " " + at(pos) +
                " after the partial axes");
  return Error::success();
}

Error SideParser::checkAxes(const TensorSharding &sharding,
                            ArrayRef<int64_t> meshShape) {
  size_t meshRank = meshShape.size();
  if (sharding.dims.size() != tensorRank)
    return fail("the sharding has " + Twine(sharding.dims.size()) +
                " dimension" + (sharding.dims.size() == 1 ? "" : "s") +
                ", the tensor has rank " + Twine(tensorRank));
  // Where each mesh axis was first used: "dimension D" or "+p".
  std::vector<std::string> usedBy(meshRank);
  auto use = [&](int axis, size_t axisPos, const std::string &user) -> Error {
    if (axis >= static_cast<int>(meshRank))
      return fail("mesh axis " + Twine(axis) + " " + at(axisPos) +
                  " does not exist: the mesh " + formatTensorShape(meshShape) +
                  " has " + axisRange(meshRank));
    if (!usedBy[axis].empty()) {
      if (usedBy[axis] == user)
        return fail("mesh axis " + Twine(axis) + " " + at(axisPos) +
                    " appears twice in " + user);
      return fail("mesh axis " + Twine(axis) + " " + at(axisPos) +
                  " is used by both " + usedBy[axis] + " and " + user +
                  " (an axis splits one dimension or is partial, not both)");
    }
    usedBy[axis] = user;
    return Error::success();
  };
  for (size_t d = 0; d < sharding.dims.size(); ++d)
    for (size_t i = 0; i < sharding.dims[d].size(); ++i)
      if (Error error = use(sharding.dims[d][i], dimAxisPositions[d][i],
                            "dimension " + std::to_string(d)))
        return error;
  for (size_t i = 0; i < sharding.partial.size(); ++i)
    if (Error error =
            use(sharding.partial[i], partialPositions[i], "the partial sum"))
      return error;
  return Error::success();
}

Expected<ReshardSide> SideParser::parse() {
  if (text.trim().empty())
    return fail("it is empty (expected " + Twine(kSideExample) + ")");
  size_t atSign = text.find('@');
  if (atSign == StringRef::npos)
    return fail("there is no '@' after the mesh shape (expected " +
                Twine(kSideExample) + ")");
  size_t colon = text.find(':', atSign + 1);
  if (colon == StringRef::npos)
    return fail("there is no ':' after the devices (expected " +
                Twine(kSideExample) + ")");

  ReshardSide side;
  StringRef name = what.ltrim('-');
  side.mesh.name = name.empty() ? "mesh" : name.str();
  Expected<std::vector<int64_t>> shape =
      parseMeshShape(text.take_front(atSign));
  if (!shape)
    return fail(toString(shape.takeError()));
  side.mesh.shape = std::move(*shape);
  if (Error error = parseDevices(atSign + 1, colon, side.mesh.devices))
    return std::move(error);
  // parseMeshShape bounds each dimension, not the product: saturate.
  const int64_t cap = int64_t(1) << 40;
  int64_t meshSize = 1;
  for (int64_t dim : side.mesh.shape)
    meshSize = std::min(meshSize * dim, cap);
  int64_t listed = static_cast<int64_t>(side.mesh.devices.size());
  if (meshSize != listed) {
    std::string size = meshSize >= cap ? "more than 2^40 devices"
                       : meshSize == 1 ? "1 device"
                                       : std::to_string(meshSize) + " devices";
    std::string more;
    if (meshSize > static_cast<int64_t>(cluster.devices.size()))
      more = " (cluster '" + cluster.name + "' has " +
             std::to_string(cluster.devices.size()) + ")";
    return fail("the mesh " + formatTensorShape(side.mesh.shape) + " has " +
                size + ", the list names " + Twine(listed) + more);
  }
  if (Error error = verifyMesh(cluster, side.mesh))
    return fail(toString(std::move(error)));

  side.sharding.mesh = side.mesh.name;
  if (Error error = parseSharding(colon + 1, side.sharding))
    return std::move(error);
  if (Error error = checkAxes(side.sharding, side.mesh.shape))
    return std::move(error);
  if (std::optional<std::string> problem =
          validate(side.sharding, tensorRank, side.mesh.shape))
    return fail(*problem);
  return side;
}

Expected<ReshardSide> parseReshardSide(StringRef text, const Cluster &cluster,
                                       unsigned tensorRank, StringRef what) {
  return SideParser(text, cluster, tensorRank, what).parse();
}

/// "[0,1]"
static std::string formatAxes(ArrayRef<int> axes) {
  std::string text = "[";
  for (size_t i = 0; i < axes.size(); ++i)
    text += (i ? "," : "") + std::to_string(axes[i]);
  return text + "]";
}

std::string formatDeviceList(ArrayRef<int> devices) {
  std::string text;
  for (size_t i = 0; i < devices.size();) {
    size_t run = i + 1;
    while (run < devices.size() && devices[run] == devices[run - 1] + 1)
      ++run;
    text += i ? "," : "";
    if (run - i >= 3) {
      text +=
          std::to_string(devices[i]) + "-" + std::to_string(devices[run - 1]);
      i = run;
      continue;
    }
    text += std::to_string(devices[i]);
    ++i;
  }
  return text;
}

std::string formatReshardSide(const ReshardSide &side) {
  std::string text = formatTensorShape(side.mesh.shape) + "@" +
                     formatDeviceList(side.mesh.devices);
  text += ":[";
  for (size_t d = 0; d < side.sharding.dims.size(); ++d)
    text += (d ? "," : "") + formatAxes(side.sharding.dims[d]);
  text += "]";
  if (!side.sharding.partial.empty())
    text += "+p" + formatAxes(side.sharding.partial);
  return text;
}

} // namespace weft::plan
