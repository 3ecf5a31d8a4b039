"""Everything that touches WebGPU. Nothing outside this package imports wgpu."""

from .copy import copy_through_kernel
from .gather import Access, gather_through_kernel
from .device import BACKEND_CHOICES, get_gpu, init_instance, list_adapters

__all__ = [
    "BACKEND_CHOICES",
    "Access",
    "copy_through_kernel",
    "gather_through_kernel",
    "get_gpu",
    "init_instance",
    "list_adapters",
]
