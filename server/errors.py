"""Errors as JSON: `{"error": {"message": ..., "field": ...}}`.

Anything a client can send ends in a 4xx naming what was wrong; a 500 means a bug in the server.
Feature modules raise `ClientError(400, "must be a string", field="kind")`.
"""

from __future__ import annotations

import errno
import json
import logging

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse

from server.store import StoreUnavailable

log = logging.getLogger(__name__)


class ClientError(Exception):
    """A request the server refuses; `field` is a dotted path into the body ("config.n_bins")."""

    def __init__(self, status: int, message: str, field: str | None = None,
                 headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.field = status, message, field
        self.headers = headers  # e.g. Retry-After with a 429


class _ErrorJSON(JSONResponse):
    def render(self, content) -> bytes:
        # ASCII with escapes: a field name echoed from the body may hold a lone surrogate, which
        # UTF-8 cannot encode but a JSON \u escape can.
        return json.dumps(content, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def error_response(status: int, message: str, field: str | None = None, headers=None) -> JSONResponse:
    return _ErrorJSON({"error": {"message": message, "field": field}}, status, headers=headers)


async def client_error(request: Request, exc: ClientError) -> JSONResponse:
    return error_response(exc.status, exc.message, exc.field, headers=exc.headers)


async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
    # Routing's 404/405 and Starlette's own HTTPExceptions, in the same shape as ours.
    return error_response(exc.status_code, exc.detail, headers=exc.headers)


async def client_disconnected(request: Request, exc: ClientDisconnect) -> JSONResponse:
    # The client left mid-body: nobody reads this answer, but it must not be logged as a bug.
    return error_response(400, "client disconnected before sending the whole body")


async def store_unavailable(request: Request, exc: StoreUnavailable) -> JSONResponse:
    log.error("store unavailable: %s", exc)
    # Retry-After: a full disk or a read-only mount needs a person, but a busy lock clears soon.
    return error_response(503, f"The server cannot store data right now: {exc}",
                          headers={"Retry-After": "30"})


# OS errors that mean "the disk or the data dir cannot take this now", not "your request is bad".
STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO,
                  errno.EFBIG, errno.EMFILE, errno.ENFILE, errno.ENOMEM}


async def os_error(request: Request, exc: OSError) -> JSONResponse:
    if exc.errno in STORAGE_ERRNOS:
        log.error("storage unavailable on %s %s: %s", request.method, request.url.path,
                  exc.strerror or exc)
        return error_response(503, f"The server cannot store or read data right now: "
                              f"{exc.strerror or exc}", headers={"Retry-After": "30"})
    log.error("unexpected OS error on %s %s", request.method, request.url.path, exc_info=exc)
    return error_response(500, "Internal server error (a bug in the server; see its log).")


async def server_bug(request: Request, exc: Exception) -> JSONResponse:
    # Starlette's ServerErrorMiddleware calls this, then re-raises so uvicorn logs the traceback.
    return error_response(500, "Internal server error (a bug in the server; see its log).")


EXCEPTION_HANDLERS = {
    ClientError: client_error,
    HTTPException: http_error,
    ClientDisconnect: client_disconnected,
    StoreUnavailable: store_unavailable,
    OSError: os_error,
    Exception: server_bug,
}
