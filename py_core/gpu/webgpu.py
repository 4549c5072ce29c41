"""The webgpu backend: the browser's WebGPU, reached from Pyodide through the JS FFI.

A Python-to-JS call costs microseconds, so Python never encodes a dispatch itself: it hands the
JS runtime (`web/gpu.js`) a plan once, as JSON, and afterwards asks it to run the plan by id. A
training step or a tree level is then O(1) calls however many dispatches it holds.
"""
from __future__ import annotations

import json
from array import array

from .backend import TYPECODES, Backend, Buffer, Clear, Dispatch, GPUError, Kernel, Plan, shader_source


class WebGPUBackend(Backend):
    name = "webgpu"

    def __init__(self, runtime):
        """`runtime` is the JS `GPURuntime` object of `web/gpu.js` (a JsProxy)."""
        super().__init__()
        self.rt = runtime
        info = json.loads(runtime.describeJSON())
        self.adapter = info["adapter"]
        self.limits.update(info["limits"])
        self.features = info["features"]

    def _call(self, what: str, fn, *args):
        try:
            return fn(*args)
        except Exception as exc:  # a JsException: name the operation
            raise GPUError(f"WebGPU {what} failed: {exc}") from exc

    def _create(self, buf: Buffer):
        return self._call("buffer creation", self.rt.createBuffer, buf.nbytes, buf.uniform)

    def _write(self, buf: Buffer, data: array, offset: int) -> None:
        # The array crosses as a PyProxy; JS takes a view of its memory, no element-wise copy.
        self._call("buffer write", self.rt.writeBuffer, buf.handle, 4 * offset, data)

    async def _read(self, buf: Buffer, n: int) -> array:
        if not n:
            return array(TYPECODES[buf.dtype])
        try:
            js_bytes = await self.rt.readBuffer(buf.handle, 4 * n)
        except Exception as exc:
            raise GPUError(f"WebGPU readback failed: {exc}") from exc
        return array(TYPECODES[buf.dtype], js_bytes.to_bytes())

    async def _compile(self, kernel: Kernel):
        try:
            return await self.rt.createKernel(kernel.family, shader_source(kernel.family),
                                              kernel.entry, json.dumps(kernel.constants))
        except Exception as exc:
            raise GPUError(f"kernel {kernel.name} failed to compile: {exc}") from exc

    def _compile_plan(self, plan: Plan) -> int:
        ops = []  # the runtime's plan steps (web/gpu.js, createPlan), offsets in bytes
        for op in plan.ops:
            if isinstance(op, Dispatch):
                ops.append({"kind": "dispatch", "kernel": op.kernel.handle, "grid": list(op.grid),
                            "buffers": [b.handle for b in op.buffers], "name": op.kernel.name})
            elif isinstance(op, Clear):
                ops.append({"kind": "clear", "buffer": op.buffer.handle})
            else:
                ops.append({"kind": "copy", "src": op.src.handle, "srcOffset": 4 * op.src_offset,
                            "dst": op.dst.handle, "dstOffset": 4 * op.dst_offset, "bytes": 4 * op.n})
        return self._call("plan recording", self.rt.createPlan, json.dumps(ops))

    async def _run(self, plan: Plan, repeat: int) -> None:
        if plan.compiled is None:
            plan.compiled = self._compile_plan(plan)
        self._call("submit", self.rt.runPlan, plan.compiled, repeat)

    async def profile(self, plan: Plan, repeat: int = 3) -> dict:
        """Timestamp queries around every dispatch where the adapter has "timestamp-query"
        (web/gpu.js profilePlan), else the wall-clock default."""
        if "timestamp-query" not in self.features:
            return await super().profile(plan, repeat)
        if plan.compiled is None:
            plan.compiled = self._compile_plan(plan)
        try:
            got = json.loads(await self.rt.profilePlan(plan.compiled, repeat))
        except Exception as exc:
            raise GPUError(f"WebGPU profiling failed: {exc}") from exc
        return {"ops": [(plan.label(i), ns * 1e-9) for i, ns in enumerate(got["ops"])],
                "span": got["span"] * 1e-9, "method": "timestamp queries, a pass per dispatch"}

    def profile_start(self) -> None:
        """With timestamp queries, kernels are timed on the GPU without draining the queue."""
        if "timestamp-query" not in self.features:
            return super().profile_start()
        self._call("profile start", self.rt.profileStart)
        self._gpu_profile = True

    async def profile_stop(self) -> dict:
        if not getattr(self, "_gpu_profile", False):
            return await super().profile_stop()
        self._gpu_profile = False
        try:
            return json.loads(await self.rt.profileStop())
        except Exception as exc:
            raise GPUError(f"WebGPU profile readback failed: {exc}") from exc

    async def finish(self) -> None:
        try:
            await self.rt.finish()
        except Exception as exc:
            raise GPUError(str(exc)) from exc

    def free(self, buf: Buffer) -> None:
        if buf.handle is not None:
            self.rt.destroyBuffer(buf.handle)
        buf.handle = None
