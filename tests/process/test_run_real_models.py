"""Real models through ``onnxop run --others ... --verify``: onnx's own test
models (inside the installed onnx wheel) and PP-OCR's (inside the
rapidocr-onnxruntime wheel). onnxop's nodes run on the GPU and are verified
bit for bit; the final outputs equal the other runtime's own run of the
whole model (onnxruntime with graph optimizations off; onnx.reference), and
the outputs shipped with a test where they are exact.

Shipped outputs that differ, and why: pytorch-converted's test_GLU_dim,
test_Linear_no_bias, test_PoissonNLLLLoss_no_reduce, test_Conv2d* hold
PyTorch's float results (Sigmoid, MatMul, Exp, Conv), a last bit away from
onnxruntime's and numpy's. Their opset-6 Add/Mul/AveragePool have no
onnxruntime kernel, so those run on onnx.reference.

PP-OCR's and silero-vad's models: ``pip download --no-deps rapidocr-onnxruntime==1.4.4
silero-vad==6.2.3 -d .models`` in the repository root (or a folder named by
ONNXOP_MODELS); the tests run that themselves when the wheel is missing.
Without a network they are skipped, except in CI (CI set), where they fail.

The commands of every test run in one process (tests/commands.py, fixture
``ran``): what a run verifies and writes is under test, not the process.
"""

from __future__ import annotations

import fcntl
import glob
import os
import subprocess
import sys
import zipfile
from functools import partial
from typing import Callable
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

from commands import Prepared
from onnxop_cli.io.valuefiles import file_stem

ONNX_DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"
REPO = Path(__file__).resolve().parents[2]
MODELS = Path(os.environ.get("ONNXOP_MODELS", REPO / ".models"))


prepared = Prepared()  # each case's folder and its command


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> dict:
    """Every prepared case's command, in one process: name -> (what it made, its results)."""
    return prepared.run(tmp_path_factory)


def their_run(model_path: Path, feeds: dict, runtime: str) -> dict[str, np.ndarray]:
    model = onnx.load(model_path)
    names = [o.name for o in model.graph.output]
    if runtime == "reference":
        from onnx.reference import ReferenceEvaluator

        return dict(zip(names, ReferenceEvaluator(model).run(None, feeds)))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
    return dict(zip(names, s.run(None, feeds)))


def verify_command(model_path: Path, feeds: dict, runtime: str, folder: Path) -> list:
    """The inputs saved in ``folder``, and the ``onnxop run --verify`` command that reads them."""
    model = onnx.load(model_path)
    inits = {t.name for t in model.graph.initializer}
    args = []
    for i in (i for i in model.graph.input if i.name not in inits):
        np.save(folder / f"{file_stem(i.name)}.npy", feeds[i.name])
        args += ["--input", f"{i.name}={file_stem(i.name)}.npy"]
    return ["run", model_path, *args, "--others", runtime, "--verify", "-o", "out/"]


def check_verified(r: subprocess.CompletedProcess, model_path: Path, feeds: dict, runtime: str, folder: Path) -> str:
    """The run verified, its outputs equal to the runtime's own run; returns stdout."""
    assert r.returncode == 0, r.stderr
    assert "Verified" in r.stdout and "bit for bit" in r.stdout
    for name, want in their_run(model_path, feeds, runtime).items():
        got = np.load(folder / "out" / f"{file_stem(name)}.npy")
        assert got.shape == want.shape and got.tobytes() == want.tobytes(), name
    return r.stdout


def to_verify(model: Callable[[Path], Path], feeds: Callable[[Path], dict], runtime: str, folder: Path):
    """A prepared case: the model ``model(folder)`` gives (it may skip: then the case's test
    does), run with --verify on ``feeds(model path)``."""
    try:
        path = model(folder)
    except pytest.skip.Exception as skipped:
        return str(skipped), []
    inputs = feeds(path)
    return (path, inputs, folder), [verify_command(path, inputs, runtime, folder)]


