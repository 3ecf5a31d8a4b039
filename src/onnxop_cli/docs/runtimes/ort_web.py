"""onnxruntime-web's WebGPU execution provider in headless Chromium:
``--runtime ort-web`` (its C++ WebGPU provider, the ``ort.webgpu.mjs``
bundle: WebGpuExecutionProvider on the asyncify wasm) and ``--runtime
ort-web-jsep`` (its JavaScript kernels, the default ``ort.mjs`` bundle:
JsExecutionProvider on the jsep wasm).

The installed package's folder (``npm install --prefix DIR onnxruntime-web@1.31.1``,
then ``--ort-web DIR/node_modules/onnxruntime-web`` or ``$ONNXOP_ORT_WEB``) is
served to the browser engine's Chromium (gpu/engines/browser/driver.py, on
SwiftShader); the page (ort_web.js) holds the sessions. Tensors cross as
base64 of their bytes, so NaN payloads and -0.0 arrive and come back exact.

A node onnxruntime-web places on its CPU provider (wasm) is ``not_on_webgpu``:
each session is created at verbose log level, and the runtime's own
"Node placements" lines (session_state.cc, VerifyEachNodeIsAssignedToAnEp)
say which provider got which node. A browser that dies or does not answer
within ``$ONNXOP_BROWSER_TIMEOUT`` is that case's error; the next case starts
a fresh browser.
"""

from __future__ import annotations

import atexit
import base64
import os
import re
from importlib import resources
from pathlib import Path
from typing import Any, Sequence

from ...core.ort_values import onnx_bytes
from ...errors import GpuError, OnnxopError
from .base import Broke, Lacks, Loaded, NotOnWebGPU, Refused, lacks, message

ENV = "ONNXOP_ORT_WEB"
VERSION = "1.31.1"  # the version the docs' table and the tests measure
INSTALL = f"npm install --prefix DIR onnxruntime-web@{VERSION}, then --ort-web DIR/node_modules/onnxruntime-web"
# --runtime NAME: the bundle it loads and the provider its WebGPU nodes land on
KINDS = {"ort-web": ("ort.webgpu.mjs", "WebGpuExecutionProvider"), "ort-web-jsep": ("ort.mjs", "JsExecutionProvider")}
# Seconds Chromium's start and the bundle's import (15-30 MB of wasm compiled) may take, at
# least: $ONNXOP_BROWSER_TIMEOUT is one session's load or run.
START_LIMIT = 120.0
# onnxruntime-web's tensor types (onnxruntime-common's Tensor): the rest cannot be fed to it
TYPES = ("float32", "float64", "float16", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
         "bool", "int4", "uint4")


def package(folder: str | None, name: str) -> Path:
    """The onnxruntime-web package folder (``--ort-web``, else ``$ONNXOP_ORT_WEB``), checked: one
    not installed is an error of the machine (exit 1), as a missing Chromium is."""
    raw = (folder or os.environ.get(ENV, "")).strip()
    if not raw:
        raise OnnxopError(f"--runtime {name}: no onnxruntime-web package named (--ort-web DIR or ${ENV}; {INSTALL})")
    path = Path(raw).expanduser()
    if (path / "node_modules" / "onnxruntime-web").is_dir():  # the --prefix folder itself
        path = path / "node_modules" / "onnxruntime-web"
    bundle = path / "dist" / KINDS[name][0]
    if not bundle.is_file():
        raise OnnxopError(f"--runtime {name}: {str(path)!r} is not an onnxruntime-web package (no dist/{KINDS[name][0]}; "
                         f"{INSTALL})")
    return path


