"""The self-test's benchmark mode: matmul rates at n^3 (4096 by default) on the backend's GPU.

`run_benchmark(backend)` times transformer_matmul (f32, the default path) and, where the adapter
has f16 subgroup matrices, matmul_f16 (tensor cores) with packed f16 operands and with f32
operands rounded when staged, and the direct-load entry the mixed path picks for n^3; each
product is checked at a few entries against plain-Python sums over the same (rounded) operands.
The operands are built from one row of values, each row of the matrix shifted (A[i, k] =
r[(2 i + k) mod n]), so building 2 x n^2 values stays cheap in Pyodide.
"""
from __future__ import annotations

import random
import struct
import time
from array import array

from .kernels import matmul_f16 as mf
from .kernels import transformer_matmul as tm

POINTS = ((0, 0), (1, 2), (17, 123), (-1, -1))  # (row, column) entries checked; -1: the last


def _operand(n: int, seed: int, f16: bool) -> tuple[array, list]:
    """(buffer data, the row r): an n x n matrix with rows r shifted by 2 per row."""
    rng = random.Random(seed)
    row = [rng.uniform(-1.0, 1.0) for _ in range(n)]
    if f16:
        row = list(mf.round_f16(row))
        raw = struct.pack(f"<{n}e", *row) * 2
        size = 2
    else:
        row = list(array("f", row))
        raw = array("f", row + row).tobytes()
        size = 4
    rows = b"".join(raw[size * ((2 * i) % n):size * ((2 * i) % n + n)] for i in range(n))
    return array("I" if f16 else "f", rows), row


def _entry(n: int, ra: list, rb: list, i: int, j: int, rounded: bool) -> float:
    """sum_k A[i, k] B[k, j] in double, A[i, k] = ra[(2i + k) % n], B[k, j] = rb[(2k + j) % n]."""
    a = [ra[(2 * i + k) % n] for k in range(n)]
    b = [rb[(2 * k + j) % n] for k in range(n)]
    if rounded:
        a, b = list(mf.round_f16(a)), list(mf.round_f16(b))
    return sum(x * y for x, y in zip(a, b))


async def run_benchmark(backend, n: int = 4096, repeat: int = 10, progress=None) -> list[dict]:
    """[{kernel, n, seconds, tflops, max_err, ok}] for each matmul this backend can run."""
    if not backend.is_gpu:
        return []
    runs = [("transformer_matmul f32 (64 x 64 tiles)", "transformer_matmul", "matmul", {}, False,
             tm.grid(n, n))]
    if all(f in backend.features for f in mf.FEATURES):
        runs += [("matmul_f16 tensor cores, f16 operands", "matmul_f16", "matmul", mf.constants(0, True), True,
                  mf.grid(n, n)),
                 ("matmul_f16 tensor cores, f32 operands rounded when staged", "matmul_f16", "matmul",
                  mf.constants(0, False), False, mf.grid(n, n))]
        direct = mf.pick_direct(tm.params(n, n, n))
        if direct:  # the entry the mixed path picks at this size: f16 operands, no workgroup memory
            runs.append((f"matmul_f16 tensor cores, direct loads ({direct})", "matmul_f16", direct,
                         mf.constants(0, True), True, mf.direct_grid(direct, n, n)))
    out = []
    for name, family, entry, consts, f16, grid in runs:
        if progress:
            progress({"stage": f"benchmark {name}", "fraction": len(out) / len(runs)})
        a_data, ra = _operand(n, 1, f16)
        b_data, rb = _operand(n, 2, f16)
        a = backend.buffer("u32" if f16 else "f32", data=a_data)
        b = backend.buffer("u32" if f16 else "f32", data=b_data)
        c = backend.buffer("f32", n * n)
        spare, spare_w = backend.buffer("f32", 4), backend.buffer("f32", 4)
        prm = backend.buffer("u32", data=tm.PARAMS.pack(**tm.params(n, n, n)), uniform=True)
        kern = await backend.kernel(family, entry, consts)
        plan = backend.plan().dispatch(kern, [prm, a, b, c, spare, spare, spare_w], grid)
        await backend.run(plan)  # compiles; the clocks come up
        await backend.finish()
        t0 = time.perf_counter()
        await backend.run(plan, repeat=repeat)
        await backend.finish()
        seconds = (time.perf_counter() - t0) / repeat
        got = await backend.read(c)
        err = 0.0
        for i, j in POINTS:
            i, j = i % n, j % n
            err = max(err, abs(got[i * n + j] - _entry(n, ra, rb, i, j, family == "matmul_f16")))
        for buf in (a, b, c, spare, spare_w, prm):
            backend.free(buf)
        out.append({"kernel": name, "n": n, "seconds": seconds, "tflops": 2 * n ** 3 / seconds / 1e12,
                    "max_err": err, "ok": err <= 1e-3 * n ** 0.5})
    return out
