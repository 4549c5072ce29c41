"""The transformer in PyTorch (server/torch_gpt.py, the transformer issue's twin of py_core's
GPT): same weights, batches and schedule as the page, on CUDA or the CPU, in the precision that
matches the page's (params "torch_mode": f32, tf32, fp16 autocast + GradScaler, bf16 autocast;
by default f32 for the page's f32 path and fp16 for its mixed path)."""
from __future__ import annotations

import asyncio
import time
from pathlib import Path

from .common import Runner, Unavailable, finite, installed, job_params, require, server_context, versions


def check(device: str) -> str | None:
    if not installed("torch"):
        return "PyTorch is not installed (pip install '.[cuda]')"
    if not installed("server.torch_gpt"):
        return "not available yet: server/torch_gpt.py (the PyTorch GPT) is not there"
    return None


def run(job: dict, data_dir: Path, device: str) -> dict:
    require(check(device))
    from py_core.jobs import JobError
    try:
        from server.torch_gpt import train_torch
    except ImportError as exc:
        raise Unavailable(f"not available yet: {exc}") from None
    text_id = job.get("text")
    if not isinstance(text_id, str) or not text_id:
        raise JobError('a transformer job needs "text": the id of a text')
    params, _ = job_params("transformer", job.get("params"))  # as costed: sample_chars too
    text = asyncio.run(server_context(data_dir).load_text(text_id))
    t0 = time.perf_counter()
    try:
        result = train_torch(text, params, device)
    except ValueError as exc:  # a bad torch_mode or config: the client's to fix
        raise JobError(str(exc)) from None
    total = time.perf_counter() - t0
    timings = dict(result.get("timings") or {})
    timings.setdefault("fit", timings.get("total", total))  # training, sampling included
    timings.setdefault("predict", None)
    import torch
    hardware = torch.cuda.get_device_name(0) if device == "cuda" else None
    mode = (result.get("metrics") or {}).get("torch_mode")
    return finite({"runner": RUNNER.name, "device": device, "hardware": hardware, "mode": mode,
                   "versions": versions("torch"), "timings": timings,
                   "metrics": result.get("metrics") or {}, "samples": result.get("samples")})


RUNNER = Runner("torch", ("transformer",), run, check)
