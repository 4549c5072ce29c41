"""Runs: what the page posts after a job (config, metrics, timings, adapter), stored once each.

    POST /api/runs         store a run; 201 when new, 200 with the stored run when the id is known
    GET  /api/runs         newest first; ?kind=&limit=&offset=
    GET  /api/runs/{id}    one run or 404

After a new run commits, each callback in `app.state.on_run_stored` is called with the stored run
(dict). That is where a later feature (comparisons) hooks in, without this file knowing about it;
`app.state.before_run_stored` holds async hooks (run, request) called before the insert, which may
refuse the post with a ClientError (comparisons: 429 when its queue is full).
"""

from __future__ import annotations

import inspect
import json
import logging
import re
import sqlite3
from datetime import datetime, timezone

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from server.errors import ClientError
from server.jsonbody import read_json

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,       -- made by the client (a UUID), so a retried post is stored once
    kind TEXT NOT NULL,        -- "selftest", "random_forest", "transformer", ...
    created_at TEXT NOT NULL,  -- ISO 8601 UTC, set by the server inside the write transaction
    body TEXT NOT NULL         -- the whole run, created_at included, as JSON text
);
CREATE INDEX IF NOT EXISTS runs_created ON runs (created_at);
CREATE INDEX IF NOT EXISTS runs_kind_created ON runs (kind, created_at)
"""

# The canonical textual UUID; braces, "urn:uuid:" and bare hex are refused so one run has one id.
UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z", re.IGNORECASE)
NAME_RE = re.compile(r"[a-z][a-z0-9_.-]{0,63}\Z")  # kind and backend: short identifiers

REQUIRED, OMIT = object(), object()  # defaults: must be sent / left out of the stored run
# field: (type check, what to say, default when absent)
_OBJECT = (lambda v: isinstance(v, dict), "an object")
FIELDS = {
    "id": (lambda v: isinstance(v, str) and bool(UUID_RE.match(v)), "a UUID string like "
           "'0b7f3c1e-8d7a-4f0e-9a51-2c1d5e6f7a8b'", REQUIRED),
    "kind": (lambda v: isinstance(v, str) and bool(NAME_RE.match(v)), "a lowercase name like "
             "'random_forest' (letters, digits, _ . -; at most 64)", REQUIRED),
    "config": (*_OBJECT, {}),
    "backend": (lambda v: v is None or isinstance(v, str) and bool(NAME_RE.match(v)),
                "null or a lowercase name like 'webgpu'", None),
    "adapter": (lambda v: v is None or isinstance(v, dict), "an object or null", None),
    "metrics": (*_OBJECT, {}),
    "timings": (*_OBJECT, {}),
    "env": (*_OBJECT, OMIT),  # browser, GPU adapter limits, versions: optional
    "extra": (*_OBJECT, OMIT),  # job-specific output (samples, curves): optional
}


def validate_run(body) -> dict:
    """Check a posted run and return it normalised (every field present, id lowercased)."""
    if not isinstance(body, dict):
        raise ClientError(400, "a run must be a JSON object")
    for key in body:
        if key not in FIELDS:
            raise ClientError(400, f"unknown field; expected some of {sorted(FIELDS)}", field=key)
    run = {}
    for key, (ok, what, default) in FIELDS.items():
        if key not in body:
            if default is REQUIRED:
                raise ClientError(400, "required", field=key)
            if default is not OMIT:
                run[key] = {} if isinstance(default, dict) else default  # never share one dict
            continue
        if not ok(body[key]):
            raise ClientError(400, f"must be {what}", field=key)
        run[key] = body[key]
    for name, value in run["timings"].items():
        # Timings are seconds: finite non-negative numbers (bool is an int in Python: refuse it).
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ClientError(400, "must be a non-negative number of seconds", field=f"timings.{name}")
    run["id"] = run["id"].lower()
    return run


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _insert(run: dict):
    """Write-transaction body: insert unless the id exists; return (stored run, created?)."""

    def fn(conn: sqlite3.Connection):
        row = conn.execute("SELECT body FROM runs WHERE id = ?", (run["id"],)).fetchone()
        if row is not None:
            return json.loads(row["body"]), False
        stored = {**run, "created_at": _now()}  # stamped at commit time, so listing order is commit order
        conn.execute("INSERT INTO runs (id, kind, created_at, body) VALUES (?, ?, ?, ?)",
                     (stored["id"], stored["kind"], stored["created_at"],
                      json.dumps(stored, ensure_ascii=False, allow_nan=False, separators=(",", ":"))))
        return stored, True

    return fn


async def post_run(request: Request) -> JSONResponse:
    settings = request.app.state.settings
    run = validate_run(await read_json(request, settings.max_json_bytes))
    for hook in list(getattr(request.app.state, "before_run_stored", ())):
        await hook(run, request)  # may refuse the post (a full comparison queue: 429)
    stored, created = await request.app.state.store.write(_insert(run))
    if created:
        await _notify(request.app, stored)
    return JSONResponse(stored, 201 if created else 200)


async def _notify(app, run: dict) -> None:
    # The run is committed already; a failing hook is logged and must not turn the post into an error.
    for callback in list(app.state.on_run_stored):
        try:
            result = callback(run)
            if inspect.isawaitable(result):
                await result
        except Exception:
            log.exception("on_run_stored callback %r failed for run %s", callback, run["id"])


def _int_param(request: Request, name: str, default: int, lo: int, hi: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not (raw.isascii() and raw.isdigit()) or not lo <= int(raw) <= hi:
        raise ClientError(400, f"must be an integer in {lo}..{hi}", field=name)
    return int(raw)


async def list_runs(request: Request) -> JSONResponse:
    limit = _int_param(request, "limit", 100, 1, 1000)
    offset = _int_param(request, "offset", 0, 0, 2**62)
    kind = request.query_params.get("kind") or None  # ?kind= (empty) means no filter
    if kind is not None and not NAME_RE.match(kind):
        raise ClientError(400, FIELDS["kind"][1], field="kind")
    where, args = ("WHERE kind = ?", [kind]) if kind else ("", [])

    def fn(conn):
        # rowid breaks ties between runs stamped in the same microsecond.
        sql = f"SELECT body FROM runs {where} ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?"
        return [json.loads(r["body"]) for r in conn.execute(sql, [*args, limit, offset])]

    return JSONResponse({"runs": await request.app.state.store.read(fn)})


async def get_run(request: Request) -> JSONResponse:
    run_id = request.path_params["id"]
    if not UUID_RE.match(run_id):
        raise ClientError(404, "no run with this id", field="id")

    def fn(conn):
        return conn.execute("SELECT body FROM runs WHERE id = ?", (run_id.lower(),)).fetchone()

    row = await request.app.state.store.read(fn)
    if row is None:
        raise ClientError(404, "no run with this id", field="id")
    return JSONResponse(json.loads(row["body"]))


routes = [
    Route("/api/runs", post_run, methods=["POST"]),
    Route("/api/runs", list_runs, methods=["GET"]),
    Route("/api/runs/{id}", get_run, methods=["GET"]),
]
