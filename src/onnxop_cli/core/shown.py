"""The pieces that make only the elements a summary shows (pure index arithmetic).

A result printed as numpy's summary shows, along each axis longer than
2 * edge, the first and last ``edge`` entries (core/summary.py keeps one more
on each side, so numpy still writes ``...`` there). Its shown elements form a
small array of the *narrowed* shape: each long axis 2 * (edge + 1) long.

``narrow(pieces, shape, edge)`` turns the pieces that tile a whole output
(core/pieces.py: Concat, Pad, Where, Trilu, fills, OneHot, EyeLike, and a
view operator's index map as one piece) into pieces that tile the narrowed
array: each piece is cut to the shown entries of each axis, as runs of
consecutive shown entries whose source (and mask) offsets step evenly. The
pieces kernel (or, for strings, the host) then runs them as it runs any
plan, so the shown values are the whole result's -- made from a few
elements, whatever the result's size. Pieces this cannot follow (a box whose
elements are not laid out along the output's axes) give None: the caller
makes the whole result as before.
"""

from __future__ import annotations

import itertools
import math
from typing import Optional, Sequence

from .pieces import Piece, fields, forwards, moved, rebuilt, two_pass
from .region import Access, Load, Tri, c_strides, load

MAX_PIECES = 1 << 16  # narrowed pieces past this: not worth it (the caller makes the result)


def shown_positions(n: int, edge: int) -> list[int]:
    """The entries of an axis of length ``n`` that a summary shows, with one
    extra at each end (all of them when the axis is not summarised)."""
    if n > 2 * edge:
        return list(range(edge + 1)) + list(range(n - edge - 1, n))
    return list(range(n))


def narrowed_shape(shape: Sequence[int], edge: int) -> tuple[int, ...]:
    return tuple(len(shown_positions(n, edge)) for n in shape)


def view_piece(view: Access, input: int = 0) -> Piece:
    """A view operator's whole output as one piece: its access of input
    ``input`` read in row-major order (the output is its elements so ordered)."""
    shape = tuple(view.shape)
    return Piece(shape, c_strides(shape), 0, load(input, shape, view.strides, view.offset))


def narrow(pieces: Sequence[Piece], shape: Sequence[int], edge: int) -> Optional[list[Piece]]:
    """The pieces of the narrowed array (see the module docs), in the order
    of ``pieces`` (a later piece still overwrites an earlier one); None when
    a piece is not laid out along the output's axes."""
    shape = tuple(shape)
    shown = [shown_positions(n, edge) for n in shape]
    where = [{q: j for j, q in enumerate(s)} for s in shown]
    nstrides = c_strides(narrowed_shape(shape, edge))
    out: list[Piece] = []
    for p in (q for whole in moved(pieces) for q in two_pass(whole)):  # a select piece: its copy, then its masked copy
        part = _narrow_one(p, shape, shown, where, nstrides)
        if part is None:
            return None
        out += part
        if len(out) > MAX_PIECES:
            return None
    return out


def _steps(p: Piece, shape: tuple[int, ...], strides: tuple[int, ...]) -> Optional[list[list[int]]]:
    """Per piece axis, how many entries it moves along each output axis
    (its destination stride in the output's mixed radix); None if negative."""
    steps = []
    for d, ds in zip(p.shape, p.dst_strides):
        step = [0] * len(shape)
        if d > 1:
            if ds <= 0:
                return None
            for k, (n, c) in enumerate(zip(shape, strides)):
                if n > 1:
                    step[k], ds = divmod(ds, c)
            if ds:
                return None
        steps.append(step)
    return steps


