"""Jobs: what the page (through `window.playground.run`) and the server's runners execute.

A job is JSON, `{"kind": ..., ...}`. `run_job` picks the runner for the kind and returns the
result the page posts to the server: `{"metrics": {...}, "timings": {...}, ...}`, with timings in
seconds. The runner gets a context that hides where it runs (browser worker or server):

- `await ctx.load_dataset(id) -> bytes`: a data set's CSV bytes;
- `await ctx.load_table(id) -> Table`: a data set parsed by py_core.data, or generated when the id
  is `synthetic:NAME?param=value&...` (a generator of `py_core.data.GENERATORS`: same table in the
  tab and on the server for the same parameters);
- `await ctx.load_text(id) -> str`: a text for the transformer;
- `ctx.progress(dict)`: `{"stage": str, "fraction": 0..1, ...}` for the page's progress bar;
- `ctx.should_stop() -> bool`: the person pressed Stop; the runner raises `Stopped`;
- `await ctx.pause_point()`: returns at once unless the person pressed Pause, then waits for
  Resume (or Stop, raising `Stopped`).

A `Session` is what lives between jobs of one page (or one server worker): its backend and the
last trained transformer (for sampling and export). Nothing is kept in module globals, so two
sessions run jobs side by side without seeing each other.
"""
from __future__ import annotations

import time

from ..errors import JobError, Stopped


class Context:
    """Defaults for running outside a page: no progress, never stopped, data from callables."""

    def __init__(self, load_dataset=None, load_text=None, progress=None, should_stop=None,
                 is_paused=None):
        self._load_dataset, self._load_text = load_dataset, load_text
        self._progress, self._should_stop, self._is_paused = progress, should_stop, is_paused

    async def load_dataset(self, dataset_id: str) -> bytes:
        if self._load_dataset is None:
            raise JobError("this context cannot load data sets")
        return await _maybe_await(self._load_dataset(dataset_id))

    async def load_table(self, dataset_id: str):
        """Parsed or generated with Stop looked at all along (it raises `Stopped`)."""
        from ..data import parse_csv
        if dataset_id.startswith(SYNTHETIC):
            return synthetic_table(dataset_id, should_stop=self.should_stop)
        return parse_csv(await self.load_dataset(dataset_id), name=dataset_id,
                         should_stop=self.should_stop)

    async def load_text(self, text_id: str) -> str:
        if self._load_text is None:
            raise JobError("this context cannot load texts")
        return await _maybe_await(self._load_text(text_id))

    def progress(self, info: dict) -> None:
        if self._progress is not None:
            self._progress(info)

    def should_stop(self) -> bool:
        return bool(self._should_stop and self._should_stop())

    def check_stop(self) -> None:
        if self.should_stop():
            raise Stopped("stopped on request")

    async def pause_point(self) -> None:
        import asyncio
        while self._is_paused is not None and self._is_paused():
            self.check_stop()
            await asyncio.sleep(0.1)
        self.check_stop()


SYNTHETIC = "synthetic:"


def synthetic_table(dataset_id: str, should_stop=None):
    """The table of a `synthetic:NAME?n_samples=1000&seed=0` id; should_stop as
    `py_core.data.generate` takes it."""
    from ..data import generate
    name, params = synthetic_params(dataset_id)
    return generate(name, should_stop=should_stop, **params)


def synthetic_params(dataset_id: str) -> tuple[str, dict]:
    """(generator name, its parameters) of a `synthetic:NAME?...` id, checked."""
    from urllib.parse import parse_qsl

    from ..data import GENERATORS
    name, _, query = dataset_id[len(SYNTHETIC):].partition("?")
    if name not in GENERATORS:
        raise JobError(f"no synthetic generator {name!r}: one of {', '.join(GENERATORS)}")
    params = {}
    for key, value in parse_qsl(query, strict_parsing=False):
        default = GENERATORS[name].params.get(key)
        if default is None:
            raise JobError(f"generator {name!r} has no parameter {key!r}")
        try:
            params[key] = type(default)(float(value)) if isinstance(default, int) else float(value)
        except ValueError:
            raise JobError(f"generator {name!r}: {key}={value!r} is not a number") from None
    return name, params


async def _maybe_await(value):
    if hasattr(value, "__await__"):
        return await value
    return value


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


async def _random_forest(job, backend, ctx, session):
    from . import forest_job
    return await forest_job.run(job, backend, ctx)


async def _transformer(job, backend, ctx, session):
    from . import transformer_job
    return await transformer_job.run(job, backend, ctx, session)


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


RUNNERS = {"selftest": _selftest, "random_forest": _random_forest, "transformer": _transformer,
           "dataset_load": _dataset_load}
# The kinds whose params are a table (py_core/jobs/params.py), in the module beside their job;
# the others take none. Imported when asked: the tab's worker starts without them.
PARAM_TABLES = {"random_forest": "forest_job", "transformer": "transformer_job"}


def params_of(kind: str):
    """The `Params` table of a job kind, or None for a kind without params (selftest)."""
    import importlib
    module = PARAM_TABLES.get(kind)
    return importlib.import_module(f"{__package__}.{module}").PARAMS if module else None


class Session:
    """One page's (or one server worker's) state between jobs: the backend its jobs run on and
    `last_model`, the transformer of its last finished training run (None before)."""

    def __init__(self, backend):
        self.backend = backend
        self.last_model = None

    async def run(self, job: dict, ctx: Context | None = None) -> dict:
        return await run_job(job, self.backend, ctx, session=self)


async def run_job(job: dict, backend, ctx: Context | None = None, session: Session | None = None) -> dict:
    """Run `job` on `backend`; the result carries the backend, its adapter and a total time.
    `session` (optional) receives what the job leaves behind (a trained transformer)."""
    if not isinstance(job, dict) or not isinstance(job.get("kind"), str):
        raise JobError('a job is an object with a "kind" string')
    runner = RUNNERS.get(job["kind"])
    if runner is None:
        raise JobError(f"unknown job kind {job['kind']!r}: one of {', '.join(sorted(RUNNERS))}")
    ctx = ctx or Context()
    t0 = time.perf_counter()
    result = await runner(job, backend, ctx, session)
    result.setdefault("timings", {})["total"] = time.perf_counter() - t0
    result["backend"] = backend.name
    result["adapter"] = backend.adapter
    return result
