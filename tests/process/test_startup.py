"""Start-up stays cheap, checked by what gets imported and built, not by
timing (speed is measured in benchmarks/): `onnxop --help` loads none of the
heavy modules, and a run initialises one backend, compiles one pipeline and
uses the cffi fast path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from onnxop_cli.gpu.kernels import KERNELS

HEAVY = ("numpy", "wgpu", "onnx", "onnxruntime", "rich", "cffi", "pycparser")
ROOT = Path(__file__).resolve().parents[2]


def python(code: str, tmp_path: Path) -> dict:
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, check=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_help_imports_nothing_heavy(tmp_path):
    found = python(
        "import json, sys\n"
        "from onnxop_cli.cli import main as cli\n"
        "before = sorted(m for m in sys.modules if m.split('.')[0] in %r)\n"
        "cli.run(['--help'])\n"
        "after = sorted(m for m in sys.modules if m.split('.')[0] in %r)\n"
        "print(json.dumps({'import': before, 'help': after}))" % (HEAVY, HEAVY),
        tmp_path,
    )
    assert found == {"import": [], "help": []}


def test_a_run_builds_only_what_it_uses(tmp_path):
    """The first run on an adapter measures the kernels (compiling each one)
    and caches the choice; the next process reads the cache and compiles only
    the kernel it runs."""
    sample = ROOT / "samples" / "a.npy"
    code = (
        "import json\n"
        "from onnxop_cli.cli import main as cli\n"
        "from onnxop_cli.gpu import device\n"
        f"code = cli.run(['flatten', {str(sample)!r}, '--backend', 'vulkan', '-o', 'b.npy'])\n"
        "gpu = device._gpus['vulkan']\n"
        "from wgpu.backends.wgpu_native._ffi import ffi\n"
        "print(json.dumps({'code': code, 'instance': list(device._instance_backends),\n"
        "    'gpus': sorted(device._gpus), 'pipelines': sorted(gpu._pipelines),\n"
        "    'kernel': {**gpu.kernel_used.document(), 'gbps': gpu.kernel_used.gbps},\n"
        "    'fast_cffi': hasattr(ffi._parser.parse_type_and_quals, 'slow')}))"
    )
    first = python(code, tmp_path)
    assert first["code"] == 0 and first["kernel"]["reason"] == "measured"
    assert len(first["pipelines"]) == len(first["kernel"]["gbps"]) == len(KERNELS) == 2  # lavapipe has shader-int64
    found = python(code, tmp_path)
    assert found["code"] == 0
    assert found["kernel"] == {**first["kernel"], "reason": "cached"}
    assert found["instance"] == ["vulkan"] and found["gpus"] == ["vulkan"]
    render = KERNELS[found["kernel"]["name"]].render
    s = render.schedule  # pipelines are kept by (label, kinds): json makes the pair a list
    assert found["pipelines"] == [[f"copy runs {s.word}[wg=256,run={s.run},unroll={s.unroll}]", list(render.kinds)]]
    assert found["fast_cffi"] is True


def test_the_header_parse_is_cached_and_a_bad_cache_is_parsed_again(tmp_path, monkeypatch):
    """wgpu.h parsed once, kept in the cache folder; a later parser loads
    the same declarations (same sizes and layouts), and a corrupt or
    world-writable file is parsed again instead of loaded."""
    import cffi
    from wgpu.backends.wgpu_native._ffi import get_wgpu_header

    from onnxop_cli.gpu.engines.cffi_types import cached_header_parse

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    header = get_wgpu_header()
    reference = cffi.FFI()
    reference.cdef(header)

    def parsed() -> cffi.FFI:
        ffi = cffi.FFI()
        with cached_header_parse():
            ffi.cdef(header)
        return ffi

    def same(ffi: cffi.FFI) -> None:
        assert sorted(ffi._parser._declarations) == sorted(reference._parser._declarations)
        for name in ("WGPUBufferDescriptor", "WGPUComputePassDescriptor", "WGPUInstanceExtras", "WGPULimits"):
            assert ffi.sizeof(name) == reference.sizeof(name)
            assert [(f, ffi.offsetof(name, f)) for f, _ in ffi.typeof(name).fields] == [
                (f, reference.offsetof(name, f)) for f, _ in reference.typeof(name).fields
            ]
        assert hasattr(ffi._parser.parse_type_and_quals, "slow")  # the fast path, from the start

    same(parsed())
    (cached,) = (tmp_path / "onnxop").glob("cffi-*.json")
    stamp = cached.stat().st_mtime_ns
    same(parsed())
    assert cached.stat().st_mtime_ns == stamp  # loaded, not written again

    good = cached.read_bytes()
    for bad in (b"not json", b'{"format": 1, "state": {}}', good.replace(b'"PrimitiveType"', b'"FFI"', 1)):
        cached.write_bytes(bad)
        same(parsed())
        assert cached.read_bytes() == good  # parsed again and rewritten
    os.chmod(cached, 0o666)
    same(parsed())
    assert cached.stat().st_mode & 0o022 == 0  # someone else's file: ignored, replaced
