# -*- Python -*-
# lit configuration of Weft's FileCheck tests.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "Weft"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".onnxtext", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.weft_obj_root, "test")
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py",
                   "lit.site.cfg.py", "Inputs", "Unit"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%weft_src_root", config.weft_src_root))
config.substitutions.append(("%python", config.python_executable))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

tool_dirs = [config.weft_tools_dir, config.llvm_tools_dir]
tools = ["weft-opt", "weft-translate", "weftc", "weft-run", "weft-reshard",
         "weft-calibrate",
         ToolSubst("%PYTHON", config.python_executable)]
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.weft_tools_dir, append_path=True)

# Python with onnx: Debian's interpreter, which sees python3-onnx.
try:
    import subprocess
    subprocess.check_call([config.python_executable, "-c", "import onnx"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    config.available_features.add("python-onnx")
except Exception:
    pass
if os.path.isdir(os.path.join(config.weft_onnx_testdata, "node")):
    config.available_features.add("onnx-testdata")

# The CUDA backend was built (weftc links --target=cuda packages; CUDA's
# ptxas and fatbinary are there), and whether this machine has a GPU: the
# no-GPU paths are tested where there is none.
if getattr(config, "weft_cuda_backend", 0):
    config.available_features.add("cuda-target")
    config.substitutions.append(("%cuda_toolkit", config.weft_cuda_toolkit))
if os.path.exists("/dev/nvidia0"):
    config.available_features.add("cuda-gpu")
