"""Run one node on one tensor: shape rule first, then bytes through the GPU.

    read (io) -> Tensor -> node.output_shape (pure) -> GPU copy -> sink (file or memory)

Everything that can be refused is refused before the GPU is touched and
before an output file is opened.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from .errors import InputError
from .ops import Node
from .tensor import MemoryBytes, Tensor


@dataclass
class Result:
    node: Node
    input: Tensor
    output: Tensor  # values in memory, or data=None when streamed to a file
    adapter: str
    path: Path | None = None
    timings: dict[str, float] = field(default_factory=dict)


def check_runnable(tensor: Tensor) -> None:
    """What the GPU path cannot take yet, refused with the reason."""
    if tensor.dtype.is_string:
        raise InputError(f"{tensor.source or tensor.name}: string tensors are not supported yet")
    if tensor.order != "C":
        raise InputError(
            f"{tensor.source or tensor.name}: Fortran-ordered arrays are not supported yet; "
            "save the array in C order (numpy.ascontiguousarray)"
        )


def apply(
    node: Node,
    tensor: Tensor,
    *,
    backend: str | None = None,
    out_path: Path | None = None,
    out_name: str | None = None,
) -> Result:
    """Apply ``node`` to ``tensor`` on the GPU.

    With ``out_path`` the result streams into that file (atomically); otherwise
    it is returned in memory.
    """
    from .gpu import copy_through_kernel, get_gpu
    from .io import open_output

    timings: dict[str, float] = {}
    out_shape = node.output_shape(tensor.shape)
    check_runnable(tensor)
    name = out_name or (out_path.stem if out_path else node.op.outputs[0])
    out = Tensor(name, out_shape, tensor.dtype, source=str(out_path or ""))

    t0 = time.perf_counter()
    gpu = get_gpu(backend)
    timings["device"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    if out_path is not None:
        with open_output(out_path, out_shape, tensor.dtype) as sink:
            copy_through_kernel(gpu, tensor.data, sink)
    else:
        import numpy as np

        buf = np.empty(tensor.nbytes, dtype=np.uint8)
        filled = 0

        def sink(chunk: memoryview) -> None:
            nonlocal filled
            buf[filled : filled + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
            filled += len(chunk)

        copy_through_kernel(gpu, tensor.data, sink)
        out.data = MemoryBytes(buf)
    timings["copy"] = time.perf_counter() - t0
    return Result(node, tensor, out, gpu.name, out_path, timings)