def compared(ran: dict, name: str, runtime: str = "onnxruntime") -> str:
    """A prepared case's run verified, its outputs equal to the runtime's own run; returns stdout."""
    made, done = ran[name]
    if not done:
        pytest.skip(made)
    return check_verified(done[0], *made[:2], runtime, made[2])


PYTORCH = [
    ("test_PixelShuffle", "onnxruntime", True),  # all onnxop's: Reshape, Transpose
    ("test_AvgPool1d", "reference", True),  # Unsqueeze, Squeeze around AveragePool-1
    ("test_GLU_dim", "reference", False),
    ("test_Linear_no_bias", "onnxruntime", False),  # Transpose, MatMul
]


@prepared
def pytorch(tmp_path):
    commands, checks = [], []
    for test, runtime, exact in PYTORCH:
        folder = ONNX_DATA / "pytorch-converted" / test
        model = onnx.load(folder / "model.onnx")
        inits = {t.name for t in model.graph.initializer}
        data = folder / "test_data_set_0"
        names = [i.name for i in model.graph.input if i.name not in inits]
        feeds = {n: numpy_helper.to_array(onnx.load_tensor(data / f"input_{k}.pb")) for k, n in enumerate(names)}
        here = tmp_path / test
        here.mkdir()
        commands.append((here, verify_command(folder / "model.onnx", feeds, runtime, here)))
        checks.append((folder / "model.onnx", feeds, runtime, here))
        if exact:  # the shipped outputs too (the others hold PyTorch's last bits)
            commands.append((here, ["run", folder / "model.onnx", data, "--others", runtime, "--check", data]))
            checks.append(None)
    return checks, commands


def test_onnx_pytorch_converted_models(ran):
    """Each of PYTORCH (4 models)."""
    checks, done = ran["pytorch"]
    for check, r in zip(checks, done, strict=True):
        if check is None:
            assert r.returncode == 0, r.stderr
        else:
            check_verified(r, *check)


def squeezenet_input(path: Path) -> dict:
    from onnx.backend.test.runner import Runner

    model = onnx.load(path)
    inits = {t.name for t in model.graph.initializer}
    x = next(i for i in model.graph.input if i.name not in inits)
    return {x.name: Runner.generate_dummy_data(x, seed=0, name="light_squeezenet", random=False)}  # as onnx's runner


prepared["squeezenet"] = partial(to_verify, lambda _: ONNX_DATA / "light" / "light_squeezenet.onnx", squeezenet_input,
                                 "onnxruntime")


def test_onnx_light_squeezenet(ran):
    """A CNN: Conv, Relu, MaxPool... on onnxruntime, its ConstantOfShape weights and Concat on the GPU."""
    out = compared(ran, "squeezenet")
    tmp_path = ran["squeezenet"][0][2]
    assert "onnxop (WebGPU): 47 (ConstantOfShape x39, Concat x8)" in out
    shipped = numpy_helper.to_array(onnx.load_tensor(ONNX_DATA / "light" / "light_squeezenet_output_0.pb"))
    assert np.load(tmp_path / "out" / "softmaxout_1.npy").tobytes() == shipped.tobytes()


def from_wheel(package: str, name: str, tmp_path: Path) -> Path:
    """The model file ``name`` shipped in the wheel ``package`` (NAME==VERSION),
    fetched once into .models/ from the package index the install used (pip
    download); without a network a developer's run skips, CI's fails."""
    MODELS.mkdir(parents=True, exist_ok=True)
    with open(MODELS / ".lock", "w") as lock:  # two workers: one downloads, the other waits for it
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _extracted(package, name, tmp_path)


