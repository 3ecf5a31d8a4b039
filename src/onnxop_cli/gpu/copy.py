"""Stream a tensor's bytes through a flat copy kernel, chunk by chunk, each chunk through gpu/bands.py's two
ends (staged on any adapter, mapped where the adapter ``can_map``), in buffers of whole kernel spans (so the
kernel needs no bounds check; the padding never reaches the sink).

Two slots (buffer sets) take turns: while this thread reads chunk i+1 in and the adapter copies it, a writer
thread hands chunk i to the sink. (A third thread, reading while the kernel runs, measured no faster on 2
cores: the kernel already uses every core.) Chunks are at most ``DEFAULT_CHUNK`` and the kernel's binding
limit, so memory stays bounded whatever the tensor's size, and the buffers are kept on the Gpu for the next
tensor (many files, one device). A mapped range is handed to the sink and unmapped when the sink returns, so
a sink must consume (write or copy) its memoryview before returning.
"""

from __future__ import annotations

from typing import Any

from ..core import signals
from ..core.sources import ByteSource
from . import kernels
from .bands import Band, Sink, Window, fill
from .buffers import DEFAULT_CHUNK, WORD, Owned, can_map, env_poison, round_up
from .choose import kernel_for
from .device import Gpu

KEEP_BYTES = DEFAULT_CHUNK  # slots up to this size stay allocated for the next call


def copy_through_kernel(
    gpu: Gpu,
    source: ByteSource,
    sink: Sink,
    *,
    chunk_bytes: int | None = None,
    max_groups_per_dim: int | None = None,
    poison: int | None = None,
    kernel: str | None = None,
    mapped: bool | None = None,
    depth: int = 2,
) -> int:
    """Copy ``source`` to ``sink`` through a flat copy kernel.

    Returns the number of chunks (one submission each). ``chunk_bytes`` and
    ``max_groups_per_dim`` can be forced small to exercise chunk and grid
    boundaries on small data; ``poison`` fills the output buffer with that
    byte before every chunk, so a byte the kernel failed to write cannot pass
    a comparison. ``kernel`` (a name in kernels.KERNELS), ``mapped`` and
    ``depth`` (slots in flight) override the choices made for this adapter
    (the kernel is otherwise choose.py's measured or forced choice).
    """
    if source.nbytes == 0:
        return 0
    with gpu.lock:  # one call at a time on the device's cached streams, pipelines, choice (device.py)
        total = source.nbytes
        k = kernel_for(gpu, kernel)
        if mapped is None:
            mapped = can_map(gpu)
        elif mapped and not can_map(gpu):
            raise ValueError(f"{gpu.name} cannot map storage buffers (no mappable-primary-buffers)")
        limit = min(chunk_bytes or DEFAULT_CHUNK, k.max_chunk(gpu))
        limit = max(WORD, limit - limit % WORD)
        chunk = min(total, limit)
        depth = 1 if chunk >= total else max(1, depth)
        poison = env_poison() if poison is None else poison

        key = ("stream", k.name, mapped, max_groups_per_dim)
        stream = gpu.cache.get(key)
        if stream is None:
            stream = gpu.cache[key] = Stream(gpu, k, mapped, max_groups_per_dim)
        try:
            return stream.run(source, sink, chunk, depth, poison)
        except BaseException:
            gpu.cache.pop(key, None)
            stream.release()
            raise
        finally:
            stream.trim(KEEP_BYTES)


class Slot(Owned):
    """One chunk's buffers: ``window`` (src and, staged, its upload) and ``band`` (dst and, staged, its
    readback), gpu/bands.py's two ends, bound to the copy kernel."""

    promise: Any = None  # the readback map, while the chunk is in flight
    nbytes: int = 0

    def __init__(self, stream: Stream, size: int) -> None:
        self.gpu, self.size, self.buffers = stream.gpu, size, []
        with self.gpu.errors("allocating copy buffers"):
            self.window = Window(self, "src", size, stream.mapped)
            self.band = Band(self, size, stream.mapped)
            self.bound = stream.kernel.bind(self.gpu, self.window.buffer, self.band.dst, size,
                                            stream.max_groups_per_dim)

    def settle(self) -> None:
        """Let an in-flight map finish and unmap it, so the buffers can be reused
        or destroyed (best effort: the real error is already being raised)."""
        promise, self.promise = self.promise, None
        if promise is None:
            return
        try:
            self.gpu.wait(promise, "cleanup")
            self.band.out.unmap()
        except Exception:  # noqa: BLE001
            pass


