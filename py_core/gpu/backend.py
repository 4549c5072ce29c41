"""The kernel interface: one algorithm, several backends.

An algorithm is written once as async Python over this interface:

    k = await backend.kernel("matmul", "matmul")             # shaders/matmul.wgsl
    a = backend.buffer("f32", data=array("f", ...))          # device buffers, typed
    p = backend.buffer("u32", data=PARAMS.pack(...), uniform=True)
    plan = backend.plan()                                    # recorded once ...
    plan.dispatch(k, [p, a, b, c], grid=(gx, gy, 1))         # grid counts workgroups
    await backend.run(plan)                                  # ... run many times: O(1) calls
    out = await backend.read(c)                              # -> array.array

Binding convention for every kernel: `@group(0) @binding(i)` is the i-th buffer of the dispatch;
binding 0 is the kernel's uniform parameters when it has any. Buffers are f32, u32 or i32.

Backends: `reference` (plain Python, the executable specification), `native` (wgpu-py on
wgpu-native, on the server's GPU or lavapipe) and `webgpu` (the browser, through Pyodide's JS FFI).

This layer knows no kernel family: a backend receives a kernel's program from the `Catalog` the
families register (`py_core.kernels` does, when imported: `py_core/__init__.py` imports it), the
WGSL source of a family for the GPU backends, the plain-Python function of an entry point for the
reference backend.
"""
from __future__ import annotations

import abc
import asyncio
import contextvars
import itertools
import time
from array import array
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

from .scope import Scope

TYPECODES = {"f32": "f", "u32": "I", "i32": "i"}

# The limits a plan's sizes are checked against; the defaults are WebGPU's guaranteed minimums.
DEFAULT_LIMITS = {
    "maxStorageBufferBindingSize": 134217728,
    "maxBufferSize": 268435456,
    "maxComputeWorkgroupStorageSize": 16384,
    "maxComputeInvocationsPerWorkgroup": 256,
    "maxComputeWorkgroupSizeX": 256,
    "maxComputeWorkgroupsPerDimension": 65535,
    "maxStorageBuffersPerShaderStage": 8,
}


class GPUError(RuntimeError):
    """A GPU-side failure, with a message that says what failed and what to do."""


class LimitError(GPUError):
    """A buffer or dispatch larger than the adapter allows."""


@dataclass(eq=False)
class Buffer:
    backend: "Backend"
    id: int
    dtype: str
    length: int  # elements
    uniform: bool = False
    handle: object = None  # the backend's own object; None once freed
    scope: object = None   # the Scope that owns it, if any

    @property
    def nbytes(self) -> int:
        return 4 * self.length


@dataclass(eq=False)
class Kernel:
    family: str
    entry: str
    constants: dict
    handle: object = None

    @property
    def name(self) -> str:
        return f"{self.family}.{self.entry}"


class Dispatch(NamedTuple):
    """Run `kernel` over a grid of (x, y, z) workgroups; buffer i is binding i."""
    kernel: Kernel
    buffers: list
    grid: tuple


class Clear(NamedTuple):
    """Fill a buffer with zero bits."""
    buffer: Buffer


class Copy(NamedTuple):
    """Copy n elements of src from src_offset to dst at dst_offset (in elements)."""
    src: Buffer
    src_offset: int
    dst: Buffer
    dst_offset: int
    n: int


Op = Dispatch | Clear | Copy  # what a plan records; each backend turns these into its own form


