"""Glue between the page's Web Worker (`web/worker.js`) and py_core. Runs only under Pyodide.

The worker calls `init(runtime)` once with the JS GPU runtime (or None for the CPU fallback) and
then `await run(job_json, hooks)` per job. `hooks` is a JS object the worker provides:
`progress(json)`, `shouldStop()`, `fetchBytes(url)` (a promise of a Uint8Array).
The worker is one session (`py_core.jobs.Session`): its backend and its last trained transformer.

Every failure reaches the worker in one shape, `{"error": error_of(exc)}`: {"kind": "stopped" |
"data" | "job" | "gpu" | "error", "message", "line", "column", "field" (a file's, where known),
"detail" (the traceback)}; the worker forwards it and the page reads it in one place (web/app.js).
"""
from __future__ import annotations

import json
import traceback

from .data.errors import DataError
from .errors import JobError, Stopped
from .gpu import GPUError, get_backend
from .jobs import Context, Session, synthetic_table
from .jobs.results import encode_result

_session: Session | None = None  # this worker's, made by init()

KINDS = ((Stopped, "stopped"), (DataError, "data"), (GPUError, "gpu"), (JobError, "job"))


def error_of(exc: BaseException, named: bool = False) -> dict:
    """The one shape of an error on its way to the page; Stop is told by its type, not its text.
    named: the message starts with the class, as a traceback's last line does ("JobError: ...",
    "GPUError: the GPU device was lost"): what the page says of a failed job."""
    kind = next((name for cls, name in KINDS if isinstance(exc, cls)), "error")
    where = exc.to_dict() if isinstance(exc, DataError) else {}
    message = where.get("message") or str(exc)
    if named and kind != "stopped":
        # one line (a WebGPU validation message runs over several); a JavaScript error through
        # Pyodide reads "Error: ..." after its own class name
        message = " ".join(line.strip() for line in message.splitlines() if line.strip())
        message = f"{type(exc).__name__}: {message.removeprefix('Error: ')}"
    return {"kind": kind, "message": message, "line": where.get("line"), "column": where.get("column"),
            "field": where.get("field"),
            "detail": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))}


def init(runtime) -> str:
    global _session
    import js  # the worker's global scope
    if getattr(js, "pyCoreParseNumeric", None) is not None:  # web/csvparse.js
        from .data.table import use_numeric_parser
        use_numeric_parser(js.pyCoreParseNumeric)
    if getattr(js, "pyCoreColumnStats", None) is not None:  # web/colstats.js
        from .data.table import use_stats_kernel
        use_stats_kernel(js.pyCoreColumnStats)
    if getattr(js, "pyCoreSynthetic", None) is not None:  # web/synthetic.js
        from .data.synthetic import use_bulk
        use_bulk(js.pyCoreSynthetic)
    backend = get_backend("webgpu", runtime=runtime) if runtime is not None else get_backend("reference")
    _session = Session(backend)
    return json.dumps(backend.describe())


async def run(job_json: str, hooks) -> str:
    job = json.loads(job_json)

    async def load_dataset(dataset_id: str) -> bytes | bytearray:
        url = f"/api/datasets/{dataset_id}/file"
        if getattr(hooks, "fetchInto", None) is None:
            return (await hooks.fetchBytes(url)).to_bytes()
        made = []

        def alloc(size: int) -> bytearray:
            made.append(bytearray(size))
            return made[-1]

        got = await hooks.fetchInto(url, alloc)
        # streamed into Python's memory (parse_csv reads a bytearray in place), else a copy
        return made[0] if isinstance(got, int) else got.to_bytes()

    async def load_text(text_id: str) -> str:
        data = await hooks.fetchBytes(f"/api/texts/{text_id}/file")
        return data.to_bytes().decode("utf-8")

    ctx = Context(load_dataset=load_dataset, load_text=load_text,
                  progress=lambda info: hooks.progress(json.dumps(info)),
                  should_stop=lambda: bool(hooks.shouldStop()),
                  is_paused=lambda: bool(hooks.isPaused()))
    try:
        # (JSON text, [buffers]): the worker makes typed arrays of them
        return encode_result(await _session.run(job, ctx))
    except Exception as exc:  # the job's end, whatever ended it: the page says it in words
        return json.dumps({"error": error_of(exc, named=True)}), []


def describe_bytes(data, name: str, delimiter: str | None, hooks) -> str:
    """Parse an uploaded file in the tab: its summary, or the error with line and column."""
    from .data import parse_csv
    try:
        table = parse_csv(data.to_bytes(), name=name, delimiter=delimiter or None,
                          progress=lambda f: hooks.progress(json.dumps({"stage": "parsing", "fraction": f})))
    except DataError as exc:
        return json.dumps({"error": error_of(exc)})
    return json.dumps(table.describe(), allow_nan=False)


def describe_synthetic(dataset_id: str, hooks=None) -> str:
    return json.dumps(synthetic_table(dataset_id).describe(), allow_nan=False)


def generators(hooks=None) -> str:
    from .data import GENERATORS
    return json.dumps({name: {"params": g.params, "task": g.task} for name, g in GENERATORS.items()})


