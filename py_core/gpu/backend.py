"""The kernel interface: one algorithm, several backends.

An algorithm is written once as async Python over this interface:

    k = await backend.kernel("matmul", "matmul")             # py_core/kernels/matmul/matmul.wgsl
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
"""
from __future__ import annotations

import abc
import itertools
from array import array
from dataclasses import dataclass, field
from typing import NamedTuple

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
    handle: object = None  # the backend's own object

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
    compiled: object = None  # the backend's cached form
    labels: dict = field(default_factory=dict)  # op index -> name in profiles (default: the kernel's)

    def dispatch(self, kernel: Kernel, buffers: list[Buffer], grid, label: str | None = None) -> "Plan":
        grid = tuple(grid) + (1,) * (3 - len(grid))
        if label is not None:
            self.labels[len(self.ops)] = label
        self.ops.append(Dispatch(kernel, list(buffers), grid))
        self.compiled = None
        return self

    def label(self, i: int) -> str:
        """The profile name of op i: its label, else the kernel's name, else the op's kind."""
        return self.labels.get(i) or op_name(self.ops[i])

    def clear(self, buf: Buffer) -> "Plan":
        """Fill `buf` with zero bits."""
        self.ops.append(Clear(buf))
        self.compiled = None
        return self

    def extend(self, *plans: "Plan") -> "Plan":
        """Append other plans' operations (and their labels): several recorded steps become one
        submission."""
        for other in plans:
            at = len(self.ops)
            self.labels.update((at + i, label) for i, label in other.labels.items())
            self.ops.extend(other.ops)
        self.compiled = None
        return self

    def copy(self, src: Buffer, dst: Buffer, n: int | None = None, src_offset=0, dst_offset=0) -> "Plan":
        """Copy `n` elements (default all of `src`)."""
        n = src.length - src_offset if n is None else n
        self.ops.append(Copy(src, src_offset, dst, dst_offset, n))
        self.compiled = None
        return self


def op_name(op) -> str:
    """A dispatch's kernel name ("forest.hist_build"), else the op's kind ("clear", "copy")."""
    return op.kernel.name if isinstance(op, Dispatch) else type(op).__name__.lower()


def shader_source(family: str) -> str:
    """The WGSL a backend compiles for `family` (`py_core.kernels.family`: the generated layouts
    and constants, the family's file, its includes)."""
    from ..kernels.family import shader_source as source
    return source(family)


class Backend(abc.ABC):
    """What every backend provides. Algorithms use only this."""

    name = "abstract"

    def __init__(self):
        self._ids = itertools.count(1)
        self._kernels: dict = {}
        self.limits = dict(DEFAULT_LIMITS)
        self.adapter: dict = {}
        self.features: list[str] = []

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

    def plan(self) -> Plan:
        return Plan()

    async def kernel(self, family: str, entry: str, constants: dict | None = None) -> Kernel:
        key = (family, entry, tuple(sorted((constants or {}).items())))
        if key not in self._kernels:
            k = Kernel(family, entry, dict(constants or {}))
            k.handle = await self._compile(k)
            self._kernels[key] = k
        return self._kernels[key]

    async def run(self, plan: Plan, repeat: int = 1) -> None:
        """Run the plan's operations in order, `repeat` times; returns once they are submitted."""
        if plan.compiled is None:  # once per recording: a training step must stay O(1) in Python
            for op in plan.ops:
                if isinstance(op, Dispatch):
                    self._check_grid(op.kernel, op.grid)
        if self._profile is not None:
            await self._run_timed(plan, repeat)
        else:
            await self._run(plan, repeat)

    # -- profiling: time spent per kernel while a profile is open -----------------------------
    _profile = None

    def profile_start(self) -> None:
        """From now on, time every operation `run` submits, per kernel name (for benchmarks:
        by default each operation runs alone and the queue is drained after it)."""
        self._profile = {}

    async def profile_stop(self) -> dict:
        """{kernel name: [seconds, dispatches]} since `profile_start`; ends the profile."""
        await self.finish()
        out, self._profile = self._profile or {}, None
        return out

    async def _run_timed(self, plan: Plan, repeat: int) -> None:
        import time
        subs = plan.__dict__.setdefault("_single_ops", [])
        if len(subs) != len(plan.ops):
            subs[:] = [Plan([op]) for op in plan.ops]
        await self.finish()
        for _ in range(repeat):
            for op, sub in zip(plan.ops, subs):
                name = op_name(op)
                t0 = time.perf_counter()
                await self._run(sub, 1)
                await self.finish()
                entry = self._profile.setdefault(name, [0.0, 0])
                entry[0] += time.perf_counter() - t0
                entry[1] += 1

    def _check_grid(self, kernel: Kernel, grid):
        cap = self.limits["maxComputeWorkgroupsPerDimension"]
        if any(g > cap for g in grid):
            raise LimitError(f"{kernel.name}: grid {grid} exceeds {cap} workgroups per dimension")

    async def finish(self) -> None:
        """Wait until all submitted work is done (before reading a clock)."""

    async def profile(self, plan: Plan, repeat: int = 3) -> dict:
        """Where a plan's time goes: {"ops": [(label, seconds), ...] for every op (the mean of
        `repeat` runs), "span": seconds from the first op's start to the last's end, "method"}.
        The plan's operations run `repeat` times more (their effects with them). This default
        times each op alone on the wall clock (its own submission, the queue drained around it,
        less an empty submission's cost): relative costs on any backend. The webgpu backend
        reads timestamp queries where the adapter has them."""
        import time

        async def timed(p: Plan) -> float:
            await self.run(p)  # compiles pipelines and bind groups outside the timing
            await self.finish()
            t0 = time.perf_counter()
            for _ in range(repeat):
                await self.run(p)
                await self.finish()
            return (time.perf_counter() - t0) / repeat

        base = await timed(Plan())
        ops = [(plan.label(i), max(0.0, await timed(Plan(ops=[op])) - base))
               for i, op in enumerate(plan.ops)]
        return {"ops": ops, "span": sum(t for _, t in ops), "method": "wall clock, op by op"}

    def free(self, buf: Buffer) -> None:
        buf.handle = None

    # -- what each backend implements -------------------------------------------------------------
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
