//===- DeviceBackend.h - Programs that run on another device ----*- C++ -*-===//
//
// A program compiled for a GPU computes in device memory. The core runtime
// keeps its model (signature, host copies of inputs and outputs, weights
// file) and hands the run to the backend of the program's target, found
// through this interface so that the core links no device library.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CORE_DEVICEBACKEND_H
#define WEFT_RUNTIME_CORE_DEVICEBACKEND_H

#include "weft_rt.h"

#include <memory>

namespace weft::rt {

/// One model's device: its memory and what runs there.
class DeviceBackend {
public:
  virtual ~DeviceBackend() = default;
  /// Copies the inputs from the model's host arena to the device, runs the
  /// program there, waits for it and copies the outputs back into the host
  /// arena (where weft_rt_model_output_data points).
  virtual weft_rt_status run(weft_rt_model *model) = 0;
};

/// Creates the device side of `model` (whose signature, weights mapping and
/// host arena are ready): opens the device, allocates its memory and copies
/// the weights there. Fails with a message in the model's context.
using DeviceBackendFactory = weft_rt_status (*)(
    weft_rt_model *model, std::unique_ptr<DeviceBackend> *out_backend);

/// Installs the factory of "target cuda" programs. The CUDA backend's main
/// (bin/dev<k> of a --target=cuda package) calls it before the driver runs;
/// without it such a program is refused with a message that says so.
void setCudaBackendFactory(DeviceBackendFactory factory);

} // namespace weft::rt

#endif // WEFT_RUNTIME_CORE_DEVICEBACKEND_H
