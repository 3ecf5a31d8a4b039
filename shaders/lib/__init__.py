"""Parts of WGSL kernels, put in them by the renderers; loaded by onnxop_cli.gpu.shaders."""
