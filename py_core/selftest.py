"""The GPU self-test ("Check my GPU"): every registered kernel on fresh random inputs.

Each kernel family registers cases with `@case(...)`. A case builds its inputs from a seeded
`random.Random`, records a plan on a backend and names its output buffers. The self-test runs the
case on the backend under test and on the reference backend with the same inputs, reports the
largest error against the reference, and times the plan (queue drained before the clock is read).
"""
from __future__ import annotations

import math
import os
import random
import time
from array import array
from dataclasses import dataclass

from .gpu.reference import ReferenceBackend


@dataclass
class Case:
    name: str
    setup: object        # async (backend, rng) -> (plan, [output buffers], work)
    atol: float
    rtol: float
    unit: str = "GFLOP/s"


CASES: list[Case] = []


def case(name: str, atol: float = 1e-5, rtol: float = 1e-4, unit: str = "GFLOP/s"):
    def register(setup):
        CASES.append(Case(name, setup, atol, rtol, unit))
        return setup
    return register


def _load_families():
    # Importing a family registers its cases, in this order: matmul, forest, transformer.
    from .kernels import matmul_cases  # noqa: F401, I001
    from .kernels import forest_cases, transformer_cases  # noqa: F401


def max_error(got, want, atol: float, rtol: float) -> tuple[float, float, bool]:
    """Largest absolute error, largest error relative to the tolerance, and whether all pass."""
    if len(got) != len(want):
        return math.inf, math.inf, False
    worst_abs, worst_ratio = 0.0, 0.0
    for g, w in zip(got, want):
        err = abs(g - w)
        if err != err:  # NaN
            return math.inf, math.inf, False
        worst_abs = max(worst_abs, err)
        worst_ratio = max(worst_ratio, err / (atol + rtol * abs(w)))
    return worst_abs, worst_ratio, worst_ratio <= 1.0


async def _timed(backend, plan, repeat: int) -> float:
    await backend.run(plan)  # warm-up, not timed
    await backend.finish()
    t0 = time.perf_counter()
    await backend.run(plan, repeat=repeat)
    await backend.finish()
    return (time.perf_counter() - t0) / repeat


async def run_selftest(backend, progress=None, seed: int | None = None) -> dict:
    _load_families()
    seed = int.from_bytes(os.urandom(4), "little") if seed is None else seed
    reference = backend if backend.name == "reference" else ReferenceBackend()
    results = []
    for i, c in enumerate(CASES):
        # Each case's buffers and plans are freed before the next (on failure too).
        async with backend.scope(f"self-test {c.name}"), reference.scope("reference"):
            await _one(backend, reference, c, i, seed, progress, results)
    if progress:
        progress({"stage": "self-test done", "fraction": 1.0})
    return {"metrics": {"all_ok": all(r["ok"] for r in results), "seed": seed, "kernels": results},
            "timings": {"kernels": sum(r["time_s"] for r in results)}}


async def _one(backend, reference, c: Case, i: int, seed: int, progress, results: list) -> None:
    if progress:
        progress({"stage": f"self-test {c.name}", "fraction": i / len(CASES), "count": [i, len(CASES)]})
    plan, outs, work = await c.setup(backend, random.Random(seed + i))
    await backend.run(plan)
    got = [await backend.read(b) for b in outs]
    if reference is backend:
        want = got
    else:
        rplan, routs, _ = await c.setup(reference, random.Random(seed + i))
        await reference.run(rplan)
        want = [await reference.read(b) for b in routs]
    abs_err, ratio, ok = 0.0, 0.0, True
    for g, w in zip(got, want):
        a, r, good = max_error(g, w, c.atol, c.rtol)
        abs_err, ratio, ok = max(abs_err, a), max(ratio, r), ok and good
    seconds = await _timed(backend, plan, 1 if backend.name == "reference" else 10)
    # A NaN or infinite output (a GPU fault) has no finite error: null in JSON, and not ok.
    abs_err, ratio = (x if math.isfinite(x) else None for x in (abs_err, ratio))
    results.append({"name": c.name, "max_abs_err": abs_err, "err_over_tol": ratio,
                    "atol": c.atol, "rtol": c.rtol, "ok": ok, "time_s": seconds,
                    "rate": work / seconds / 1e9 if seconds > 0 else None, "unit": c.unit})


def random_floats(rng: random.Random, n: int, scale: float = 1.0) -> array:
    return array("f", [rng.uniform(-scale, scale) for _ in range(n)])
