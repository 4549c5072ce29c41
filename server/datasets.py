"""Data sets: CSV uploads, checked by the same parser the page runs (py_core.data), and built-ins.

    POST /api/datasets            multipart/form-data: `file` (the CSV), optional `name` and
                                  `delimiter`; 201 with the summary; 400 {"error": {message,
                                  line, column, field}} for a file py_core.data refuses, and
                                  for a malformed form (no boundary, no part in its first 64
                                  KB, more than MAX_PARTS parts, a field over 1 KB), answered
                                  before the rest of the body is read; 413 once the file passes
                                  max_upload_mb (with or without a Content-Length)
    GET  /api/datasets            built-ins first, then uploads, newest first (from the rows'
                                  columns: no summary is read)
    GET  /api/datasets/{id}       the summary: name, rows, columns with types and stats, preview
    GET  /api/datasets/{id}/file  the CSV bytes as stored (text/csv)
    DELETE /api/datasets/{id}     removes an upload: the row, then its file; only with the key
                                  the upload's 201 carried (`key`, sent back in the header
                                  X-Dataset-Key), which the uploader's page alone keeps; 403
                                  without it and for a built-in, 404 for no such upload

A summary's `target` is the column py_core suggests as the target (py_core.data.target). The
server keeps only a hash of an upload's key: uploads from before keys were given (NULL) stay.

The upload streams to a temporary file under <data_dir>/uploads (removed whatever happens), is
summarised as a stream (py_core.data.summarize_csv: a chunk of rows at a time, memory about the
largest column's distinct values, never the file) in a process of its own
(server/describe_worker.py: one at a time, its memory capped by --max-parse-mb and all returned
when it ends, so the server's own stays where it was whatever the file; the answer carries
`timings`: `upload`, the seconds the body took to arrive, and `parse`, the summary's), and
only a file that parses is recorded and moved to <data_dir>/datasets/<id>.csv in one write
transaction (a row never points at a missing file; a file whose row never committed, after a
crash, is removed at the next start-up). Built-ins (server/builtins.py) live in the same
folder under their names, which are their ids: `diabetes`, `iris`, ... Other server code finds
any data set's file with `dataset_path(data_dir, id)`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import sqlite3
import sys
import time
import uuid
from contextlib import asynccontextmanager, closing
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

import anyio
import anyio.to_thread
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse
from starlette.routing import Route

from py_core.data import DataError, parse_csv
from py_core.data.reader import resolve_delimiter
from py_core.data.target import default_target
from server.builtins import BUILTINS, builtin_path, export_builtins
from server.datadir import remove_orphans
from server.errors import ClientError
from server.settings import DB_NAME, PROJECT_ROOT

try:  # python-multipart >= 0.0.13 renamed its package
    from python_multipart.multipart import MultipartParseError, MultipartParser, parse_options_header
except ImportError:  # pragma: no cover
    from multipart.multipart import MultipartParseError, MultipartParser, parse_options_header

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS datasets (
    id TEXT PRIMARY KEY,       -- 32 hex digits, made by the server; the file is datasets/<id>.csv
    name TEXT NOT NULL,        -- the form's `name`, else the uploaded file's name
    created_at TEXT NOT NULL,  -- ISO 8601 UTC
    rows INTEGER NOT NULL,
    columns INTEGER NOT NULL,
    size INTEGER NOT NULL,     -- bytes of the file
    summary TEXT NOT NULL,     -- JSON: py_core.data.summarize_csv() (Table.describe())
    owner_key TEXT,            -- sha256 hex of the key that removes it; NULL: it stays
    target TEXT                -- the suggested target (py_core.data.target), for the listing
);
CREATE INDEX IF NOT EXISTS datasets_created ON datasets (created_at)
"""

KEY_HEADER = "X-Dataset-Key"


def migrate(conn: sqlite3.Connection) -> None:
    """A database from before removable uploads gains owner_key (NULL: those uploads stay) and
    target (NULL: the listing says none; the summary suggests one when it is read)."""
    have = {r[1] for r in conn.execute("PRAGMA table_info(datasets)")}
    for column in ("owner_key", "target"):
        if column not in have:
            conn.execute(f"ALTER TABLE datasets ADD COLUMN {column} TEXT")


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "replace")).hexdigest()


