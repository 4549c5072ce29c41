"""The benchmark harness's key: `/?suite=NAME` runs a suite by itself only for the harness.

Another website can navigate a visitor's tab to `http://localhost:PORT/?suite=full`; the page must
not start minutes of GPU work and server jobs on that alone. So the page runs a suite without a
click only when the URL also carries `suite_key=` and this route confirms it; otherwise it asks
the person first (web/app.js). The key is per server: `--suite-key` (or PLAYGROUND_SUITE_KEY), else
generated at start and written to <data_dir>/suite.key, readable by this user only
(tools/gpu/run_suite.sh passes its own).

    POST /api/suite/authorize   {"key": "..."} -> 200 {"ok": true}, or 403
"""

from __future__ import annotations

import os
import secrets
from contextlib import asynccontextmanager

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from server.errors import ClientError
from server.jsonbody import read_json

KEY_FILE = "suite.key"


@asynccontextmanager
async def lifespan(app):
    settings = app.state.settings
    if settings.suite_key is None:
        settings.suite_key = secrets.token_urlsafe(24)
    path = settings.data_dir / KEY_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(settings.suite_key + "\n")
        os.chmod(path, 0o600)
    except OSError:
        pass  # a read-only data dir: the key still works, given on the command line
    yield


async def authorize(request: Request) -> JSONResponse:
    body = await read_json(request, 4096)
    key = body.get("key") if isinstance(body, dict) else None
    if not isinstance(key, str):
        raise ClientError(400, "must be a string", field="key")
    expected = request.app.state.settings.suite_key or ""
    if not expected or not secrets.compare_digest(key.encode(errors="replace"), expected.encode()):
        raise ClientError(403, "not this server's suite key", field="key")
    return JSONResponse({"ok": True})


routes = [Route("/api/suite/authorize", authorize, methods=["POST"])]
