"""Connections no client can hoard: read timeouts, a cap below the open-file limit, quiet logs.

uvicorn's HTTP/1.1 protocol (h11) with three additions, made by `protocol_class(settings)`:

- header timeout: a connection must deliver a request's headers within `header_timeout_s` of its
  opening (or of the previous response, on a kept-alive connection), however it trickles them;
  else it gets `408 Request Timeout` and is closed.
- body timeout: a request body may pause at most `body_timeout_s` between two reads; else the
  connection is closed (the handler sees a disconnect, so nothing half-read is stored).
- a cap on open connections, `effective_max_connections()`: below the process's open-file limit
  (raised to its hard limit at start, `raise_open_file_limit()`), with room left for the
  database, uploads and worker pipes. A connection past the cap closes the one that has been
  waiting on its client longest (for a request or for more body) - an idle or slow client, never
  a request being answered - so the accept loop never meets EMFILE and a normal client is served
  however many idle sockets are open.

`quiet_logs()` rate-limits repeated log lines (asyncio's "socket.accept() out of system resource"
and its traceback, among others) and removes tokens from access log lines.
"""

from __future__ import annotations

import asyncio
import logging
import re
import resource
import time
from collections import OrderedDict

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from server.settings import Settings

SWEEP_S = 0.5  # how often deadlines are checked
RESERVE_MIN = 64  # file descriptors kept for the database, uploads, static files, worker pipes

log = logging.getLogger(__name__)


