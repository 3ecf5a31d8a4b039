"""The page's WebGPU objects seen from Python, with base.py's calls spelled as
wgpu-py spells them. Each object is an id in the page's table; calls are
recorded and sent in one batch when an answer is needed (a pipeline, a
submit, a map), so a kernel's buffers, bind groups and commands cost one
round trip, not one each."""

from __future__ import annotations

import base64
import concurrent.futures
import itertools
import threading
from typing import Any

from .driver import BrowserError, BrowserOutOfMemory, Driver, call_timeout

_ids = itertools.count(1)
# Bytes cross as base64 in DevTools-protocol messages: at most PIECE bytes an
# operation, and what is recorded is sent once BATCH_BYTES of data wait.
PIECE = 16 << 20
BATCH_BYTES = 32 << 20
# The buffer limits onnxop sees (the adapter offers 1 GiB): larger tensors go
# in chunks of this, as on the software adapters, not in one 1 GiB transfer.
LIMIT_CAP = {"max-buffer-size": 256 << 20, "max-storage-buffer-binding-size": 128 << 20}


class Device:
    def __init__(self, driver: Driver, answer: dict[str, Any], on_lost: Any) -> None:
        self.driver, self.on_lost = driver, on_lost
        self.features = set(answer["features"])
        self.limits = {k: min(int(v), LIMIT_CAP.get(k, int(v))) for k, v in answer["limits"].items()}
        self.queue = Queue(self)
        self._pending: list[list[Any]] = []
        self._pending_bytes = 0
        self._lock = threading.RLock()  # a finalizer (forget) may run inside record
        self._lost = ""

    # -- the batch

    def record(self, *op: Any) -> None:
        with self._lock:
            self._pending.append(list(op))

    def record_bytes(self, op: str, oid: int, offset: int, data: memoryview) -> None:
        """``op`` (write, mapwrite) of ``data`` at ``offset``, PIECE bytes an operation."""
        for start in range(0, len(data), PIECE):
            piece = base64.b64encode(data[start:start + PIECE]).decode()
            with self._lock:
                self._pending.append([op, oid, offset + start, piece])
                self._pending_bytes += len(piece)
                full = self._pending_bytes >= BATCH_BYTES
            if full:
                self.flush("uploading")

    def _take(self, *last: Any) -> list[list[Any]]:
        with self._lock:
            ops, self._pending = self._pending, []
            self._pending_bytes = 0
        if last:
            ops.append(list(last))
        return ops

    def flush(self, what: str, *last: Any) -> list[Any]:
        """Send what was recorded (and ``last``); its results. Errors raise."""
        return self.answered(self.driver.run(self._take(*last), what))

    def answered(self, answer: dict[str, Any]) -> list[Any]:
        if answer.get("lost") and not self._lost:
            self._lost = answer["lost"]
            self.on_lost(f"browser device lost: {self._lost}")
        if answer.get("error"):
            raise (BrowserOutOfMemory if answer.get("oom") else BrowserError)(answer["error"])
        return answer["out"]

    def forget(self, oid: int) -> None:
        self.record("free", [oid])

    # -- creation

    def create_buffer(self, *, label: str = "", size: int, usage: int) -> Buffer:
        buf = Buffer(self, size, usage)
        self.record("buffer", buf.id, size, usage, label)
        return buf

    def create_shader_module(self, *, label: str = "", code: str) -> _Object:
        obj = _Object(self)
        self.flush(f"compiling {label!r}", "module", obj.id, code, label)
        return obj

    def create_bind_group_layout(self, *, label: str = "", entries: list[dict]) -> _Object:
        obj = _Object(self)
        rows = [
            [e["binding"], e["visibility"], e["buffer"].get("type", "uniform"),
             bool(e["buffer"].get("has_dynamic_offset", False)), e["buffer"].get("min_binding_size", 0)]
            for e in entries
        ]
        self.record("bgl", obj.id, rows, label)
        return obj

    def create_pipeline_layout(self, *, label: str = "", bind_group_layouts: list[Any]) -> _Object:
        obj = _Object(self)
        self.record("pl", obj.id, [b.id for b in bind_group_layouts], label)
        return obj

    def create_compute_pipeline(self, *, label: str = "", layout: Any, compute: dict) -> ComputePipeline:
        pipe = ComputePipeline(self)
        where = "auto" if layout == "auto" else layout.id
        self.flush(f"compiling {label!r}", "pipeline", pipe.id, where, compute["module"].id,
                   compute.get("entry_point", "main"), label)
        return pipe

    def create_bind_group(self, *, label: str = "", layout: Any, entries: list[dict]) -> _Object:
        obj = _Object(self)
        rows = []
        for e in entries:
            res = e["resource"]
            offset = res.get("offset", 0)
            rows.append([e["binding"], res["buffer"].id, offset, res.get("size", res["buffer"].size - offset)])
        self.record("bg", obj.id, layout.id, rows, label)
        return obj

    def create_command_encoder(self, *, label: str = "") -> CommandEncoder:
        return CommandEncoder()

    def create_query_set(self, *, label: str = "", type: str, count: int) -> _Object:
        obj = _Object(self)
        self.record("query_set", obj.id, type, count)
        return obj


