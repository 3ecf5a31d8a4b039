"""``onnxop compare``: are two tensors the same, element for element?

    pair up (files, archive members, folders by name) -> shape, dtype
    -> values read in chunks from both byte sources, side by side
    -> count of differing elements and the first few (index, values, bits),
       and for floating types the largest distances (distance.py)

Exact by default: the elements' bit patterns are compared, so NaN payloads
and -0.0 against 0.0 are differences. ``rtol``/``atol`` compare floating
values as ``numpy.isclose`` does (NaN equal to NaN); ``ulp`` counts the
representable values between two reals of the type. Other types are always
compared exactly, and the pair says so. Whatever the rule, a floating pair
reports its largest absolute and relative error and ulp distance
(distance.py says how NaN and -0.0 count).

Folders and archives pair their tensors by name; a name with no partner is
a difference, unless ``paired_only`` (``--paired-only``) leaves it out of
the verdict (it is still counted). Nothing paired is never the same.

This is a check on the host, not data movement: no output is written and
nothing here goes through the GPU. Both tensors are read ``CHUNK``
elements at a time from their byte sources (sources.py), so two 1 GiB files
are never held whole. Returns plain data; never prints (render/compare.py
renders it).
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional

from ..errors import UsageError
from .distance import Distance, bits as _bits, is_floating, is_real_float, ulp_apart

if TYPE_CHECKING:
    import numpy as np

    from .tensor import DType, Tensor

CHUNK = 1 << 20  # elements of each tensor held at a time
FIRST = 5  # differing elements listed by default


@dataclass(frozen=True)
class Rule:
    """How elements are compared: exact bits, a tolerance, or a ulp distance."""

    rtol: Optional[float] = None
    atol: Optional[float] = None
    ulp: Optional[int] = None

    def __post_init__(self) -> None:
        if self.ulp is not None and (self.rtol is not None or self.atol is not None):
            raise UsageError("compare: give --ulp or --rtol/--atol, not both")
        for name, v in (("--rtol", self.rtol), ("--atol", self.atol)):
            if v is not None and not (v >= 0 and math.isfinite(v)):
                raise UsageError(f"compare: {name} must be a finite number >= 0, got {v}")
        if self.ulp is not None and self.ulp < 0:
            raise UsageError(f"compare: --ulp must be >= 0, got {self.ulp}")

    @property
    def mode(self) -> str:
        if self.ulp is not None:
            return "ulp"
        return "tolerance" if self.rtol is not None or self.atol is not None else "exact"

    def describe(self) -> str:
        if self.mode == "ulp":
            return f"within {self.ulp} ulp"
        if self.mode == "tolerance":
            return f"rtol={self.rtol or 0.0}, atol={self.atol or 0.0}"
        return "exact bits"

    def applies_to(self, dtype: DType) -> bool:
        """Whether the tolerance or ulp rule applies (else bits are compared)."""
        if self.mode == "exact":
            return False
        real = is_real_float(dtype)
        return real or (self.mode == "tolerance" and dtype.name.startswith("complex"))


@dataclass
class Difference:
    index: tuple[int, ...]
    a: Any
    b: Any
    a_bits: Optional[str] = None
    b_bits: Optional[str] = None


@dataclass
class Pair:
    """One comparison: two tensors, what differs, the first differences."""

    a_label: str
    b_label: str
    a: Tensor
    b: Tensor
    mode: str = "exact"
    count: int = 0
    differing: int = 0
    problem: str = ""  # shapes or dtypes that differ: no element was compared
    first: list[Difference] = field(default_factory=list)
    distance: Optional[Distance] = None  # floating types: the largest distances

    @property
    def same(self) -> bool:
        return not self.problem and self.differing == 0


@dataclass
class Outcome:
    pairs: list[Pair]
    only_a: list[str] = field(default_factory=list)  # folders: names with no partner
    only_b: list[str] = field(default_factory=list)
    rule: Rule = field(default_factory=Rule)
    left_out: list[str] = field(default_factory=list)  # node-test inputs with no partner
    paired_only: bool = False  # names without a partner are counted, not a difference

    @property
    def same(self) -> bool:
        unpaired = not self.paired_only and (self.only_a or self.only_b)
        return bool(self.pairs) and all(p.same for p in self.pairs) and not unpaired


# ------------------------------------------------------------------ pairing


def pair_up(a: Path, b: Path, members: list[str]) -> tuple[list[tuple[str, str, Tensor, Tensor]], list[str], list[str]]:
    """The tensors to compare, with their labels, and the names of either side
    that have no partner (folders and archives are matched by name)."""
    side_a, side_b = _side(a, members), _side(b, members)
    folders = _is_folder(a) or _is_folder(b)
    if len(side_a) == 1 and len(side_b) == 1 and not folders:
        (la, ta), (lb, tb) = next(iter(side_a.items())), next(iter(side_b.items()))
        return [(la, lb, ta, tb)], [], []
    if (len(side_a) == 1 or len(side_b) == 1) and not folders:
        many, path = (side_a, a) if len(side_b) == 1 else (side_b, b)
        names = ", ".join(repr(_key(k)) for k in list(many)[:5])
        raise UsageError(
            f"compare: {path} holds {len(many)} tensors ({names}{', ...' if len(many) > 5 else ''}) and the "
            f"other side one; choose one with -m NAME"
        )
    # in passes, the surest first: file stem (or member) against file stem, a
    # stem against a tensor's own name (a run's y.npy against output_0.pb
    # holding "y"), then tensor name against tensor name
    def stem(label: str, t: Tensor) -> Optional[str]:
        return _key(label)

    def own(label: str, t: Tensor) -> Optional[str]:
        return t.name if t.named else None

    found: dict[str, str] = {}  # b label -> a label
    for key_a, key_b in ((stem, stem), (stem, own), (own, stem), (own, own)):
        taken = set(found.values())
        index: dict[str, str] = {}
        for la, ta in side_a.items():
            k = key_a(la, ta)
            if la not in taken and k is not None:
                index.setdefault(k, la)
        for lb, tb in side_b.items():
            k = key_b(lb, tb)
            if lb in found or k is None or k not in index or index[k] in taken:
                continue
            found[lb] = index[k]
            taken.add(index[k])
    pairs = [(found[lb], lb, side_a[found[lb]], tb) for lb, tb in side_b.items() if lb in found]
    only_b = [lb for lb in side_b if lb not in found]
    matched = set(found.values())
    only_a = [k for k in side_a if k not in matched]
    return pairs, only_a, only_b  # (none paired: compare's Outcome is never the same)


def _is_folder(path: Path) -> bool:
    from ..io.stdio import is_stdio

    return not is_stdio(path) and Path(path).is_dir()


def _key(label: str) -> str:
    """The name a tensor is matched by: an archive member, else a file's stem."""
    if label.endswith("]") and "[" in label:
        return label[label.rindex("[") + 1 : -1]
    return Path(label).stem


