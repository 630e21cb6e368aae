// REQUIRES: cuda-target
// RUN: weft-opt %s --pass-pipeline='builtin.module(func.func(weft-linalg-to-gpu),gpu-kernel-outlining,nvvm-attach-target{chip=sm_90 features=+ptx86},nvvm-attach-target{chip=sm_80 features=+ptx86},gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm,reconcile-unrealized-casts),gpu-module-to-binary{format=isa toolkit=%cuda_toolkit},weft-build-gpu-fatbin)' \
// RUN:   | FileCheck %s
// RUN: not weft-opt %s --pass-pipeline='builtin.module(func.func(weft-linalg-to-gpu),gpu-kernel-outlining,nvvm-attach-target{chip=sm_90 features=+ptx86},gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm,reconcile-unrealized-casts),gpu-module-to-binary{format=isa toolkit=%cuda_toolkit},weft-build-gpu-fatbin{cuda-bin=/nonexistent})' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NOTOOLS

// PTX for sm_80 and sm_90 becomes one fatbin object (cubins of both plus
// the PTX of sm_90), named for the newest target; the launch stays.
// CHECK: gpu.launch_func @elementwise_kernel::@elementwise_kernel
// CHECK: gpu.binary @elementwise_kernel [#gpu.object<#nvvm.target<chip = "sm_90", features = "+ptx86">, "{{.*}}">]
// CHECK-NOT: assembly
// NOTOOLS: error: GPU code needs CUDA's ptxas and fatbinary, found in --cuda-bin=/nonexistent; install the CUDA toolkit or set CUDA_HOME
func.func @elementwise(%a: memref<300xf32>, %out: memref<300xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                  iterator_types = ["parallel"]}
      ins(%a : memref<300xf32>) outs(%out : memref<300xf32>) {
  ^bb0(%x: f32, %o: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  }
  return
}
