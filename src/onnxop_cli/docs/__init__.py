"""ONNX's operator pages, their examples checked against onnxop, node tests and conformance."""