UPLOAD_ID_RE = re.compile(r"[0-9a-f]{32}\Z")
FORM_OVERHEAD = 64 * 1024  # multipart boundaries, part headers, name and delimiter fields
MAX_FIELD_BYTES = 1024  # `name` and `delimiter` are short
MAX_PARTS = 8  # file, name, delimiter and room to spare; thousands of tiny parts are no upload
MAX_NAME_CHARS = 200


def datasets_dir(data_dir: Path | str) -> Path:
    return Path(data_dir) / "datasets"


def dataset_path(data_dir: Path | str, dataset_id: str) -> Path:
    """The CSV of a built-in (by name) or an upload (by id); LookupError when there is none."""
    if dataset_id in BUILTINS or UPLOAD_ID_RE.match(dataset_id):
        path = datasets_dir(data_dir) / f"{dataset_id}.csv"
        if path.is_file():
            return path
    raise LookupError(f"no data set {dataset_id!r}")


def dataset_shape(data_dir: Path | str, dataset_id: str) -> tuple[int, int]:
    """(rows, columns) of a data set as its own parse counted them: an upload's from its row
    (the summary's, recorded at upload), a built-in's from its summary. What the caps cost a job
    on (server/jobcost.py): counting line endings instead would count a file with CR-only lines
    as 0 rows, and quoted newlines as rows. LookupError when there is no such data set;
    RuntimeError when its file is there but its row cannot be read."""
    path = dataset_path(data_dir, dataset_id)
    if dataset_id in BUILTINS:
        summary = _builtin_summary(path, dataset_id)
        return summary["rows"], len(summary["columns"])
    rows, columns = _upload_row(data_dir, dataset_id, "rows, columns")
    return int(rows), int(columns)


def dataset_column(data_dir: Path | str, dataset_id: str, name: str) -> dict | None:
    """The summary of one column of a data set (its type, task, missing count and stats), or
    None where it has no such column; the errors of `dataset_shape`."""
    path = dataset_path(data_dir, dataset_id)
    if dataset_id in BUILTINS:
        summary = _builtin_summary(path, dataset_id)
    else:
        summary = json.loads(_upload_row(data_dir, dataset_id, "summary")[0])
    return next((c for c in summary["columns"] if c.get("name") == name), None)


def _builtin_summary(path: Path, name: str) -> dict:
    st = path.stat()
    return _describe_cached(str(path), st.st_mtime_ns, st.st_size, name)


def _upload_row(data_dir: Path | str, dataset_id: str, fields: str) -> tuple:
    uri = f"{(Path(data_dir) / DB_NAME).resolve().as_uri()}?mode=ro"
    try:  # read-only, its own connection: a job's process or a worker thread calls this
        with closing(sqlite3.connect(uri, uri=True, timeout=10)) as conn:
            row = conn.execute(f"SELECT {fields} FROM datasets WHERE id = ?",
                               (dataset_id,)).fetchone()
    except sqlite3.Error as exc:
        raise RuntimeError(f"data set {dataset_id!r}: its row cannot be read ({exc})") from None
    if row is None:  # a file whose row never committed (removed at the next start-up)
        raise RuntimeError(f"data set {dataset_id!r} has no row")
    return row


# --- start-up: built-ins exported when missing, their summaries computed once ---

@asynccontextmanager
async def lifespan(app):
    settings = app.state.settings
    settings.uploads_dir.mkdir(parents=True, exist_ok=True)
    for stale in settings.uploads_dir.glob("*.part"):  # data sets' and texts', left by a crash
        stale.unlink(missing_ok=True)
    # Files whose row never committed (a crash between the move and the commit): removed.
    for removed in await app.state.store.read(lambda conn: remove_orphans(
            conn, datasets_dir(settings.data_dir), "datasets", ".csv")):
        log.warning("removed %s: an upload whose database row was never committed", removed)
    await anyio.to_thread.run_sync(export_builtins, settings.data_dir)
    app.state.builtin_datasets = await anyio.to_thread.run_sync(_builtin_summaries,
                                                                settings.data_dir)
    app.state.dataset_parser = anyio.CapacityLimiter(1)
    yield


def _builtin_summaries(data_dir: Path) -> dict[str, dict]:
    out = {}
    for name, (_, task) in BUILTINS.items():
        path = builtin_path(data_dir, name)
        summary = _builtin_summary(path, name)
        out[name] = {"id": name, "builtin": True, "created_at": None, "size": path.stat().st_size,
                     "target": "target", "task": task, **summary}
    return out


