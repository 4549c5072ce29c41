"""The page's files: `/` (web/index.html), `/web/`, `/pyodide/`, `/wheels/`, `/shaders/`.

Starlette's StaticFiles, with three changes: media types from our own table (browsers refuse a
`.wasm` for streaming compilation or an ES module served with the wrong type, and the system's
mimetypes database differs between machines); a missing folder answers 404 rather than raising
(web/node_modules exists only after `npm install`); and any OS error looking a path up is a 404.
Paths that resolve outside the folder (`..`, `%2e%2e`, absolute, symlinks pointing out) are 404:
StaticFiles resolves symlinks and compares against the folder's real path.
"""

from __future__ import annotations

import os
from pathlib import Path

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


def media_type_for(path: str) -> str:
    return MEDIA_TYPES.get(os.path.splitext(path)[1].lower(), DEFAULT_MEDIA_TYPE)


class PlaygroundStatic(StaticFiles):
    def __init__(self, directory: Path):
        super().__init__(directory=directory, check_dir=False)

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
        # Revalidate every time: the page changes during development, and a 304 costs little.
        response.headers["cache-control"] = "no-cache"
        return response


def static_routes(settings: Settings) -> list:
    web = PlaygroundStatic(settings.web_dir)

    async def index(request: Request) -> Response:
        try:
            return await web.get_response("index.html", request.scope)
        except HTTPException:
            raise HTTPException(404, f"{settings.web_dir / 'index.html'} is missing") from None

    return [
        Route("/", index, methods=["GET", "HEAD"]),
        Mount("/web", app=web, name="web"),
        Mount("/pyodide", app=PlaygroundStatic(settings.pyodide_dir), name="pyodide"),
        Mount("/wheels", app=PlaygroundStatic(settings.wheels_dir), name="wheels"),
        Mount("/shaders", app=PlaygroundStatic(settings.shaders_dir), name="shaders"),
    ]