def _extracted(package: str, name: str, tmp_path: Path) -> Path:
    project, version = package.split("==")
    pattern = str(MODELS / f"{project.replace('-', '_')}-{version}-*.whl")
    if not glob.glob(pattern):
        done = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", package, "-d",
                               str(MODELS)], capture_output=True, text=True, timeout=300)
        if not glob.glob(pattern):
            if os.environ.get("CI"):
                pytest.fail(f"no {package} wheel in {MODELS}, and pip download failed: {done.stderr[-500:]}")
            pytest.skip(f"no {package} wheel in {MODELS} (pip download failed)")
    with zipfile.ZipFile(sorted(glob.glob(pattern))[-1]) as z:
        member = next(m for m in z.namelist() if m.endswith("/" + name))
        (tmp_path / name).write_bytes(z.read(member))
    return tmp_path / name


def ppocr(name: str, tmp_path: Path) -> Path:
    return from_wheel("rapidocr-onnxruntime==1.4.4", name, tmp_path)


PPOCR = {
    "cls": ("ch_ppocr_mobile_v2.0_cls_infer.onnx", (1, 3, 48, 192),
            "onnxop (WebGPU): 67 (Constant x41, Reshape x19, Cast x3, Concat x1, Identity x1, Shape x1, Slice x1)"),
    "rec": ("ch_PP-OCRv4_rec_infer.onnx", (1, 3, 48, 320),
            "onnxop (WebGPU): 121 (Constant x55, Cast x23, Slice x10, Transpose x9, Concat x7, Squeeze x7, Reshape x6, "
            "Shape x4)"),
}
for _id, (_name, _shape, _) in PPOCR.items():
    prepared[f"ppocr-{_id}"] = partial(
        to_verify, partial(ppocr, _name),
        lambda _, shape=_shape: {"x": np.random.default_rng(0).standard_normal(shape).astype(np.float32)}, "onnxruntime")


@pytest.mark.parametrize("case", PPOCR)
def test_ppocr_models(ran, case):
    assert PPOCR[case][2] in compared(ran, f"ppocr-{case}")


SILERO = {
    # the model is inside If branches: the host reads each condition, the picked branch is split and run
    "if": ("silero_vad.onnx", "onnxop (WebGPU): 165 (Constant x87, Slice x18, Unsqueeze x11, Identity x9, Cast x8, "
                        "Concat x7, Gather x5, Squeeze x5, Equal x4, Shape x4, Reshape x2, ConstantOfShape x1, "
                        "Not x1, Pad x1, Size x1, Transpose x1)\n  host (If): 14 (Constant x7, If x7)"),
    "half": ("silero_vad_half.onnx", "onnxop (WebGPU): 159 (Constant x86, Slice x18, Unsqueeze x11, Cast x8, Concat x7, "
                             "Gather x5, Identity x5, Squeeze x5, Shape x4, Equal x3, Reshape x2, "
                             "ConstantOfShape x1, Not x1, Pad x1, Size x1, Transpose x1)"),
}


def silero_input(path: Path) -> dict:
    """512 samples of 16 kHz audio and a zero state."""
    rng = np.random.default_rng(0)
    feeds = {"input": (rng.standard_normal((1, 512)) * 0.1).astype(np.float32),
             "state": np.zeros((2, 1, 128), np.float32)}
    if any(i.name == "sr" for i in onnx.load(path).graph.input):
        feeds["sr"] = np.array(16000, np.int64)
    return feeds


for _id, (_name, _) in SILERO.items():
    prepared[f"silero-{_id}"] = partial(to_verify, partial(from_wheel, "silero-vad==6.2.3", _name), silero_input,
                                        "onnxruntime")


@pytest.mark.parametrize("case", SILERO)
def test_silero_vad_models(ran, case):
    """silero-vad's voice detector, from its PyPI wheel."""
    assert SILERO[case][1] in compared(ran, f"silero-{case}")


SEQUENCES = ["test_sequence_model4", "test_sequence_model6"]
for _test in SEQUENCES:
    prepared[_test] = lambda tmp_path, test=_test: [
        ["run", ONNX_DATA / "simple" / test / "model.onnx", ONNX_DATA / "simple" / test / "test_data_set_0",
         "--others", "onnxruntime", "--dump", "d", "--check", ONNX_DATA / "simple" / test / "test_data_set_0"]]


