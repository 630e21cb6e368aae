# -*- Python -*-
# lit configuration of the example plugin's tests: the installed weft-opt
# with the plugin loaded.

import os

import lit.formats
from lit.llvm import llvm_config

config.name = "WeftExamplePlugin"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.plugin_obj_root, "test")

llvm_config.use_default_substitutions()
config.substitutions.append(("%weft_example_plugin", config.plugin_path))
llvm_config.add_tool_substitutions(["weft-opt"], [config.weft_tools_dir])
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
