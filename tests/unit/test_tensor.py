"""The dtype table agrees with onnx (it is written out only to keep start-up fast)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from onnxop_cli.core.tensor import DTYPES, dtype_by_name, dtype_by_onnx, dtype_of_numpy
from onnxop_cli.io.tensorproto import typed_field


def test_every_onnx_tensor_type_of_opset_25_is_in_the_table():
    schema = onnx.defs.get_schema("Flatten", 25)
    allowed = {t[len("tensor("):-1] for t in schema.type_constraints[0].allowed_type_strs}
    assert allowed <= {d.onnx_name for d in DTYPES}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_row_matches_onnx(dtype):
    assert onnx.TensorProto.DataType.Name(dtype.onnx_type).lower() == dtype.onnx_name
    np_dtype = helper.tensor_dtype_to_np_dtype(dtype.onnx_type)
    assert dtype.numpy == np_dtype
    if not dtype.is_string:
        assert dtype.bits == np_dtype.itemsize * 8 or dtype.is_packed
    assert dtype_by_onnx(dtype.onnx_type) is dtype
    assert dtype_by_name(dtype.name) is dtype
    assert typed_field(dtype) == helper.tensor_dtype_to_field(dtype.onnx_type)  # a .pb's values not in raw_data


@pytest.mark.parametrize("name", ["<f4", ">f4", "=i8", "|b1", "<c16"])
def test_byte_order_does_not_change_the_onnx_type(name):
    assert dtype_of_numpy(np.dtype(name)).name == np.dtype(name).newbyteorder("=").name


def test_a_string_tensor_of_non_text_names_the_type_in_good_grammar():
    from onnxop_cli.errors import InputError
    from onnxop_cli.core.tensor import strings_to_bytes

    with pytest.raises(InputError, match=r"^a string tensor holds a value of type int, not text$"):
        strings_to_bytes(np.array(["a", 3], dtype=object))


def test_an_array_no_onnx_tensor_holds_is_refused_naming_its_input():
    """Tensor.from_numpy (the API's and the backend's arrays): an object array of numbers said only 'a string
    tensor holds a value of type float, not text', naming neither the input nor that an object array is taken as
    strings; a str with a lone surrogate in one was a UnicodeEncodeError (no InputError); a dtype with no ONNX
    type named no input. A model's name that is no identifier is quoted."""
    from onnxop_cli.core.tensor import Tensor
    from onnxop_cli.errors import InputError

    for array, name, message in [
        (np.array([1.0, 2.0], dtype=object), "x", "x: an object array, taken as ONNX strings: a string tensor holds "
                                                  "a value of type float, not text"),
        (np.array(["a\ud800"], dtype=object), "in put", "'in put': an object array, taken as ONNX strings: a string "
                                                        "holds U+D800, which is no Unicode character (ONNX strings are UTF-8)"),
        (np.array(["2020-01-01"], "datetime64[D]"), "data", "data: dtype datetime64[D] has no ONNX tensor type"),
    ]:
        with pytest.raises(InputError) as info:
            Tensor.from_numpy(array, name)
        assert info.value.message == message
    assert Tensor.from_numpy(np.array([b"a", "\u00e9"], dtype=object), "s").strings.tolist() == [b"a", "\u00e9".encode()]