class Stream:
    """Slots for streaming copies through one kernel on one Gpu."""

    def __init__(self, gpu: Gpu, kernel: kernels.Kernel, mapped: bool, max_groups_per_dim: int | None):
        self.gpu, self.kernel, self.mapped, self.max_groups_per_dim = gpu, kernel, mapped, max_groups_per_dim
        self.slots: list[Slot | None] = []

    def _slots(self, depth: int, size: int) -> list[Slot]:
        """The first ``depth`` slots, each of at least ``size`` bytes (a smaller one made anew)."""
        self.slots += [None] * (depth - len(self.slots))
        for i, slot in enumerate(self.slots[:depth]):
            if slot is None or slot.size < size:
                if slot is not None:
                    slot.release()
                self.slots[i] = Slot(self, size)
        return self.slots[:depth]  # type: ignore[return-value]

    def trim(self, keep: int) -> None:
        """Free slots larger than ``keep`` bytes (a forced big chunk)."""
        for i, slot in enumerate(self.slots):
            if slot is not None and slot.size > keep:
                slot.release()
                self.slots[i] = None

    def release(self) -> None:
        for slot in self.slots:
            if slot is not None:
                slot.settle()
                slot.release()
        self.slots = []

    def run(self, source: ByteSource, sink: Sink, chunk: int, depth: int, poison: int | None) -> int:
        total = source.nbytes
        size = round_up(chunk, self.kernel.align)
        slots = self._slots(depth, size)
        if total <= chunk:
            self._submit(slots[0], source, 0, total, poison)
            self._drain(slots[0], sink)
            return 1
        return self._overlapped(source, sink, chunk, slots, poison)

    def _overlapped(
        self, source: ByteSource, sink: Sink, chunk: int, slots: list[Slot], poison: int | None
    ) -> int:
        """This thread reads chunks in and submits them; a writer thread waits
        for each one and hands it to the sink, in order. Submitting runs the
        kernel (lavapipe executes a submit in the calling thread), so the
        writer is what lets the disk write overlap reading and copying."""
        import queue
        import threading

        todo: queue.SimpleQueue = queue.SimpleQueue()
        free = [threading.Event() for _ in slots]
        for event in free:
            event.set()
        failed: list[BaseException] = []
        stop = threading.Event()

        def writer() -> None:
            while (i := todo.get()) is not None:
                try:
                    if failed or stop.is_set():
                        slots[i].settle()
                    else:
                        self._drain(slots[i], sink)
                except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
                    failed.append(e)
                    slots[i].settle()
                finally:
                    free[i].set()

        thread = threading.Thread(target=writer, name="onnxop-writer", daemon=True)
        chunks = 0
        try:
            with signals.held():  # started inside the try: whatever comes, it is joined
                thread.start()
            for offset in range(0, source.nbytes, chunk):
                i = chunks % len(slots)
                free[i].wait()
                if failed:
                    break
                free[i].clear()
                n = min(chunk, source.nbytes - offset)
                try:
                    self._submit(slots[i], source, offset, n, poison)
                except BaseException:
                    free[i].set()
                    raise
                todo.put(i)
                chunks += 1
        except BaseException:
            stop.set()
            raise
        finally:
            todo.put(None)
            # A signal must not cut this wait short: the writer may be writing
            # a chunk into the temporary file the caller is about to remove.
            with signals.held():
                if thread.ident is not None:
                    thread.join()
        if failed:
            raise failed[0]
        return chunks

    def _submit(self, slot: Slot, source: ByteSource, offset: int, n: int, poison: int | None) -> None:
        """The chunk of ``n`` bytes at ``offset`` read in, copied and its readback's map asked for."""
        encoder = self.gpu.device.create_command_encoder()
        fill(self.gpu, slot.window.buffer, source, [(offset, 0, n)], slot.window.via, encoder)
        with self.gpu.errors("dispatch"):
            if poison is not None:
                slot.band.reset(slot.size, poison)
            slot.bound.record(encoder, n)
            slot.band.record_readback(encoder, n)
            self.gpu.queue.submit([encoder.finish()])
            # The map resolves once the submitted work is done: it is our
            # synchronisation, waited for by whoever drains the slot.
            slot.promise = slot.band.map(n)
            slot.nbytes = n

    def _drain(self, slot: Slot, sink: Sink) -> None:
        promise, slot.promise = slot.promise, None
        slot.band.hand(promise, slot.nbytes, sink)