@pytest.mark.parametrize("test", SEQUENCES)
def test_sequences_stay_inside_their_region_under_verify_and_dump(ran, test):
    """onnx's own sequence models: --dump asks every region for every value,
    and a sequence is no tensor: it is left out of the dump, not an error. (Not
    --verify: onnxop runs none of these models' nodes, so it would compare
    nothing, which fails: tests/cli/test_run_verify.py.)"""
    folder = ONNX_DATA / "simple" / test
    tmp_path, [r] = ran[test]
    assert r.returncode == 0, r.stderr
    outputs = [o.name for o in onnx.load(folder / "model.onnx").graph.output]
    assert "equal" in r.stdout and sorted(p.stem for p in (tmp_path / "d").iterdir()) == outputs


def quantized(folder: Path) -> Path:
    """An embedding (Gather of a table, Concat with a Relu, Transpose, Reshape, Slice, MatMul) quantized by
    onnxruntime's quantize_static in QDQ format and saved as onnxruntime optimizes it (ORT_ENABLE_EXTENDED): its
    QDQ pairs fused, the Gather, Transpose, Reshape and Slice then move int8 values, the Concat a
    com.microsoft.QLinearConcat."""
    from onnx import TensorProto as T, helper
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    rng = np.random.default_rng(0)
    arrays = {"table": rng.standard_normal((100, 16)).astype(np.float32), "shape": np.array([-1, 16]),
              "w": rng.standard_normal((16, 8)).astype(np.float32), "st": np.array([1]), "en": np.array([7])}
    nodes = [helper.make_node("Gather", ["table", "idx"], ["e"]), helper.make_node("Relu", ["x"], ["xr"]),
             helper.make_node("Concat", ["e", "xr"], ["c"], axis=1),
             helper.make_node("Transpose", ["c"], ["t"], perm=[1, 0, 2]),
             helper.make_node("Reshape", ["t", "shape"], ["r"]), helper.make_node("Slice", ["r", "st", "en"], ["s"]),
             helper.make_node("MatMul", ["s", "w"], ["y"])]
    graph = helper.make_graph(nodes, "embedding", [helper.make_tensor_value_info("idx", T.INT64, ["b", 5]),
                                                   helper.make_tensor_value_info("x", T.FLOAT, ["b", 3, 16])],
                              [helper.make_tensor_value_info("y", T.FLOAT, None)],
                              initializer=[numpy_helper.from_array(v, k) for k, v in arrays.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, folder / "float.onnx")

    class Calibration(CalibrationDataReader):
        def __init__(self):
            self.feeds = iter([embedding_input(None, k) for k in range(3)])

        def get_next(self):
            return next(self.feeds, None)

    quantize_static(str(folder / "float.onnx"), str(folder / "qdq.onnx"), Calibration(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    op_types_to_quantize=["Gather", "Concat", "Transpose", "Reshape", "Slice", "MatMul", "Relu"])
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(folder / "quantized.onnx")
    ort.InferenceSession(str(folder / "qdq.onnx"), options, providers=["CPUExecutionProvider"])
    return folder / "quantized.onnx"


def embedding_input(_, seed: int = 3) -> dict:
    """A batch of 3 (the model's batch is symbolic): indices in -100..99 (negative ones count from the end)."""
    rng = np.random.default_rng(seed)
    return {"idx": rng.integers(-100, 100, (3, 5)), "x": rng.standard_normal((3, 3, 16)).astype(np.float32)}


prepared["quantized"] = partial(to_verify, quantized, embedding_input, "onnxruntime")


def test_a_quantized_model_moves_its_int8_values_on_the_gpu(ran):
    """onnxruntime's quantizer and its optimizer's fused model: the int8 data movement is onnxop's,
    verified bit for bit, and the output is onnxruntime's own run's."""
    out = compared(ran, "quantized")
    assert "onnxop (WebGPU): 4 (Gather x1, Reshape x1, Slice x1, Transpose x1)" in out
    assert "com.microsoft.QLinearConcat x1" in out
