"""ScatterND with reduction none by whole slices (gpu/scatter.py's ``_by_slices``, where gpu/render/slices.py finds
the slices whole words), once the data is in ``out``, in two steps (``Slices.step``):

``claim``
    an invocation per index tuple counts its target slice; a count found non-zero is two tuples naming one slice
    (status[1] = 1): the host refuses the scatter before the apply, whatever order the invocations ran in.
``apply``
    WORDS update words an invocation over their distinct targets: one writer a word.

The tuples are read from ``norm`` as the index check (gpu/render/indexed.py) wrote it, or (``raw``) from the raw
int64 indices, each checked as read (render/indices.py's checked_index: a bad one is refused before the apply); the
raw claim leaves each tuple's target word in ``starts`` for the apply. The table and Params (render/indices.py's
SLICE_PARAMS) are the gather's (a Lookup's ``claim``: its stride in slices).
"""

from __future__ import annotations

from dataclasses import dataclass

from .frame import Binding, Frame, first
from .indices import SLICE_PARAMS, checked_index, slice_copy, table, walk
from .schedule import Words

_AIM = """// Slice p's target: (word of its first word, slice number), its tuple read from {whence}
fn aim(p: u32) -> vec2<u32> {{
    let ip = at(p).ip;
    var t = vec2<u32>(0u);
    for (var j = 0u; j < params.nlook; j = j + 1u) {{
        let lk = lookup(params.outer + j);
        t = t + {index} * vec2<u32>(lk.stride, lk.claim);
    }}
    return t;
}}
"""
_CLAIM = """    let t = aim(p);
{keep}    if (atomicAdd(&claims[t.y], 1u) != 0u) {{
        atomicStore(&status[1], 1u);
    }}
"""


@dataclass(frozen=True)
class Slices(Frame):
    """Step ``step`` (claim or apply) of the whole-slice scatter; ``raw``: the indices are the raw int64 ones."""

    step: str  # claim or apply
    raw: bool = False
    PARAMS = SLICE_PARAMS
    bindings = (Binding(0, "updates", "read", "u32"), Binding(1, "out", "read_write", "u32"), Binding(2),
                Binding(3, "axes", "read", "vec4<u32>"),  # indices.table()
                Binding(4, "norm", "read", "u32"), Binding(5, "status", "read_write", "atomic<u32>"),
                Binding(6, "claims", "read_write", "atomic<u32>"),  # per data slice
                # raw: tuple p's first word in `out`, written by the claim, read by the apply
                Binding(7, "starts", "read_write", "u32"),
                Binding(8, "raw", "read", "vec2<u32>"))  # raw: `norm` again, an index a load (checked_index)

    @property
    def schedule(self) -> Words:  # type: ignore[override]
        return Words(self.step)  # an apply invocation's WORDS consecutive update words

    @property
    def label(self) -> str:
        s = self.schedule
        return f"scatter slices {self.step}{' raw' if self.raw else ''}[wg={s.wg},words={s.words}]"

    def parts(self) -> list[str]:
        if self.step == "apply" and self.raw:
            return []  # the claim's targets, in `starts`
        aim = _AIM.format(whence="the raw indices, checked" if self.raw else "`norm` as the index check (gpu/render/indexed.py) wrote it",
                          index="index(ip + lk.ioff, lk.bound)" if self.raw else "norm[ip + lk.ioff]")
        return [*table(), *(checked_index() if self.raw else []), walk("p", "params.outer", ("ip", "last")), aim]

    def main(self) -> str:
        if self.step == "apply":
            return slice_copy("WORDS", "starts[p]" if self.raw else "aim(p).x", "out[b + k] = updates[q]", walk=False)
        return first("p", count="words") + _CLAIM.format(keep="    starts[p] = t.x;\n" if self.raw else "")
