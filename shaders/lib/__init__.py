"""Parts of WGSL kernels, #included by them; resolved by onnxop_cli.gpu.shaders."""