def raise_open_file_limit(target: int = 65536) -> int:
    """Raise the soft RLIMIT_NOFILE towards the hard limit (allowed without privileges); return
    the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = target if hard == resource.RLIM_INFINITY else min(target, hard)
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (ValueError, OSError):
            pass
    return soft if soft != resource.RLIM_INFINITY else target


def effective_max_connections(setting: int, nofile: int | None = None) -> int:
    """The connection cap: the setting, but always below the open-file limit minus a reserve."""
    if nofile is None:
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        nofile = 65536 if soft == resource.RLIM_INFINITY else soft
    reserve = max(RESERVE_MIN, nofile // 8)
    return max(8, min(setting, nofile - reserve))


class _Guard:
    """Shared by all connections of one server: who waits on their client, since when."""

    def __init__(self, loop: asyncio.AbstractEventLoop, header_s: float, body_s: float, cap: int):
        self.loop, self.header_s, self.body_s, self.cap = loop, header_s, body_s, cap
        self.waiting: OrderedDict[GuardedH11Protocol, None] = OrderedDict()  # oldest activity first
        self.evicted = self.timed_out = 0
        self._sweeping = False

    def start(self) -> None:
        if not self._sweeping:
            self._sweeping = True
            self.loop.call_later(SWEEP_S, self._sweep)

    def _sweep(self) -> None:
        now = self.loop.time()
        for proto in list(self.waiting):
            proto.check_deadline(now)
        if self.waiting:
            self.loop.call_later(SWEEP_S, self._sweep)
        else:
            self._sweeping = False


class GuardedH11Protocol(H11Protocol):
    settings: Settings  # set on the subclass that protocol_class() makes
    cap: int

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        guard = getattr(self.server_state, "_playground_guard", None)
        if guard is None:
            guard = _Guard(self.loop, self.settings.header_timeout_s, self.settings.body_timeout_s,
                           self.cap)
            self.server_state._playground_guard = guard  # type: ignore[attr-defined]
        self.guard = guard
        self._headers_since = self._active = self.loop.time()
        self._mark()
        if len(self.connections) > guard.cap:
            self._evict_one()

    def _evict_one(self) -> None:
        guard = self.guard
        victim = next((p for p in guard.waiting if p is not self), None)
        if victim is None:  # every other connection is being answered: refuse this one
            victim = self
        guard.waiting.pop(victim, None)
        guard.evicted += 1
        victim.transport.abort()

    # -- state: waiting on the client (evictable, under a deadline) or being answered --------

    def _phase(self) -> str | None:
        if self.transport.is_closing():
            return None
        if self.cycle is None or self.cycle.response_complete:
            return "headers"
        if self.conn.their_state is h11.SEND_BODY:
            return "body"
        return None  # the app has the whole request: answering it

    def _mark(self) -> None:
        phase = self._phase()
        if phase is None:
            self.guard.waiting.pop(self, None)
            return
        self.guard.waiting[self] = None
        self.guard.waiting.move_to_end(self)
        self.guard.start()

    def check_deadline(self, now: float) -> None:
        phase = self._phase()
        if phase == "headers" and now - self._headers_since > self.guard.header_s:
            self.guard.timed_out += 1
            self.guard.waiting.pop(self, None)
            if self.cycle is None and self.conn.their_state is h11.IDLE:
                self.transport.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain\r\n"
                                     b"content-length: 32\r\nconnection: close\r\n\r\n"
                                     b"request headers took too long.\r\n")
            self.transport.close()
        elif phase == "body" and now - self._active > self.guard.body_s:
            self.guard.timed_out += 1
            self.guard.waiting.pop(self, None)
            self.transport.close()
        elif phase is None:
            self.guard.waiting.pop(self, None)

    # -- uvicorn's hooks ---------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        self._active = self.loop.time()
        super().data_received(data)
        self._mark()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._headers_since = self._active = self.loop.time()  # the next request's clock
        self._mark()

    def connection_lost(self, exc) -> None:
        guard = getattr(self, "guard", None)
        if guard is not None:
            guard.waiting.pop(self, None)
        super().connection_lost(exc)

    def __hash__(self) -> int:
        return id(self)


def protocol_class(settings: Settings, nofile: int | None = None) -> type[GuardedH11Protocol]:
    """The protocol class for uvicorn.Config(http=...), carrying the settings and the cap."""
    return type("PlaygroundH11Protocol", (GuardedH11Protocol,),
                {"settings": settings, "cap": effective_max_connections(settings.max_connections, nofile)})


# --- logs ------------------------------------------------------------------------------------

class RateLimit(logging.Filter):
    """At most `burst` records with the same message template per `window_s`; the next one that
    passes says how many were dropped. Tracebacks of repeated records are dropped with them."""

    def __init__(self, window_s: float = 10.0, burst: int = 3):
        super().__init__()
        self.window_s, self.burst = window_s, burst
        self._seen: dict[str, list] = {}  # template -> [window start, count, dropped]

    def filter(self, record: logging.LogRecord) -> bool:
        key = f"{record.name}:{record.msg}"[:200]
        now = time.monotonic()
        entry = self._seen.get(key)
        if entry is None or now - entry[0] > self.window_s:
            dropped = entry[2] if entry else 0
            self._seen[key] = [now, 1, 0]
            if len(self._seen) > 1000:  # a bound on the table itself
                self._seen = {key: self._seen[key]}
            if dropped:
                record.msg = f"{record.msg} (and {dropped} more like it in {self.window_s:.0f} s, not shown)"
            return True
        entry[1] += 1
        if entry[1] <= self.burst:
            return True
        entry[2] += 1
        return False


_TOKEN_RE = re.compile(r"((?:^|[?&;])(?:token|suite_key)=)[^&;\s\"]*", re.IGNORECASE)


def redact(text: str) -> str:
    return _TOKEN_RE.sub(r"\1[redacted]", text)


class RedactTokens(logging.Filter):
    """Access log lines name the path with its query: `?token=` and `suite_key=` values go."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and record.args:
            record.args = tuple(redact(a) if isinstance(a, str) and "=" in a else a for a in record.args)
        if isinstance(record.msg, str) and "=" in record.msg:
            record.msg = redact(record.msg)
        return True


_installed: list[tuple[logging.Logger, logging.Filter]] = []


def quiet_logs() -> None:
    """Install the filters (idempotent): rate limits on asyncio and uvicorn's error log, token
    redaction on the access log."""
    if _installed:
        return
    for name, flt in (("asyncio", RateLimit()), ("uvicorn.error", RateLimit()),
                      ("uvicorn.access", RedactTokens()), ("uvicorn.access", RateLimit(1.0, 200))):
        logger = logging.getLogger(name)
        logger.addFilter(flt)
        _installed.append((logger, flt))


def loop_exception_handler(loop: asyncio.AbstractEventLoop, context: dict) -> None:
    """asyncio's default handler logs each accept() failure with a traceback; this one logs a
    line (rate-limited by the filter on the asyncio logger), the traceback only in debug."""
    exc = context.get("exception")
    message = context.get("message", "unhandled error in the event loop")
    if exc is not None and isinstance(exc, OSError):
        logging.getLogger("asyncio").error("%s: %s", message, exc)
        return
    loop.default_exception_handler(context)
