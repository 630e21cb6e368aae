# Multi-device end-to-end test: run_multi_e2e.py --quick compiles the small
# in-repo models (mlp, transformer, a tiny GPT) for meshes 1x2, 2x2 and 1x4
# with automatic, forced (dp, tp, mixed) and memory-bound plans, runs them
# with weft-run (mpirun) and checks them against the one-device outputs and
# their plan.json figures. docs/MultiDeviceTesting.md describes it.
# Included from test/E2E/CMakeLists.txt.
add_test(NAME e2e-multi-device
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/run_multi_e2e.py
          --weftc $<TARGET_FILE:weftc> --weft-run $<TARGET_FILE:weft-run>
          --work ${CMAKE_CURRENT_BINARY_DIR}/multi-device --quick --jobs 2)

# Exit 77: PyTorch or ONNX is not installed (scripts/install-deps.sh).
# RUN_SERIAL: four ranks take every core of a small machine, and a rank
# starved by other tests could hit weft-run's --timeout.
set_tests_properties(e2e-multi-device PROPERTIES
  TIMEOUT 600 LABELS "e2e;multi-device" SKIP_RETURN_CODE 77 RUN_SERIAL ON)

# Pipelines: run_pipeline_e2e.py --quick compiles the in-repo mlp,
# transformer and GPT as 2- and 3-stage pipelines on cpu:2 to cpu:4 (a
# pairwise-covering set over stages, devices, sharding inside the stages and
# balanced or user-given cuts with unequal sub-meshes), runs them and checks
# them against the one-device outputs, with a memory-bound model and
# self-checks. The full set (about 60 runs, with the shared models) is
# `run_pipeline_e2e.py --shared ../shared/models`; docs/Pipelines.md.
add_test(NAME e2e-pipelines
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/run_pipeline_e2e.py
          --weftc $<TARGET_FILE:weftc> --weft-run $<TARGET_FILE:weft-run>
          --work ${CMAKE_CURRENT_BINARY_DIR}/pipelines --quick)
set_tests_properties(e2e-pipelines PROPERTIES
  TIMEOUT 600 LABELS "e2e;multi-device;pipelines" SKIP_RETURN_CODE 77
  RUN_SERIAL ON)

# Pipelines that flow: run_stream_e2e.py --quick compiles the in-repo models
# at batch 8 as 2- and 3-stage pipelines with --microbatches 2 and 4 and
# checks them against one device, then streams 200 distinct requests
# through a 2-stage pipeline and checks every request id against the
# one-device output of that request (docs/Pipelines.md).
add_test(NAME e2e-streams
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/run_stream_e2e.py
          --weftc $<TARGET_FILE:weftc> --weft-run $<TARGET_FILE:weft-run>
          --work ${CMAKE_CURRENT_BINARY_DIR}/streams --quick)
set_tests_properties(e2e-streams PROPERTIES
  TIMEOUT 600 LABELS "e2e;multi-device;pipelines" SKIP_RETURN_CODE 77
  RUN_SERIAL ON)