@dataclass(eq=False)
class Plan:
    """A recorded list of operations; backends turn it into their own form once."""

    ops: list = field(default_factory=list)  # Dispatch | Clear | Copy
    compiled: object = None  # the backend's cached form (a JS plan id, bind groups): see `run`
    labels: dict = field(default_factory=dict)  # op index -> name in profiles (default: the kernel's)
    backend: object = None   # the backend that compiled it
    scope: object = None     # the Scope that owns it, if any

    def _changed(self) -> None:
        """The ops changed: the compiled form is stale (and freed in the backend)."""
        if self.compiled is not None and self.backend is not None:
            self.backend._release_plan(self)
        self.compiled = None

    def dispatch(self, kernel: Kernel, buffers: list[Buffer], grid, label: str | None = None) -> "Plan":
        grid = tuple(grid) + (1,) * (3 - len(grid))
        if label is not None:
            self.labels[len(self.ops)] = label
        self.ops.append(Dispatch(kernel, list(buffers), grid))
        self._changed()
        return self

    def label(self, i: int) -> str:
        """The profile name of op i: its label, else the kernel's name, else the op's kind."""
        return self.labels.get(i) or op_name(self.ops[i])

    def clear(self, buf: Buffer) -> "Plan":
        """Fill `buf` with zero bits."""
        self.ops.append(Clear(buf))
        self._changed()
        return self

    def extend(self, *plans: "Plan") -> "Plan":
        """Append other plans' operations (and their labels): several recorded steps become one
        submission."""
        for other in plans:
            at = len(self.ops)
            self.ops.extend(other.ops)
            self.labels.update({at + i: name for i, name in other.labels.items()})
        self._changed()
        return self

    def copy(self, src: Buffer, dst: Buffer, n: int | None = None, src_offset=0, dst_offset=0) -> "Plan":
        """Copy `n` elements (default all of `src`)."""
        n = src.length - src_offset if n is None else n
        self.ops.append(Copy(src, src_offset, dst, dst_offset, n))
        self._changed()
        return self


def op_name(op) -> str:
    """A dispatch's kernel name ("forest.hist_build"), else the op's kind ("clear", "copy")."""
    return op.kernel.name if isinstance(op, Dispatch) else type(op).__name__.lower()


class Catalog(NamedTuple):
    """Where backends get a kernel's program: handed in by the kernel families (`use_catalog`)."""
    source: Callable[[str], str]             # family -> the WGSL a GPU backend compiles
    reference: Callable[[str, str], object]  # (family, entry) -> fn(buffers, grid, constants)


_CATALOG: list[Catalog] = []


def use_catalog(source: Callable[[str], str], reference: Callable[[str, str], object]) -> None:
    """Register the kernel families' programs (py_core.kernels calls this when imported)."""
    _CATALOG[:] = [Catalog(source, reference)]


def catalog() -> Catalog:
    if not _CATALOG:
        raise RuntimeError("no kernel catalog registered: import py_core.kernels, which hands the "
                           "backends the families' WGSL and references")
    return _CATALOG[0]


def shader_source(family: str) -> str:
    """The WGSL a backend compiles for `family`, as the catalog gives it."""
    return catalog().source(family)


