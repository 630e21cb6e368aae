//===- Model.h - The runtime model's insides --------------------*- C++ -*-===//
//
// What weft_rt_model holds: the program, its parsed signature, the arena and
// the mapped weights. Private to the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CORE_MODEL_H
#define WEFT_RUNTIME_CORE_MODEL_H

#include "DeviceBackend.h"
#include "Signature.h"
#include "weft_rt.h"

#include <memory>
#include <string>

struct weft_rt_model {
  weft_rt_context *ctx = nullptr;
  const weft_rt_program *program = nullptr;
  weft::rt::ProgramSignature signature;
  /// Anonymous mapping of arenaMapBytes: page aligned and zeroed.
  void *arena = nullptr;
  size_t arenaMapBytes = 0;
  /// Read-only mapping of the weights file; null when it is empty.
  void *weights = nullptr;
  size_t weightsMapBytes = 0;
  weft_rt_byte_buffer arenaBuffer;
  weft_rt_byte_buffer weightsBuffer;
  /// The device a GPU program runs on (null for the CPU). Its memory holds
  /// the arena and weights the program computes with; `arena` above then
  /// holds only the host copies of the inputs and outputs.
  std::unique_ptr<weft::rt::DeviceBackend> device;
  /// Runs so far, numbering the "run" events of the profile.
  int64_t runCount = 0;
};

namespace weft::rt {

/// Writes the Chrome trace of `ctx`'s events with op names from `signature`.
/// Returns false with `error` when the file cannot be written.
bool writeChromeTrace(const std::string &path, const weft_rt_context &ctx,
                      const ProgramSignature &signature, std::string &error);

/// Escapes `text` as the inside of a JSON string; bytes that are not UTF-8
/// become U+FFFD.
std::string escapeJson(const std::string &text);

/// The id of the event that brackets a whole run in the profile.
inline constexpr int64_t kRunEventId = -1;

} // namespace weft::rt

#endif // WEFT_RUNTIME_CORE_MODEL_H
