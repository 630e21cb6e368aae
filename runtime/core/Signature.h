//===- Signature.h - A device program's signature text ----------*- C++ -*-===//
//
// The parsed form of weft_rt_program::signature (format in weft_rt.h): the
// arena and weights sizes, the inputs and outputs inside the arena, the ops.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CORE_SIGNATURE_H
#define WEFT_RUNTIME_CORE_SIGNATURE_H

#include "weft_rt.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weft::rt {

/// Most broadcast groups a program lists and a communicator holds
/// (weft_rt_comm_create_broadcast_groups); a compiler caps them far lower.
inline constexpr int32_t kMaxBroadcastGroups = 1024;

/// One "input" or "output" record: a dense row-major tensor in the arena.
struct TensorSpec {
  std::string name;
  weft_rt_dtype dtype = 0;
  std::vector<int64_t> dims;
  int64_t numElements = 1;
  /// numElements * dtype size.
  size_t bytes = 0;
  /// Byte offset inside the arena, a multiple of 64.
  int64_t offset = 0;
};

/// One "op" record, for naming profile events.
struct OpSpec {
  std::string kind;
  std::string name;
};

/// Everything the signature text says.
struct ProgramSignature {
  int32_t abiVersion = 0;
  int64_t arenaBytes = 0;
  int64_t weightsBytes = 0;
  /// The "mesh" record's shape; empty for a single device.
  std::vector<int64_t> mesh;
  /// Devices in the mesh (product of `mesh`), 1 without one.
  int64_t meshDevices = 1;
  /// The "pipeline" record: the world ranks of the mesh's row-major
  /// positions (meshDevices of them) in a job of `worldSize` processes.
  /// Without one the mesh is the whole job: meshWorldRanks is empty and
  /// worldSize is meshDevices.
  std::vector<int32_t> meshWorldRanks;
  int64_t worldSize = 1;
  /// The "collector" record: the world rank whose outputs are the model's
  /// (it prints, writes and checks them); 0 without one.
  int32_t collectorRank = 0;
  /// The "broadcast-group" records, in order: group k's world ranks,
  /// increasing, each below worldSize.
  std::vector<std::vector<int32_t>> broadcastGroups;
  /// The "peers" record: the program's transfers name slots of a peer table
  /// of peerSlots (peer, tag) int64 pairs at peerTableOffset in the weights
  /// (each rank's own; weftc writes it). peerSlots is 0 without one.
  int64_t peerTableOffset = 0;
  int64_t peerSlots = 0;
  /// The "microbatches" record: the program computes one of this many
  /// blocks of the batch (dimension 0 of every input and output).
  int64_t microbatches = 1;
  /// Whether the signature has a "pipeline" record.
  bool pipeline() const { return !meshWorldRanks.empty(); }
  /// Whether the program runs as one rank of an MPI job of several.
  bool multiRank() const { return worldSize > 1; }
  /// The "target" record: the device kind ("cpu" without one) and, for
  /// "cuda", the GPU architectures the program was built for (80 = sm_80).
  std::string target = "cpu";
  std::vector<int> gpuArchitectures;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  /// Indexed by op id (ids are 0 .. ops.size() - 1, each given once).
  std::vector<OpSpec> ops;
};

/// Parses and validates `text`. On failure returns false with `error` naming
/// the line ("signature line 3: ...").
bool parseSignature(const char *text, ProgramSignature &out,
                    std::string &error);

/// A program of M microbatches as its batch: every input and output with
/// dimension 0 (and bytes) times M; the offsets stay the microbatch's.
/// False with `error` on overflow.
bool scaleToBatch(ProgramSignature &signature, std::string &error);

/// Decodes a %XX-escaped name; false on a malformed escape.
bool unescapeSignatureName(const std::string &text, std::string &out);

/// The dtype of a signature field: a code (ONNX numbering, "1") or a name
/// ("f32"); 0 when it is neither.
weft_rt_dtype parseDTypeField(const std::string &text);

/// "f32[2,3]", for messages.
std::string formatTensorType(weft_rt_dtype dtype,
                             const std::vector<int64_t> &dims);

/// Multiplies the dims with overflow checks: false when a dim is negative or
/// the count (or count * elementBytes) does not fit in int64.
bool countElements(const std::vector<int64_t> &dims, size_t elementBytes,
                   int64_t &outElements, size_t &outBytes);

} // namespace weft::rt

#endif // WEFT_RUNTIME_CORE_SIGNATURE_H
