"""Glue between the page's Web Worker (`web/worker.js`) and py_core. Runs only under Pyodide.

The worker calls `init(runtime)` once with the JS GPU runtime (or None for the CPU fallback) and
then `await run(job_json, hooks)` per job. `hooks` is a JS object the worker provides:
`progress(json)`, `shouldStop()`, `fetchBytes(url)` (a promise of a Uint8Array).
"""
from __future__ import annotations

import json

from .gpu import get_backend
from .jobs import Context, run_job

_backend = None


def init(runtime) -> str:
    global _backend
    _backend = get_backend("webgpu", runtime=runtime) if runtime is not None else get_backend("reference")
    return json.dumps(_backend.describe())


def backend():
    return _backend


async def run(job_json: str, hooks) -> str:
    job = json.loads(job_json)

    async def load_dataset(dataset_id: str) -> bytes:
        data = await hooks.fetchBytes(f"/api/datasets/{dataset_id}/file")
        return data.to_bytes()

    async def load_text(text_id: str) -> str:
        data = await hooks.fetchBytes(f"/api/texts/{text_id}/file")
        return data.to_bytes().decode("utf-8")

    ctx = Context(load_dataset=load_dataset, load_text=load_text,
                  progress=lambda info: hooks.progress(json.dumps(info)),
                  should_stop=lambda: bool(hooks.shouldStop()))
    result = await run_job(job, _backend, ctx)
    return json.dumps(result, allow_nan=False, default=_jsonable)


def describe_bytes(data, name: str, delimiter: str | None, hooks) -> str:
    """Parse an uploaded file in the tab: its summary, or the error with line and column."""
    from .data import DataError, parse_csv
    try:
        table = parse_csv(data.to_bytes(), name=name, delimiter=delimiter or None,
                          progress=lambda f: hooks.progress(json.dumps({"stage": "parsing", "fraction": f})))
    except DataError as exc:
        return json.dumps({"error": exc.to_dict()})
    return json.dumps(table.describe(), allow_nan=False)


def describe_synthetic(dataset_id: str, hooks=None) -> str:
    from .jobs import synthetic_table
    return json.dumps(synthetic_table(dataset_id).describe(), allow_nan=False)


def generators(hooks=None) -> str:
    from .data import GENERATORS
    return json.dumps({name: {"params": g.params, "task": g.task} for name, g in GENERATORS.items()})


def _jsonable(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
