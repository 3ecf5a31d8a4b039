"""Make wgpu-py's first use of each C type cheap.

wgpu-py drives wgpu-native through cffi in ABI mode. Every ``ffi.new("WGPUX *")``
with a type string not seen before makes cffi parse ``void __dummy(WGPUX *);``
with pycparser, after *re-declaring every typedef of the wgpu header* (several
hundred lines) so the parser knows which names are types. About forty such
strings are met on the way to a first dispatch, and that parsing was most of
onnxop's start-up (~1.5 s of ~2.4 s for a 4 KiB file on a 2-core machine).

The strings wgpu-py uses are almost all of the form ``NAME``, ``NAME *`` or
``NAME[]`` where NAME is a typedef the header already declared. For those the
answer is a lookup in the parser's own table, built by the same rules cffi's
parser applies (a typedef is dereferenced; ``*`` goes through
``_get_type_pointer``; ``[]`` is an array of unknown length). Anything else
falls through to cffi unchanged. tests/test_cffi_types.py checks the lookup
against cffi's parser for every typedef of the header.
"""

from __future__ import annotations

import re
from typing import Any

_SIMPLE = re.compile(r"\s*([A-Za-z_]\w*)\s*(\*|\[\s*\])?\s*")


def fast_type_parser(parser: Any) -> Any:
    """A ``parse_type_and_quals`` for ``parser`` that skips pycparser for
    ``NAME``, ``NAME *`` and ``NAME[]`` when NAME is a declared typedef or a
    cffi primitive type."""
    from cffi import model
    from cffi.commontypes import resolve_common_type

    slow = parser.parse_type_and_quals
    declarations = parser._declarations
    primitives = model.PrimitiveType.ALL_PRIMITIVE_TYPES

    def parse_type_and_quals(cdecl: str):
        m = _SIMPLE.fullmatch(cdecl)
        if m is not None:
            name, suffix = m.groups()
            found = declarations.get("typedef " + name)
            if found is None and name in primitives:
                found = resolve_common_type(parser, name)
            if found is not None:
                tp, quals = found
                if suffix == "*":
                    return parser._get_type_pointer(tp, quals), 0
                if suffix:
                    return model.ArrayType(tp, None), quals
                return tp, quals
        return slow(cdecl)

    parse_type_and_quals.slow = slow  # type: ignore[attr-defined]
    return parse_type_and_quals


def speed_up(ffi: Any) -> bool:
    """Install the fast path on ``ffi`` (once). Returns False, changing
    nothing, if this cffi does not look like the one it was written for."""
    parser = getattr(ffi, "_parser", None)
    if parser is None or not hasattr(parser, "_declarations"):
        return False
    if not all(hasattr(parser, a) for a in ("parse_type_and_quals", "_get_type_pointer")):
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
