"""Runs: what the page posts after a job (config, metrics, timings, adapter), stored once each.

    POST   /api/runs             store a run; 201 when new, 200 with the stored run when the id is
                                 known; 400 naming the field when the run does not match the schema
                                 (server/schema.py: types and lengths per field), its kind is
                                 unknown, or config.params are not its kind's (py_core/
                                 params.py: types, ranges, options)
    GET    /api/runs             summaries, newest first (never whole runs): ?kind=&dataset=&device=
                                 filter, ?limit= (1..1000, default 100), ?cursor= (the `next` of the
                                 previous page); {"runs": [...], "next": cursor or null}
    GET    /api/runs/facets      the distinct kinds, data sets and devices (for the page's filters)
    GET    /api/runs/{id}        one whole run or 404
    DELETE /api/runs/{id}        delete a run (and its comparison jobs); 204, or 404

A summary is built from stored columns filled at insert (id, kind, created_at, dataset, backend,
device, metric, value, main_time, total_time, note, params, size), so listing never parses a body, however
large. Retention: past `max_runs` runs or `max_runs_mb` MB of stored bodies (server options), each
new run deletes the oldest ones in its own transaction, never one whose comparison jobs are queued
or running (those wait their turn). Nothing goes silently: the server logs how many, the POST that
caused it answers with an X-Runs-Retired header (the count), and a retired run's id answers 404
saying when and why it went (table `retired`, the last RETIRED_KEPT of them).

After a new run commits, each callback in `app.state.on_run_stored` is called with the stored run
(dict); after a delete, each in `app.state.on_run_deleted` with the id. That is where a later
feature (comparisons) hooks in, without this file knowing about it. `app.state.before_run_stored`
holds async hooks (run, request) called before the insert, which may refuse the post with a
ClientError (comparisons: 429 when its queue is full).
"""

from __future__ import annotations

