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
        except (ValueError, OverflowError):  # OverflowError: int(inf), a count of "inf" or "1e400"
            raise JobError(f"generator {name!r}: {key}={value!r} is not a finite number") from None
    return name, params


async def _maybe_await(value):
    if hasattr(value, "__await__"):
        return await value
    return value


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
    from .kinds import KINDS, kind
    found = kind(job["kind"])
    if found is None or found.run is None:
        jobs = sorted(name for name in KINDS if kind(name).run is not None)
        raise JobError(f"unknown job kind {job['kind']!r}: one of {', '.join(jobs)}")
    ctx = ctx or Context()
    t0 = time.perf_counter()
    compiles = backend.compile_stats()
    result = await found.run(job, backend, ctx, session)
    now = backend.compile_stats()
    # compile: seconds the job waited on pipeline compilation; pipelines_started: those it
    # started itself (0 when the tab compiled them ahead: Backend.warm)
    result.setdefault("timings", {}).update(compile=now["waited"] - compiles["waited"],
                                            pipelines_started=now["started"] - compiles["started"])
    result["timings"]["total"] = time.perf_counter() - t0
    result["backend"] = backend.name
    result["adapter"] = backend.adapter
    return result
