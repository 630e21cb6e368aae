//===- Cluster.h - The machines a plan runs on ------------------*- C++ -*-===//
//
// Plain C++ (no IR): the cluster model of Weft's multi-device planner. A
// cluster is a set of device kinds, nodes holding devices and sharing their
// cores, memory bandwidth and NIC rails, the links inside and between nodes,
// and logical meshes over the devices. Read from a JSON spec file or built
// from a preset; docs/ClusterSpec.md documents the format.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PLAN_CLUSTER_H
#define WEFT_PLAN_CLUSTER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace weft::plan {

/// The most axes a mesh may have: what the runtime's collectives support
/// (kMaxMeshAxes in runtime/comm/Comm.h). Meshes are refused where they
/// enter (--mesh, a cluster spec's meshes), not when a program starts.
inline constexpr int kMaxMeshAxes = 8;

/// The element types the cost model knows FLOP/s for.
enum class DType { F32, F16, BF16, F64, I8, I32, I64, Bool };

/// The size of one element in bytes.
int64_t dtypeBytes(DType dtype);

/// The spec file's name of a dtype: "f32", "f16", "bf16", "f64", "i8",
/// "i32", "i64" or "bool".
llvm::StringRef dtypeName(DType dtype);

/// The dtype a spec file name denotes; std::nullopt if there is none.
std::optional<DType> parseDType(llvm::StringRef name);

/// Kernels whose rate differs from the GEMM's that flop_per_s gives: the
/// backend runs each convolution class with its own algorithm.
enum class KernelClass {
  /// Everything else, at flop_per_s (GEMMs, elementwise, reductions).
  Generic,
  /// A convolution with a spatial window that is not depthwise and not a
  /// Conv3x3 (a strided one, a 7x7 stem: oneDNN's direct kernel on CPUs).
  Conv,
  /// A 2-d convolution with a 3x3 window, stride 1, dilation 1 and one
  /// group (Winograd on CPUs).
  Conv3x3,
  /// A 1x1 convolution that is not depthwise (a GEMM over the pixels).
  PointwiseConv,
  /// A depthwise convolution: one input channel per group (a direct
  /// kernel on CPUs).
  DepthwiseConv,
};

/// The spec's name of a kernel class ("conv", "conv3x3", "pointwise_conv",
/// "depthwise_conv"; "generic" for Generic, which the spec does not list).
llvm::StringRef kernelClassName(KernelClass kernelClass);

/// What one kind of device can do. FLOP/s and bandwidth are the peak of one
/// device; the cost model applies the node's shared limits.
struct DeviceKind {
  std::string name;
  /// "cpu" or "cuda".
  std::string backend;
  /// Peak FLOP/s per dtype. A dtype not listed runs at the f32 rate, or at
  /// the slowest listed rate when f32 is not listed either.
  std::map<DType, double> flopPerS;
  double memoryBytes = 0;
  double memoryBandwidthBytesPerS = 0;
  /// The cores one process of a cpu device uses (1 for cuda devices).
  int coresPerDevice = 1;
  /// False when Weft can plan for the kind but not generate code for it.
  bool targetable = true;
  /// Why the kind is not targetable; empty when it is.
  std::string planningOnlyReason;

  /// The rate of the kind's kernels of a class relative to flop_per_s
  /// (the spec's `kernel_rates`, measured by weft-calibrate); a class not
  /// listed runs at 1. Above 1 where an algorithm does fewer operations
  /// than the direct count (Winograd).
  std::map<KernelClass, double> kernelRates;

  /// The peak FLOP/s for `dtype`, with the fallback described above.
  double peakFlopPerS(DType dtype) const;
  /// kernelRates' factor for `kernelClass` (1 when not listed).
  double kernelRate(KernelClass kernelClass) const;
  /// True for kinds whose processes share their node's cores and memory
  /// bandwidth.
  bool isCpu() const { return backend == "cpu"; }
};

/// One device: a GPU, or one process on a CPU host.
struct Device {
  std::string name;
  /// Index into Cluster::kinds.
  int kind = 0;
  /// Index into Cluster::nodes.
  int node = 0;
  /// Index into the node's rails (the NIC its traffic leaves the node by);
  /// -1 when the node lists no rails (its network is then only limited by
  /// the inter-node link).
  int rail = -1;
};

/// A NIC of a node; devices naming it share its bandwidth.
struct Rail {
  double bandwidthBytesPerS = 0;
};

/// A point-to-point link: the bandwidth one device sends at, per direction.
struct Link {
  double bandwidthBytesPerS = 0;
  double latencySeconds = 0;
};

