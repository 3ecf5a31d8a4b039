"""Everything that touches WebGPU. Nothing outside this package imports wgpu."""

from .copy import copy_through_kernel
from .relayout import relayout_through_kernel, whole_tensor_limit
from .device import BACKEND_CHOICES, get_gpu, init_instance, list_adapters, resolve_backend

__all__ = [
    "BACKEND_CHOICES",
    "copy_through_kernel",
    "relayout_through_kernel",
    "whole_tensor_limit",
    "get_gpu",
    "init_instance",
    "list_adapters",
    "resolve_backend",
]
