"""The webgpu backend: the browser's WebGPU, reached from Pyodide through the JS FFI.

A Python-to-JS call costs microseconds, so Python never encodes a dispatch itself: it hands the
JS runtime (`web/gpu.js`) a plan once, as JSON, and afterwards asks it to run the plan by id. A
training step or a tree level is then O(1) calls however many dispatches it holds.
"""
from __future__ import annotations

import asyncio
import json
from array import array

from .backend import TYPECODES, Backend, Buffer, Clear, Dispatch, GPUError, Kernel, Plan, Soon, shader_source


def js_message(exc: Exception) -> str:
    """A JavaScript error's message without the "Error: " its name puts before it in Python."""
    return str(exc).removeprefix("Error: ")


class WebGPUBackend(Backend):
    name = "webgpu"
    host_js = True

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
            raise GPUError(f"WebGPU {what} failed: {js_message(exc)}") from exc

    def _create(self, buf: Buffer):
        return self._call("buffer creation", self.rt.createBuffer, buf.nbytes, buf.uniform)

    def _write(self, buf: Buffer, data: array, offset: int) -> None:
        # The array crosses as a PyProxy; JS takes a view of its memory, no element-wise copy.
        self._call("buffer write", self.rt.writeBuffer, buf.handle, 4 * offset, data)

    async def _read(self, buf: Buffer, n: int) -> array:
        if not n:
            return array(TYPECODES[buf.dtype])
        js_bytes = await self.read_js(buf, n)
        out = array(TYPECODES[buf.dtype], [0]) * n
        js_bytes.assign_to(memoryview(out).cast("B"))  # one copy into Python, not bytes then array
        return out

    async def read_js(self, buf: Buffer, n: int | None = None):
        """The first n words (all: None) of a buffer as a JavaScript Uint8Array (a JsProxy): for
        data that stays in JavaScript (a forest's host arrays, trees.JSTrees)."""
        return await self.read_soon([(buf, 0, buf.length if n is None else n)], js=True)

    def read_soon(self, parts: list, js: bool = False):
        """The parts copied into one mappable buffer and mapped now (web/gpu.js readPieces, every
        readback's path): the map waits on the work submitted so far, not on what follows."""
        spec = json.dumps([[x.handle, 4 * first, 4 * words] for x, first, words in parts])
        promise = self._call("readback", self.rt.readPieces, spec)

        async def read():
            try:
                got = await promise
            except Exception as exc:
                raise GPUError(f"WebGPU readback failed: {js_message(exc)}") from exc
            if js:
                return got
            out = array("I", [0]) * sum(words for _, _, words in parts)
            got.assign_to(memoryview(out).cast("B"))
            return out
        return asyncio.ensure_future(read())

    async def _compile(self, kernel: Kernel):
        try:
            return await self.rt.createKernel(kernel.family, shader_source(kernel.family), kernel.entry,
                                              json.dumps(kernel.constants, sort_keys=True))
        except Exception as exc:
            raise GPUError(f"kernel {kernel.name} failed to compile: {exc}") from exc

    def warm(self, kernels) -> None:
        """The tab compiles them side by side, each pipeline once (web/gpu.js warm): the kernel()
        that asks for one later awaits its compile in flight, or finds it done."""
        kernels = [(f, e, dict(c or {})) for f, e, c in kernels]
        sources = {f: shader_source(f) for f in {f for f, _, _ in kernels}}
        self._call("warm", self.rt.warm, json.dumps({"sources": sources, "kernels": kernels}, sort_keys=True))

    def compile_stats(self) -> dict:
        """The tab's own counts (web/gpu.js compileStats): pipelines compiled ahead count when
        they start, not when a job asks for them."""
        got = json.loads(self.rt.compileStats())
        return {"started": got["started"], "waited": got["waited_s"]}

    def _compile_plan(self, plan: Plan) -> int:
        ops = []  # the runtime's plan steps (web/gpu.js, createPlan), offsets in bytes
        for i, op in enumerate(plan.ops):
            if isinstance(op, Dispatch):
                ops.append({"kind": "dispatch", "kernel": op.kernel.handle, "grid": list(op.grid),
                            "buffers": [b.handle for b in op.buffers], "name": plan.label(i)})
            elif isinstance(op, Clear):
                ops.append({"kind": "clear", "buffer": op.buffer.handle})
            else:
                ops.append({"kind": "copy", "src": op.src.handle, "srcOffset": 4 * op.src_offset,
                            "dst": op.dst.handle, "dstOffset": 4 * op.dst_offset, "bytes": 4 * op.n})
        return self._call("plan recording", self.rt.createPlan, json.dumps(ops))

    def _destroy_plan(self, plan: Plan) -> None:
        self._call("plan release", self.rt.destroyPlan, plan.compiled)

    async def _run(self, plan: Plan, repeat: int) -> None:
        await self._submit([plan], repeat)

    async def _submit(self, plans: list[Plan], repeat: int) -> None:
        if len(plans) == 1:
            self._call("submit", self.rt.runPlan, plans[0].compiled, repeat)
        else:
            self._call("submit", self.rt.runPlans, json.dumps([p.compiled for p in plans]), repeat)

    def _profiler(self):
        """Timestamp queries around every dispatch where the adapter has "timestamp-query"
        (web/gpu.js profileStart/profileStop), else the wall-clock default."""
        if "timestamp-query" not in self.features:
            return super()._profiler()
        self._call("profile start", self.rt.profileStart)
        return _GPUProfile(self)

    def memory(self) -> dict:
        """The Python-side counts, and the JS runtime's own ("runtime": its maps' sizes and the
        bytes of the GPUBuffers it holds, 16-byte padded)."""
        out = super().memory()
        try:
            out["runtime"] = json.loads(self.rt.memoryJSON())
        except Exception:  # an older runtime: the Python counts alone
            pass
        return out

    async def finish(self) -> None:
        await self.finish_soon()

    def finish_soon(self) -> Soon:
        promise = self.rt.workDone()  # onSubmittedWorkDone, taken now

        async def wait():
            try:
                await promise
                self.rt.check()
            except Exception as exc:
                raise GPUError(str(exc)) from exc
        return Soon(wait)

    def _destroy(self, buf: Buffer) -> None:
        self.rt.destroyBuffer(buf.handle)


class _GPUProfile:
    """A profile read from GPU timestamps: runs submit as usual, the runtime stamps each dispatch."""

    method = "timestamp queries, a pass per dispatch"

    def __init__(self, backend: WebGPUBackend):
        self.b = backend

    async def run(self, plans: list[Plan], repeat: int) -> None:
        await self.b._submit(plans, repeat)

    async def result(self) -> dict:
        try:
            got = json.loads(await self.b.rt.profileStop())
        except Exception as exc:
            raise GPUError(f"WebGPU profile readback failed: {js_message(exc)}") from exc
        return {"ops": [(name, ns * 1e-9) for name, ns in got["ops"]], "span": got["span"] * 1e-9,
                "method": self.method}
