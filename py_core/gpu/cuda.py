"""The cuda backend (server only): every kernel as vectorised PyTorch ops over torch tensors.

    backend = CudaBackend()                 # the first CUDA GPU
    backend = CudaBackend(device="cpu")     # the same kernels on PyTorch's CPU build (tests, CI)

Buffers are 1-D tensors on the device: float32 for f32, int32 for u32 and i32. A u32 buffer
holds the bit pattern of each word; kernels that do unsigned arithmetic widen to int64, mask
to 32 bits and narrow back with `to_u32` (py_core/kernels/torch_impl), so overflow wraps exactly
as in WGSL. Uniform buffers keep a host copy too, so kernels read their parameters without a
device round trip.

A kernel (family, entry) runs its torch implementation from `py_core.kernels.torch_impl`, which
does what the whole WGSL dispatch does. Where a family has none yet, the backend falls back to the
plain-Python reference on CPU copies of the buffers, logs a warning once per entry and records
the entry in `fallbacks`, so every kernel works (slowly) and tests can tell which are native.

This is the one module of py_core that imports something outside the standard library
(PyTorch, lazily, when a CudaBackend is made); the browser never imports it.
"""
from __future__ import annotations

import ctypes
import logging
import platform
from array import array

from .. import kernels
from .backend import TYPECODES, Backend, Buffer, GPUError, Kernel, Plan

log = logging.getLogger(__name__)


class TBuf:
    """A buffer's device tensor and, for uniform buffers, its host copy."""
    __slots__ = ("t", "host")

    def __init__(self, t, host: array | None = None):
        self.t, self.host = t, host


class CudaBackend(Backend):
    name = "cuda"

    def __init__(self, device: str = "cuda"):
        super().__init__()
        try:
            import torch
        except ImportError as exc:
            raise GPUError("the cuda backend needs PyTorch: pip install '.[cuda]'") from exc
        self.torch = torch
        self.device = torch.device(device)
        self.device_type = self.device.type
        if self.device_type == "cuda":
            if not torch.cuda.is_available():
                raise GPUError("no CUDA device: PyTorch sees no GPU (a CPU-only build of PyTorch, "
                               "no NVIDIA driver, or CUDA_VISIBLE_DEVICES hides it)")
            props = torch.cuda.get_device_properties(self.device)
            self.adapter = {"vendor": "nvidia", "architecture": f"sm_{props.major}{props.minor}",
                            "device": props.name, "description": f"PyTorch {torch.__version__}, "
                            f"CUDA {torch.version.cuda}", "is_fallback_adapter": False,
                            "memory": props.total_memory}
            memory = props.total_memory
        elif self.device_type == "cpu":
            self.adapter = {"vendor": "cpu", "architecture": platform.machine(),
                            "device": f"PyTorch CPU ({torch.get_num_threads()} threads)",
                            "description": f"PyTorch {torch.__version__}",
                            "is_fallback_adapter": True}
            memory = 2**34
        else:
            raise GPUError(f"the cuda backend runs on 'cuda' or 'cpu', not {device!r}")
        # Tensors are indexed with 64-bit integers: only memory bounds a buffer. Grids are not
        # launched as such, so their per-dimension cap is only WGSL's u32.
        self.limits.update(maxStorageBufferBindingSize=memory, maxBufferSize=memory,
                           maxComputeWorkgroupsPerDimension=2**32 - 1)
        self.fallbacks: set[str] = set()  # "family.entry" run by the reference, not by torch
        self._dtypes = {"f32": torch.float32, "u32": torch.int32, "i32": torch.int32}

    # -- buffers ---------------------------------------------------------------------------------
    def _create(self, buf: Buffer):
        t = self.torch.zeros(buf.length, dtype=self._dtypes[buf.dtype], device=self.device)
        host = array(TYPECODES[buf.dtype], bytes(4 * buf.length)) if buf.uniform else None
        return TBuf(t, host)

    def _write(self, buf: Buffer, data: array, offset: int) -> None:
        if not len(data):
            return
        src = self.torch.frombuffer(data, dtype=self._dtypes[buf.dtype])  # shares data's memory
        buf.handle.t[offset:offset + len(data)] = src.to(self.device)  # copies
        if buf.handle.host is not None:
            buf.handle.host[offset:offset + len(data)] = data

    async def _read(self, buf: Buffer, n: int) -> array:
        return self._to_array(buf.handle.t[:n], buf.dtype)

    def _to_array(self, t, dtype: str) -> array:
        if t.numel() == 0:
            return array(TYPECODES[dtype])
        copy = t.to("cpu", copy=True).contiguous()  # its own memory, exactly n elements
        # One memcpy (iterating a storage from Python goes element by element).
        return array(TYPECODES[dtype], ctypes.string_at(copy.data_ptr(), 4 * copy.numel()))

    async def finish(self) -> None:
        if self.device_type == "cuda":
            self.torch.cuda.synchronize(self.device)

    # -- kernels ---------------------------------------------------------------------------------
    async def _compile(self, kernel: Kernel):
        from ..kernels import torch_impl
        fn = torch_impl.lookup(kernel.family, kernel.entry)
        if fn is not None:
            return ("torch", fn)
        if kernel.name not in self.fallbacks:
            log.warning("cuda backend: no torch implementation of %s; running the plain-Python "
                        "reference on CPU copies (slow)", kernel.name)
            self.fallbacks.add(kernel.name)
        return ("reference", kernels.lookup(kernel.family, kernel.entry))

    async def _run(self, plan: Plan, repeat: int) -> None:
        for _ in range(repeat):
            for op in plan.ops:
                if op[0] == "dispatch":
                    _, kernel, bufs, grid = op
                    how, fn = kernel.handle
                    if how == "torch":
                        fn([b.handle for b in bufs], grid, kernel.constants)
                    else:
                        self._run_reference(fn, bufs, grid, kernel.constants)
                elif op[0] == "clear":
                    op[1].handle.t.zero_()
                    if op[1].handle.host is not None:
                        op[1].handle.host[:] = array(op[1].handle.host.typecode, bytes(4 * op[1].length))
                elif op[0] == "copy":
                    _, src, so, dst, do, n = op
                    # Bits, not values: an f32 buffer copied into a u32 one keeps its words.
                    dst.handle.t[do:do + n] = src.handle.t[so:so + n].view(dst.handle.t.dtype)
                    if dst.handle.host is not None:
                        dst.handle.host[:] = self._to_array(dst.handle.t, dst.dtype)

    def _run_reference(self, fn, bufs: list[Buffer], grid, constants) -> None:
        arrays = [b.handle.host if b.handle.host is not None else self._to_array(b.handle.t, b.dtype)
                  for b in bufs]
        fn(arrays, grid, constants)
        for b, a in zip(bufs, arrays):
            if b.handle.host is None and len(a):
                b.handle.t.copy_(self.torch.frombuffer(a, dtype=self._dtypes[b.dtype]))
