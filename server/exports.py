"""Models out of the playground in formats other tools load, and the code that loads them.

    GET /api/runs/{id}/model.onnx  a random_forest or gradient_boosting run's model as ONNX
                                   (server/onnx_models/: the graph of each kind), made with the
                                   `onnx` package. 404 unknown run (or deleted while its export
                                   was made); 409 a kind without ONNX, or no model to export (no
                                   stored model and no seed, or its job fails now); 422 over a
                                   cap or a job limit, naming it; 501 without `onnx`; 503 with
                                   Retry-After when the file cannot be written (a full disk),
                                   leaving none
    GET /api/runs/{id}/snippet     text/plain: a short Python program that loads the run's
                                   download (server/snippets.py; ?model=onnx: its ONNX file's);
                                   the page shows it beside the download links. 404 unknown
                                   run, 409 a kind with no download (or no ONNX one), 400 a
                                   model other than onnx

Where the model comes from: the run's own model when the client stored it (`extra.model`, the
kind's JSON format, checked whole and bounded first by its export's `check`: 409 naming the
field, e.g. extra.model.trees[0].left[3], before any process is sized by it), else py_core's
job of the run's kind run again on the server with the run's job: the same rows, parameters and
seed give the page's trees (py_core-reference is the executable specification of the page's
kernels). The job is checked against the caps of server/jobcost.py first, then runs in a process
of its own (server/runners/task.py `run_alone`) under the comparison jobs' memory limit
(--job-memory-mb) and the shorter of --export-timeout and --job-timeout. Exports wait in a
bounded queue (server/bounded.py): `export_workers` at once (as many jobs of --job-memory-mb as
the machine's memory holds, at least one), `export_queue` more waiting, then 503 at once; a
client that leaves cancels its export (its process is killed). Two askers of one run's export
take turns: the second finds the file the first made. The file is kept under
<data_dir>/exports/<run id>.v<N>.onnx (N: the version of its kind's graph), and removed with its
run; it downloads as <stem>-<run id's first 8>.onnx (the stem of its kind's snippet).
"""
from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import os
import threading
import traceback
import uuid
from contextlib import asynccontextmanager
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse
from starlette.routing import Route

from py_core.jobs.kinds import KINDS, kind
from server import jobcost, snippets
from server.bounded import BoundedQueue, unless_disconnected
from server.comparisons import job_problem
from server.errors import STORAGE_ERRNOS, ClientError
from server.onnx_models import ExportError, export_of

log = logging.getLogger(__name__)
ONNX_MEDIA = "application/octet-stream"


# -- the conversion, in a job process ------------------------------------------------------------

