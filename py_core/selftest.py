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

from .gpu.reference import ReferenceBackend
from .kernels.cases import CASES, Case, case, max_error, random_floats

__all__ = ["CASES", "Case", "case", "max_error", "random_floats", "run_selftest"]


FAMILIES = ("matmul", "forest", "boosting", "transformer_matmul", "transformer_init", "transformer_attention",
            "transformer_layernorm", "transformer_elementwise", "transformer_embedding",
            "transformer_loss", "transformer_adamw", "matmul_f16")  # the order of the self-test's cases


def _load_families():
    """Importing a family's `cases` module registers its cases (once)."""
    import importlib
    for family in FAMILIES:
        importlib.import_module(f"py_core.kernels.{family}.cases")


QUICK_S = 0.05  # a case whose `most` runs fit in this long is timed over `most` runs


async def _timed(backend, plan, most: int) -> float:
    """Seconds a run of `plan`, after the case's checked run has warmed it. One run is timed; if
    `most` of them fit in QUICK_S (the H200: 0.3-1.5 ms a case, submission included), `most` more
    are, in one submission, so that the submission's own cost is shared; a slow adapter
    (SwiftShader on CI's cores: 1.1 s for 38 cases) is timed by the one run, as timeit's autorange
    stops at its first long enough loop."""
    t0 = time.perf_counter()
    await backend.run(plan)
    await backend.finish()
    once = time.perf_counter() - t0
    if most == 1 or once * most > QUICK_S:
        return once
    t0 = time.perf_counter()
    await backend.run(plan, repeat=most)
    await backend.finish()
    return (time.perf_counter() - t0) / most


async def run_selftest(backend, progress=None, seed: int | None = None) -> dict:
    _load_families()
    seed = int.from_bytes(os.urandom(4), "little") if seed is None else seed
    reference = backend if backend.name == "reference" else ReferenceBackend()
    results = []
    for i, c in enumerate(CASES):
        missing = [f for f in c.needs if f not in backend.features] if backend.is_gpu else []
        if missing:  # e.g. tensor-core kernels on an adapter without f16 subgroup matrices
            results.append({"name": c.name, "ok": True, "skipped": "the adapter lacks " + ", ".join(missing),
                            "max_abs_err": None, "err_over_tol": None, "atol": c.atol, "rtol": c.rtol,
                            "time_s": 0.0, "rate": None, "unit": c.unit})
            continue
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