@lru_cache(maxsize=32)  # tests start many apps on fresh data dirs holding the same files
def _describe_cached(path: str, mtime_ns: int, size: int, name: str) -> dict:
    return parse_csv(Path(path).read_bytes(), name=name).describe()


# --- upload ---

class _FormStream:
    """A multipart/form-data body parsed as it arrives: the part named `file` goes to `pending`
    (bytes for the caller to write to disk), other parts into `fields` (short strings)."""

    def __init__(self, boundary: bytes, max_file_bytes: int):
        self.max_file_bytes = max_file_bytes
        self.fields: dict[str, str] = {}
        self.filename: str | None = None
        self.file_bytes = 0
        self.pending: list[bytes] = []
        self.done = False
        self.parts = 0
        self._header_name = self._header_value = b""
        self._headers: dict[bytes, bytes] = {}
        self._part: str | None = None
        self._data = bytearray()
        self.parser = MultipartParser(boundary, {
            "on_part_begin": self._part_begin, "on_header_field": self._header_field,
            "on_header_value": self._header_value_cb, "on_header_end": self._header_end,
            "on_headers_finished": self._headers_finished, "on_part_data": self._part_data,
            "on_part_end": self._part_end, "on_end": self._end})

    def write(self, chunk: bytes) -> None:
        try:
            self.parser.write(chunk)
        except MultipartParseError as exc:
            raise ClientError(400, f"malformed multipart body: {exc}") from None

    def _part_begin(self):
        self.parts += 1
        if self.parts > MAX_PARTS:
            raise ClientError(400, f"more than {MAX_PARTS} parts in the form")
        self._headers, self._part, self._data = {}, None, bytearray()

    def _header_field(self, data, start, end):
        self._header_name += data[start:end]

    def _header_value_cb(self, data, start, end):
        self._header_value += data[start:end]

    def _header_end(self):
        self._headers[self._header_name.lower()] = self._header_value
        self._header_name = self._header_value = b""

    def _headers_finished(self):
        _, options = parse_options_header(self._headers.get(b"content-disposition", b""))
        self._part = options.get(b"name", b"").decode("utf-8", "replace")
        if self._part == "file":
            if self.filename is not None:
                raise ClientError(400, "more than one file in the form", field="file")
            raw = options.get(b"filename", b"data.csv").decode("utf-8", "replace")
            self.filename = re.split(r"[\\/]", raw)[-1] or "data.csv"
            # It names the file in messages and goes to the summary's process as an argument.
            if len(self.filename) > MAX_NAME_CHARS or not self.filename.isprintable():
                raise ClientError(400, f"the file's name must be at most {MAX_NAME_CHARS} "
                                  "printable characters (no control characters)", field="file")

    def _part_data(self, data, start, end):
        if self._part == "file":
            self.file_bytes += end - start
            if self.file_bytes > self.max_file_bytes:
                raise ClientError(413, f"file larger than {self.max_file_bytes // 2**20} MB",
                                  field="file")
            self.pending.append(data[start:end])
        else:
            self._data += data[start:end]
            if len(self._data) > MAX_FIELD_BYTES:
                raise ClientError(400, f"form field longer than {MAX_FIELD_BYTES} bytes",
                                  field=self._part)

    def _part_end(self):
        if self._part != "file":
            self.fields[self._part] = self._data.decode("utf-8", "replace")

    def _end(self):
        self.done = True


async def receive_file(request: Request, tmp: Path) -> _FormStream:
    """Streams a multipart upload's `file` field to `tmp`, refusing it (413) past the size cap
    with or without a Content-Length; returns the form (filename, fields, file_bytes)."""
    settings = request.app.state.settings
    cap = settings.max_upload_bytes
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap + FORM_OVERHEAD:
        raise ClientError(413, f"file larger than {settings.max_upload_mb} MB", field="file")
    ctype, options = parse_options_header(request.headers.get("content-type", ""))
    if ctype != b"multipart/form-data":
        raise ClientError(415, "send the file as multipart/form-data, in the field 'file'")
    if not options.get(b"boundary"):
        raise ClientError(400, "malformed multipart body: the Content-Type names no boundary")
    form = _FormStream(options[b"boundary"], cap)
    with open(tmp, "wb") as out:
        received = 0
        async for chunk in request.stream():
            received += len(chunk)
            if received > cap + FORM_OVERHEAD:
                raise ClientError(413, f"file larger than {settings.max_upload_mb} MB",
                                  field="file")
            form.write(chunk)
            if not form.parts and received > FORM_OVERHEAD:  # a preamble of blank lines, say
                raise ClientError(400, "malformed multipart body: no part in the first "
                                  f"{FORM_OVERHEAD // 1024} KB")
            if form.pending:
                await anyio.to_thread.run_sync(out.writelines, form.pending)
                form.pending.clear()
    if not form.done:
        raise ClientError(400, "incomplete multipart body (no closing boundary)")
    if form.filename is None:
        raise ClientError(400, "no file: send it in the form field 'file'", field="file")
    return form