def _narrow_one(p: Piece, shape, shown, where, nstrides) -> Optional[list[Piece]]:
    if p.size == 0:
        return []
    if any(ds < 0 for ds in p.dst_strides):
        p = forwards(p)  # type: ignore[assignment]
        if p is None:
            return None
    strides = c_strides(shape)
    r = len(shape)
    if not 0 <= p.dst_offset < math.prod(shape):
        return None
    start, rest = [], p.dst_offset
    for c in strides:
        q, rest = divmod(rest, c) if c else (0, rest)
        start.append(q)
    steps = _steps(p, shape, strides)
    if steps is None:
        return None
    for k in range(r):  # every element inside the output: no carry between axes
        if start[k] + sum((d - 1) * s[k] for d, s in zip(p.shape, steps)) >= shape[k]:
            return None
    moving = [a for a, d in enumerate(p.shape) if d > 1 and any(steps[a])]
    if any(sum(1 for x in steps[a] if x) > 1 for a in moving):
        return _diagonal(p, shape, shown, where, nstrides, start, steps, moving)
    v = fields(p.value)  # the source, mask and triangle narrowed, as the kernel takes them (``rebuilt``)
    src = v.src.at.strides if v.src is not None else (0,) * len(p.shape)
    msk = v.mask.at.strides if v.mask is not None else (0,) * len(p.shape)
    tri_axes = (v.tri[1], v.tri[2]) if v.tri is not None else ()
    per_axis = []
    for k in range(r):
        group = sorted((a for a in moving if steps[a][k]), key=lambda a: -steps[a][k])
        for x, a in enumerate(group):  # a row-major grid along the axis: each position one element
            if steps[a][k] <= sum((p.shape[b] - 1) * steps[b][k] for b in group[x + 1:]):
                return None
        hits = []
        for j, q in enumerate(shown[k]):
            rem = q - start[k]
            if rem < 0:
                continue
            idx = {}
            for a in group:
                i = min(rem // steps[a][k], p.shape[a] - 1)
                idx[a] = i
                rem -= i * steps[a][k]
            if rem == 0:
                hits.append((j, sum(i * src[a] for a, i in idx.items()), sum(i * msk[a] for a, i in idx.items()),
                             tuple(idx.get(t, 0) for t in tri_axes)))
        if not hits:
            return []
        per_axis.append(_runs(hits))
    if v.tri is not None:
        kt, ra, ca, upper = v.tri
        axis_of = {a: k for a in moving for k in range(r) if steps[a][k]}
        if ra in axis_of and ca in axis_of and axis_of[ra] == axis_of[ca]:
            return None
    pieces = []
    if math.prod(len(runs) for runs in per_axis) > MAX_PIECES:
        return None
    for combo in itertools.product(*per_axis):
        dims = tuple(run[1] for run in combo)
        tri = None
        if v.tri is not None:
            kt, ra, ca, upper = v.tri
            new_axes = []
            origin = [0, 0]
            for t, a in enumerate((ra, ca)):
                k = axis_of.get(a)
                if k is None:  # the row (col) never moves: a constant, folded into k
                    new_axes.append(-1)
                    continue
                run = combo[k]
                origin[t] = run[6][0][t]
                if run[1] > 1:
                    if run[6][1][t] != 1:
                        return None
                    new_axes.append(k)
                else:
                    new_axes.append(-1)
            tri = Tri(kt + origin[0] - origin[1], new_axes[0], new_axes[1], upper)
        pieces.append(rebuilt(
            p, _moved(v.src, dims, tuple(run[3] for run in combo), sum(run[2] for run in combo)),
            _moved(v.mask, dims, tuple(run[5] for run in combo), sum(run[4] for run in combo)), tri,
            shape=dims, dst_strides=nstrides, dst_offset=sum(run[0] * c for run, c in zip(combo, nstrides)),
        ))
    return pieces


def _runs(hits: list[tuple[int, int, int, tuple[int, ...]]]) -> list[tuple]:
    """Consecutive shown entries whose offsets step evenly, as runs:
    (first entry, length, src offset, src step, mask offset, mask step,
    (triangle origin, triangle step))."""
    runs: list[list] = []
    for j, s, m, t in hits:
        if runs:
            run = runs[-1]
            j0, n, s0, ds, m0, dm, (t0, dt) = run
            if j == j0 + n and (n == 1 or (s - s0 == n * ds and m - m0 == n * dm
                                           and all(x - y == n * z for x, y, z in zip(t, t0, dt)))):
                if n == 1:
                    run[3], run[5] = s - s0, m - m0
                    run[6] = (t0, tuple(x - y for x, y in zip(t, t0)))
                run[1] = n + 1
                continue
        runs.append([j, 1, s, 0, m, 0, (t, tuple(0 for _ in t))])
    return [tuple(run) for run in runs]


def _diagonal(p: Piece, shape, shown, where, nstrides, start, steps, moving) -> Optional[list[Piece]]:
    """A piece one of whose axes moves along several output axes at once
    (EyeLike's diagonal): its shown elements one by one -- at most
    2 * (edge + 1) of them along each moving axis."""
    v = fields(p.value)
    if len(moving) != 1 or v.tri is not None:
        return None
    a = moving[0]
    step = steps[a]
    k0 = next(k for k, s in enumerate(step) if s)
    src = v.src.at.strides[a] if v.src is not None else 0
    msk = v.mask.at.strides[a] if v.mask is not None else 0
    pieces = []
    for q in shown[k0]:
        i, bad = divmod(q - start[k0], step[k0])
        if bad or not 0 <= i < p.shape[a]:
            continue
        at = [where[k].get(start[k] + i * step[k]) for k in range(len(shape))]
        if any(j is None for j in at):
            continue
        pieces.append(rebuilt(p, _moved(v.src, (), (), i * src), _moved(v.mask, (), (), i * msk), None, shape=(),
                              dst_strides=(), dst_offset=sum(j * c for j, c in zip(at, nstrides))))
    return pieces


def _moved(x: Optional[Load], shape: tuple[int, ...], strides: tuple[int, ...], by: int) -> Optional[Load]:
    """Load ``x`` over a narrowed box: ``shape`` and ``strides``, its offset moved ``by`` elements."""
    return None if x is None else load(x.input, shape, strides, x.at.offset + by)
