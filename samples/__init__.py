"""ONNX operator pages whose examples `onnxop doc-examples` checks."""