async def post_dataset(request: Request) -> JSONResponse:
    settings = request.app.state.settings
    tmp = settings.uploads_dir / f"dataset-{uuid.uuid4().hex}.part"
    try:
        t0 = time.perf_counter()
        form = await receive_file(request, tmp)
        name = _display_name(form.fields.get("name") or form.filename)
        delimiter = _delimiter(form.fields.get("delimiter") or None)
        received = time.perf_counter()
        async with request.app.state.dataset_parser:  # one summary at a time: the wait not timed
            t1 = time.perf_counter()
            out = await _describe_in_worker(tmp, form.filename, delimiter,
                                            settings.max_parse_mb)
            t2 = time.perf_counter()
        if "error" in out:
            return JSONResponse({"error": out["error"]}, 400)
        log.info("summarised %s (%d bytes) in %.2f s, peak %s MB", form.filename,
                 form.file_bytes, t2 - t1, out.get("peak_mb"))
        summary = {**out["summary"],
                   "timings": {"upload": round(received - t0, 4), "parse": round(t2 - t1, 4)}}
        return JSONResponse(await _store_upload(request, tmp, name, summary, form.file_bytes),
                            201)
    finally:
        tmp.unlink(missing_ok=True)


def _delimiter(raw: str | None) -> str | None:
    """The form's delimiter checked here as the parser checks it (one character, no quote, line
    end or other control character but tab): it goes to the summary's process as an argument,
    where a NUL was a 500."""
    if raw is None:
        return None
    try:
        return resolve_delimiter(raw)
    except DataError as exc:
        raise ClientError(400, str(exc), field="delimiter") from None


def _display_name(raw: str) -> str:
    name = raw.strip()
    if not name or len(name) > MAX_NAME_CHARS or any(ord(c) < 32 or c == "\x7f" for c in name):
        raise ClientError(400, f"must be 1 to {MAX_NAME_CHARS} printable characters",
                          field="name")
    return name