def _side(path: Path, members: list[str]) -> dict[str, Tensor]:
    """label -> tensor for one side: a file, an archive's members, or a folder's files."""
    from .. import io

    if _is_folder(path):
        found: dict[str, Tensor] = {}
        for f in sorted(Path(path).iterdir()):
            if f.is_file() and f.suffix.lower() in (".npy", ".pb"):
                found[str(f)] = io.read_tensor(f)
        if not found:
            raise UsageError(f"compare: the folder {path} holds no .npy or .pb file")
        return _select(found, members, path)
    tensors = io.read_tensors(path)
    if len(tensors) == 1 and not (io.is_archive(path) or Path(path).suffix.lower() == ".onnx"):
        return {str(path): tensors[0]}
    return _select({f"{path}[{t.name}]": t for t in tensors}, members, path)


def _select(found: dict[str, Tensor], members: list[str], path: Path) -> dict[str, Tensor]:
    if not members:
        return found
    picked = {k: t for k, t in found.items() if any(fnmatch.fnmatchcase(_key(k), m) for m in members)}
    if not picked:
        names = ", ".join(repr(_key(k)) for k in list(found)[:8])
        raise UsageError(f"compare: {path}: no tensor matches -m {' '.join(members)} (it holds {names})")
    return picked


# ------------------------------------------------------------------ comparing


def compare(a: Path, b: Path, rule: Rule, *, members: list[str] = (), first: int = FIRST,
            paired_only: bool = False) -> Outcome:
    """Compare ``a`` with ``b``: every pair's headers are read (and refused)
    before any value is. ``paired_only``: names without a partner are
    counted but are no difference."""
    pairs, only_a, only_b = pair_up(Path(a), Path(b), list(members))
    inputs = [k for k in only_a + only_b if is_node_test_input(k)]
    only_a = [k for k in only_a if k not in inputs]
    only_b = [k for k in only_b if k not in inputs]
    done = []
    try:
        for la, lb, ta, tb in pairs:
            done.append(compare_tensors(la, lb, ta, tb, rule, first=first))
    finally:
        for _, _, ta, tb in pairs:
            ta.close()
            tb.close()
    return Outcome(done, only_a, only_b, rule, left_out=inputs, paired_only=paired_only)


def is_node_test_input(label: str) -> bool:
    """A node test's ``input_N.pb`` in a folder: with no partner it is left
    out, so a run's outputs compare with a whole test_data_set_N/."""
    import re

    return not label.endswith("]") and re.fullmatch(r"input_\d+\.pb", Path(label).name) is not None