class OrtWebRuntime:
    webgpu = True

    def __init__(self, name: str, folder: str | None = None) -> None:
        from ...gpu.engines.browser.driver import missing

        self.name = name
        self.bundle, self.provider = KINDS[name]
        self.folder = package(folder, name)
        if missing():
            raise GpuError(f"--runtime {name}: {missing()}")
        self.page: Any = None
        self.session: int | None = None
        self.about = ""
        self._start()  # a browser or a package that cannot start is one error line, before any case

    def _start(self) -> None:
        from ...gpu.engines.browser.driver import BrowserError, Driver, call_timeout

        script = resources.files(__package__).joinpath("ort_web.js").read_text()
        limit = max(call_timeout(), START_LIMIT)
        try:
            self.page = Driver(self.folder, script, limit)
            atexit.register(self.page.close, 5.0)  # every browser ends before the interpreter
            info = self.page.call("b => window.onnxopOrt.init(b)", self.bundle, f"loading {self.bundle}", limit)
        except BrowserError as e:
            self.page = None
            raise GpuError(f"--runtime {self.name}: {e}") from None
        except Exception as e:  # noqa: BLE001 - the page's import failed: its message
            self.page = None
            raise GpuError(f"--runtime {self.name}: {self.bundle} did not load: {message(e)}") from None
        self.session = None
        self.about = (f"onnxruntime-web {info['version']}, {self.bundle}, {self.provider}, "
                      f"Chromium {self.page.version}, {info['adapter'] or 'no WebGPU adapter'}")

    def call(self, function: str, arg: Any, what: str) -> Any:
        """One call to the page; a browser that died or hung is Broke (and the next call starts a new one)."""
        from ...gpu.engines.browser.driver import BrowserError

        if self.page is None or self.page.dead:
            if self.page is not None:
                self.page.close()
            try:
                self._start()
            except GpuError as e:
                raise Broke(e.message) from None
        try:
            return self.page.call(function, arg, what)
        except BrowserError as e:
            self.page.close()
            self.page = None
            raise Broke(f"{self.name}: {e}") from None

    def load(self, model: Any, folder: Path) -> Loaded:
        from ...core.tensor import dtype_by_onnx

        for value in [*model.graph.input, *model.graph.output]:
            elem = value.type.tensor_type.elem_type
            kind = dtype_by_onnx(elem).name if elem else "float32"
            if kind not in TYPES:
                raise Lacks(f"onnxruntime-web has no {'string' if kind == 'object' else kind} tensors")
        if self.session is not None and self.page is not None and not self.page.dead:
            self.call("id => window.onnxopOrt.release(id)", self.session, "releasing a session")
        self.session = None
        answer = self.call("m => window.onnxopOrt.load(m)", base64.b64encode(model.SerializeToString()).decode(),
                           "creating a session")
        if "error" in answer:
            raise refused(answer["error"]) from None
        self.session = answer["id"]
        elsewhere = placed_elsewhere(answer["log"], self.provider, [n.op_type for n in model.graph.node])
        if elsewhere:
            raise NotOnWebGPU(elsewhere)
        return Loaded(_Session(self, answer["id"], answer["inputs"], answer["outputs"]))


# What onnxruntime-web says when it lacks something rather than refusing the
# case: a newer IR version or opset than it reads, no kernel in any provider of
# its build (its reduced CPU provider has few types: "Provider type for Where
# node ... is not set"), or none for the opset's version of the operator.
_LACKS = re.compile(r"Unsupported model IR version|only \*guarantees\* support for models stamped|"
                    r"Provider type for \w+ node with name .* is not set|Failed to find kernel for")


def refused(text: str) -> Exception:
    """onnxruntime-web's error as Lacks or Refused, in its own words less the noise: the
    build machine's paths, the error code and the C++ signature (``webgpu/shader_helper.cc:354 ...``)."""
    text = re.sub(r"/\S*?/onnxruntime/core/(providers/)?", "", text)
    text = re.sub(r"ERROR_CODE: \d+, ERROR_MESSAGE: ", "", text)
    text = re.sub(r"(\w+\.(?:cc|h):\d+) [^(]*\([^)]*\)( const)? ", r"\1 ", text)
    text = " ".join(text.split())
    kind = Lacks if _LACKS.search(text) or lacks(Exception(text)) else Refused
    return kind(text if len(text) <= 300 else text[:297] + "...")