async def predict_csv(model, data, name: str, hooks=None) -> str:
    """A trained forest's predictions for a new CSV, as CSV text, on this tab's backend. model:
    the forest's binary export (a Uint8Array) or its JSON text."""
    from .jobs.forest_job import predict_csv as predict
    model = json.loads(model) if isinstance(model, str) else model.to_bytes()
    try:
        out = await predict(model, data.to_bytes(), name, backend=_session.backend)
    except JobError as exc:
        return json.dumps({"error": error_of(exc)})
    return json.dumps(out)


def forest_estimate(request_json: str, hooks=None) -> str:
    """A forest's time here and whether the adapter holds it, before Train (jobs.estimate)."""
    from .jobs.estimate import forest_estimate as estimate
    out = estimate(json.loads(request_json))
    if "error" in out:  # a parameter fitting would refuse: the form says so, not the estimate
        out["error"] = {**error_of(JobError(out["error"])), "detail": None}
    return json.dumps(out)


def table_fits(dataset_id: str, hooks=None) -> str:
    """Whether the tab can hold a synthetic table, asked before it is generated (jobs.estimate)."""
    from .jobs.estimate import table_fits as fits
    from .wasm import heap
    wasm = heap()
    return json.dumps({"refused": fits(dataset_id, None if wasm is None else wasm.room)})


def transformer_presets(hooks=None) -> str:
    from .transformer import PRESETS
    return json.dumps(PRESETS)


def transformer_size(params_json: str, vocab_size: int, hooks=None) -> str:
    """Parameter count and GPU memory of a transformer config, against this adapter's limits."""
    from .transformer import memory_bytes
    from .transformer.config import parse_job_params
    try:
        cfg, sampling = parse_job_params(json.loads(params_json))
    except (ValueError, TypeError) as exc:  # a field the form let through: the job would refuse it
        return json.dumps({"error": {**error_of(exc), "kind": "job"}})
    mem = memory_bytes(cfg, int(vocab_size), sampling.get("precision", "f32"))
    limits = _session.backend.limits
    cap = min(limits["maxStorageBufferBindingSize"], limits["maxBufferSize"])
    return json.dumps({**mem, "binding_limit": cap, "fits": mem["largest_buffer"] <= cap,
                       "config": cfg.to_dict()})


async def sample_text(prompt: str, n: int, temperature: float, top_k: int, seed: int, hooks) -> str:
    """Samples from the last trained transformer, streaming each character through progress."""
    from .jobs import transformer_job
    text = await transformer_job.sample(_session.last_model, prompt, int(n), float(temperature), int(top_k) or None,
                                        int(seed), on_char=lambda ch: hooks.progress(json.dumps({"char": ch})))
    return json.dumps({"text": text})


async def export_transformer(hooks=None) -> str:
    """The last trained transformer as safetensors, base64 (JSON carries it to the page)."""
    import base64

    from .jobs import transformer_job
    weights = await transformer_job.export(_session.last_model)
    return json.dumps({"safetensors": base64.b64encode(weights).decode()})


def warm_manifest() -> dict:
    """What the worker starts compiling before Python is up, while Pyodide loads (written beside
    the wheel as web/build/warm.json by tools/build_wheel.py): the forest's WGSL, the kernels its
    fits use on GPUs (forest.builder.parallel_bins) and the adapter names that make one a CPU
    (there compiling would take the cores Python's start needs: Python warms once it is up).
    Python's own warm at start-up then finds them in flight."""
    from .forest.builder import CPU_ADAPTERS, forest_kernels
    from .gpu import shader_source
    return {"sources": {"forest": shader_source("forest")}, "cpu_adapters": list(CPU_ADAPTERS),
            "kernels": [[f, e, c or {}] for f, e, c in forest_kernels(None, True)]}


async def warm(kind: str, params_json: str = "{}", vocab_size: int = 65, hooks=None) -> str:
    """Start compiling the kernels a `kind` job will need on this adapter, without waiting for
    them (Backend.warm): the forest's set when the worker is ready, the booster's when its tab
    first shows, a transformer config's when its panel shows it. The job then finds them compiled, or awaits the compiles in flight.
    Returns {"kernels": how many} or {"error"} (a config the job would refuse: nothing to warm)."""
    backend = _session.backend
    try:
        if kind == "transformer":
            from .transformer.config import parse_job_params
            from .transformer.train import kernels as transformer_kernels
            cfg, run_ = parse_job_params(json.loads(params_json))
            kernels = await transformer_kernels(backend, cfg, max(1, min(int(vocab_size), 4096)),
                                                run_["tiles"], run_["precision"])
        elif kind == "random_forest":
            from .forest.builder import forest_kernels
            kernels = forest_kernels(backend)
        elif kind == "gradient_boosting":
            from .boosting.grower import boosting_kernels
            kernels = boosting_kernels()
        else:
            raise JobError(f"no kernels to compile ahead for {kind!r}")
        backend.warm(kernels)
    except Exception as exc:  # nothing compiled ahead: the job itself will say what is wrong
        return json.dumps({"error": {**error_of(exc), "detail": None}})
    return json.dumps({"kernels": len(kernels)})


def memory(hooks=None) -> str:
    """What this worker holds on its GPU now (window.playground.memory(), the GPU tab, the
    benchmark's before/after of each job): live buffers, their bytes, plans, the peak, and what
    the kept transformer holds; on WebGPU also the JS runtime's own counts ("runtime")."""
    out = _session.backend.memory()
    model = _session.last_model
    out["kept_model_bytes"] = model.gpu_bytes if model is not None and not (model.scope and model.scope.closed) else 0
    return json.dumps(out)
