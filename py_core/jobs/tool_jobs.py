"""The kinds that are no model: the GPU self-test, a data set's load, and a suite (a run the page
composes of others: web/suite.js). Each is declared here as models are beside their jobs
(py_core/jobs/kinds.py)."""
from __future__ import annotations

import time

from ..errors import JobError
from .jobs import SYNTHETIC, synthetic_table
from .kinds import Kind, Timing


async def _selftest(job, backend, ctx, session):
    from ..selftest import run_selftest
    result = await run_selftest(backend, progress=ctx.progress, seed=job.get("seed"))
    if job.get("benchmark"):  # matmul TFLOP/s at n^3 (4096 unless the job says)
        from ..benchmark import run_benchmark
        n = int(job.get("benchmark_n") or 4096)
        if not 128 <= n <= 8192 or n % 128:
            raise JobError(f"benchmark_n must be a multiple of 128 from 128 to 8192, not {n}")
        result["metrics"]["benchmark"] = await run_benchmark(backend, n, progress=ctx.progress)
    return result


async def _dataset_load(job, backend, ctx, session):
    """Loads and parses a data set as the tab does before training, timing each part; for a
    synthetic one, generates it. Metrics: rows, columns, bytes, mb_per_s and rows_per_s of the
    parse (or generation), and in the tab `memory_mb`: how much the WebAssembly memory grew
    (plus the file's size when a whole JavaScript copy of it was fetched rather than streamed
    into Python), with `memory_x_file` that over the file's size."""
    from ..data import parse_csv
    heap0 = _wasm_heap()
    t0 = time.perf_counter()
    if job["dataset"].startswith(SYNTHETIC):
        table = synthetic_table(job["dataset"], should_stop=ctx.should_stop)
        t1 = t2 = time.perf_counter()
        size, streamed = 0, None
    else:
        data = await ctx.load_dataset(job["dataset"])
        t1 = time.perf_counter()
        size, streamed = len(data), isinstance(data, bytearray)
        table = parse_csv(data, name=job["dataset"],
                          progress=lambda f: ctx.progress({"stage": "parsing", "fraction": f}),
                          should_stop=ctx.should_stop)
        t2 = time.perf_counter()
        del data
    seconds = t2 - t1 if size else t2 - t0
    metrics = {"rows": table.n_rows, "columns": len(table.columns), "bytes": size,
               "mb_per_s": size / 2**20 / seconds if size and seconds > 0 else None,
               "rows_per_s": table.n_rows / seconds if seconds > 0 else None}
    if heap0 is not None:
        # a file fetched whole has a JavaScript copy besides; one streamed into a bytearray not
        grown = _wasm_heap() - heap0 + (size if streamed is False else 0)
        metrics.update(memory_mb=grown / 2**20, memory_x_file=grown / size if size else None)
    return {"metrics": metrics,
            "timings": {"fetch": t1 - t0, "parse": t2 - t1, "load": t2 - t0} if size
            else {"generate": t2 - t0, "load": t2 - t0}}


def _wasm_heap() -> int | None:
    """Bytes of WebAssembly memory under Pyodide (it only grows: its size is the peak), else
    None."""
    from ..wasm import heap
    got = heap()
    return None if got is None else got.size


# None of them runs on the server: no cost, no runners, nothing to download; a load and a suite
# have no main phase (the run tables show their total alone).
SELFTEST = Kind(
    name="selftest", label="GPU self-test", run=_selftest, params=None,
    main_timing=Timing("kernels", "Kernels", "Seconds of the kernels"), needs=(), cost=None,
    plots=(), exports=(), snippet=None, runners=(), tab="gpu", panel="")
DATASET_LOAD = Kind(
    name="dataset_load", label="Data set load", run=_dataset_load, params=None,
    main_timing=None, needs=("dataset",), cost=None,
    plots=(), exports=(), snippet=None, runners=(), tab="", panel="")
SUITE = Kind(
    name="suite", label="Benchmark suite", run=None, params=None,
    main_timing=None, needs=(), cost=None,
    plots=(), exports=(), snippet=None, runners=(), tab="", panel="")
