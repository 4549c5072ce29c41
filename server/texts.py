"""Texts for the transformer: uploads (UTF-8, checked) and the built-ins that ship with py_core.

    POST /api/texts            multipart/form-data: `file`, optional `name`; 201 with the summary;
                               400 for a file that is not UTF-8 text (the byte and line named);
                               413 past max_upload_mb
    GET  /api/texts            built-ins first, then uploads, newest first
    GET  /api/texts/{id}       the summary: name, characters, vocabulary size, a preview
    GET  /api/texts/{id}/file  the text (text/plain; charset=utf-8)

Built-ins are served under their ids (`shakespeare`) from py_core's package folder, so the page
and the server's PyTorch runner read the very same characters.
"""
from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
import uuid
from contextlib import asynccontextmanager
from datetime import datetime, timezone
from pathlib import Path

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse
from starlette.routing import Route

from py_core.transformer.text import BUILTIN_TEXTS, Vocab, builtin_text
from server.datadir import remove_orphans
from server.datasets import _display_name, receive_file
from server.errors import ClientError

SCHEMA = """
CREATE TABLE IF NOT EXISTS texts (
    id TEXT PRIMARY KEY,       -- 32 hex digits; the file is texts/<id>.txt
    name TEXT NOT NULL,
    created_at TEXT NOT NULL,  -- ISO 8601 UTC
    summary TEXT NOT NULL      -- JSON: see _summarize
)
"""
log = logging.getLogger(__name__)


@asynccontextmanager
async def lifespan(app):
    folder = _texts_dir(app.state.settings.data_dir)
    for removed in await app.state.store.read(lambda conn: remove_orphans(conn, folder, "texts", ".txt")):
        log.warning("removed %s: an upload whose database row was never committed", removed)
    yield


TEXT_ID_RE = re.compile(r"[0-9a-f]{32}\Z")
PREVIEW_CHARS = 600
MAX_VOCAB = 4096  # code points; a larger alphabet is no character-level corpus


def _texts_dir(data_dir) -> Path:
    return Path(data_dir) / "texts"


def _builtin_path(name: str) -> Path:
    import py_core.transformer.text as text_module
    return Path(text_module.__file__).resolve().parent.parent / "texts" / BUILTIN_TEXTS[name]


def _summarize(text: str, name: str) -> dict:
    vocab = Vocab.from_text(text)
    return {"name": name, "chars": len(text), "vocab_size": len(vocab.chars), "preview": text[:PREVIEW_CHARS]}


CHUNK = 1 << 20  # bytes read at a time: memory stays a chunk plus the distinct characters


def _check_text(path: Path, filename: str) -> dict:
    """Stream the file once: UTF-8 (a BOM is fine), no NUL, at most MAX_VOCAB distinct
    characters; returns the summary. Memory: one chunk, the preview and the character set."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    chars: set[str] = set()
    preview, count, offset, lines = "", 0, 0, 1
    with open(path, "rb") as f:
        while True:
            data = f.read(CHUNK)
            final = not data
            if b"\x00" in data:
                at = data.index(b"\x00")
                line = lines + data.count(b"\n", 0, at)
                raise ClientError(400, f"{filename}: a NUL byte at byte {offset + at} (line "
                                  f"{line}): this looks like a binary file, not text", field="file")
            pending = len(decoder.getstate()[0])  # bytes of a character cut by the last chunk
            try:
                text = decoder.decode(data, final)
            except UnicodeDecodeError as exc:
                bad = offset - pending + exc.start
                line = lines + data.count(b"\n", 0, max(0, bad - offset))
                raise ClientError(400, f"{filename}: not UTF-8 at byte {bad} (line {line})",
                                  field="file") from None
            chars.update(text)
            count += len(text)
            if len(preview) < PREVIEW_CHARS:
                preview += text[:PREVIEW_CHARS - len(preview)]
            if len(chars) > MAX_VOCAB:
                raise ClientError(400, f"{filename}: more than {MAX_VOCAB} distinct characters: "
                                  "too many for a character-level model", field="file")
            offset += len(data)
            lines += data.count(b"\n")
            if final:
                break
    if count < 2:  # a character-level model learns which character follows which
        raise ClientError(400, f"{filename}: " + ("the text is empty" if not count else
                          "the text is one character; a model needs two or more"), field="file")
    return {"name": filename, "chars": count, "vocab_size": len(chars), "preview": preview}


async def post_text(request: Request) -> JSONResponse:
    settings = request.app.state.settings
    tmp = settings.uploads_dir / f"text-{uuid.uuid4().hex}.part"
    try:
        form = await receive_file(request, tmp)
        name = _display_name(form.fields.get("name") or form.filename)
        summary = await anyio.to_thread.run_sync(_check_text, tmp, form.filename)
        text_id = uuid.uuid4().hex
        final = _texts_dir(settings.data_dir) / f"{text_id}.txt"
        final.parent.mkdir(parents=True, exist_ok=True)
        created = datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")
        stored = {**summary, "id": text_id, "name": name, "builtin": False, "created_at": created}

        def insert(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO texts (id, name, created_at, summary) VALUES (?, ?, ?, ?)",
                         (text_id, name, created, json.dumps(stored, ensure_ascii=False)))
            os.replace(tmp, final)  # in the transaction: see datasets._store_upload
        try:
            await request.app.state.store.write(insert)
        except BaseException:
            final.unlink(missing_ok=True)
            raise
        return JSONResponse(stored, 201)
    finally:
        tmp.unlink(missing_ok=True)


def _builtin_summary(name: str) -> dict:
    return {**_summarize(builtin_text(name), name), "id": name, "builtin": True, "created_at": None}


async def list_texts(request: Request) -> JSONResponse:
    def fn(conn):
        rows = conn.execute("SELECT summary FROM texts ORDER BY created_at DESC, rowid DESC")
        return [{k: v for k, v in json.loads(r["summary"]).items() if k != "preview"} for r in rows]
    builtins = [{k: v for k, v in _builtin_summary(n).items() if k != "preview"}
                for n in BUILTIN_TEXTS if _builtin_path(n).is_file()]
    return JSONResponse({"texts": builtins + await request.app.state.store.read(fn)})


async def _find(request: Request) -> tuple[dict, Path]:
    text_id = request.path_params["id"]
    if text_id in BUILTIN_TEXTS:
        return _builtin_summary(text_id), _builtin_path(text_id)
    if TEXT_ID_RE.match(text_id):
        row = await request.app.state.store.read(lambda conn: conn.execute(
            "SELECT summary FROM texts WHERE id = ?", (text_id,)).fetchone())
        if row is not None:
            return json.loads(row["summary"]), _texts_dir(request.app.state.settings.data_dir) / f"{text_id}.txt"
    raise ClientError(404, "no text with this id", field="id")


async def get_text(request: Request) -> JSONResponse:
    return JSONResponse((await _find(request))[0])


async def get_text_file(request: Request) -> FileResponse:
    _, path = await _find(request)
    if not path.is_file():
        raise ClientError(404, "the text's file is missing", field="id")
    return FileResponse(path, media_type="text/plain; charset=utf-8")


routes = [
    Route("/api/texts", post_text, methods=["POST"]),
    Route("/api/texts", list_texts, methods=["GET"]),
    Route("/api/texts/{id}", get_text, methods=["GET"]),
    Route("/api/texts/{id}/file", get_text_file, methods=["GET"]),
]
