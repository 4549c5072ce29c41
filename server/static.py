"""The page's files: `/` (web/index.html), `/web/`, `/pyodide/`, `/wheels/`, `/vendor/uplot/` (the
npm package's dist/), and `/runs/<id>` (web/run.html: one stored run). The WGSL is not served on
its own: the page's Python reads it from the wheel (py_core/shaders/).

Starlette's StaticFiles, with three changes: media types from our own table (browsers refuse a
`.wasm` for streaming compilation or an ES module served with the wrong type, and the system's
mimetypes database differs between machines); a missing folder answers 404 rather than raising
(web/node_modules exists only after `npm install`); and any OS error looking a path up is a 404.
Paths that resolve outside the folder (`..`, `%2e%2e`, absolute, symlinks pointing out) are 404:
StaticFiles resolves symlinks and compares against the folder's real path.

Compression: a text or WebAssembly file of 1 KiB or more is served gzip-compressed to a client
that accepts gzip (no Range request): the compressed copy is made once, off the event loop, into
<data dir>/static-gz/ (named by the file's path, size and mtime, so an edited file gets a new
copy) and kept only when it saves 10% (the stdlib zip and the wheel are compressed already).
`x-decoded-length` tells the page the size it will read, for a progress bar in bytes.

Caching: `/pyodide/v<version>/` (the pinned npm package, its version in the URL) is immutable for a
year; everything else is revalidated every time (ETag, 304): it changes during development.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import stat
from pathlib import Path

import anyio.to_thread
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from server.settings import Settings

MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".wgsl": "text/wgsl; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".wasm": "application/wasm",  # required by WebAssembly.instantiateStreaming
    ".whl": "application/zip",  # a wheel is a zip; pyodide.loadPackage fetches it as bytes
    ".zip": "application/zip",
    ".tar": "application/x-tar",
    ".txt": "text/plain; charset=utf-8",
    ".csv": "text/csv; charset=utf-8",
    ".py": "text/x-python; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
}
DEFAULT_MEDIA_TYPE = "application/octet-stream"  # with nosniff, the browser will not guess
COMPRESSIBLE = {".html", ".js", ".mjs", ".css", ".wgsl", ".json", ".map", ".wasm", ".zip", ".whl",
                ".tar", ".txt", ".csv", ".py", ".svg"}
MIN_COMPRESS = 1024
NO_CACHE = "no-cache"
IMMUTABLE = "public, max-age=31536000, immutable"


def media_type_for(path: str) -> str:
    return MEDIA_TYPES.get(os.path.splitext(path)[1].lower(), DEFAULT_MEDIA_TYPE)


def accepts_gzip(scope: Scope) -> bool:
    for name, value in scope.get("headers", []):
        if name == b"range":
            return False
    for name, value in scope.get("headers", []):
        if name == b"accept-encoding":
            codings = {c.split(b";")[0].strip().lower(): c for c in value.split(b",")}
            return b"gzip" in codings and not codings[b"gzip"].replace(b" ", b"").endswith(b"q=0")
    return False


def compressed_copy(full_path: str, st: os.stat_result, cache_dir: Path) -> str | None:
    """The gzip copy of `full_path` in `cache_dir` (made now if missing), or None when gzip
    does not save 10% or the copy cannot be written (then the file is served as it is)."""
    key = hashlib.sha256(f"{full_path}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:32]
    gz, skip = cache_dir / f"{key}.gz", cache_dir / f"{key}.raw"
    try:
        if gz.is_file():
            return str(gz)
        if skip.exists():
            return None
        cache_dir.mkdir(parents=True, exist_ok=True)
        with open(full_path, "rb") as f:
            data = f.read()
        packed = gzip.compress(data, compresslevel=6, mtime=0)
        tmp = cache_dir / f"{key}.{os.getpid()}.{id(data)}.tmp"
        if len(packed) > 0.9 * len(data):
            skip.touch()
            return None
        tmp.write_bytes(packed)
        os.replace(tmp, gz)  # atomic: a concurrent request sees the whole copy or none
        return str(gz)
    except OSError:
        return None


class PlaygroundStatic(StaticFiles):
    def __init__(self, directory: Path, gzip_dir: Path | None = None, cache_control: str = NO_CACHE):
        super().__init__(directory=directory, check_dir=False)
        self.gzip_dir = gzip_dir
        self.cache_control = cache_control

    async def get_response(self, path: str, scope: Scope) -> Response:
        if self.gzip_dir is not None and scope["method"] in ("GET", "HEAD") and accepts_gzip(scope):
            full_path, st = await anyio.to_thread.run_sync(self.lookup_path, path)
            if (st is not None and stat.S_ISREG(st.st_mode) and st.st_size >= MIN_COMPRESS
                    and os.path.splitext(full_path)[1].lower() in COMPRESSIBLE):
                gz = await anyio.to_thread.run_sync(compressed_copy, full_path, st, self.gzip_dir)
                if gz is not None:
                    response = self.file_response(gz, os.stat(gz), scope)
                    if response.status_code != 304:
                        response.headers["content-type"] = media_type_for(full_path)
                    response.headers["content-encoding"] = "gzip"
                    response.headers["x-decoded-length"] = str(st.st_size)
                    response.headers["vary"] = "accept-encoding"
                    return response
        response = await super().get_response(path, scope)
        if self.gzip_dir is not None:
            response.headers["vary"] = "accept-encoding"
        return response

    async def check_config(self) -> None:
        pass  # a missing folder is a 404 per request, not a crash (see module docstring)

    def lookup_path(self, path: str) -> tuple[str, os.stat_result | None]:
        try:
            return super().lookup_path(path)
        except (OSError, ValueError):  # too long, symlink loop, permission, NUL byte: not servable
            return "", None

    def file_response(self, full_path, stat_result, scope: Scope, status_code: int = 200) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        if response.status_code != 304:  # a 304 carries no body, hence no type
            response.headers["content-type"] = media_type_for(str(full_path))
        # Revalidate every time (a 304 costs little), but for versioned URLs: see the docstring.
        response.headers["cache-control"] = self.cache_control
        return response


def pyodide_version(pyodide_dir: Path) -> str | None:
    try:
        return str(json.loads((pyodide_dir / "package.json").read_text())["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


class PyodideStatic(PlaygroundStatic):
    """`/pyodide/FILE` (revalidated) and `/pyodide/v<installed version>/FILE` (immutable)."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        head, _, rest = path.partition("/")
        if head.startswith("v") and rest:
            if head[1:] != await anyio.to_thread.run_sync(pyodide_version, Path(self.directory)):
                raise HTTPException(404)
            response = await super().get_response(rest, scope)
            response.headers["cache-control"] = IMMUTABLE
            return response
        return await super().get_response(path, scope)


def static_routes(settings: Settings) -> list:
    gz = settings.data_dir / "static-gz"
    web = PlaygroundStatic(settings.web_dir, gz)

    def page(name: str):
        async def serve(request: Request) -> Response:
            try:
                return await web.get_response(name, request.scope)
            except HTTPException:
                raise HTTPException(404, f"{settings.web_dir / name} is missing") from None
        return serve

    routes = [
        Route("/", page("index.html"), methods=["GET", "HEAD"]),
        # One stored run's page; it reads the id from its URL and the run from /api/runs/<id>.
        Route("/runs/{run_id:str}", page("run.html"), methods=["GET", "HEAD"]),
        Mount("/web", app=web, name="web"),
        Mount("/vendor/uplot", app=PlaygroundStatic(settings.web_dir / "node_modules" / "uplot" / "dist", gz),
              name="uplot"),
    ]
    return routes + [
        Mount("/pyodide", app=PyodideStatic(settings.pyodide_dir, gz), name="pyodide"),
        Mount("/wheels", app=PlaygroundStatic(settings.wheels_dir, gz), name="wheels"),
    ]
