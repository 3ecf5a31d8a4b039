"""The browser engine (engine.py): onnxop's kernels in headless Chromium's WebGPU."""
