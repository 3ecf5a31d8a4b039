"""Index maps as data: a strided view of a row-major source, in elements.

Output element at row-major multi-index ``i`` (over ``shape``) is source
element ``offset + sum(i[k] * strides[k])``. Transpose, Expand, Slice, Tile,
DepthToSpace and SpaceToDepth are different tables for this one map, and so
are Fortran order (reversed strides) and the reshapes (the identity); see
numpy's ``as_strided``. Pure Python: nothing here touches bytes or the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class View:
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def simplified(self) -> View:
        """The same map with size-1 axes dropped and axes that step through the
        source as one merged (fewer axes: cheaper index arithmetic, and the
        identity shows as one axis of stride 1)."""
        if self.size == 0:
            return View((0,), (1,), 0)
        axes: list[list[int]] = []
        for d, s in zip(self.shape, self.strides):
            if d == 1:
                continue
            if axes and axes[-1][1] == d * s:
                axes[-1] = [axes[-1][0] * d, s]
            else:
                axes.append([d, s])
        return View(tuple(a[0] for a in axes), tuple(a[1] for a in axes), self.offset)

    def is_identity(self) -> bool:
        """Reads the source front to back, every element once, from element 0."""
        v = self.simplified()
        return v.offset == 0 and (v.shape == () or (len(v.shape) == 1 and v.strides == (1,)))


def c_strides(shape) -> tuple[int, ...]:
    """Row-major strides, in elements."""
    strides, step = [], 1
    for d in reversed(tuple(shape)):
        strides.append(step)
        step *= max(int(d), 1)
    return tuple(reversed(strides))


def f_strides(shape) -> tuple[int, ...]:
    """Column-major (Fortran) strides, in elements."""
    return tuple(reversed(c_strides(tuple(shape)[::-1])))