import base64
import binascii
import inspect
import json
import logging
import math
import re
import sqlite3
from datetime import datetime, timezone

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from py_core.jobs import KINDS, ParamError
from py_core.jobs import kind as kind_of
from server import schema
from server.errors import ClientError
from server.jsonbody import read_json

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,       -- made by the client (a UUID), so a retried post is stored once
    kind TEXT NOT NULL,        -- "selftest", "random_forest", "transformer", ...
    created_at TEXT NOT NULL,  -- ISO 8601 UTC, set by the server inside the write transaction
    body TEXT NOT NULL,        -- the whole run, created_at included, as JSON text
    -- The summary, filled at insert (and by migrate() for runs stored before these columns):
    dataset TEXT,              -- config.dataset or config.text
    backend TEXT,
    device TEXT,               -- "webgpu · nvidia", "webgpu · google (software)"
    metric TEXT,               -- the headline metric's name: mse, accuracy or val_loss
    value REAL,                -- and its value
    main_time REAL,            -- seconds of the kind's main phase (fit, step, kernels)
    total_time REAL,           -- timings.total
    note TEXT,                 -- "12 kernels ok", "5 runs, 0 errors"
    params TEXT,               -- JSON: config.params' scalar entries, at most PARAMS_BYTES
    size INTEGER               -- bytes of body
);
CREATE INDEX IF NOT EXISTS runs_created ON runs (created_at);
CREATE INDEX IF NOT EXISTS runs_kind_created ON runs (kind, created_at);
CREATE TABLE IF NOT EXISTS retired (
    id TEXT PRIMARY KEY,       -- a run deleted by retention, not by its owner
    at TEXT NOT NULL,          -- when
    why TEXT NOT NULL          -- the limit it went for: "--max-runs 10000"
)
"""
RETIRED_KEPT = 10_000  # ids of retired runs remembered (about 100 bytes each)
SUMMARY_COLUMNS = ("dataset", "backend", "device", "metric", "value", "main_time", "total_time",
                   "note", "params", "size", "target")
PARAMS_BYTES = 1024

# The canonical textual UUID; braces, "urn:uuid:" and bare hex are refused so one run has one id.
UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z", re.IGNORECASE)
NAME_RE = re.compile(r"[a-z][a-z0-9_.-]{0,63}\Z")  # kind and backend: short identifiers
HEADLINE = ("mse", "accuracy", "val_loss")
MAX_LIMIT = 1000

REQUIRED, OMIT = object(), object()  # defaults: must be sent / left out of the stored run
# field: (type check, what to say, default when absent, schema of its contents)
FIELDS = {
    "id": (lambda v: isinstance(v, str) and bool(UUID_RE.match(v)), "a UUID string like "
           "'0b7f3c1e-8d7a-4f0e-9a51-2c1d5e6f7a8b'", REQUIRED, None),
    "kind": (lambda v: isinstance(v, str) and bool(NAME_RE.match(v)), "a lowercase name like "
             "'random_forest' (letters, digits, _ . -; at most 64)", REQUIRED, None),
    "config": (lambda v: isinstance(v, dict), "an object", {}, schema.CONFIG),
    "backend": (lambda v: v is None or isinstance(v, str) and bool(NAME_RE.match(v)),
                "null or a lowercase name like 'webgpu'", None, None),
    "adapter": (lambda v: v is None or isinstance(v, dict), "an object or null", None, schema.ADAPTER),
    "metrics": (lambda v: isinstance(v, dict), "an object", {}, schema.METRICS),
    "timings": (lambda v: isinstance(v, dict), "an object", {}, schema.TIMINGS),
    "env": (lambda v: isinstance(v, dict), "an object", OMIT, schema.FREE),  # browser, versions
    "extra": (lambda v: isinstance(v, dict), "an object", OMIT, schema.FREE),  # samples, curves
}


def validate_run(body) -> dict:
    """Check a posted run and return it normalised (every field present, id lowercased)."""
    if not isinstance(body, dict):
        raise ClientError(400, "a run must be a JSON object")
    for key in body:
        if key not in FIELDS:
            raise ClientError(400, f"unknown field; expected some of {sorted(FIELDS)}", field=key)
    run = {}
    for key, (ok, what, default, spec) in FIELDS.items():
        if key not in body:
            if default is REQUIRED:
                raise ClientError(400, "required", field=key)
            if default is not OMIT:
                run[key] = {} if isinstance(default, dict) else default  # never share one dict
            continue
        if not ok(body[key]):
            raise ClientError(400, f"must be {what}", field=key)
        if spec is not None and body[key] is not None:
            schema.check(body[key], spec, key)
        run[key] = body[key]
    run["id"] = run["id"].lower()
    _check_params(run)
    return run


def _check_params(run: dict) -> None:
    """The kind is one the server knows, and config.params are its table's (py_core/
    params.py): the one check of a job's parameters, which the caps and the runners then read
    through the same table, so a value is costed as it runs (never "100" costed as 100 trees
    and run as int("1000000"))."""
    found = kind_of(run["kind"])  # the registry's (py_core/jobs/kinds.py): a job, or a suite
    if found is None:
        raise ClientError(400, f"unknown kind; one of {', '.join(KINDS)}", field="kind")
    table, config = found.params, run["config"]
    if table is None or config.get("kind") != run["kind"] or "params" not in config:
        return  # no params, or a config that is no job of this kind: the server never runs it
    try:
        table.check(run["config"]["params"])
    except ParamError as exc:
        raise ClientError(400, exc.message, field="config.params" + (
            f".{exc.name}" if exc.name else "")) from None


# --- summaries ---

def _text(v, limit: int = 256) -> str | None:
    return v[:limit] if isinstance(v, str) else None


def _num(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def main_timing(kind) -> str:
    """The key of a kind's main time in its timings (its Kind's), "total" for a kind without one
    or unknown (a run stored before its kind left the registry)."""
    found = kind_of(kind) if isinstance(kind, str) else None
    return found.main_timing.key if found is not None and found.main_timing else "total"


def summarize(run: dict, size: int) -> dict:
    """The summary columns of a run. Defensive: runs stored before the schema may hold anything."""
    d = lambda v: v if isinstance(v, dict) else {}  # noqa: E731
    config, metrics, timings, adapter = (d(run.get(k)) for k in ("config", "metrics", "timings", "adapter"))
    kind = run.get("kind")
    backend = _text(run.get("backend"), 64)
    vendor = _text(adapter.get("vendor"), 128)
    device = (backend or "–") + (f" · {vendor}" if vendor else "") + (
        " (software)" if adapter.get("is_fallback_adapter") is True else "")
    metric = next((m for m in HEADLINE if _num(metrics.get(m)) is not None), None)
    note = None
    if kind == "selftest":
        kernels = metrics.get("kernels")
        n = len(kernels) if isinstance(kernels, list) else 0
        note = f"{n} kernels ok" if metrics.get("all_ok") is True else "kernels disagree"
    elif kind == "suite":
        count = lambda v: len(v) if isinstance(v, list) else 0  # noqa: E731
        note = f"{count(metrics.get('runs'))} runs, {count(metrics.get('errors'))} errors"
    params, kept = config.get("params"), {}
    for k, v in (params.items() if isinstance(params, dict) else ()):
        if isinstance(v, float) and not math.isfinite(v):
            continue
        if isinstance(v, (int, float, bool)) or v is None or isinstance(v, str) and len(v) <= 64:
            kept[str(k)[:64]] = v
            if len(json.dumps(kept)) > PARAMS_BYTES:
                kept.pop(str(k)[:64])
                break
    return {"dataset": _text(config.get("dataset")) or _text(config.get("text")),
            "target": _text(config.get("target")),
            "backend": backend, "device": device, "metric": metric,
            "value": _num(metrics.get(metric)) if metric else None,
            "main_time": _num(timings.get(main_timing(kind))),
            "total_time": _num(timings.get("total")), "note": note,
            "params": json.dumps(kept, ensure_ascii=False, allow_nan=False) if kept else None, "size": size}


def _summary_of(row: sqlite3.Row) -> dict:
    out = {"id": row["id"], "kind": row["kind"], "created_at": row["created_at"],
           **{k: row[k] for k in SUMMARY_COLUMNS}}
    out["params"] = json.loads(out["params"]) if out["params"] else {}
    return out


def migrate(conn: sqlite3.Connection) -> None:
    """Runs tables from before the summary columns: add them and fill them, one body at a time."""
    have = {r["name"] for r in conn.execute("PRAGMA table_info(runs)")}
    types = {"value": "REAL", "main_time": "REAL", "total_time": "REAL", "size": "INTEGER"}
    for col in SUMMARY_COLUMNS:
        if col not in have:
            conn.execute(f"ALTER TABLE runs ADD COLUMN {col} {types.get(col, 'TEXT')}")
    if "size" in have and not set(SUMMARY_COLUMNS) <= have:  # a column added since: every run refilled
        conn.execute("UPDATE runs SET size = NULL")
    conn.execute("CREATE INDEX IF NOT EXISTS runs_dataset_created ON runs (dataset, created_at)")
    conn.execute("CREATE INDEX IF NOT EXISTS runs_device_created ON runs (device, created_at)")
    todo = conn.execute("SELECT rowid FROM runs WHERE size IS NULL").fetchall()
    for (rowid,) in todo:  # one body in memory at a time, however many runs there are
        body = conn.execute("SELECT body FROM runs WHERE rowid = ?", (rowid,)).fetchone()[0]
        try:
            run = json.loads(body)
        except ValueError:
            run = {}
        s = summarize(run if isinstance(run, dict) else {}, len(body.encode()))
        conn.execute(f"UPDATE runs SET {', '.join(f'{k} = ?' for k in SUMMARY_COLUMNS)} WHERE rowid = ?",
                     [*(s[k] for k in SUMMARY_COLUMNS), rowid])


# --- writing ---

def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _delete_ids(conn: sqlite3.Connection, ids: list[str]) -> None:
    if not ids:
        return
    marks = ",".join("?" * len(ids))
    # Comparison jobs reference their run: they go first (the table exists with that feature).
    if _has_table(conn, "comparisons"):
        conn.execute(f"DELETE FROM comparisons WHERE run_id IN ({marks})", ids)
    conn.execute(f"DELETE FROM runs WHERE id IN ({marks})", ids)


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                        (name,)).fetchone() is not None


def _enforce_retention(conn: sqlite3.Connection, keep: str, max_runs: int, max_bytes: int) -> list[str]:
    """Delete the oldest runs past the caps (never `keep`, the run just stored, nor a run whose
    comparison jobs are queued or running); remember them in `retired`; return their ids."""
    count, total = conn.execute("SELECT COUNT(*), COALESCE(SUM(size), 0) FROM runs").fetchone()
    if count <= max_runs and total <= max_bytes:
        return []
    busy = ("AND id NOT IN (SELECT run_id FROM comparisons WHERE status IN ('queued', 'running'))"
            if _has_table(conn, "comparisons") else "")
    doomed, excess_n, excess_b = [], count - max_runs, total - max_bytes
    why = " and ".join(f"--{flag} {limit}" for flag, limit, over in (
        ("max-runs", max_runs, excess_n > 0), ("max-runs-mb", max_bytes // 2**20, excess_b > 0))
        if over)
    for row in conn.execute(f"SELECT id, size FROM runs WHERE id != ? {busy} "
                            "ORDER BY created_at, rowid", (keep,)):
        if excess_n <= 0 and excess_b <= 0:
            break
        doomed.append(row["id"])
        excess_n -= 1
        excess_b -= row["size"] or 0
    _delete_ids(conn, doomed)
    now = _now()
    conn.executemany("INSERT OR REPLACE INTO retired (id, at, why) VALUES (?, ?, ?)",
                     [(i, now, why) for i in doomed])
    conn.execute("DELETE FROM retired WHERE rowid <= (SELECT MAX(rowid) FROM retired) - ?",
                 (RETIRED_KEPT,))
    return doomed


def _insert(run: dict, max_runs: int, max_bytes: int):
    """Write-transaction body: insert unless the id exists; return (stored run, created?, evicted)."""

    def fn(conn: sqlite3.Connection):
        row = conn.execute("SELECT body FROM runs WHERE id = ?", (run["id"],)).fetchone()
        if row is not None:
            return json.loads(row["body"]), False, []
        stored = {**run, "created_at": _now()}  # stamped at commit time, so listing order is commit order
        body = json.dumps(stored, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        s = summarize(stored, len(body.encode()))
        conn.execute(f"INSERT INTO runs (id, kind, created_at, body, {', '.join(SUMMARY_COLUMNS)}) "
                     f"VALUES (?, ?, ?, ?, {', '.join('?' * len(SUMMARY_COLUMNS))})",
                     (stored["id"], stored["kind"], stored["created_at"], body,
                      *(s[k] for k in SUMMARY_COLUMNS)))
        evicted = _enforce_retention(conn, stored["id"], max_runs, max_bytes)
        return stored, True, evicted

    return fn


async def post_run(request: Request) -> JSONResponse:
    settings = request.app.state.settings
    run = validate_run(await read_json(request, settings.max_json_bytes))
    for hook in list(getattr(request.app.state, "before_run_stored", ())):
        await hook(run, request)  # may refuse the post (a full comparison queue: 429)
    stored, created, evicted = await request.app.state.store.write(
        _insert(run, settings.max_runs, settings.max_runs_mb * 2**20))
    for run_id in evicted:
        await _notify(request.app.state.on_run_deleted, run_id)
    if evicted:
        log.warning("retention: %d oldest run(s) deleted to keep --max-runs %d / --max-runs-mb %d "
                    "(the page answers 404 for them, saying so)", len(evicted), settings.max_runs,
                    settings.max_runs_mb)
    if created:
        await _notify(request.app.state.on_run_stored, stored)
    return JSONResponse(stored, 201 if created else 200,
                        headers={"X-Runs-Retired": str(len(evicted))} if evicted else None)


async def _notify(callbacks: list, arg) -> None:
    # The write is committed already; a failing hook is logged and must not turn it into an error.
    for callback in list(callbacks):
        try:
            result = callback(arg)
            if inspect.isawaitable(result):
                await result
        except Exception:
            log.exception("callback %r failed for %r", callback, arg if isinstance(arg, str) else arg["id"])


async def delete_run(request: Request) -> Response:
    run_id = request.path_params["id"]
    if not UUID_RE.match(run_id):
        raise ClientError(404, "no run with this id", field="id")
    run_id = run_id.lower()

    def fn(conn):
        if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
            return False
        _delete_ids(conn, [run_id])
        return True

    if not await request.app.state.store.write(fn):
        raise ClientError(404, "no run with this id", field="id")
    await _notify(request.app.state.on_run_deleted, run_id)
    return Response(status_code=204)


# --- reading ---

def _int_param(request: Request, name: str, default: int, lo: int, hi: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    # The length first: int() of thousands of digits is slow, and past 4,300 a ValueError.
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 19 or not lo <= int(raw) <= hi:
        raise ClientError(400, f"must be an integer in {lo}..{hi}", field=name)
    return int(raw)


def _text_param(request: Request, name: str, limit: int = 256) -> str | None:
    raw = request.query_params.get(name) or None  # ?x= (empty) means no filter
    if raw is not None and len(raw) > limit:
        raise ClientError(400, f"must be at most {limit} characters", field=name)
    return raw


def _encode_cursor(created_at: str, rowid: int) -> str:
    return base64.urlsafe_b64encode(json.dumps([created_at, rowid]).encode()).decode().rstrip("=")


def _decode_cursor(raw: str) -> tuple[str, int]:
    try:
        if len(raw) > 200:
            raise ValueError
        value = json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
        created_at, rowid = value
        if not isinstance(created_at, str) or isinstance(rowid, bool) or not isinstance(rowid, int):
            raise ValueError
        return created_at, rowid
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        raise ClientError(400, "not a cursor this server gave (use the `next` of a listing)",
                          field="cursor") from None


async def list_runs(request: Request) -> JSONResponse:
    limit = _int_param(request, "limit", 100, 1, MAX_LIMIT)
    offset = _int_param(request, "offset", 0, 0, 2**62)
    kind = _text_param(request, "kind")
    if kind is not None and not NAME_RE.match(kind):
        raise ClientError(400, FIELDS["kind"][1], field="kind")
    where, args = [], []
    for column in ("kind", "dataset", "device"):
        value = kind if column == "kind" else _text_param(request, column)
        if value is not None:
            where.append(f"{column} = ?")
            args.append(value)
    cursor = _text_param(request, "cursor", 200)
    if cursor is not None:
        created_at, rowid = _decode_cursor(cursor)
        where.append("(created_at < ? OR (created_at = ? AND rowid < ?))")
        args += [created_at, created_at, rowid]
    clause = f"WHERE {' AND '.join(where)}" if where else ""

    def fn(conn):
        # rowid breaks ties between runs stamped in the same microsecond. The body is not read.
        sql = (f"SELECT rowid, id, kind, created_at, {', '.join(SUMMARY_COLUMNS)} FROM runs {clause} "
               "ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?")
        return conn.execute(sql, [*args, limit + 1, offset]).fetchall()

    rows = await request.app.state.store.read(fn)
    page = rows[:limit]
    more = len(rows) > limit
    return JSONResponse({"runs": [_summary_of(r) for r in page],
                         "next": _encode_cursor(page[-1]["created_at"], page[-1]["rowid"]) if more else None})


FACET_LIMIT = 500


async def run_facets(request: Request) -> JSONResponse:
    def fn(conn):
        return {f"{col}s": [r[0] for r in conn.execute(
            f"SELECT DISTINCT {col} FROM runs WHERE {col} IS NOT NULL ORDER BY {col} LIMIT ?",
            (FACET_LIMIT,))] for col in ("kind", "dataset", "device")}

    return JSONResponse(await request.app.state.store.read(fn))


async def get_run(request: Request) -> JSONResponse:
    run_id = request.path_params["id"]
    if not UUID_RE.match(run_id):
        raise ClientError(404, "no run with this id", field="id")

    def fn(conn):
        row = conn.execute("SELECT body FROM runs WHERE id = ?", (run_id.lower(),)).fetchone()
        return row, row is None and conn.execute(
            "SELECT at, why FROM retired WHERE id = ?", (run_id.lower(),)).fetchone()

    row, retired = await request.app.state.store.read(fn)
    if retired:
        raise ClientError(404, f"this run was deleted at {retired['at']} to keep the server's "
                          f"store within {retired['why']} (the oldest runs go first)", field="id")
    if row is None:
        raise ClientError(404, "no run with this id", field="id")
    # The stored text as it is: one run is at most max_json_kb, and it was checked at POST.
    return Response(row["body"], media_type="application/json")


routes = [
    Route("/api/runs", post_run, methods=["POST"]),
    Route("/api/runs", list_runs, methods=["GET"]),
    Route("/api/runs/facets", run_facets, methods=["GET"]),
    Route("/api/runs/{id}", get_run, methods=["GET"]),
    Route("/api/runs/{id}", delete_run, methods=["DELETE"]),
]
