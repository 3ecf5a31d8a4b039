"""The cffi fast path (gpu/cffi_types.py) gives exactly what cffi's own
parser gives, for the type strings it answers, and leaves the rest to cffi."""

from __future__ import annotations

import pytest

from onnxop_cli.gpu.engines.cffi_types import fast_type_parser

ffi = pytest.importorskip("wgpu.backends.wgpu_native._ffi").ffi


def slow_parser():
    parse = ffi._parser.parse_type_and_quals
    return getattr(parse, "slow", parse)


def typedef_names() -> list[str]:
    names = sorted(k[len("typedef ") :] for k in ffi._parser._declarations if k.startswith("typedef "))
    assert len(names) > 100  # the whole wgpu header, not a stub
    # Every 30th name (structs, enums, flags, callbacks, handles), and those
    # wgpu-py asks for on the way to a first dispatch.
    used = ["WGPUInstanceDescriptor", "WGPUBufferDescriptor", "WGPUBindGroupEntry",
            "WGPUComputePassDescriptor", "WGPUBufferMapCallbackInfo", "WGPUChainedStruct"]
    return sorted(set(names[::30]) | {n for n in used if n in names})


@pytest.mark.parametrize("name", typedef_names())
def test_fast_path_matches_cffi_for_typedefs(name):
    fast, slow = fast_type_parser(ffi._parser), slow_parser()
    for cdecl in (name, f"{name} *", f"{name}[]"):
        assert fast(cdecl) == slow(cdecl), cdecl


@pytest.mark.parametrize("name", ["uint8_t", "uint32_t", "char", "intptr_t", "size_t", "double"])
def test_fast_path_matches_cffi_for_primitives(name):
    fast, slow = fast_type_parser(ffi._parser), slow_parser()
    for cdecl in (name, f"{name} *", f"{name}[]"):
        assert fast(cdecl) == slow(cdecl), cdecl


def callback_signatures() -> list[str]:
    """Every ``"void(...)"`` signature in wgpu-py's native backend source."""
    import re
    from pathlib import Path

    import wgpu.backends.wgpu_native as native

    found = set()
    for path in Path(native.__file__).parent.glob("*.py"):
        found |= set(re.findall(r'"(void\([^"]*\))"', path.read_text()))
    assert len(found) >= 5
    return sorted(found)


@pytest.mark.parametrize("cdecl", callback_signatures())
def test_fast_path_matches_cffi_for_wgpu_callbacks(cdecl):
    assert fast_type_parser(ffi._parser)(cdecl) == slow_parser()(cdecl)


def test_everything_else_goes_to_cffi():
    fast = fast_type_parser(ffi._parser)
    for cdecl in ("void *", "WGPUChainedStruct const *", "void(void)", "int(WGPUMapAsyncStatus)"):
        assert fast(cdecl) == slow_parser()(cdecl)
    with pytest.raises(Exception):
        fast("NoSuchType *")