class _Object:
    """A page object; the page forgets it when Python does."""

    def __init__(self, device: Device) -> None:
        self.device, self.id = device, next(_ids)

    def __del__(self) -> None:
        try:
            self.device.forget(self.id)
        except Exception:  # noqa: BLE001 - at interpreter exit
            pass


class ComputePipeline(_Object):
    def get_bind_group_layout(self, index: int) -> _Object:
        obj = _Object(self.device)
        self.device.record("layout_of", obj.id, self.id, index)
        return obj


class Queue:
    def __init__(self, device: Device) -> None:
        self.device = device

    def write_buffer(self, buffer: Buffer, offset: int, data: Any) -> None:
        self.device.record_bytes("write", buffer.id, offset, memoryview(data).cast("B"))

    def submit(self, command_buffers: list[Any]) -> None:
        self.device.flush("submitting", "submit", [c.commands for c in command_buffers])


class _Commands:
    def __init__(self, commands: list[Any], keep: list[Any]) -> None:
        self.commands, self.keep = commands, keep


class CommandEncoder:
    """Records its commands; the page encodes them when they are submitted.
    The objects they name are kept until then (``keep``): one that Python
    dropped would be gone from the page's table."""

    def __init__(self) -> None:
        self.commands: list[Any] = []
        self.keep: list[Any] = []

    def begin_compute_pass(self, *, timestamp_writes: dict | None = None) -> ComputePass:
        writes = None
        if timestamp_writes:
            self.keep.append(timestamp_writes["query_set"])
            writes = [timestamp_writes["query_set"].id, timestamp_writes.get("beginning_of_pass_write_index"),
                      timestamp_writes.get("end_of_pass_write_index")]
        step = ["pass", writes, []]
        self.commands.append(step)
        return ComputePass(step[2], self.keep)

    def copy_buffer_to_buffer(self, src: Buffer, src_offset: int, dst: Buffer, dst_offset: int, size: int) -> None:
        self.keep += (src, dst)
        self.commands.append(["copy", src.id, src_offset, dst.id, dst_offset, size])

    def clear_buffer(self, buffer: Buffer, offset: int = 0, size: int | None = None) -> None:
        self.keep.append(buffer)
        self.commands.append(["clear", buffer.id, offset, buffer.size - offset if size is None else size])

    def resolve_query_set(self, query_set: Any, first: int, count: int, dst: Buffer, dst_offset: int) -> None:
        self.keep += (query_set, dst)
        self.commands.append(["resolve", query_set.id, first, count, dst.id, dst_offset])

    def finish(self) -> _Commands:
        return _Commands(self.commands, self.keep)


class ComputePass:
    def __init__(self, steps: list[Any], keep: list[Any]) -> None:
        self.steps, self.keep = steps, keep

    def set_pipeline(self, pipeline: ComputePipeline) -> None:
        self.keep.append(pipeline)
        self.steps.append(["pipe", pipeline.id])

    def set_bind_group(self, index: int, bind_group: Any, dynamic_offsets: Any = ()) -> None:
        self.keep.append(bind_group)
        self.steps.append(["bind", index, bind_group.id, list(dynamic_offsets)])

    def dispatch_workgroups(self, x: int, y: int = 1, z: int = 1) -> None:
        self.steps.append(["dispatch", x, y, z])

    def end(self) -> None:
        pass