class Backend(abc.ABC):
    """What every backend provides. Algorithms use only this."""

    name = "abstract"
    # Whether a run's large results read back (a forest) stay in JavaScript rather than Python:
    # the tab on WebGPU, where Pyodide passes no Python buffer above 2 GiB of its heap to
    # JavaScript (py_core.wasm); such a backend has `read_js`.
    host_js = False

    def __init__(self):
        self._ids = itertools.count(1)
        self._kernels: dict = {}
        self._compiles = {"started": 0, "waited": 0.0}  # compile_stats
        self.limits = dict(DEFAULT_LIMITS)
        self.adapter: dict = {}
        self.features: list[str] = []
        # The innermost current Scope (per asyncio task): new buffers and plans join it.
        self._current_scope = contextvars.ContextVar(f"scope-{id(self)}", default=None)
        self._live = {"buffers": 0, "bytes": 0, "plans": 0}
        self._peak_bytes = 0
        # Bytes of device memory the buffers alive here may take in all (None: unknown, and not
        # checked; WebGPU does not tell). Runs that size themselves check their plans against it.
        self.memory_budget: int | None = None
        # Bytes of Python memory a run may still take for what it brings back (a forest): None
        # for what the tab's WebAssembly heap has left under Pyodide (py_core.wasm), unchecked
        # elsewhere; a number for tests, or a server that caps its workers.
        self.host_budget: int | None = None
        self._profile: Profile | None = None

    # -- description -------------------------------------------------------------------------
    @property
    def is_gpu(self) -> bool:
        return self.name in ("webgpu", "native")

    def describe(self) -> dict:
        return {"backend": self.name, "adapter": self.adapter, "limits": self.limits,
                "features": self.features}

    def check_size(self, nbytes: int, what: str = "buffer"):
        cap = min(self.limits["maxStorageBufferBindingSize"], self.limits["maxBufferSize"])
        if nbytes > cap:
            raise LimitError(
                f"{what} needs {nbytes / 2**20:.1f} MiB but this adapter binds at most "
                f"{cap / 2**20:.0f} MiB per buffer: use fewer rows, trees or a smaller model")

    # -- ownership and accounting ---------------------------------------------------------------
    def scope(self, name: str = "", detached: bool = False) -> Scope:
        """A new scope, the child of the current one (none when `detached`): see scope.py."""
        return Scope(self, name, None if detached else self._current_scope.get())

    def current_scope(self) -> Scope | None:
        return self._current_scope.get()

    def memory(self) -> dict:
        """What is alive on this backend: {"buffers", "bytes" (4 x elements), "plans" (compiled),
        "peak_bytes"}."""
        return dict(self._live, peak_bytes=self._peak_bytes)

    def memory_room(self) -> int | None:
        """Bytes `memory_budget` leaves beside the buffers alive now (None: no budget)."""
        return None if self.memory_budget is None else self.memory_budget - self._live["bytes"]

    def _join_scope(self, thing) -> None:
        scope = self._current_scope.get()
        if scope is not None and thing.scope is None:
            scope.own(thing)

    # -- buffers -----------------------------------------------------------------------------
    def buffer(self, dtype: str, n: int | None = None, data=None, uniform: bool = False) -> Buffer:
        if dtype not in TYPECODES:
            raise ValueError(f"dtype {dtype!r} is not one of {sorted(TYPECODES)}")
        if data is not None:
            data = _as_array(data, dtype)
            n = len(data) if n is None else n
            if len(data) != n:
                raise ValueError(f"data has {len(data)} elements, buffer {n}")
        if n is None or n < 0:
            raise ValueError("a buffer needs a length or data")
        self.check_size(4 * n)
        buf = Buffer(self, next(self._ids), dtype, n, uniform)
        buf.handle = self._create(buf)
        self._live["buffers"] += 1
        self._live["bytes"] += buf.nbytes
        self._peak_bytes = max(self._peak_bytes, self._live["bytes"])
        self._join_scope(buf)
        if data is not None and n:
            self.write(buf, data)
        return buf

    def write(self, buf: Buffer, data, offset: int = 0) -> None:
        data = _as_array(data, buf.dtype)
        if offset + len(data) > buf.length:
            raise ValueError(f"write of {len(data)} at {offset} overruns a buffer of {buf.length}")
        self._write(buf, data, offset)

    async def read(self, buf: Buffer, n: int | None = None) -> array:
        """The first `n` elements (default all), as an array of the buffer's type."""
        n = buf.length if n is None else n
        return await self._read(buf, n)

    def read_soon(self, parts: list, js: bool = False):
        """Start reading parts [(buffer, first word, words), ...], end to end, after the work
        submitted so far; returns an awaitable of their words (an array: its bytes are what
        count), or with js (host_js backends) a JavaScript Uint8Array of their bytes. Here: a
        task that reads a buffer's beginning as it is, or copies the parts into one buffer and
        reads that; the webgpu backend submits the copy and maps it at once, so the read waits on
        that work alone, not on what is submitted after it. Await it (on failure too)."""
        if js:
            raise GPUError(f"the {self.name} backend reads into Python, not JavaScript")

        async def read():
            if len(parts) == 1 and parts[0][1] == 0:
                return await self.read(parts[0][0], parts[0][2])
            with self.scope("readback"):
                total = sum(words for _, _, words in parts)
                buf, plan, at = self.buffer("u32", total), self.plan(), 0
                for x, first, words in parts:
                    plan.copy(x, buf, words, src_offset=first, dst_offset=at)
                    at += words
                await self.run(plan)
                return await self.read(buf)
        return asyncio.ensure_future(read())

    def free(self, buf: Buffer) -> None:
        """Give the buffer's memory back now (idempotent); it leaves its scope."""
        if buf.scope is not None:
            buf.scope._forget(buf)
        if buf.handle is None:
            return
        self._destroy(buf)
        buf.handle = None
        self._live["buffers"] -= 1
        self._live["bytes"] -= buf.nbytes

    # -- plans -------------------------------------------------------------------------------
    def plan(self) -> Plan:
        """An empty plan owned by the current scope."""
        plan = Plan(backend=self)
        self._join_scope(plan)
        return plan

    def free_plan(self, plan: Plan) -> None:
        """Free the plan's compiled form (its JS plan, bind groups); it leaves its scope."""
        if plan.scope is not None:
            plan.scope._forget(plan)
        self._release_plan(plan)

    def _release_plan(self, plan: Plan) -> None:
        if plan.compiled is not None and plan.backend is self:
            self._destroy_plan(plan)
            self._live["plans"] -= 1
        plan.compiled = None

    def _prepare(self, plan: Plan) -> None:
        """Check and compile a plan once per recording: a step must stay O(1) in Python."""
        if plan.compiled is not None:
            return
        for op in plan.ops:
            if isinstance(op, Dispatch):
                self._check_grid(op.kernel, op.grid)
        plan.backend = self
        plan.compiled = self._compile_plan(plan)
        self._live["plans"] += 1
        self._join_scope(plan)

    async def kernel(self, family: str, entry: str, constants: dict | None = None) -> Kernel:
        key = (family, entry, tuple(sorted((constants or {}).items())))
        if key not in self._kernels:
            k = Kernel(family, entry, dict(sorted((constants or {}).items())))
            t0 = time.perf_counter()
            self._compiles["started"] += 1
            try:
                k.handle = await self._compile(k)
            finally:
                self._compiles["waited"] += time.perf_counter() - t0
            self._kernels[key] = k
        return self._kernels[key]

    def warm(self, kernels) -> None:
        """Start compiling `kernels` [(family, entry, constants or None), ...] now, without
        waiting: a job's first click then finds its pipelines compiled (or awaits the compile
        already in flight) rather than compiling them one after another. Here: nothing (the
        native and reference backends compile at once, blocking); the webgpu backend compiles
        them in the tab, side by side."""

    def compile_stats(self) -> dict:
        """{"started": kernels whose compile started, "waited": seconds `kernel` waited on
        compiles}: what a job adds to them is its compile time (jobs.run_job)."""
        return dict(self._compiles)

    async def run(self, plan: "Plan | list[Plan]", repeat: int = 1) -> None:
        """Run the plan's operations in order, `repeat` times; returns once they are submitted.
        A list of plans is one submission (their operations one after another)."""
        plans = list(plan) if isinstance(plan, (list, tuple)) else [plan]
        for p in plans:
            self._prepare(p)
        if self._profile is not None:
            await self._profile.run(plans, repeat)
        else:
            await self._submit(plans, repeat)

    async def _submit(self, plans: list[Plan], repeat: int) -> None:
        """One submission of several plans; backends that encode commands override it."""
        for _ in range(repeat):
            for p in plans:
                await self._run(p, 1)

    def _check_grid(self, kernel: Kernel, grid):
        cap = self.limits["maxComputeWorkgroupsPerDimension"]
        if any(g > cap for g in grid):
            raise LimitError(f"{kernel.name}: grid {grid} exceeds {cap} workgroups per dimension")

    async def finish(self) -> None:
        """Wait until all submitted work is done (before reading a clock)."""

    def finish_soon(self) -> "Soon":
        """An awaitable that is done once the work submitted so far is, whatever is submitted
        after: on WebGPU the queue's onSubmittedWorkDone taken now. Here, all submitted work when
        awaited (finish). Awaiting it is not required: nothing runs until then."""
        return Soon(self.finish)

    # -- profiling: the one mechanism (benchmarks, Trainer.profile, the forest's k_ timings) ------
    def profile_start(self) -> None:
        """From now on, time every dispatch `run` submits, by its label (Plan.label): on the GPU's
        timestamps where the backend has them, else each dispatch alone on the wall clock."""
        self._profile = self._profiler()

    async def profile_stop(self) -> dict:
        """Ends the profile: {"ops": [(label, seconds) per dispatch run, in order], "span":
        seconds from each submission's first dispatch start to its last's end, summed,
        "method"}; `by_label(result)` sums it per label."""
        prof, self._profile = self._profile, None
        if prof is None:
            return {"ops": [], "span": 0.0, "method": "none"}
        return await prof.result()

    async def profile(self, plan: Plan, repeat: int = 3) -> dict:
        """Where a plan's time goes: the plan run once untimed (compiling what it needs) and then
        `repeat` times under a profile (its effects with it); "ops" holds each dispatch's mean."""
        await self.run(plan)
        await self.finish()
        self.profile_start()
        try:
            await self.run(plan, repeat)
        finally:
            got = await self.profile_stop()
        ops = got["ops"]
        per = len(ops) // repeat if repeat else 0
        mean = [(ops[i][0], sum(ops[i + r * per][1] for r in range(repeat)) / repeat) for i in range(per)]
        return {"ops": mean, "span": got["span"] / max(1, repeat), "method": got["method"]}

    def _profiler(self) -> "Profile":
        return Profile(self)

    # -- what each backend implements -------------------------------------------------------------
    def _destroy(self, buf: Buffer) -> None:
        """Release the buffer's memory in the backend (default: drop the reference)."""

    def _compile_plan(self, plan: Plan):
        """The backend's form of a plan, made once; anything but None."""
        return True

    def _destroy_plan(self, plan: Plan) -> None:
        """Release a compiled plan's backend objects (default: nothing to do)."""

    @abc.abstractmethod
    def _create(self, buf: Buffer): ...

    @abc.abstractmethod
    def _write(self, buf: Buffer, data: array, offset: int) -> None: ...

    @abc.abstractmethod
    async def _read(self, buf: Buffer, n: int) -> array: ...

    @abc.abstractmethod
    async def _compile(self, kernel: Kernel): ...

    @abc.abstractmethod
    async def _run(self, plan: Plan, repeat: int) -> None: ...