async def _describe_in_worker(path: Path, filename: str, delimiter: str | None,
                              memory_mb: int) -> dict:
    """The summary computed by server/describe_worker.py in its own process (memory capped,
    and all of it returned when it ends): {"summary"} or {"error"}; 413 past the memory cap."""
    cmd = [sys.executable, "-m", "server.describe_worker", str(path), filename, delimiter or "",
           str(memory_mb)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(PROJECT_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = await anyio.run_process(cmd, check=False, env=env)
    try:
        out = json.loads(done.stdout)
    except ValueError:
        log.error("describe worker failed (exit %s): %s", done.returncode,
                  done.stderr.decode(errors="replace")[-2000:])
        if done.returncode < 0 or b"MemoryError" in done.stderr:
            out = {"memory": memory_mb}
        else:
            raise RuntimeError("the CSV summary worker failed; see the server log") from None
    if "memory" in out:
        raise ClientError(413, f"summarising this file needs more than {memory_mb} MB "
                          "(--max-parse-mb); split it or raise the cap", field="file")
    return out


async def _store_upload(request: Request, tmp: Path, name: str, summary: dict, size: int) -> dict:
    dataset_id = uuid.uuid4().hex
    final = datasets_dir(request.app.state.settings.data_dir) / f"{dataset_id}.csv"
    final.parent.mkdir(parents=True, exist_ok=True)
    created_at = datetime.now(timezone.utc).isoformat(timespec="microseconds").replace(
        "+00:00", "Z")
    stored = {"id": dataset_id, "builtin": False, "created_at": created_at, "size": size,
              "target": None, "task": None, **summary, "name": name}
    key = secrets.token_urlsafe(24)  # answered once; only its hash is kept

    def insert(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO datasets (id, name, created_at, rows, columns, size, summary, "
                     "owner_key, target) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     (dataset_id, name, created_at, summary["rows"], len(summary["columns"]),
                      size, json.dumps(stored, ensure_ascii=False, allow_nan=False),
                      _digest(key), stored["target"]))
        # The move inside the transaction, after the insert: a failed move rolls the row back;
        # a crash before COMMIT leaves a file without a row, which the next start-up removes.
        os.replace(tmp, final)

    try:
        await request.app.state.store.write(insert)
    except BaseException:
        final.unlink(missing_ok=True)
        raise
    return {**stored, "key": key}


# --- reading ---

def _listing(summary: dict) -> dict:
    keys = ("id", "name", "builtin", "created_at", "rows", "size", "target", "task")
    return {**{k: summary[k] for k in keys}, "columns": len(summary["columns"])}


async def list_datasets(request: Request) -> JSONResponse:
    def fn(conn):
        # The row's own columns hold all a listing shows: no summary is read, let alone parsed.
        sql = ("SELECT id, name, created_at, rows, columns, size, target FROM datasets "
               "ORDER BY created_at DESC, rowid DESC")
        return [{**dict(r), "builtin": False, "task": None}
                for r in conn.execute(sql)]

    builtins = [_listing(s) for s in request.app.state.builtin_datasets.values()]
    return JSONResponse({"datasets": builtins + await request.app.state.store.read(fn)})


async def _summary(request: Request) -> dict:
    dataset_id = request.path_params["id"]
    if dataset_id in request.app.state.builtin_datasets:
        return request.app.state.builtin_datasets[dataset_id]
    if UPLOAD_ID_RE.match(dataset_id):
        row = await request.app.state.store.read(lambda conn: conn.execute(
            "SELECT summary FROM datasets WHERE id = ?", (dataset_id,)).fetchone())
        if row is not None:
            summary = json.loads(row["summary"])
            if summary.get("target") is None:  # stored before the server suggested one
                summary["target"] = default_target(summary)
            return summary
    raise ClientError(404, "no data set with this id", field="id")


async def get_dataset(request: Request) -> JSONResponse:
    return JSONResponse(await _summary(request))


async def get_dataset_file(request: Request) -> FileResponse:
    summary = await _summary(request)
    try:
        path = dataset_path(request.app.state.settings.data_dir, summary["id"])
    except LookupError:
        raise ClientError(404, "the data set's file is missing", field="id") from None
    return FileResponse(path, media_type="text/csv; charset=utf-8")


async def delete_dataset(request: Request) -> JSONResponse:
    dataset_id = request.path_params["id"]
    if dataset_id in BUILTINS:
        raise ClientError(403, f"{dataset_id} is built in: only uploads can be removed", field="id")
    given = request.headers.get(KEY_HEADER, "")

    def remove(conn: sqlite3.Connection) -> str:
        row = conn.execute("SELECT owner_key FROM datasets WHERE id = ?", (dataset_id,)).fetchone()
        if row is None:
            return "missing"
        if not (given and row["owner_key"] and hmac.compare_digest(row["owner_key"], _digest(given))):
            return "refused"
        conn.execute("DELETE FROM datasets WHERE id = ?", (dataset_id,))
        return "removed"

    outcome = await request.app.state.store.write(remove) if UPLOAD_ID_RE.match(dataset_id) \
        else "missing"
    if outcome == "missing":
        raise ClientError(404, "no uploaded data set with this id", field="id")
    if outcome == "refused":
        raise ClientError(403, "only the page that uploaded this data set can remove it (send "
                          f"the key its upload answered, in {KEY_HEADER})", field="key")
    # After the commit: a crash before this line leaves a file without a row, which the next
    # start-up removes (remove_orphans).
    (datasets_dir(request.app.state.settings.data_dir) / f"{dataset_id}.csv").unlink(missing_ok=True)
    return JSONResponse({"removed": dataset_id})


routes = [
    Route("/api/datasets", post_dataset, methods=["POST"]),
    Route("/api/datasets", list_datasets, methods=["GET"]),
    Route("/api/datasets/{id}", get_dataset, methods=["GET"]),
    Route("/api/datasets/{id}", delete_dataset, methods=["DELETE"]),
    Route("/api/datasets/{id}/file", get_dataset_file, methods=["GET"]),
]