# --------------------------------------------------------------------- buffers


class MapPromise:
    """A pending map: a read's bytes come with the answers, PIECE bytes
    each; a write's map is done at once (see Buffer)."""

    def __init__(self, futures: list[concurrent.futures.Future], device: Device) -> None:
        self.futures, self.device = futures, device
        self.data: bytes | None = None

    def wait(self, timeout: float) -> bool:
        if not self.futures:
            return True
        try:
            self.futures[-1].result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            return False
        except Exception:  # noqa: BLE001 - raised by sync_wait
            pass
        return True

    def sync_wait(self) -> bytes | None:
        if not self.futures or self.data is not None:
            return self.data
        pieces = []
        for future in self.futures:
            try:
                answer = future.result(timeout=call_timeout())
            except concurrent.futures.TimeoutError:
                raise BrowserError(f"the browser did not answer a buffer map within {call_timeout():g} s") from None
            pieces.append(base64.b64decode(self.device.answered(answer)[-1]))
        self.data = b"".join(pieces)
        return self.data


class Buffer(_Object):
    """A page buffer. A read map fetches the range's bytes in the answer. A
    buffer that can be mapped for writing can only be written by mapping it
    (WebGPU: MAP_WRITE goes with COPY_SRC alone), so its contents are kept
    here too: a write map is that copy, sent to the page on unmap."""

    def __init__(self, device: Device, size: int, usage: int) -> None:
        super().__init__(device)
        self.size = size
        self._shadow = bytearray(size) if usage & 0x2 else None
        self._written: tuple[int, int] | None = None
        self._read: tuple[int, bytes] | None = None
        self._promise: MapPromise | None = None

    def map_async(self, mode: int, offset: int = 0, size: int | None = None) -> MapPromise:
        size = self.size - offset if size is None else size
        if mode & 0x2:
            if self._shadow is None:
                raise BrowserError("buffer map failed: the buffer was not made for writing maps")
            self._written = (offset, size)
            return MapPromise([], self.device)
        futures = []
        for start in range(offset, offset + max(size, 1), PIECE):
            answer: concurrent.futures.Future = concurrent.futures.Future()
            read = ["read", self.id, start, min(PIECE, offset + size - start)]
            self.device.driver.submit(self.device._take(*read) if not futures else [read], answer)
            futures.append(answer)
        self._read = (offset, b"")
        promise = self._promise = MapPromise(futures, self.device)
        return promise

    def map_sync(self, mode: int, offset: int = 0, size: int | None = None) -> None:
        promise = self.map_async(mode, offset, size)
        if promise.futures:
            self._read = (offset, promise.sync_wait() or b"")

    def _bytes(self) -> tuple[int, bytes]:
        if self._read is not None and self._promise is not None:
            self._read = (self._read[0], self._promise.sync_wait() or b"")
            self._promise = None
        if self._read is None:
            raise BrowserError("buffer range is not mapped")
        return self._read

    def _experimental_get_mapped_range(self, offset: int = 0, size: int | None = None) -> memoryview:
        if self._written is None or self._shadow is None:
            raise BrowserError("buffer range is not mapped for writing")
        size = self.size - offset if size is None else size
        return memoryview(self._shadow)[offset:offset + size]

    def read_mapped(self, offset: int = 0, size: int | None = None, *, copy: bool = True) -> memoryview:
        start, data = self._bytes()
        size = self.size - offset if size is None else size
        view = memoryview(data)[offset - start:offset - start + size]
        return memoryview(bytes(view)) if copy else view

    def unmap(self) -> None:
        if self._written is not None and self._shadow is not None:
            offset, size = self._written
            self._written = None
            self.device.record_bytes("mapwrite", self.id, offset, memoryview(self._shadow)[offset:offset + size])
        self._read = self._promise = None

    def destroy(self) -> None:
        self.device.record("destroy", self.id)