class Profile:
    """The wall-clock profile: each dispatch in a submission of its own, the queue drained around
    it (relative costs on any backend). The webgpu backend reads GPU timestamps instead."""

    method = "wall clock, a dispatch at a time (queue drained around each)"

    def __init__(self, backend: Backend):
        self.b, self.ops, self.span = backend, [], 0.0
        self._single: dict = {}  # id(plan) -> (plan, [one-op plans])

    async def run(self, plans: list[Plan], repeat: int) -> None:
        b = self.b
        await b.finish()
        for _ in range(repeat):
            for plan in plans:
                got = self._single.get(id(plan))
                if got is None or got[0] is not plan or len(got[1]) != len(plan.ops):
                    subs = [Plan(ops=[op], backend=b) for op in plan.ops]
                    for sub in subs:
                        b._prepare(sub)
                    got = self._single[id(plan)] = (plan, subs)
                for i, sub in enumerate(got[1]):
                    t0 = time.perf_counter()
                    await b._submit([sub], 1)
                    await b.finish()
                    if isinstance(plan.ops[i], Dispatch):
                        dt = time.perf_counter() - t0
                        self.ops.append((plan.label(i), dt))
                        self.span += dt

    async def result(self) -> dict:
        for _, subs in self._single.values():
            for sub in subs:
                self.b.free_plan(sub)
        return {"ops": self.ops, "span": self.span, "method": self.method}


class Soon:
    """An awaitable that calls `wait()` (a coroutine function) only when awaited (finish_soon)."""

    def __init__(self, wait):
        self.wait = wait

    def __await__(self):
        return self.wait().__await__()


def by_label(profile: dict) -> dict:
    """{label: [seconds, dispatches]} of a profile's ops."""
    out: dict = {}
    for label, seconds in profile["ops"]:
        entry = out.setdefault(label, [0.0, 0])
        entry[0] += seconds
        entry[1] += 1
    return out


def _as_array(data, dtype: str):
    """An array of the dtype's typecode; raw bytes (a memoryview of any array, e.g. f64 values
    as pairs of words) pass as a 4-byte-typed view of the same memory, without a copy."""
    code = TYPECODES[dtype]
    if isinstance(data, array) and data.typecode == code:
        return data
    if isinstance(data, array) and data.itemsize != 4:
        return array(code, data.tolist())
    if isinstance(data, memoryview) and data.c_contiguous and data.nbytes % 4 == 0:
        return data.cast("B").cast(code)
    if isinstance(data, (bytes, bytearray, memoryview)):
        out = array(code)
        out.frombytes(data if not isinstance(data, memoryview) else data.tobytes())
        return out
    return array(code, data)
