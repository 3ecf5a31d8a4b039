"""WGSL kernels, one per file; loaded by onnxop_cli.gpu.shaders."""