def build_onnx(request: dict) -> dict:
    """A job process's answer to {"task": "onnx", "kind", "job", "data_dir", "model" (or None),
    "out"}: writes the ONNX file to "out" (the server's .part name: the server moves it into
    place) and answers {"status": "done"}, or {"status": "failed", "error"} (with "errno" when the file could
    not be written: a full disk); never raises, and leaves no partial file."""
    try:
        export = export_of(request["kind"])
        model = request.get("model") or export.rebuild(request["job"], Path(request["data_dir"]))
        data = export.convert(model)
        out = Path(request["out"])
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(data)
        except OSError as exc:
            out.unlink(missing_ok=True)
            return {"status": "failed", "errno": exc.errno,
                    "error": f"the export could not be written: {exc.strerror or exc}"}
        return {"status": "done", "bytes": len(data)}
    except ExportError as exc:
        return {"status": "failed", "error": str(exc)}
    except (KeyError, TypeError, ValueError) as exc:
        return {"status": "failed", "error": f"the model cannot be converted: {exc}",
                "traceback": traceback.format_exc(limit=20)}
    except Exception as exc:
        return {"status": "failed", "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(limit=20)}


# -- the routes ----------------------------------------------------------------------------------

async def _run_of(request: Request) -> dict:
    from server.runs import UUID_RE
    run_id = request.path_params["id"]
    if not UUID_RE.match(run_id):
        raise ClientError(404, "no run with this id", field="id")
    row = await request.app.state.store.read(lambda conn: conn.execute(
        "SELECT body FROM runs WHERE id = ?", (run_id.lower(),)).fetchone())
    if row is None:
        raise ClientError(404, "no run with this id", field="id")
    return json.loads(row["body"])


def onnx_path(data_dir, run_id: str, version: int) -> Path:
    """Where a run's export by version `version` of its kind's graph is kept. (The forest's first
    graph, which took onnxruntime's own label, wrong for two classes, kept <run id>.onnx: never
    served now, removed with its run.)"""
    return Path(data_dir) / "exports" / f"{run_id}.v{version}.onnx"


async def get_onnx(request: Request) -> FileResponse:
    run = await _run_of(request)
    found = kind(run["kind"])  # what a kind exports is its Kind's (py_core/jobs/kinds.py)
    others = [e for e in (found.exports if found is not None else ()) if e != "onnx"]
    export = export_of(run["kind"])
    if found is None or "onnx" not in found.exports or export is None:
        onnx = " or ".join(sorted(k for k in KINDS if "onnx" in kind(k).exports))
        raise ClientError(409, f"only a {onnx} run exports to ONNX; this run is a {run['kind']}"
                          + (f" (its weights download from the page as {', '.join(others)})"
                             if others else ""))
    settings = request.app.state.settings
    path = onnx_path(settings.data_dir, run["id"], export.version)

    async def queued(cancel: threading.Event) -> None:
        async with request.app.state.exports.slot(run["id"]):
            if not path.is_file():  # a second asker of the same run finds the file made
                await _build(run, path, settings, request.app.state.store, cancel)

    if not path.is_file():
        await unless_disconnected(request, queued)
    return FileResponse(path, media_type=ONNX_MEDIA, filename=snippets.file_name(run, "onnx"))


def export_workers(settings) -> int:
    """Exports built at once: the setting, but no more jobs of --job-memory-mb than the machine's
    memory holds (one at least)."""
    if not settings.job_memory_mb:
        return settings.export_workers
    memory_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20
    return max(1, min(settings.export_workers, int(memory_mb // settings.job_memory_mb)))


def _time_limit(settings) -> tuple[float, str]:
    """An export's time limit (0: none) and the flag that set it: the shorter one."""
    limits = [(s, flag) for s, flag in ((settings.export_timeout_s, "--export-timeout"),
                                        (settings.job_timeout_s, "--job-timeout")) if s]
    return min(limits) if limits else (0, "")


async def _build(run: dict, path: Path, settings, store, cancel: threading.Event) -> None:
    from server.runners.task import run_alone
    if importlib.util.find_spec("onnx") is None:
        raise ClientError(501, "this server cannot write ONNX: the onnx package is not installed "
                          "(pip install onnx, or the server's extra: pip install '.[server]')")
    model = (run.get("extra") or {}).get("model")
    model = model if isinstance(model, dict) and "trees" in model else None
    job = run.get("config")
    if model is not None:  # a client's: checked whole before a process is sized by it
        from py_core.forest.export import FormatError
        try:
            await asyncio.to_thread(export_of(run["kind"]).check, model)
        except FormatError as exc:
            raise ClientError(409, f"this run's stored model cannot be converted: {exc.message}",
                              field=f"extra.model.{exc.field}") from None
    if model is None:
        problem = job_problem(run)
        if problem is not None:
            raise ClientError(409, f"this run stored no model and {problem}", field="config")
        if (job.get("params") or {}).get("random_state") is None:
            raise ClientError(409, "this run stored no model and has no seed "
                              "(config.params.random_state): the server cannot rebuild the same "
                              "model", field="config.params.random_state")
        try:
            await asyncio.to_thread(jobcost.check, job, settings.data_dir,
                                    jobcost.caps_of(settings))
        except jobcost.Refused as exc:
            raise ClientError(422, str(exc), field=exc.field) from None
    timeout_s, flag = _time_limit(settings)
    part = path.with_name(f"{path.stem}.{uuid.uuid4().hex[:8]}.part")
    try:
        job_call = asyncio.ensure_future(asyncio.to_thread(run_alone, {
            "task": "onnx", "kind": run["kind"], "job": job, "model": model,
            "data_dir": str(settings.data_dir), "out": str(part)}, timeout_s, settings.job_memory_mb, cancel.is_set, flag))
        try:
            answer = await asyncio.shield(job_call)
        except asyncio.CancelledError:  # the client left: its process is killed, then the slot freed
            cancel.set()
            await job_call
            raise
        if answer.get("traceback"):
            log.warning("ONNX export of run %s failed:\n%s", run["id"], answer["traceback"])
        if answer.get("errno") in STORAGE_ERRNOS:  # 503 with Retry-After, as every full disk
            raise OSError(answer["errno"], answer["error"])
        if answer["status"] != "done":
            status = 422 if answer.get("limit") else 409
            raise ClientError(status, f"no ONNX export of this run: {answer['error']}")
        # The run may have been deleted while its export was made: its file must not outlive it.
        # Deleting commits, then removes the file (forget): a check after the move sees the
        # delete, or comes before it and the delete's forget removes the file.
        await asyncio.to_thread(part.replace, path)
        if not await store.read(lambda conn: conn.execute(
                "SELECT 1 FROM runs WHERE id = ?", (run["id"],)).fetchone()):
            path.unlink(missing_ok=True)
            raise ClientError(404, "the run was deleted while its export was made: nothing kept",
                              field="id")
    finally:
        part.unlink(missing_ok=True)  # a limit or a cancel stopped the job mid-write


async def get_snippet(request: Request) -> PlainTextResponse:
    run = await _run_of(request)
    model = request.query_params.get("model")
    if model not in (None, "onnx"):
        raise ClientError(400, f"model: {model!r} is not a download with a snippet of its own: "
                               "leave it out (the kind's download) or give onnx", field="model")
    text = snippets.onnx(run) if model == "onnx" else snippets.for_run(run)
    if text is None:
        raise ClientError(409, f"a {run['kind']} run has no {'ONNX ' if model else ''}model to "
                               "download, so no snippet")
    return PlainTextResponse(text)


@asynccontextmanager
async def lifespan(app):
    app.state.exports = BoundedQueue(export_workers(app.state.settings),
                                     app.state.settings.export_queue, "ONNX exports",
                                     "this run's export")

    def forget(run_id: str) -> None:  # a deleted (or retired) run's export goes with it
        folder = Path(app.state.settings.data_dir) / "exports"
        for path in (folder / f"{run_id}.onnx", *folder.glob(f"{run_id}.v*.onnx")):
            path.unlink(missing_ok=True)

    app.state.on_run_deleted.append(forget)
    for part in (Path(app.state.settings.data_dir) / "exports").glob("*.part"):
        part.unlink(missing_ok=True)  # a server stopped mid-export left it
    try:
        yield
    finally:
        app.state.on_run_deleted.remove(forget)


routes = [Route("/api/runs/{id}/model.onnx", get_onnx, methods=["GET"]),
          Route("/api/runs/{id}/snippet", get_snippet, methods=["GET"])]