class _Session:
    def __init__(self, runtime: OrtWebRuntime, session: int, inputs: list[str], outputs: list[str]) -> None:
        self.runtime, self.session, self.inputs, self.outputs = runtime, session, inputs, outputs

    def run(self, feeds: Sequence[Any]) -> list[Any]:
        sent = []
        for name, t in zip(self.inputs, feeds):
            if t.dtype.name not in TYPES:
                raise Lacks(f"onnxruntime-web has no {t.dtype.name} tensors")
            sent.append([name, t.dtype.name, list(t.shape), base64.b64encode(onnx_bytes(t).tobytes()).decode()])
        answer = self.runtime.call("a => window.onnxopOrt.run(a)", [self.session, sent], "running a session")
        if "error" in answer:
            raise refused(answer["error"]) from None
        return [_tensor(name, *out) for name, out in zip(self.outputs, answer["outputs"])]


def _tensor(name: str, kind: str, shape: list[int], data: str | None) -> Any:
    import numpy as np

    from ...core.sources import MemoryBytes
    from ...core.tensor import Tensor, dtype_by_name

    if data is None:
        raise Lacks(f"output {name!r} came back as {kind} tensors, which this adapter does not read")
    dtype = dtype_by_name(kind)
    raw = np.frombuffer(base64.b64decode(data), np.uint8).copy()
    if len(raw) != dtype.nbytes(int(np.prod(shape, dtype=np.int64))):
        raise Broke(f"output {name!r}: {len(raw)} bytes came back for shape {tuple(shape)} of {kind}")
    return Tensor(name, tuple(shape), dtype, MemoryBytes(raw))


_PLACED = re.compile(r"(All nodes|Node\(s\)) placed on \[(\w+)\](?:\. Number of nodes: (\d+))?")
_NODE = re.compile(r"\]\s{2,}(\w+) \((.*)\)\s*$")


def placed_elsewhere(log: list[str], provider: str, ops: list[str]) -> str:
    """What onnxruntime-web's node placements say ran off ``provider`` ('' if nothing); a
    log with no placements is Broke (its verbose log changed: a CPU fallback would go unseen)."""
    lines = "\n".join(log).splitlines()
    if not any("Node placements" in line for line in lines):
        raise Broke("onnxruntime-web logged no node placements (at verbose level), so a node on its CPU "
                    "provider could not be told from one on WebGPU")
    where, off, placed = "", [], 0
    for line in lines:
        m = _PLACED.search(line)
        if m:
            where = m.group(2)
            if m.group(1) == "All nodes" and where != provider:
                every = ", ".join(dict.fromkeys(ops)) or "every node"
                return f"onnxruntime-web placed {every} on {where}, not on {provider}"
            if m.group(1) == "All nodes":
                placed += int(m.group(3) or 0)
            continue
        node = _NODE.search(line)
        if node and where and not node.group(1).startswith("Memcpy"):
            if where != provider:
                off.append(f"{node.group(1)} on {where}")
            else:
                placed += 1
    if off:
        return f"onnxruntime-web placed {', '.join(off)}, not on {provider}"
    # A node whose inputs are all constants is computed when the session is made (ConstantFolding, on the CPU
    # provider) and leaves no node to place: a Transpose of an initializer 'passed' on WebGPU where none ran there.
    # (Constant nodes become initializers: not counted.)
    wanted = [op for op in ops if op != "Constant"]
    if placed < len(wanted):
        return (f"onnxruntime-web placed {placed} of the model's {len(wanted)} node(s) ({', '.join(dict.fromkeys(wanted))}) "
                f"on {provider}: it removed the others as it loaded the model (constant folding on its CPU "
                "provider, or another rewrite), so they did not run there")
    return ""
