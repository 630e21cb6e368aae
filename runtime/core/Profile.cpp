//===- Profile.cpp - Per-op profiles as Chrome traces ---------------------===//
//
// Writes the events weft_rt_op_begin/end recorded as Chrome's trace event
// format, which chrome://tracing and Perfetto (ui.perfetto.dev) open: one
// complete ("X") event per op run, inside one per program run.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "Model.h"
#include "TensorIO.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

using namespace weft::rt;

std::string weft::rt::escapeJson(const std::string &text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = text[i];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
      out += buffer;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (size_t length = utf8SequenceLength(text, i)) {
      out.append(text, i, length);
      i += length - 1;
    } else {
      out += "\\ufffd";
    }
  }
  return out;
}

/// The trace category of an op kind, as weftc's simulated timeline.json
/// has it (docs/Simulator.md): "transfer" for point-to-point messages,
/// "collective" for collectives, "op" for every kernel and loop nest. The
/// kind itself goes to args.kind.
static const char *categoryOfKind(const std::string &kind) {
  if (kind == "send" || kind == "recv")
    return "transfer";
  if (kind.rfind("all_", 0) == 0 || kind == "reduce_scatter" ||
      kind == "broadcast")
    return "collective";
  return "op";
}

bool weft::rt::writeChromeTrace(const std::string &path,
                                const weft_rt_context &ctx,
                                const ProgramSignature &signature,
                                std::string &error) {
  FILE *file = std::fopen(path.c_str(), "w");
  if (!file) {
    error = "cannot create profile '" + path + "': " + std::strerror(errno);
    return false;
  }
  double origin = ctx.events.empty() ? 0.0 : ctx.events.front().startUs;
  std::fprintf(file, "{\"traceEvents\":[\n"
                     "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,"
                     "\"tid\":0,\"args\":{\"name\":\"weft program\"}}");
  int64_t run = 0;
  for (const ProfileEvent &event : ctx.events) {
    std::string name, kind, category;
    if (event.opId == kRunEventId) {
      name = "run " + std::to_string(run++);
      kind = category = "run";
    } else if (event.opId >= 0 &&
               static_cast<size_t>(event.opId) < signature.ops.size()) {
      name = escapeJson(signature.ops[event.opId].name);
      kind = escapeJson(signature.ops[event.opId].kind);
      category = categoryOfKind(signature.ops[event.opId].kind);
    } else {
      // An id the signature does not list: keep the event, say so.
      name = "op " + std::to_string(event.opId);
      kind = "unknown";
      category = "op";
    }
    std::fprintf(file,
                 ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\","
                 "\"ts\":%.3f,\"dur\":%.3f,\"pid\":0,\"tid\":0,"
                 "\"args\":{\"op\":%lld,\"kind\":\"%s\"}}",
                 name.c_str(), category.c_str(), event.startUs - origin,
                 event.durationUs, static_cast<long long>(event.opId),
                 kind.c_str());
  }
  // Times are relative to the first event; otherData keeps where that is on
  // the steady clock (CLOCK_MONOTONIC, which the processes of one host
  // share), so that weft-run can put every rank's trace on one time line.
  std::fprintf(file,
               "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"clock\":"
               "\"steady\",\"origin_us\":%.3f",
               origin);
  // Rank 0's clock against this rank's, at the start and the end of the
  // runs (ClockSync.h): weft-run's merge aligns ranks of several hosts
  // with them.
  if (!ctx.clockSync.empty()) {
    std::fprintf(file, ",\"clock_sync\":[");
    for (size_t i = 0; i < ctx.clockSync.size(); ++i)
      std::fprintf(file,
                   "%s{\"at_us\":%.3f,\"offset_us\":%.3f,"
                   "\"uncertainty_us\":%.3f}",
                   i ? "," : "", ctx.clockSync[i].atUs,
                   ctx.clockSync[i].offsetUs, ctx.clockSync[i].uncertaintyUs);
    std::fprintf(file, "]");
  }
  std::fprintf(file, "}}\n");
  bool ok = !std::ferror(file);
  int savedErrno = errno;
  if (std::fclose(file) != 0 && ok) {
    ok = false;
    savedErrno = errno;
  }
  if (!ok) {
    error = "cannot write profile '" + path + "': " + std::strerror(savedErrno);
    return false;
  }
  return true;
}
