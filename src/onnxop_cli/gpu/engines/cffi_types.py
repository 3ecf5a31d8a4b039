"""Make wgpu-py's cffi set-up and its first use of each C type cheap.

Two costs, both pycparser's:

1. Importing wgpu-py's native backend runs ``ffi.cdef(<wgpu.h>)``: pycparser
   parses the whole header, 0.3-0.7 s on a 2-core machine, every process.
   :func:`cached_header_parse` keeps the parser's result (its table of
   declarations, plain cffi model objects) in onnxop's cache folder, as
   JSON that can only build cffi's type classes (never a pickle), keyed by
   the header's text and the cffi and Python versions; a later process
   loads it in ~20 ms. A missing, stale, foreign or broken file is parsed
   again and rewritten.
2. Each new C type string, below.

wgpu-py drives wgpu-native through cffi in ABI mode. Every ``ffi.new("WGPUX *")``
with a type string not seen before makes cffi parse ``void __dummy(WGPUX *);``
with pycparser, after *re-declaring every typedef of the wgpu header* (several
hundred lines) so the parser knows which names are types. About forty such
strings are met on the way to a first dispatch, and that parsing was most of
onnxop's start-up (~1.5 s of ~2.4 s for a 4 KiB file on a 2-core machine).

The strings wgpu-py uses are almost all ``NAME``, ``NAME *`` or ``NAME[]``,
where NAME is a typedef the header already declared, or callback signatures
``void(ARG, ...)`` whose arguments are such names (``const`` allowed before
the ``*``). For those the answer is a lookup in the parser's own table, built
by the same rules cffi's parser applies (a typedef is dereferenced; ``*``
goes through ``_get_type_pointer``; ``[]`` is an array of unknown length; a
function's arguments go through ``_as_func_arg``). Anything else falls
through to cffi unchanged. tests/unit/test_cffi_types.py checks the answers
against cffi's parser on a spread of the header's typedefs and on every
callback signature wgpu-py declares.
"""

from __future__ import annotations

import hashlib
import json
import re
from contextlib import contextmanager
from typing import Any, Iterator

from ...io.cache import cache_dir, read_regular, write_atomic

_SIMPLE = re.compile(r"\s*([A-Za-z_]\w*)\s*(\*|\[\s*\])?\s*")
_ARG = re.compile(r"\s*([A-Za-z_]\w*)\s*(const\s*)?(\*)?\s*")
_CALLBACK = re.compile(r"\s*void\s*\(([\w\s,*]*)\)\s*")


def fast_type_parser(parser: Any) -> Any:
    """A ``parse_type_and_quals`` for ``parser`` that skips pycparser for
    ``NAME``, ``NAME *`` and ``NAME[]`` when NAME is a declared typedef or a
    cffi primitive type."""
    from cffi import model
    from cffi.commontypes import resolve_common_type

    slow = parser.parse_type_and_quals
    declarations = parser._declarations
    primitives = model.PrimitiveType.ALL_PRIMITIVE_TYPES

    def named(name: str):
        if name == "void":
            return model.void_type, 0
        found = declarations.get("typedef " + name)
        if found is None and name in primitives:
            found = resolve_common_type(parser, name)
        return found

    def callback(arglist: str):
        args = []
        for text in arglist.split(","):
            m = _ARG.fullmatch(text)
            found = named(m.group(1)) if m else None
            if found is None:
                return None
            tp, quals = found
            if m.group(2):
                quals |= model.Q_CONST
            if m.group(3):
                tp, quals = parser._get_type_pointer(tp, quals), 0
            args.append(parser._as_func_arg(tp, quals))
        if args == [model.void_type]:
            args = []
        return model.RawFunctionType(tuple(args), model.void_type, False, None), 0

    def parse_type_and_quals(cdecl: str):
        m = _SIMPLE.fullmatch(cdecl)
        if m is not None:
            name, suffix = m.groups()
            found = named(name) if name != "void" or suffix else None
            if found is not None:
                tp, quals = found
                if suffix == "*":
                    return parser._get_type_pointer(tp, quals), 0
                if suffix:
                    return model.ArrayType(tp, None), quals
                return tp, quals
        m = _CALLBACK.fullmatch(cdecl)
        if m is not None:
            found = callback(m.group(1))
            if found is not None:
                return found
        return slow(cdecl)

    parse_type_and_quals.slow = slow  # type: ignore[attr-defined]
    return parse_type_and_quals


def speed_up(ffi: Any) -> bool:
    """Install the fast path on ``ffi`` (once). Returns False, changing
    nothing, if this cffi does not look like the one it was written for."""
    parser = getattr(ffi, "_parser", None)
    if parser is None or not hasattr(parser, "_declarations"):
        return False
    if not all(hasattr(parser, a) for a in ("parse_type_and_quals", "_get_type_pointer", "_as_func_arg")):
        return False
    if getattr(parser.parse_type_and_quals, "slow", None) is not None:
        return True
    try:
        parser.parse_type_and_quals = fast_type_parser(parser)
    except (ImportError, AttributeError):
        return False
    return True


_PARSER_STATE = ("_declarations", "_included_declarations", "_anonymous_counter", "_options", "_int_constants")
_CACHE_FORMAT = 2  # 2: a first line with the SHA-256 of the state's text
# The attributes a cached cffi type may carry (besides each class's own
# ``_attrs_``, which it must carry): a damaged but parseable file -- a letter
# changed in an attribute's name -- is refused, never left to fail later
# with an AttributeError inside cffi.
_TYPE_ATTRS = frozenset({
    "c_name_with_marker", "fldnames", "fldtypes", "fldbitsize", "fldquals", "forcename", "packed", "partial",
    "completed", "partial_resolved", "fixedlayout", "baseinttype", "enumerators", "enumvalues",
})


