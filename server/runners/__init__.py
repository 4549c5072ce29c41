"""Comparison runners: the same job the page ran, run again on the server's own hardware.

Each runner is a module-level object with
    name            what the API and the page call it ("sklearn", "py_core-native", ...): a
                    library's name, so runners of two kinds may share it (scikit-learn's forest
                    and its HistGradientBoosting are both "sklearn"); a job's runner is the one
                    of its kind by that name
    kinds           the job kinds it runs ("random_forest", "transformer")
    check(device)   a cheap reason it cannot run here (no heavy imports), or None
    run(job, data_dir, device) -> {"runner", "device", "versions", "timings": {"fit",
                    "predict", "total"}, "metrics", ...}; raises Unavailable(reason) when it
                    finds out only then (no adapter, no GPU) that it cannot run here

`execute` is what a job's process (server/runners/jobproc.py, under a Dask worker) runs: it never raises, it returns
{"status": "done" | "failed" | "unavailable", "result" | "error": ...}, so nothing but plain data
crosses the process boundary.
"""
from __future__ import annotations

import gc
import sys
import traceback
from pathlib import Path

from .common import Unavailable


def _registry() -> dict:
    """Every kind's runners (py_core/jobs/kinds.py: `Kind.runners`) by name, in the kinds' order:
    a name's first runner."""
    from py_core.jobs.kinds import all_kinds, load
    out = {}
    for r in (r for k in all_kinds() for r in map(load, k.runners)):
        out.setdefault(r.name, r)
    return out


RUNNERS: dict = _registry()  # name -> runner, in the order the page lists them


def runners_for(kind: str) -> list:
    """The runners of a job kind, in display order (empty for kinds with none, e.g. selftest)."""
    from py_core.jobs.kinds import kind as kind_of
    from py_core.jobs.kinds import load
    found = kind_of(kind)
    return [load(r) for r in found.runners] if found is not None else []


def execute(name: str, job: dict, data_dir: str, device: str) -> dict:
    """Run runner `name` on `job`; what a comparison worker process returns to the server."""
    try:
        kind = job.get("kind") if isinstance(job, dict) else None
        mine = {r.name: r for r in runners_for(kind)}  # never another kind's of that name
        if mine and name not in mine:
            raise Unavailable(f"a {kind} job has no runner {name!r} (its runners: "
                              f"{', '.join(mine)})")
        runner = mine.get(name) or RUNNERS[name]
        return {"status": "done", "result": runner.run(job, Path(data_dir), device)}
    except Unavailable as exc:
        return {"status": "unavailable", "error": str(exc)}
    except Exception as exc:  # the job's own failure: reported on the comparison, never raised
        return {"status": "failed", "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(limit=20)}
    finally:
        _release_gpu_memory()


def _release_gpu_memory() -> None:
    """Hand PyTorch's cached GPU memory back between jobs: the worker process lives on, and the
    page's WebGPU may share this GPU."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        gc.collect()
        torch.cuda.empty_cache()


__all__ = ["RUNNERS", "Unavailable", "execute", "runners_for"]
