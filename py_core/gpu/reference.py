"""The reference backend: every kernel as plain Python over `array.array` buffers.

It is the executable specification the GPU backends are tested against, and the CPU fallback of a
browser without WebGPU (where the page says the job runs on the CPU).
"""
from __future__ import annotations

import os
import platform
from array import array

from .backend import TYPECODES, Backend, Buffer, Clear, Copy, Dispatch, Kernel, Plan, catalog


class ReferenceBackend(Backend):
    name = "reference"

    def __init__(self):
        super().__init__()
        self.adapter = {"vendor": "cpu", "architecture": platform.machine() or "unknown",
                        "device": "plain Python (reference backend)", "description":
                        f"{platform.python_implementation()} {platform.python_version()}",
                        "is_fallback_adapter": True, "cores": os.cpu_count()}
        # Plain Python lists are the only limit; keep the WebGPU-like ceilings generous.
        self.limits.update(maxStorageBufferBindingSize=2**31, maxBufferSize=2**31,
                           maxComputeWorkgroupsPerDimension=2**31)

    def _create(self, buf: Buffer):
        return array(TYPECODES[buf.dtype], bytes(4 * buf.length))

    def _write(self, buf: Buffer, data: array, offset: int) -> None:
        if not isinstance(data, array):  # a typed memoryview
            data = array(buf.handle.typecode, data.tobytes())
        buf.handle[offset:offset + len(data)] = data

    async def _read(self, buf: Buffer, n: int) -> array:
        return array(buf.handle.typecode, buf.handle[:n])

    async def _compile(self, kernel: Kernel):
        return catalog().reference(kernel.family, kernel.entry)

    async def _run(self, plan: Plan, repeat: int) -> None:
        for _ in range(repeat):
            for op in plan.ops:
                if isinstance(op, Dispatch):
                    op.kernel.handle([b.handle for b in op.buffers], op.grid, op.kernel.constants)
                elif isinstance(op, Clear):
                    h = op.buffer.handle
                    h[:] = array(h.typecode, bytes(4 * len(h)))
                elif isinstance(op, Copy):
                    src, so, dst, do, n = op
                    dst.handle[do:do + n] = array(dst.handle.typecode, bytes(src.handle[so:so + n]))
