"""Small .pb tensors the CLI tests write and read back by hand (onnx's
numpy_helper and TensorProto, never onnxop)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
from onnx import numpy_helper


def save_pb(path, array, name):
    path.write_bytes(numpy_helper.from_array(array, name).SerializeToString())


def read_pb(path):
    proto = onnx.TensorProto()
    proto.ParseFromString(path.read_bytes())
    return proto


def f8_pb(path):
    save_pb(path, np.array([1.0, 2.0], dtype=ml_dtypes.float8_e4m3fn), "f8")
