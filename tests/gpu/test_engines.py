"""The engine seam: Dawn refuses what is not portable WebGPU, the chooser
never picks it there, and every kernel's declared needs match its shader.
(Byte-exactness on both engines is the whole GPU matrix: every GPU test runs
on vulkan, gl, dawn-vulkan and dawn-gl.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import BACKENDS, cli, error_of
from wgsl_text import needs_of
from onnxop_cli.errors import GpuError
from onnxop_cli.gpu import kernels
from onnxop_cli.gpu.choose import kernel_for
from onnxop_cli.gpu import nonzero
from onnxop_cli.gpu.gather import GENERAL
from onnxop_cli.gpu.program import Program
from onnxop_cli.gpu.render.strided import KERNELS as STRIDED_KERNELS
from wgsl_text import shader_names

STRIDED = STRIDED_KERNELS["generic"]

DAWN = [b for b in BACKENDS if b.startswith("dawn-")]


def backend_params(metafunc) -> bool:
    """The GPU tests here are about Dawn: they run on its backends only."""
    metafunc.parametrize("backend", DAWN, indirect=True, scope="session")
    return True


def test_every_shader_says_what_its_code_needs():
    """What each kernel declares it needs (its frame's) is exactly the
    features its code uses (what the kernel chooser checks)."""
    assert shader_names() == []  # no kernel written by hand: each declares its needs by its frame
    assert nonzero.KERNEL.needs == needs_of(nonzero.KERNEL.wgsl())
    for kernel in kernels.KERNELS.values():  # declared by their frames: what their WGSL uses
        assert kernel.needs == needs_of(kernel.wgsl), kernel.name
    assert kernels.KERNELS["storage64"].features == ("shader-int64",) and kernels.KERNELS["storage"].features == ()
    assert not needs_of(nonzero.KERNEL.wgsl()).features  # portable
    assert not needs_of(STRIDED.wgsl()).features  # the strided gather, rendered


def test_workgroup_and_binding_limits_are_the_frames():
    need = STRIDED.needs
    assert need == needs_of(STRIDED.wgsl())
    assert need.limits["max-compute-invocations-per-workgroup"] == 256
    assert need.limits["max-storage-buffers-per-shader-stage"] == 3
    assert need.limits["max-uniform-buffers-per-shader-stage"] == 1
    assert need.missing([], {"max-compute-invocations-per-workgroup": 128}) == [
        "max-compute-invocations-per-workgroup >= 256"
    ]


def test_dawn_refuses_64_bit_kernels_and_never_chooses_them(backend):
    from onnxop_cli.errors import UsageError
    from onnxop_cli.gpu import get_gpu

    gpu = get_gpu(backend)
    assert gpu.engine_name == "dawn"
    assert "shader-int64" not in gpu.features
    wide, portable = kernels.KERNELS["storage64"], kernels.KERNELS["storage"]
    with pytest.raises(GpuError, match=re.escape(wide.shader) + ".*u64"):
        Program(wide.shader, wide.render.kinds, code=wide.wgsl).on(gpu)
    assert kernel_for(gpu).name != "storage64"
    with pytest.raises(UsageError, match="needs shader-int64"):
        kernel_for(gpu, "storage64")
    Program(portable.shader, portable.render.kinds, code=portable.wgsl).on(gpu)
    GENERAL.on(gpu)  # every portable kernel compiles on Tint


def test_engine_option_and_env_select_dawn(backend, cwd, rng, capsys, monkeypatch):
    plain = backend.removeprefix("dawn-")
    a = rng.integers(0, 256, (3, 5, 7), dtype=np.uint8).view(np.int8)
    np.save("a.npy", a)
    code, out, err = cli(capsys, "--engine", "dawn", "--json", "flatten", "a.npy", "-o", "b.npy", "-b", plain)
    assert code == 0, err
    assert '"backend": "' + backend + '"' in out and ", dawn)" in out
    assert np.load("b.npy").tobytes() == a.tobytes()
    monkeypatch.setenv("ONNXOP_ENGINE", "dawn")
    code, out, err = cli(capsys, "info", "-b", plain)
    assert code == 0 and "Engine: dawn" in out
    code, _, err = cli(capsys, "--engine", "wgpu", "info", "-b", backend)
    assert code == 2 and "names the dawn engine" in error_of(err)


def test_unknown_engine_is_a_usage_error(capsys):
    code, _, err = cli(capsys, "--engine", "tint", "info")
    assert code == 2 and error_of(err) == "unknown engine 'tint'; choose one of wgpu, dawn, browser"


def test_an_unknown_name_from_the_environment_says_so(capsys, monkeypatch):
    """An engine or backend set in the shell long ago and unknown said only "unknown engine 'nope'", nothing of
    where it came from: the line names the variable, for the commands and the API alike."""
    import onnxop_cli

    monkeypatch.setenv("ONNXOP_ENGINE", "nope")
    code, _, err = cli(capsys, "info")
    assert code == 2 and error_of(err) == "unknown engine 'nope' (from $ONNXOP_ENGINE); choose one of wgpu, dawn, browser"
    monkeypatch.delenv("ONNXOP_ENGINE")
    for value, shown in [("cuda", "cuda"), ("dawn-cuda", "cuda")]:
        monkeypatch.setenv("ONNXOP_BACKEND", value)
        with pytest.raises(ValueError, match=rf"^unknown backend '{shown}' \(from \$ONNXOP_BACKEND\); choose one of"):
            onnxop_cli.flatten(np.zeros(2))
    code, _, err = cli(capsys, "info", "-b", "gll")  # given, not the variable's
    assert code == 2 and error_of(err) == "unknown backend 'gll'; choose one of auto, vulkan, metal, d3d12, gl"
    monkeypatch.delenv("ONNXOP_BACKEND")
    # the API has no --engine: the line named it where engine= said wgpu
    with pytest.raises(ValueError, match=r"^backend 'dawn-gl' names the dawn engine, but the engine asked for is wgpu "
                                         r"\(--engine, the API's engine=, or \$ONNXOP_ENGINE\)$"):
        onnxop_cli.flatten(np.zeros(2), engine="wgpu", backend="dawn-gl")


def test_missing_dawn_names_the_extra(tmp_path):
    """Without dawn-python, --engine dawn stops with one line naming the extra."""
    (tmp_path / "pydawn").mkdir()
    (tmp_path / "pydawn" / "__init__.py").write_text("")
    (tmp_path / "pydawn" / "webgpu.py").write_text("raise ImportError('No module named pydawn.webgpu')\n")
    np.save(tmp_path / "a.npy", np.arange(6, dtype=np.float32))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "onnxop_cli", "--engine", "dawn", "flatten", "a.npy", "-o", "b.npy"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert "pip install 'onnxop[dawn]'" in error_of(done.stderr)
    assert not (tmp_path / "b.npy").exists()


def test_a_kernel_that_does_not_compile_is_an_error_naming_it(gpu):
    """The one program path (gpu/program.py): WebGPU's compile failure becomes a GpuError naming the kernel."""
    from onnxop_cli.gpu.program import Program

    with pytest.raises(GpuError, match=re.escape("compiling a broken kernel failed")):
        Program("a broken kernel", ("storage",), code="@compute @workgroup_size(1)\nfn main( {\n").on(gpu)