def _encode(state: dict) -> str:
    """The parser's state as JSON. Values are plain data and cffi.model
    objects; an object is written once with its attributes and referred to
    by number after that (types refer to each other, and struct types are
    compared by identity). No pickle: onnxop never unpickles anything."""
    from cffi import model

    ids: dict[int, int] = {}

    def enc(v: Any) -> Any:
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, tuple):
            return {"T": [enc(x) for x in v]}
        if isinstance(v, list):
            return {"L": [enc(x) for x in v]}
        if isinstance(v, (set, frozenset)):
            return {"S": [enc(x) for x in v]}
        if isinstance(v, dict):
            return {"D": [[enc(k), enc(x)] for k, x in v.items()]}
        if type(v).__module__ == model.__name__:
            if id(v) in ids:
                return {"R": ids[id(v)]}
            ids[id(v)] = n = len(ids)
            return {"O": [type(v).__name__, n, {k: enc(x) for k, x in vars(v).items()}]}
        raise TypeError(f"cannot cache a {type(v).__name__}")

    text = json.dumps({k: enc(state[k]) for k in _PARSER_STATE})
    head = json.dumps({"format": _CACHE_FORMAT, "sha256": hashlib.sha256(text.encode()).hexdigest()})
    return f"{head}\n{text}"


def _decode(text: str) -> dict:
    """The inverse of :func:`_encode`; builds only cffi.model classes
    (ValueError for anything else)."""
    from cffi import model

    head, _, body = text.partition("\n")
    doc = json.loads(head)
    if not isinstance(doc, dict) or doc.get("format") != _CACHE_FORMAT:
        raise ValueError("not an onnxop header cache")
    if doc.get("sha256") != hashlib.sha256(body.encode()).hexdigest():
        raise ValueError("a damaged header cache")  # one byte changed anywhere: parse again
    doc = {"state": json.loads(body)}
    objs: list[Any] = []

    def dec(v: Any) -> Any:
        if not isinstance(v, dict):
            return v
        (tag, body), = v.items()
        if tag == "T":
            return tuple(dec(x) for x in body)
        if tag == "L":
            return [dec(x) for x in body]
        if tag == "S":
            return {dec(x) for x in body}
        if tag == "D":
            return {dec(k): dec(x) for k, x in body}
        if tag == "R":
            return objs[body]
        if tag == "O":
            name, n, attrs = body
            cls = getattr(model, name, None)
            if not (isinstance(cls, type) and issubclass(cls, model.BaseTypeByIdentity)) or n != len(objs):
                raise ValueError(f"unexpected {name!r} in the header cache")
            if not isinstance(attrs, dict) or not set(cls._attrs_) <= attrs.keys() <= _TYPE_ATTRS | set(cls._attrs_):
                raise ValueError(f"a {name} with attributes {sorted(attrs)} in the header cache")
            if cls is model.VoidType:  # a singleton that cffi compares with `is`
                objs.append(model.void_type)
                return model.void_type
            obj = object.__new__(cls)
            objs.append(obj)  # before its attributes: types can refer back to it
            obj.__dict__.update({k: dec(x) for k, x in attrs.items()})
            return obj
        raise ValueError(f"unexpected {tag!r} in the header cache")

    state = {k: dec(doc["state"][k]) for k in _PARSER_STATE}
    if not state["_declarations"]:
        raise ValueError("empty header cache")
    return state


@contextmanager
def cached_header_parse() -> Iterator[None]:
    """While active, a fresh cffi parser asked to parse a whole header loads
    the result of an earlier parse of the same text from the cache folder
    (or parses, then saves it)."""
    import sys

    import cffi
    from cffi import cparser

    real = cparser.Parser.parse

    def parse(self, csource, override=False, packed=False, pack=None, dllexport=False):
        if self._declarations or override or packed or pack or dllexport:
            return real(self, csource, override, packed, pack, dllexport)
        key = hashlib.sha256(f"{cffi.__version__}|{sys.version}|{csource}".encode()).hexdigest()[:24]
        path = cache_dir() / f"cffi-{key}.json"
        data = read_regular(path, private=True)  # it builds cffi's types: ours alone
        result = None
        try:
            state = _decode(data.decode()) if data is not None else None
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError, UnicodeDecodeError):
            state = None  # a bad cache file means: parse again
        if state is not None:
            vars(self).update(state)
        else:
            result = real(self, csource, override, packed, pack, dllexport)
            if not self._recomplete and getattr(self, "_uses_new_feature", None) is None:
                try:
                    write_atomic(path, _encode(vars(self)).encode())
                except (TypeError, ValueError, RecursionError):
                    pass
        # wgpu-py's module goes on to declare callbacks and types: give its
        # parser the fast path now, not after the import.
        self.parse_type_and_quals = fast_type_parser(self)
        return result

    cparser.Parser.parse = parse
    try:
        yield
    finally:
        cparser.Parser.parse = real


def speed_up_wgpu() -> bool:
    """Import wgpu's native backend with the header parse cached, and
    install the type-string fast path on its ffi."""
    try:
        with cached_header_parse():
            from wgpu.backends.wgpu_native._ffi import ffi
    except ImportError:
        return False
    return speed_up(ffi)
