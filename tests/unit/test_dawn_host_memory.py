"""The host memory Dawn's mapped buffers are made over (engines/dawn/host.py),
without a device: aligned, rounded to whole alignment units, zeroed,
private, and kept alive by every view handed out."""

from __future__ import annotations

import ctypes
import gc

import pytest

from onnxop_cli.gpu.engines.dawn import host


@pytest.mark.parametrize("size", [0, 1, 4, 4095, 4096, 65535, 65536, 65537, 3 * 65536 + 7])
def test_memory_is_aligned_and_whole_units(size):
    memory = host.HostMemory(size)
    assert memory.address % host.HOST_ALIGN == 0
    assert memory.span == max(1, -(-size // host.HOST_ALIGN)) * host.HOST_ALIGN
    assert len(memory.view) == memory.span
    # the view is the memory at the address Dawn is given
    memory.view[0:4] = b"\x11\x22\x33\x44"
    memory.view[memory.span - 1] = 0x55
    assert ctypes.string_at(memory.address, 4) == b"\x11\x22\x33\x44"
    assert ctypes.string_at(memory.address + memory.span - 1, 1) == b"\x55"


def test_memory_starts_zeroed_and_is_private():
    """Zeroed (no earlier bytes of anyone's), a block of its own, and mapped
    private (``p`` in /proc/self/maps: a forked child gets a copy)."""
    memory = host.HostMemory(100_000)
    other = host.HostMemory(100_000)
    assert bytes(memory.view) == bytes(memory.span)
    assert not (other.address < memory.address + memory.span and memory.address < other.address + other.span)
    try:
        lines = open("/proc/self/maps").read().splitlines()
    except OSError:
        pytest.skip("no /proc/self/maps")
    for line in lines:
        span, perms = line.split()[:2]
        lo, hi = (int(x, 16) for x in span.split("-"))
        if lo <= memory.address < hi:
            assert perms.startswith("rw") and perms[3] == "p", line
            break
    else:
        pytest.fail("the memory is not in /proc/self/maps")


def test_a_view_keeps_the_memory_alive():
    memory = host.HostMemory(4096)
    view = memory.view[10:20]
    view[:] = b"0123456789"
    del memory
    gc.collect()
    assert bytes(view) == b"0123456789"


def test_storage_with_a_map_usage_is_what_host_buffers_are_for():
    assert host.wanted(0x80 | 0x2) and host.wanted(0x80 | 0x1 | 0x8)
    assert not host.wanted(0x80 | 0x8)  # a storage buffer without a map: Dawn's own
    assert not host.wanted(0x1 | 0x8)  # a staging buffer: Dawn's own
