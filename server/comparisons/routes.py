"""The HTTP side of comparisons: the three routes on /api/runs/{id}/comparisons and the lifespan that
starts the server's Queue from its Settings (the API is described in server/comparisons/__init__.py).
"""
from __future__ import annotations

import json
from contextlib import asynccontextmanager

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from server import jobcost
from server.comparisons.present import present, waiting
from server.comparisons.queue import Limits, Queue, client_of
from server.errors import ClientError
from server.jsonbody import read_json
from server.runners import RUNNERS
from server.runs import UUID_RE
from server.settings import Settings


async def _answer(request: Request, run_id: str, status: int = 200) -> JSONResponse:
    def fn(conn):
        run = conn.execute("SELECT body FROM runs WHERE id = ?", (run_id,)).fetchone()
        rows = conn.execute("SELECT * FROM comparisons WHERE run_id = ?", (run_id,)).fetchall()
        ahead = {r["id"]: conn.execute("SELECT COUNT(*) FROM comparisons WHERE status = 'queued' "
                                       "AND id < ?", (r["id"],)).fetchone()[0]
                 for r in rows if r["status"] == "queued"}
        return run, rows, ahead

    run, rows, ahead = await request.app.state.store.read(fn)
    queue = getattr(request.app.state, "comparisons", None)
    if run is None:
        raise ClientError(404, "no run with this id", field="id")
    run = json.loads(run["body"])
    order = {name: i for i, name in enumerate(RUNNERS)}
    rows = sorted(rows, key=lambda r: (order.get(r["runner"], len(order)), r["runner"]))
    browser = {"backend": run.get("backend"), "adapter": run.get("adapter"),
               "timings": run.get("timings") or {},
               "metrics": {k: v for k, v in (run.get("metrics") or {}).items()
                           if not isinstance(v, (list, dict))}}  # curves stay in the run
    return JSONResponse({
        "run": run_id, "kind": run["kind"], "device": request.app.state.device,
        "enabled": queue is not None, "browser": browser,
        "problem": queue.problem if queue is not None else None,
        "comparisons": [{**present(run["kind"], browser, r),
                         "waiting": waiting(queue, r, ahead.get(r["id"], 0))} for r in rows]},
        status)


def _run_id(request: Request) -> str:
    run_id = request.path_params["id"]
    if not UUID_RE.match(run_id):
        raise ClientError(404, "no run with this id", field="id")
    return run_id.lower()


async def get_comparisons(request: Request) -> JSONResponse:
    return await _answer(request, _run_id(request))


async def post_comparisons(request: Request) -> JSONResponse:
    run_id = _run_id(request)
    queue: Queue | None = getattr(request.app.state, "comparisons", None)
    if queue is None:
        raise ClientError(409, "comparisons are off on this server (--comparisons off)")
    body = await read_json(request, request.app.state.settings.max_json_bytes, empty={})
    runners = body.get("runners") if isinstance(body, dict) else None
    if runners is not None and (not isinstance(runners, list)
                                or not all(isinstance(r, str) and r in RUNNERS for r in runners)):
        raise ClientError(400, f"must be a list of runner names from {list(RUNNERS)}",
                          field="runners")
    row = await request.app.state.store.read(lambda conn: conn.execute(
        "SELECT body FROM runs WHERE id = ?", (run_id,)).fetchone())
    if row is None:
        raise ClientError(404, "no run with this id", field="id")
    run = json.loads(row["body"])
    admitted = await queue.admit(run)
    if isinstance(admitted, jobcost.Refused):  # the message its rows got at POST /api/runs
        raise ClientError(422, str(admitted), field=admitted.field)
    client = client_of(request)
    active = {r[0] for r in await request.app.state.store.read(lambda conn: conn.execute(
        "SELECT runner FROM comparisons WHERE run_id = ? AND status IN ('queued', 'running')",
        (run_id,)).fetchall())}
    await queue.check_room(client, len([r for r in queue.queueable(run, runners)
                                        if r.name not in active]))
    await queue.enqueue(run, runners, client=client, admitted=admitted)
    return await _answer(request, run_id, 202)


async def delete_comparisons(request: Request) -> JSONResponse:
    run_id = _run_id(request)
    queue: Queue | None = getattr(request.app.state, "comparisons", None)
    exists = await request.app.state.store.read(lambda conn: conn.execute(
        "SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone())
    if exists is None:
        raise ClientError(404, "no run with this id", field="id")
    if queue is not None:
        await queue.cancel(run_id)
    return await _answer(request, run_id)


def limits_of(settings: Settings) -> Limits:
    return Limits(timeout_s=settings.job_timeout_s, memory_mb=settings.job_memory_mb,
                  retries=settings.job_retries, client_queue=settings.client_queue_limit,
                  queue=settings.queue_limit, caps=jobcost.caps_of(settings))


@asynccontextmanager
async def lifespan(app):
    settings: Settings = app.state.settings
    app.state.comparisons = None
    if settings.comparisons != "on":
        yield
        return
    names = [n.strip() for n in settings.comparison_runners.split(",") if n.strip()]
    queue = Queue(app.state.store, settings.data_dir, app.state.device, settings.comparison_workers,
                  names or None, cluster=settings.cluster, limits=limits_of(settings))
    await queue.start()
    app.state.comparisons = queue
    hooks = getattr(app.state, "before_run_stored", None)
    if hooks is None:
        hooks = app.state.before_run_stored = []
    hooks.append(queue.before_run_stored)
    app.state.on_run_stored.append(queue.enqueue)
    try:
        yield
    finally:
        app.state.on_run_stored.remove(queue.enqueue)
        hooks.remove(queue.before_run_stored)
        app.state.comparisons = None
        await queue.stop()


routes = [
    Route("/api/runs/{id}/comparisons", get_comparisons, methods=["GET"]),
    Route("/api/runs/{id}/comparisons", post_comparisons, methods=["POST"]),
    Route("/api/runs/{id}/comparisons", delete_comparisons, methods=["DELETE"]),
]
