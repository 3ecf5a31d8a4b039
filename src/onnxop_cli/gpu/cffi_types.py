"""Make wgpu-py's first use of each C type cheap.

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
through to cffi unchanged. tests/test_cffi_types.py checks the answers
against cffi's parser on a spread of the header's typedefs and on every
callback signature wgpu-py declares.
"""

from __future__ import annotations

import re
from typing import Any

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


def speed_up_wgpu() -> bool:
    """Install the fast path on wgpu-py's ffi (imports wgpu's native backend)."""
    try:
        from wgpu.backends.wgpu_native._ffi import ffi
    except ImportError:
        return False
    return speed_up(ffi)
