"""Cast and CastLike between every two numeric and bool types ONNX has, on
the GPU's elementwise kernel, bit for bit as onnx.reference (numpy's and
ml_dtypes' astype):

- between integer and bool types (``Cast``; int4, uint4, int2, uint2
  included): an integer is loaded sign- or zero-extended to 64 bits and
  stored truncated to the target's width (wrapping); to bool: any bit set;
- every other pair (``Convert``, gpu/render/elementwise.py's table of formats):
  rounded to nearest, ties to even; ``saturate`` (opset 19+) for the float8
  targets, ``round_mode`` (opset 24+) for float8e8m0; to an integer type
  truncated toward zero. A NaN, an infinity or a value an integer type of 8
  bits or more cannot hold is an error naming the element, since numpy's
  result there is the platform's (x86 gives INT_MIN for int32 and int64,
  wraps int8 through int32, and so on); ml_dtypes makes it 0 for the 4- and
  2-bit types, and so does onnxop.

The plan's one region says so (core/region.py's ``Convert`` of input 0's
elements), kept beside the elementwise kernel's runner that makes it. A
cast to the input's own type is its bytes (a device copy). Strings are
cast on the host, as onnx.reference casts them (numpy's astype), to and from
bool, the integers, float16, float32 and float64; strings and the ml_dtypes
types onnx.reference cannot cast are refused as out of scope, naming the
pair. Cast-1 names its target as a string (``"INT64"``), later opsets as a
TensorProto number.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..core.region import Access, Convert, Load, c_strides
from ..errors import OpError, OutOfScope
from .base import BASE_TYPES, FLOAT8, Node, versions
from .elementwise import INTEGERS, check_count, runner
from .plan import same_elements
from .tensor_op import Arg, OutputPlan, Piece, TensorOp
from .spec import OpSpec, Param

FLOAT_TYPES = ("float16", "bfloat16", "float", "double", *FLOAT8, "float4e2m1", "float8e8m0")
WHOLE = INTEGERS | {"int4", "uint4", "int2", "uint2"}  # cast between them: wrapped to the target's width
KERNEL_TYPES = WHOLE | set(FLOAT_TYPES)  # what the GPU converts
STRING_PEERS = INTEGERS | {"float16", "float", "double"}  # what strings are cast to and from (on the host)
CAST_TYPES = {1: tuple(t for t in BASE_TYPES if t not in ("complex64", "complex128", "string")), 9: ("string",),
              13: ("bfloat16",), 19: FLOAT8, 21: ("int4", "uint4"), 23: ("float4e2m1",), 24: ("float8e8m0",),
              25: ("int2", "uint2"), 28: ("float6e2m3", "float6e3m2")}
CASTLIKE_TYPES = {15: CAST_TYPES[1] + ("string", "bfloat16"), **{k: v for k, v in CAST_TYPES.items() if k > 15}}
CASTLIKE_TYPES.pop(28)


class CastBase(TensorOp):
    @classmethod
    def constraint_types(cls, constraint: str) -> frozenset[str]:
        return cls.allowed_types()  # T1 and T2 are the same list in every opset

    @staticmethod
    def pair_in_scope(source: Optional[str], to: Optional[str]) -> bool:
        """Whether onnxop casts ``source`` to ``to`` (ONNX names) (see ``cast``)."""
        if source is None or to is None:
            return False
        return source == to or (source in KERNEL_TYPES and to in KERNEL_TYPES) or (
            "string" in (source, to) and {source, to} - {"string"} <= STRING_PEERS)

    @classmethod
    def cast(cls, data: Arg, target, saturate: bool = True, round_mode: str = "up") -> list[OutputPlan]:
        if data.dtype == target:  # the same type: the input's bytes (strings: on the host, as they are)
            if target.is_string:
                return [OutputPlan(cls.outputs[0], data.shape, target, values=_strings(data), kernel="host")]
            return [same_elements(cls.outputs[0], data, target)]
        source, to = data.dtype.onnx_name, target.onnx_name
        if data.dtype.is_string or target.is_string:
            return [OutputPlan(cls.outputs[0], data.shape, target, values=_host_cast(cls, data, target), kernel="host")]
        if source not in KERNEL_TYPES or to not in KERNEL_TYPES:
            raise OutOfScope(f"{cls.label()}: input {data.name} is {_name(data.dtype)}: onnxop runs {cls.op_type} "
                             f"between numeric and bool types only; {_name(data.dtype)} to {_name(target)} is not in "
                             "its scope", reason=f"{_name(data.dtype)} inputs")
        from ..gpu.render.convert import ROUND_MODES

        if round_mode not in ROUND_MODES:
            raise OpError(f"{cls.label()}: round_mode {round_mode!r} is not one of {', '.join(ROUND_MODES)}")
        kernel_op = "Cast" if source in WHOLE and to in WHOLE else "Convert"
        check_count(cls, data.shape, [data])
        run = runner(kernel_op, [data], target.numpy.name, data.shape, cls.label(), saturate=saturate,
                     round_mode=round_mode)
        # a batch checks every job's values before any job writes (cli/tensor_ops.py): the kernel, its output dropped
        faults = kernel_op == "Convert" and to in INTEGERS and to != "bool"  # int4, int2 and their uint: 0
        check = (lambda gpu, sources: run(gpu, sources, lambda chunk: None)) if faults else None
        value = Convert(Load(0, Access(data.shape, data.strides, data.offset)), to, saturate, round_mode)
        region = Piece(data.shape, c_strides(data.shape), 0, value)
        return [OutputPlan(cls.outputs[0], data.shape, target, pieces=[region], runner=run, kernel="elementwise",
                           precheck=check)]

    @staticmethod
    def modes(node: Node) -> tuple[bool, str]:
        """The saturate and round_mode attributes (defaults 1 and "up")."""
        mode = node.value("round_mode", "up")
        if isinstance(mode, bytes):
            mode = mode.decode(errors="replace")
        return bool(int(node.value("saturate", 1))), str(mode)  # type: ignore[call-overload]


def _host_cast(cls, data: Arg, target):
    """Strings to or from numpy's own types, on the host as onnx.reference
    casts them (numpy's astype: Python's int() and float() of the text, and
    str() of the value); the types numpy has no conversion for are refused."""
    import numpy as np

    from ..core.strings import strings_to_bytes, strings_to_text

    other = target if data.dtype.is_string else data.dtype
    if other.onnx_name not in STRING_PEERS:
        raise OutOfScope(f"{cls.label()}: input {data.name} is {_name(data.dtype)}: onnxop casts strings to and from "
                         "bool, integer, float16, float32 and float64 only, as onnx.reference does; "
                         f"{_name(data.dtype)} to {_name(target)} is not in its scope")
    if target.is_string:
        return strings_to_bytes(data.values().astype(np.str_)).reshape(data.shape)
    text = strings_to_text(np.asarray(data.tensor.strings, dtype=object)).reshape(data.shape)
    try:
        with np.errstate(all="ignore"):  # "1e40" to float32 is inf, as numpy makes it
            return text.astype(target.numpy)
    except (ValueError, OverflowError, TypeError):
        pass
    for k, value in enumerate(text.reshape(-1)):  # the first element that is not a number of the type
        try:
            np.array([value], dtype=object).astype(target.numpy)
        except (ValueError, OverflowError, TypeError) as e:
            at = ", ".join(map(str, np.unravel_index(k, data.shape)))
            raise OpError(f"{cls.label()}: input {data.name} element ({at}) is {value!r}, which {target.name} "
                          f"cannot take ({e})") from None
    raise AssertionError("astype failed on no element")


def _strings(data: Arg):
    import numpy as np

    return np.asarray(data.tensor.strings, dtype=object).reshape(data.shape)


def _name(dtype) -> str:
    return "string" if dtype.is_string else dtype.name


class Cast_1(CastBase):
    op_type = "Cast"
    since_version = 1
    inputs = ("input",)
    outputs = ("output",)
    attribute_names = ("to",)
    input_types = {"input": "T1"}

    @classmethod
    def in_scope(cls, proto, types: Sequence[Optional[str]]) -> bool:
        from onnx import AttributeProto, TensorProto

        to = next((a for a in proto.attribute if a.name == "to"), None)
        if to is None:
            return True  # refused by plan, naming the missing attribute
        name = to.s.decode(errors="replace").lower() if to.type == AttributeProto.STRING else (
            TensorProto.DataType.Name(to.i).lower() if to.i in TensorProto.DataType.values() else None)
        return cls.pair_in_scope(types[0] if types else None, name)

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        from ..core.tensor import DTYPES, dtype_by_onnx

        data = args[0]
        assert data is not None
        to = node.value("to")
        if to is None:
            raise OpError(f"{cls.label()} needs the attribute to")
        try:
            if isinstance(to, str):  # Cast-1: the TensorProto name
                target = next(d for d in DTYPES if d.onnx_name == to.lower())
            else:
                target = dtype_by_onnx(int(to))  # type: ignore[call-overload]
        except Exception:  # noqa: BLE001 - StopIteration, or not a TensorProto number
            from onnx import TensorProto

            if not isinstance(to, str) and int(to) in TensorProto.DataType.values():  # type: ignore[call-overload]
                name = TensorProto.DataType.Name(int(to)).lower()  # type: ignore[call-overload]
                raise OutOfScope(f"{cls.label()}: to {to} is {name}: onnxop has no {name} tensors; a cast to it is "
                                 "not in its scope") from None
            raise OpError(f"{cls.label()}: to {to!r} is not an ONNX tensor type") from None
        if target.onnx_name not in cls.allowed_types():
            raise OpError(f"{cls.label()}: to {target} is not a type opset {node.opset} casts to")
        return cls.cast(data, target, *cls.modes(node))


class Cast_19(Cast_1):
    since_version = 19
    attribute_names = ("saturate", "to")
    optional = ("saturate",)


class Cast_24(Cast_19):
    since_version = 24
    attribute_names = ("round_mode", "saturate", "to")
    optional = ("round_mode", "saturate")


class CastLike_15(CastBase):
    op_type = "CastLike"
    since_version = 15
    inputs = ("input", "target_type")
    outputs = ("output",)
    input_types = {"input": "T1", "target_type": "T2"}

    @classmethod
    def in_scope(cls, proto, types: Sequence[Optional[str]]) -> bool:
        return len(types) >= 2 and cls.pair_in_scope(types[0], types[1])

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        data, like = args[0], args[1]
        assert data is not None and like is not None
        return cls.cast(data, like.dtype, *cls.modes(node))


class CastLike_19(CastLike_15):
    since_version = 19
    attribute_names = ("saturate",)
    optional = ("saturate",)


class CastLike_24(CastLike_19):
    since_version = 24
    attribute_names = ("round_mode", "saturate")
    optional = ("round_mode", "saturate")


MODES = (
    Param("saturate", "int", "0: a value a float8 type cannot hold is infinity or NaN; 1 (default): its largest "
          "finite value (opset 19+).", "0", choices=("0", "1"), keyword_only=True),
    Param("round_mode", "str", "How a float8e8m0 result rounds: up (default), nearest or down (opset 24+).",
          "nearest", choices=("up", "nearest", "down"), keyword_only=True),
)
WHAT = ("rounded to nearest, ties to even (float8e8m0: --round-mode); to an integer type truncated, wrapping "
        "between integer types (to int4, uint4, int2, uint2: 0 where a float does not fit; to the wider integer "
        "types a NaN, an infinity or a value out of range is refused); to bool: nonzero; strings to and from "
        "bool, integers, float16, float32, float64 on the host. One pass of the GPU's elementwise kernel, bit "
        "for bit as onnx.reference.")
CAST = OpSpec(
    "Cast",
    versions({**CAST_TYPES, 6: ()}, Cast_1, Cast_19, Cast_24),
    (Param("to", "int", "The target type: its name (int64, float32, bfloat16, float8e4m3fn) or its TensorProto "
           "number (7: int64, 1: float32, 16: bfloat16).", "7", type_name=True),
     *MODES),
    summary="Convert a tensor to another type (ONNX Cast).",
    description="For each input file, its values as the type --to, " + WHAT,
    example="onnxop cast x.npy --to 1 -o y.npy",
)
CAST_LIKE = OpSpec(
    "CastLike",
    versions(CASTLIKE_TYPES, CastLike_15, CastLike_19, CastLike_24),
    (Param("target_type", "tensor", "A tensor of the target type (its values are not read).", "t.npy"), *MODES),
    summary="Convert a tensor to another tensor's type (ONNX CastLike).",
    description="For each input file, its values as the type of --target-type, " + WHAT,
    example="onnxop cast-like x.npy --target-type t.npy -o y.npy",
)
SPECS = (CAST, CAST_LIKE)
