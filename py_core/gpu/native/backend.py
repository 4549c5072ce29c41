"""The native backend: the same WGSL through wgpu-py on wgpu-native (Vulkan, Metal, D3D12).

Runs in pytest on Mesa's lavapipe (CPU Vulkan) and on a server's GPU. Needs the `wgpu` package,
which is a server/test dependency, never imported in the browser.
"""
from __future__ import annotations

from array import array

from ..backend import TYPECODES, Backend, Buffer, Clear, Dispatch, GPUError, Kernel, Plan, shader_source

# WebGPU limit names as the page reports them, and wgpu-py's spelling of each.
_LIMIT_NAMES = {
    "maxStorageBufferBindingSize": "max-storage-buffer-binding-size",
    "maxBufferSize": "max-buffer-size",
    "maxComputeWorkgroupStorageSize": "max-compute-workgroup-storage-size",
    "maxComputeInvocationsPerWorkgroup": "max-compute-invocations-per-workgroup",
    "maxComputeWorkgroupSizeX": "max-compute-workgroup-size-x",
    "maxComputeWorkgroupsPerDimension": "max-compute-workgroups-per-dimension",
    "maxStorageBuffersPerShaderStage": "max-storage-buffers-per-shader-stage",
}


class NativeBackend(Backend):
    name = "native"

    def __init__(self, power_preference: str = "high-performance"):
        super().__init__()
        try:
            import wgpu
        except ImportError as exc:
            raise GPUError("the native backend needs the `wgpu` package: pip install wgpu") from exc
        self._wgpu = wgpu
        adapter = wgpu.gpu.request_adapter_sync(power_preference=power_preference)
        if adapter is None:
            raise GPUError("wgpu-native found no adapter (install a Vulkan driver, e.g. Debian's "
                           "mesa-vulkan-drivers for lavapipe)")
        info = adapter.info
        self.adapter = {"vendor": info.get("vendor", ""), "architecture": info.get("architecture", ""),
                        "device": info.get("device", ""), "description": info.get("description", ""),
                        "is_fallback_adapter": info.get("adapter_type") == "CPU",
                        "backend_type": info.get("backend_type", "")}
        wanted = {v: adapter.limits[v] for v in _LIMIT_NAMES.values() if v in adapter.limits}
        self.features = sorted(str(f) for f in adapter.features)
        self.device = adapter.request_device_sync(required_limits=wanted)
        self.limits.update({k: self.device.limits[v] for k, v in _LIMIT_NAMES.items()
                            if v in self.device.limits})
        self._usage = wgpu.BufferUsage

    def _create(self, buf: Buffer):
        u = self._usage
        usage = (u.UNIFORM if buf.uniform else u.STORAGE) | u.COPY_DST | u.COPY_SRC
        return self.device.create_buffer(size=max(16, -(-buf.nbytes // 16) * 16), usage=usage)

    def _write(self, buf: Buffer, data: array, offset: int) -> None:
        raw = memoryview(data).cast("B")
        pad = (-len(raw)) % 4
        self.device.queue.write_buffer(buf.handle, 4 * offset, bytes(raw) + bytes(pad) if pad else raw)

    async def _read(self, buf: Buffer, n: int) -> array:
        if n == 0:
            return array(TYPECODES[buf.dtype])
        raw = self.device.queue.read_buffer(buf.handle, 0, max(4, -(-4 * n // 4) * 4))
        out = array(TYPECODES[buf.dtype])
        out.frombytes(raw[:4 * n])  # from wgpu's copy as it is: no third copy in bytes
        return out

    async def _compile(self, kernel: Kernel):
        module = self.device.create_shader_module(code=shader_source(kernel.family))
        compute = {"module": module, "entry_point": kernel.entry}
        if kernel.constants:
            compute["constants"] = {k: float(v) for k, v in kernel.constants.items()}
        try:
            return self.device.create_compute_pipeline(layout="auto", compute=compute)
        except Exception as exc:  # wgpu raises its own validation errors: say which kernel
            raise GPUError(f"kernel {kernel.name} failed to compile: {exc}") from exc

    def _compile_plan(self, plan: Plan):
        """Bind groups are made once per plan and reused by every run."""
        steps = []
        for op in plan.ops:
            if isinstance(op, Dispatch):
                layout = op.kernel.handle.get_bind_group_layout(0)
                group = self.device.create_bind_group(layout=layout, entries=[
                    {"binding": i, "resource": {"buffer": b.handle, "offset": 0, "size": b.handle.size}}
                    for i, b in enumerate(op.buffers)])
                steps.append(("dispatch", op.kernel.handle, group, op.grid))
            elif isinstance(op, Clear):
                steps.append(("clear", op.buffer.handle))
            else:
                steps.append(("copy", op.src.handle, 4 * op.src_offset, op.dst.handle,
                              4 * op.dst_offset, 4 * op.n))
        return steps

    async def _run(self, plan: Plan, repeat: int) -> None:
        await self._submit([plan], repeat)

    async def _submit(self, plans: list[Plan], repeat: int) -> None:
        """All the plans, `repeat` times, in one command encoder and one submission."""
        encoder = self.device.create_command_encoder()
        for _ in range(repeat):
            for plan in plans:
                self._encode(encoder, plan.compiled)
        self.device.queue.submit([encoder.finish()])

    @staticmethod
    def _encode(encoder, steps) -> None:
        compute = None
        for step in steps:
            if step[0] == "dispatch":
                if compute is None:
                    compute = encoder.begin_compute_pass()
                compute.set_pipeline(step[1])
                compute.set_bind_group(0, step[2])
                compute.dispatch_workgroups(*step[3])
                continue
            if compute is not None:
                compute.end()
                compute = None
            if step[0] == "clear":
                encoder.clear_buffer(step[1])
            else:
                encoder.copy_buffer_to_buffer(step[1], step[2], step[3], step[4], step[5])
        if compute is not None:
            compute.end()

    async def finish(self) -> None:
        # A readback waits for every submitted command. (wgpu-py 0.32's on_submitted_work_done
        # fails on a callback-signature mismatch with its wgpu-native.)
        if not hasattr(self, "_fence"):
            self._fence = self.device.create_buffer(size=16, usage=self._usage.COPY_SRC | self._usage.COPY_DST)
        self.device.queue.read_buffer(self._fence, 0, 4)

    def _destroy(self, buf: Buffer) -> None:
        buf.handle.destroy()
