"""Tile: the input repeated ``repeats[k]`` times along each axis k.

Tile-1 repeats along one axis: ``tiles`` times along ``axis``, both given as
scalar inputs (a negative axis counts from the back, as everywhere but
Flatten before 11). Tile-6 takes ``repeats`` (int64, one per axis). The index
map splits each output axis into (repeat, dim), the repeat with stride 0, so
the view has twice the input's rank.
"""

from __future__ import annotations

from ..errors import OpError
from .base import BASE_TYPES, Node, OpVersion, versions
from .spec import OpSpec, Param
from ..core.region import Access


class Tile_1(OpVersion):
    op_type = "Tile"
    since_version = 1
    inputs = ("input", "tiles", "axis")
    outputs = ("output",)

    @classmethod
    def repeats(cls, node: Node, shape: tuple[int, ...]) -> list[int]:
        tiles, axis = node.value("tiles", ()), node.value("axis", ())
        if len(tiles) != 1 or len(axis) != 1:  # type: ignore[arg-type]
            raise OpError(f"{cls.label()}: tiles and axis must be one integer each, got {tiles} and {axis}")
        r = len(shape)
        k = cls.check_axis(int(axis[0]), -r, r - 1, f"for an input of rank {r}")  # type: ignore[index]
        return cls.checked([int(tiles[0]) if i == k else 1 for i in range(r)], shape)  # type: ignore[index]

    @classmethod
    def checked(cls, repeats: list[int], shape: tuple[int, ...]) -> list[int]:
        if len(repeats) != len(shape):
            raise OpError(
                f"{cls.label()}: repeats {repeats} has {len(repeats)} values for an input of rank "
                f"{len(shape)}; it needs one per axis"
            )
        if any(n < 0 for n in repeats):
            raise OpError(f"{cls.label()}: repeats {repeats} has a negative count")
        return repeats

    @classmethod
    def output_shape(cls, node: Node, shape: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(d * n for d, n in zip(shape, cls.repeats(node, shape)))

    @classmethod
    def view(cls, node: Node, shape: tuple[int, ...], strides: tuple[int, ...], offset: int = 0) -> Access:
        repeats = cls.repeats(node, shape)
        return Access(
            tuple(x for n, d in zip(repeats, shape) for x in (n, d)),
            tuple(x for s in strides for x in (0, s)),
            offset,
        )


class Tile_6(Tile_1):
    since_version = 6
    inputs = ("input", "repeats")

    @classmethod
    def repeats(cls, node: Node, shape: tuple[int, ...]) -> list[int]:
        return cls.checked([int(n) for n in node.value("repeats", ())], shape)  # type: ignore[union-attr]


# opset -> the tensor types that version added (onnx.defs' lists; tests/unit/test_opsets.py
# holds them to it). A class above only where the rule changes.
TYPES = {
    1: BASE_TYPES[:3],  # float, double, float16
    6: BASE_TYPES[3:],  # the rest of BASE_TYPES
    13: ("bfloat16",),
}
VERSIONS = versions(TYPES, Tile_1, Tile_6)

SPEC = OpSpec(
    "Tile",
    VERSIONS,
    (
        Param("repeats", "ints", "Comma-separated count of copies along each axis (opset 6+; '' for a scalar).", "2,2",
              empty_ok=True),
        Param("tiles", "int", "Copies along --axis (opset 1 to 5 only).", "3"),
        Param("axis", "int", "The axis --tiles repeats along (opset 1 to 5 only).", "0"),
    ),
    summary="Repeat tensors along each axis (ONNX Tile).",
    description="Repeat each input --repeats[k] times along each axis k, through the GPU gather kernel.",
    example="onnxop tile x.npy --repeats 2,2 -o y.npy",
    api_doc='ONNX Tile: ``x`` repeated ``repeats[k]`` times along each axis k (as numpy.tile).',
)