def compare_tensors(la: str, lb: str, a: Tensor, b: Tensor, rule: Rule, *, first: int = FIRST) -> Pair:
    import numpy as np

    pair = Pair(la, lb, a, b, mode=rule.mode if rule.applies_to(a.dtype) else "exact", count=a.size)
    if a.shape != b.shape:
        pair.problem = f"shapes differ: {a.shape} and {b.shape}"
        return pair
    if a.dtype != b.dtype:
        pair.problem = f"dtypes differ: {a.dtype} and {b.dtype}"
        return pair
    if is_floating(a.dtype):
        pair.distance = Distance()
    with np.errstate(all="ignore"):
        for start, va, vb in _side_by_side(a, b):
            bad = _differs(va, vb, a.dtype, rule if pair.mode != "exact" else Rule())
            if pair.distance is not None:
                pair.distance.add(va, vb, a.dtype)
            n = int(np.count_nonzero(bad))
            if not n:
                continue
            pair.differing += n
            for pos in np.flatnonzero(bad)[: max(0, first - len(pair.first))]:
                index = tuple(int(i) for i in np.unravel_index(start + int(pos), a.shape)) if a.shape else ()
                pair.first.append(_difference(index, va[pos], vb[pos], a.dtype))
    return pair


def _side_by_side(a: Tensor, b: Tensor) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    start = 0
    for va, vb in zip(chunks(a), chunks(b)):
        yield start, va, vb
        start += len(va)


def _wide(dtype: DType):
    return "complex128" if dtype.name.startswith("complex") else "float64"


def chunks(tensor: Tensor, step: Optional[int] = None) -> Iterator[np.ndarray]:
    """The tensor's values in row-major order, ``step`` at a time (native
    byte order; 2- and 4-bit types one element per byte), read from its byte
    source as they are needed."""
    import numpy as np

    from .tensor import unpack_subbyte

    step = step or CHUNK  # (read when called: a test sets a smaller one)
    if tensor.dtype.is_string:
        assert tensor.strings is not None
        yield np.asarray(tensor.strings, dtype=object).reshape(-1)
        return
    size, data = tensor.size, tensor.data
    assert data is not None
    if tensor.order == "F" and tensor.rank > 1:
        # a view of the file (mapped when large: pages read as they are indexed), big-endian bytes unswapped:
        # a native copy would be the whole file in memory
        values = tensor.to_numpy(native=False)
        for start in range(0, size, step):
            yield values[np.unravel_index(np.arange(start, min(size, start + step)), tensor.shape)].astype(
                tensor.dtype.numpy, copy=False)  # native byte order, a chunk at a time
        return
    if tensor.dtype.is_packed:
        per_byte = 8 // tensor.dtype.bits
        step = max(per_byte, step - step % per_byte)
        for start in range(0, size, step):
            count = min(step, size - start)
            raw = np.empty((count + per_byte - 1) // per_byte, dtype=np.uint8)
            data.readinto(start // per_byte, memoryview(raw))
            yield unpack_subbyte(raw, tensor.dtype, count)
        return
    native = tensor.dtype.numpy
    width = native.itemsize
    for start in range(0, size, step):
        count = min(step, size - start)
        raw = np.empty(count * width, dtype=np.uint8)
        data.readinto(start * width, memoryview(raw))
        if tensor.byteswap:
            unit = tensor.byteswap
            raw = raw.view(f">u{unit}").astype(f"<u{unit}").view(np.uint8)
        yield raw.view(native)


def _differs(va: np.ndarray, vb: np.ndarray, dtype: DType, rule: Rule) -> np.ndarray:
    import numpy as np

    if dtype.is_string:
        return np.fromiter((x != y for x, y in zip(va, vb)), dtype=bool, count=len(va))
    if rule.mode == "tolerance":
        wide = _wide(dtype)
        return ~np.isclose(va.astype(wide), vb.astype(wide), rtol=rule.rtol or 0.0, atol=rule.atol or 0.0,
                           equal_nan=True)
    if rule.mode == "ulp":
        return ulp_apart(va, vb, dtype) > rule.ulp
    ba, bb = _bits(va), _bits(vb)
    ne = ba != bb
    return ne.any(axis=1) if ne.ndim == 2 else ne


def _difference(index: tuple[int, ...], x: Any, y: Any, dtype: DType) -> Difference:
    import numpy as np

    if dtype.is_string:
        return Difference(index, _text(x), _text(y))
    if dtype.name == "bool":
        return Difference(index, bool(x), bool(y))
    if dtype.name.startswith("complex"):
        cx, cy = complex(x), complex(y)
        return Difference(index, [cx.real, cx.imag], [cy.real, cy.imag],
                          _hex(np.asarray([x]), dtype), _hex(np.asarray([y]), dtype))
    if is_real_float(dtype):
        return Difference(index, float(x), float(y), _hex(np.asarray([x]), dtype), _hex(np.asarray([y]), dtype))
    return Difference(index, int(x), int(y))


def _hex(one: np.ndarray, dtype: DType) -> str:
    bits = _bits(one).reshape(-1)
    digits = max(1, (dtype.bits if dtype.is_packed else one.dtype.itemsize * 8 // len(bits)) // 4)
    return "0x" + "".join(f"{int(b):0{digits}x}" for b in bits[::-1])


def _text(v: Any) -> str:
    return v.decode("utf-8", "backslashreplace") if isinstance(v, bytes) else str(v)
