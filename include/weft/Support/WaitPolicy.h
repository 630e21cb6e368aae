//===- WaitPolicy.h - The OpenMP wait policy of device programs -*- C++ -*-===//
//
// One value for everything that starts a device program: weft-run, the
// package's run.sh (written by weftc) and the driver, which starts itself
// again with it when started directly (libgomp reads it once, when it
// loads).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_SUPPORT_WAITPOLICY_H
#define WEFT_SUPPORT_WAITPOLICY_H

namespace weft {

/// GOMP_SPINCOUNT for device programs: OpenMP threads waiting at a barrier
/// spin this many rounds (tens of microseconds), then sleep, so that a
/// thread whose core is shared with another process does not keep its
/// peers' cores busy (libgomp's default spins for milliseconds). A user's
/// own OMP_WAIT_POLICY or GOMP_SPINCOUNT wins.
inline constexpr const char *kOpenMpSpinCount = "10000";

} // namespace weft

#endif // WEFT_SUPPORT_WAITPOLICY_H