/// A host and its shared resources.
struct Node {
  std::string name;
  /// The cores the processes of its cpu devices share (0 when the node has
  /// no cpu devices and the spec did not give it).
  int cores = 0;
  /// The host memory bandwidth its cpu devices share (0 when not given, as
  /// for cores).
  double memoryBandwidthBytesPerS = 0;
  std::vector<Rail> rails;
  /// The link between two devices of this node when it differs from the
  /// cluster's intra-node link (heterogeneous clusters); see intraLink().
  std::optional<Link> intraNodeLink;
};

/// A logical mesh: `devices` in row-major order over `shape`, so mesh
/// position r (MPI rank r) holds device devices[r].
struct Mesh {
  std::string name;
  std::vector<int64_t> shape;
  /// Indices into Cluster::devices.
  std::vector<int> devices;

  /// The product of the shape (1 for a 0-d mesh).
  int64_t size() const;
};

/// Everything the planner knows about the machines.
struct Cluster {
  std::string name;
  std::vector<DeviceKind> kinds;
  std::vector<Node> nodes;
  std::vector<Device> devices;
  /// The link between two devices of one node (zero when the spec needs
  /// none: no node has two devices) and between nodes (zero for a
  /// one-node cluster).
  Link intraNode, interNode;
  std::vector<Mesh> meshes;
  /// Set when code cannot be generated for some device, e.g.
  /// "planning only: V100 cannot be targeted by CUDA 13".
  std::string note;

  /// The link between two devices of node `node`.
  const Link &intraLink(int node) const;
  /// The mesh named `name`, or nullptr.
  const Mesh *findMesh(llvm::StringRef name) const;
  /// The index of the device named `name`, or -1.
  int findDevice(llvm::StringRef name) const;
};

/// Parses and validates a JSON cluster spec. Every error names `fileName`,
/// the JSON path (e.g. `nodes[1].devices[0].kind`) and what is wrong.
llvm::Expected<Cluster> parseClusterSpec(llvm::StringRef jsonText,
                                         llvm::StringRef fileName);

/// A preset ("cpu:N", "dgx-h100x8", "dgx-h100x8:K", "p3.16xlarge:K",
/// "p3.8xlarge:K", "hetero-a100-v100") or else a spec file path.
llvm::Expected<Cluster> loadCluster(llvm::StringRef fileOrPreset);

/// The built-in preset `name`; std::nullopt if `name` is not shaped like a
/// preset at all (so that loadCluster reads it as a file), an error if it
/// is one with a bad argument (e.g. "cpu:0").
std::optional<llvm::Expected<Cluster>> loadPreset(llvm::StringRef name);

/// The preset names, for --help and error messages.
llvm::StringRef presetHelp();

/// Replaces the meshes by one mesh named "mesh" of `shape` over the first
/// product(shape) devices; an error if the cluster has too few devices or a
/// dimension is not positive.
llvm::Error setMeshShape(Cluster &cluster, llvm::ArrayRef<int64_t> shape);

/// Parses "2x2" or "8" into a shape: at most kMaxMeshAxes positive
/// dimensions.
llvm::Expected<std::vector<int64_t>> parseMeshShape(llvm::StringRef text);

/// The physical memory of this machine in bytes; 0 when it cannot be told.
double hostMemoryBytes();

/// Parses a byte count for --device-memory: a plain number ("8e9",
/// "17179869184") or one with a unit: KB, MB, GB, TB (powers of 1000) or
/// KiB, MiB, GiB, TiB (powers of 1024), e.g. "16GiB".
llvm::Expected<double> parseByteSize(llvm::StringRef text);

/// Sets every device kind's memory to `bytes` (which the caller has checked
/// is positive, e.g. with parseByteSize; a non-positive or non-finite value
/// leaves the cluster unchanged).
void overrideDeviceMemory(Cluster &cluster, double bytes);

/// Checks that `mesh` fits `cluster`: a positive shape of at most
/// kMaxMeshAxes dimensions whose product is the number of devices, each a
/// valid, distinct device index.
llvm::Error verifyMesh(const Cluster &cluster, const Mesh &mesh);

/// "planning only: <reasons>" when some device's kind is not targetable,
/// else empty (what parsing puts in Cluster::note).
std::string planningNote(const Cluster &cluster);

/// A few readable lines (kinds, nodes, links, meshes, note) for --report.
std::string describeCluster(const Cluster &cluster);

/// The coordinates of mesh position `position` (row-major over the shape).
std::vector<int64_t> meshCoordinates(const Mesh &mesh, int64_t position);

/// The groups of a collective over `meshAxes` (listed major to minor): the
/// mesh positions sharing all coordinates on the other axes. Groups come in
/// row-major order of those other coordinates; inside a group, position i
/// is group rank i (mixed radix over the listed axes, the first most
/// significant). Axes out of range or repeated are ignored.
std::vector<std::vector<int64_t>> meshGroups(const Mesh &mesh,
                                             llvm::ArrayRef<int> meshAxes);

} // namespace weft::plan

#endif // WEFT_PLAN_CLUSTER_H
