"""A minimal, straightforward wgpu-py flatten: the floor for one process.

Loads the .npy with numpy, requests an adapter and a device (wgpu's
defaults), uploads with create_buffer_with_data, runs one vec4<u32> copy
dispatch per storage binding (at most max_storage_buffer_binding_size each),
reads back with queue.read_buffer and saves. No onnxop code; what a
developer would write first.

    python benchmarks/flatten_wgpu_minimal.py IN.npy OUT.npy [AXIS] [--backend vulkan|gl]

(--backend limits wgpu's instance to that backend, as onnxop --backend does.)
"""

import math
import sys

import numpy as np
import wgpu

SHADER = """
@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
@group(0) @binding(2) var<uniform> count: vec4<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.y * count.y * 256u + id.x;
    if (i < count.x) {
        dst[i] = src[i];
    }
}
"""


def main(src: str, dst: str, axis: int = 1) -> None:
    a = np.load(src)
    data = np.ascontiguousarray(a).view(np.uint8).reshape(-1)
    size = -(-max(data.size, 16) // 16) * 16
    padded = np.zeros(size, np.uint8)
    padded[: data.size] = data

    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    limits = adapter.limits
    device = adapter.request_device_sync(
        required_limits={
            "max-buffer-size": limits["max-buffer-size"],
            "max-storage-buffer-binding-size": limits["max-storage-buffer-binding-size"],
        }
    )
    U = wgpu.BufferUsage
    src_buf = device.create_buffer_with_data(data=padded, usage=U.STORAGE)
    dst_buf = device.create_buffer(size=size, usage=U.STORAGE | U.COPY_SRC)
    pipeline = device.create_compute_pipeline(
        layout="auto",
        compute={"module": device.create_shader_module(code=SHADER), "entry_point": "main"},
    )
    binding = limits["max-storage-buffer-binding-size"] // 256 * 256
    encoder = device.create_command_encoder()
    for offset in range(0, size, binding):
        n = min(binding, size - offset)
        words = n // 16
        groups = -(-words // 256)
        gx = min(groups, 65535)
        gy = -(-groups // gx)
        params = device.create_buffer_with_data(
            data=np.array([words, gx, 0, 0], np.uint32), usage=U.UNIFORM
        )
        group = device.create_bind_group(
            layout=pipeline.get_bind_group_layout(0),
            entries=[
                {"binding": 0, "resource": {"buffer": src_buf, "offset": offset, "size": n}},
                {"binding": 1, "resource": {"buffer": dst_buf, "offset": offset, "size": n}},
                {"binding": 2, "resource": {"buffer": params}},
            ],
        )
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(pipeline)
        compute.set_bind_group(0, group)
        compute.dispatch_workgroups(gx, gy, 1)
        compute.end()
    device.queue.submit([encoder.finish()])
    out = np.frombuffer(device.queue.read_buffer(dst_buf), np.uint8)[: data.size]
    shape = (math.prod(a.shape[:axis]), math.prod(a.shape[axis:]))
    np.save(dst, out.view(a.dtype).reshape(shape))


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--backend" in args:
        i = args.index("--backend")
        from wgpu.backends.wgpu_native.extras import set_instance_extras

        set_instance_extras(backends=[{"vulkan": "Vulkan", "gl": "GL"}[args[i + 1]]])
        del args[i : i + 2]
    main(args[0], args[1], *(int(x) for x in args[2:3]))
