"""GPU-side measurements for `onnxop bench`: each call times one run of one
thing on buffers of one size and returns seconds.

- kernels and ``copy_buffer_to_buffer`` are timed with GPU timestamps when
  the device has ``timestamp-query`` (a compute pass's own timestamps; the
  copy between two encoder timestamps), else by wall clock from submit to
  the end of the work;
- upload and readback are timed by wall clock, through the same buffers and
  mapping the streaming copy uses on this adapter (mapped kernel buffers, or
  staging buffers plus a buffer copy), one ``chunk`` at a time;
- every kernel's output is compared, byte for byte, with the random source
  (``verify``), after the output buffer was poisoned.

Buffers live as long as the Bench; :meth:`Bench.close` frees them.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from ..errors import GpuError
from .buffers import DEFAULT_CHUNK, Owned, can_map, read_through, round_up, submit_copy
from .device import Gpu
from .engines.base import BufferUsage, MapMode
from .kernels import Kernel, available

POISON = 0xA5
SEED_CHUNK = 16 << 20  # random source bytes are generated (and regenerated) this many at a time


def random_block(index: int, nbytes: int):
    """Block ``index`` of the random source: the same bytes every time."""
    import numpy as np

    return np.random.default_rng([0, index]).integers(0, 256, nbytes, dtype=np.uint8)


class Bench(Owned):
    """Buffers of ``size`` bytes on ``gpu`` and the measurements over them."""

    def __init__(self, gpu: Gpu, size: int, *, streaming: bool = True, kernels: list[Kernel] | None = None):
        """``streaming=False`` leaves out the upload/readback buffers (the
        kernel calibration times kernels only); ``kernels`` limits which
        kernels are bound (default: every one the adapter can run)."""
        self.gpu = gpu
        self.size = size
        self.timestamps = "timestamp-query" in gpu.features
        self.encoder_timestamps = "timestamp-query-inside-encoders" in gpu.features
        self.mapped = can_map(gpu)
        self.kernels = list(kernels) if kernels is not None else available(gpu)
        align = max(k.align for k in self.kernels)
        self.padded = round_up(size, align)
        limit = gpu.limits.get("max-buffer-size", 256 << 20)
        if self.padded > limit:
            raise GpuError(f"bench size {size} bytes exceeds {gpu.name}'s max-buffer-size {limit}")
        self.chunk = min(round_up(DEFAULT_CHUNK, align), self.padded)
        U = BufferUsage
        device = gpu.device
        self.buffers: list[Any] = []
        with gpu.errors("allocating bench buffers"):
            self.src = self._buffer("bench src", self.padded, U.STORAGE | U.COPY_SRC | U.COPY_DST)
            self.dst = self._buffer("bench dst", self.padded, U.STORAGE | U.COPY_SRC | U.COPY_DST)
            self.readback = self._buffer("bench readback", self.chunk, U.MAP_READ | U.COPY_DST)
            self.stage_in = self.stage_out = self.up = self.down = None
            if streaming and self.mapped:  # the streaming copy's own buffers, mapped
                self.up = self._buffer("bench up", self.chunk, U.STORAGE | U.MAP_WRITE)
                self.down = self._buffer("bench down", self.chunk, U.STORAGE | U.MAP_READ | U.COPY_DST)
            elif streaming:  # staging buffers plus a copy each way
                self.stage_in = self._buffer("bench stage in", self.chunk, U.MAP_WRITE | U.COPY_SRC)
                self.up = self._buffer("bench up", self.chunk, U.STORAGE | U.COPY_DST)
                self.down = self._buffer("bench down", self.chunk, U.STORAGE | U.COPY_SRC | U.COPY_DST)
                self.stage_out = self._buffer("bench stage out", self.chunk, U.MAP_READ | U.COPY_DST)
            if self.timestamps:
                self.queries = device.create_query_set(label="bench", type="timestamp", count=2)
                self.resolved = self._buffer("bench timestamps", 256, U.QUERY_RESOLVE | U.COPY_SRC)
                self.stamps = self._buffer("bench timestamps read", 256, U.MAP_READ | U.COPY_DST)
            else:
                self.stamps = self._buffer("bench sync", 256, U.MAP_READ | U.COPY_DST)
            self.bound = {k.name: k.bind(gpu, self.src, self.dst, self.padded) for k in self.kernels}
        self._fill_source()

    def _fill_source(self) -> None:
        queue = self.gpu.queue
        for i, offset in enumerate(range(0, self.size, SEED_CHUNK)):
            n = min(SEED_CHUNK, self.size - offset)
            block = random_block(i, n)
            if n % 4:
                block = block.tobytes() + bytes(4 - n % 4)
            queue.write_buffer(self.src, offset, block)

    def close(self) -> None:
        self.release()
        self.buffers = []

    # ------------------------------------------------------------ timing

    def _timed(self, record: Callable[[Any, dict | None], None], inside_pass: bool) -> float:
        """Submit what ``record`` encodes and return its duration."""
        import numpy as np

        gpu = self.gpu
        write_timestamp = gpu.engine.write_timestamp  # the engine's: wgpu-native's is an extra
        with gpu.errors("bench"):
            encoder = gpu.device.create_command_encoder()
            stamps = None
            use_stamps = self.timestamps and (inside_pass or self.encoder_timestamps)
            if use_stamps and inside_pass:
                stamps = {"query_set": self.queries, "beginning_of_pass_write_index": 0, "end_of_pass_write_index": 1}
            elif use_stamps:  # a copy: encoder timestamps before and after it
                write_timestamp(encoder, self.queries, 0)
            record(encoder, stamps)
            if use_stamps and not inside_pass:
                write_timestamp(encoder, self.queries, 1)
            if use_stamps:
                encoder.resolve_query_set(self.queries, 0, 2, self.resolved, 0)
                encoder.copy_buffer_to_buffer(self.resolved, 0, self.stamps, 0, 16)
            else:
                encoder.clear_buffer(self.stamps, 0, 16)  # see _sync: the map must wait for this submit
            t0 = time.perf_counter()
            gpu.queue.submit([encoder.finish()])
            self.stamps.map_sync(MapMode.READ, 0, 16)
            wall = time.perf_counter() - t0
            ticks = np.frombuffer(self.stamps.read_mapped(0, 16), np.uint64).astype(np.int64)
            self.stamps.unmap()
        if use_stamps:
            # Both engines report timestamps in nanoseconds (period applied).
            elapsed = float(ticks[1] - ticks[0]) * 1e-9
            if elapsed > 0:
                return elapsed
        return wall

    def kernel(self, name: str) -> float:
        bound = self.bound[name]
        return self._timed(lambda enc, stamps: bound.record(enc, self.size, stamps), True)

    def copy(self) -> float:
        size4 = round_up(self.size, 4)
        return self._timed(lambda enc, _: enc.copy_buffer_to_buffer(self.src, 0, self.dst, 0, size4), False)

    def upload(self, host: Any, spread: bool = False) -> float:
        """Host bytes into a buffer a kernel can read, ``size`` bytes in
        chunks, the way the streaming copy does it. ``host``: a uint8 array
        of at least one chunk, each chunk read from its start; with
        ``spread`` (benchmarks/dawn_transfers.py), of ``size`` bytes, each
        chunk read from its own place."""
        import numpy as np

        def move(at: int, n: int) -> None:
            buf = self.stage_in or self.up
            buf.map_sync(MapMode.WRITE, 0, n)
            view = buf._experimental_get_mapped_range(0, n)
            np.copyto(np.frombuffer(view, np.uint8), host[at : at + n])
            view.release()
            buf.unmap()
            if self.stage_in is not None:
                submit_copy(self.gpu, self.stage_in, 0, self.up, 0, n)

        return self._chunks("bench upload", move, spread, self._sync)

    def read_back(self, host: Any, spread: bool = False) -> float:
        """A kernel's output buffer into host memory, ``size`` bytes in chunks,
        the way the streaming copy does it (``spread``: as upload's)."""
        import numpy as np

        def move(at: int, n: int) -> None:
            buf = self.down
            if self.stage_out is not None:
                submit_copy(self.gpu, self.down, 0, self.stage_out, 0, n)
                buf = self.stage_out
            buf.map_sync(MapMode.READ, 0, n)
            np.copyto(host[at : at + n], np.frombuffer(buf.read_mapped(0, n, copy=False), np.uint8))
            buf.unmap()

        return self._chunks("bench readback", move, spread)

    def _chunks(self, what: str, move: Callable[[int, int], None], spread: bool,
                then: Callable[[], object] = lambda: None) -> float:
        """Wall-clock seconds of ``move(at, n)`` for each chunk of ``size`` bytes (``n`` whole words; ``at``
        the host memory's place: 0, or with ``spread`` the chunk's own), then of ``then()``."""
        t0 = time.perf_counter()
        with self.gpu.errors(what):
            for offset in range(0, self.size, self.chunk):
                move(offset if spread else 0, round_up(min(self.chunk, self.size - offset), 4))
            then()
        return time.perf_counter() - t0

    def _sync(self) -> None:
        """Wait for all submitted work. Dawn resolves a map once the last
        submit *using that buffer* is done (wgpu-native: the whole queue), so
        the submit waited for must touch the mapped buffer; submits run in order."""
        encoder = self.gpu.device.create_command_encoder()
        encoder.clear_buffer(self.stamps, 0, 16)
        self.gpu.queue.submit([encoder.finish()])
        self.stamps.map_sync(MapMode.READ, 0, 16)
        self.stamps.unmap()

    # ------------------------------------------------------------ exactness

    def poison(self) -> None:
        """Fill the output buffer with POISON, so bytes a kernel skips show."""
        block = bytes([POISON]) * min(self.padded, SEED_CHUNK)
        with self.gpu.errors("bench"):
            for offset in range(0, self.padded, len(block)):
                self.gpu.queue.write_buffer(self.dst, offset, block[: self.padded - offset])

    def verify(self, what: str) -> None:
        """The output buffer holds exactly the random source; raises GpuError
        naming the first wrong byte otherwise."""
        import numpy as np

        for i, base in enumerate(range(0, self.size, SEED_CHUNK)):  # each source block, a chunk at a time
            want = random_block(i, min(SEED_CHUNK, self.size - base))
            for start in range(0, len(want), self.chunk):
                n = min(self.chunk, len(want) - start)

                def check(got: memoryview, at: int = base + start, want: Any = want[start : start + n]) -> None:
                    wrong = np.flatnonzero(np.frombuffer(got, np.uint8) != want)
                    if len(wrong):
                        raise GpuError(f"bench: {what} on {self.gpu.name} wrote wrong bytes: first at offset "
                                       f"{at + int(wrong[0])} of {self.size}")

                read_through(self.gpu, self.dst, self.readback, n, check, base + start)
