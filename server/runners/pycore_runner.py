"""py_core's own job, the very code the page ran, on a server backend:

    py_core-native     wgpu-native: the same WGSL as the page, outside a browser, on the server's
                       GPU through Vulkan, Metal or D3D12 (or a CPU Vulkan such as lavapipe);
                       labelled with the adapter it ran on
    py_core-reference  the plain-Python reference (the executable specification), small jobs only

For the same job and seed the forest is the same as the page's (the same trees, leaf values to
float tolerance), so the comparison shows the hardware and the backend, not the algorithm.
"""
from __future__ import annotations

import asyncio
import time
from pathlib import Path

from py_core.jobs import kind, run_job

from .common import Runner, Unavailable, finite, installed, job_params, server_context, versions

# The reference backend is plain Python: a forest costs about rows x trees x features x levels
# interpreted steps. Past this many rows x trees x features it would run for many minutes.
REFERENCE_CELLS = 5_000_000


def _native_backend(device: str):
    from py_core.gpu import GPUError
    from py_core.gpu.native import NativeBackend
    try:
        return NativeBackend()
    except GPUError as exc:
        raise Unavailable(str(exc)) from None


def _reference_backend(device: str):
    from py_core.gpu.reference import ReferenceBackend
    return ReferenceBackend()


def _check_size(job: dict, data_dir: Path) -> None:
    """Refuse reference jobs that would take many minutes, before loading anything big."""
    from server.jobcost import shape
    if job.get("kind") != "random_forest":
        raise Unavailable("the reference backend runs only random_forest comparisons (a "
                          "transformer in plain Python would take hours)")
    rows, cols, _ = shape(job.get("dataset"), data_dir)
    trees = job_params("random_forest", job.get("params"))[1]["n_estimators"]
    if rows * cols * trees > REFERENCE_CELLS:
        raise Unavailable(f"too large for the plain-Python reference backend ({rows} rows x "
                          f"{cols} columns x {trees} trees; at most {REFERENCE_CELLS:,})")


def _device_name(backend) -> str:
    if backend.name == "native":
        return "gpu" if not backend.adapter.get("is_fallback_adapter") else "cpu"
    return "cpu"


def _hardware(backend) -> str | None:
    """The adapter a job ran on, as people name it: "NVIDIA H200 (Vulkan)", "llvmpipe (...)"."""
    a = backend.adapter or {}
    name = a.get("device") or a.get("description") or None
    api = a.get("backend_type")
    return f"{name} ({api})" if name and api else name


def make_run(name: str, make_backend, packages: tuple[str, ...]):
    def run(job: dict, data_dir: Path, device: str) -> dict:
        if kind(job.get("kind")) is None:  # py_core's jobs are its kinds (py_core/jobs/kinds.py)
            raise Unavailable(f"py_core has no {job.get('kind')!r} job")
        if name == "py_core-reference":
            _check_size(job, data_dir)
        t0 = time.perf_counter()
        backend = make_backend(device)
        t_setup = time.perf_counter() - t0
        result = asyncio.run(run_job(job, backend, server_context(data_dir)))
        timings = dict(result.get("timings") or {})
        timings.setdefault("setup", t_setup)  # the adapter and device, before the job's clock
        out = {"runner": name, "device": _device_name(backend), "hardware": _hardware(backend),
               "adapter": result.get("adapter"), "versions": versions(*packages),
               "timings": timings, "metrics": result.get("metrics") or {}}
        return finite(out)
    return run


def _needs(module: str, what: str):
    return lambda device: None if installed(module) else f"{what} is not installed"


NATIVE = Runner("py_core-native", ("random_forest", "transformer"),
                make_run("py_core-native", _native_backend, ("wgpu",)),
                _needs("wgpu", "wgpu-py (pip install '.[native]')"))
REFERENCE = Runner("py_core-reference", ("random_forest",),
                   make_run("py_core-reference", _reference_backend, ()))
RUNNERS = [NATIVE, REFERENCE]
