"""Connections no client can hoard: timeouts while a request is read and while it is answered, a
cap below the open-file limit, quiet logs.

uvicorn's HTTP/1.1 protocol (h11) with these additions, made by `protocol_class(settings)`:

- header timeout: a connection must deliver a request's headers within `header_timeout_s` of its
  opening (or of the previous response, on a kept-alive connection), however it trickles them;
  else it gets `408 Request Timeout` and is closed.
- body timeouts: a request body may pause at most `body_timeout_s` between two reads, and must
  arrive whole within `body_timeout_s` plus one second per MIN_BODY_RATE bytes received (Apache's
  mod_reqtimeout rule: a body trickled a few bytes at a time never ends otherwise); else the
  connection is closed (the handler sees a disconnect, so nothing half-read is stored).
- write timeout: an answer whose client does not read it (the socket's buffers full) may stall
  at most `write_timeout_s`; then the connection is reset. Each accepted socket's kernel send
  buffer is SEND_BUFFER, not the megabytes Linux grows it to, so a client that asks for a large
  file and never reads holds at most that and uvicorn's 64 KiB, not the whole file.
- a cap on open connections, `effective_max_connections()`: below the process's open-file limit
  (raised to its hard limit at start, `raise_open_file_limit()`), with room left for the
  database, uploads and worker pipes. A connection past the cap closes the one that has been
  waiting on its client longest (for a request, for more body, or to read its answer) - an idle,
  slow or stalled client, never a request the server is working on - so the accept loop never
  meets EMFILE and a normal client is served however many such sockets are open. While every
  connection is being worked on (1,000 answers just begun), OVER_CAP newcomers may wait past the
  cap for one to go; more are refused.

`quiet_logs()` rate-limits repeated log lines (asyncio's "socket.accept() out of system resource"
and its traceback, among others) and removes tokens from access log lines.
"""

from __future__ import annotations

import asyncio
import logging
import re
import resource
import socket
import struct
import time
from collections import OrderedDict

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from server.settings import Settings

SWEEP_S = 0.5  # how often deadlines are checked
RESERVE_MIN = 64  # file descriptors kept for the database, uploads, static files, worker pipes
OVER_CAP = RESERVE_MIN // 2  # newcomers let in past the cap while no connection can be closed
MIN_BODY_RATE = 4096  # bytes a second a body must average past its first body_timeout_s
# Linux grows a loopback socket's send buffer to 4 MiB: 1,000 clients that never read a 2.5 MB file
# held 1.5 GB of kernel memory. 128 KiB (the kernel doubles it) still fills a link of 10 MB/s at
# 25 ms round trips; on loopback, where the page is served, the round trip is microseconds.
SEND_BUFFER = 128 * 1024

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
    """Shared by all connections of one server: who waits on their client, since when; the cap."""

    def __init__(self, loop: asyncio.AbstractEventLoop, settings: Settings, cap: int,
                 connections: set):
        self.loop, self.cap, self.connections = loop, cap, connections
        self.header_s, self.body_s = settings.header_timeout_s, settings.body_timeout_s
        self.write_s = settings.write_timeout_s
        # Connections waiting on their client (for a request, for more body, to read the answer),
        # the one waiting longest first: eviction takes from the front.
        self.waiting: OrderedDict[GuardedH11Protocol, None] = OrderedDict()
        self.dropped: set[GuardedH11Protocol] = set()  # closed here, not yet gone from connections
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
        self.trim()
        if self.waiting:
            self.loop.call_later(SWEEP_S, self._sweep)
        else:
            self._sweeping = False

    def over(self) -> int:
        return len(self.connections) - len(self.dropped) - self.cap

    def trim(self, keep: GuardedH11Protocol | None = None) -> None:
        """Back to the cap: close the connections that have waited longest on their clients,
        `keep` (the one that just connected or acted) last. When no other can go (1,000 answers
        just begun, say), up to OVER_CAP more may stay past the cap until one waits on its
        client; past that `keep` goes too (a newcomer is refused)."""
        while self.over() > 0:
            victim = next((p for p in self.waiting if p is not keep), None)
            if victim is None:
                if keep is None or self.over() <= OVER_CAP:
                    return
                victim = keep
            self.evicted += 1
            victim.drop(reset=victim._phase() == "stalled")


class GuardedH11Protocol(H11Protocol):
    settings: Settings  # set on the subclass that protocol_class() makes
    cap: int

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
            except OSError:
                pass
        guard = getattr(self.server_state, "_playground_guard", None)
        if guard is None:
            guard = _Guard(self.loop, self.settings, self.cap, self.connections)
            self.server_state._playground_guard = guard  # type: ignore[attr-defined]
        self.guard = guard
        self._headers_since = self._active = self.loop.time()
        self._body_since: float | None = None  # when the current request's body began
        self._body_bytes = 0  # bytes received since then
        self._stalled_since: float | None = None  # when the client last stopped reading
        self._mark()  # waiting for its request: past the cap, another connection goes

    def drop(self, reset: bool = False) -> None:
        """Close now. With `reset`, drop what the client has not read: with SO_LINGER 0 the
        kernel sends a reset and frees the socket's buffers, where a plain close keeps them until
        the client reads or the kernel gives up minutes later."""
        self.guard.waiting.pop(self, None)
        self.guard.dropped.add(self)
        sock = self.transport.get_extra_info("socket")
        if reset and sock is not None:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
        self.transport.abort()

    # -- state: waiting on the client (evictable, under a deadline) or being worked on --------

    def _phase(self) -> str | None:
        if self.transport.is_closing():
            # Closed after its answer (or on the keep-alive timeout) with bytes still unread:
            # asyncio keeps the socket until they are sent, which a client that never reads
            # makes forever.
            return "stalled" if self.transport.get_write_buffer_size() else None
        if self.flow.write_paused:
            return "stalled"
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
        if phase == "body" and self._body_since is None:
            self._body_since, self._body_bytes = self.loop.time(), 0
        if phase == "stalled" and self._stalled_since is None:
            self._stalled_since = self.loop.time()
        self.guard.waiting[self] = None
        self.guard.waiting.move_to_end(self)
        self.guard.start()
        if self.guard.over() > 0:  # a newcomer past the cap, or one let in before: one goes
            self.guard.trim(keep=self)

    def _expired(self, phase: str, now: float) -> bool:
        guard = self.guard
        if phase == "headers":
            return now - self._headers_since > guard.header_s
        if phase == "body":
            return (now - self._active > guard.body_s
                    or now - self._body_since > guard.body_s + self._body_bytes / MIN_BODY_RATE)
        if self._stalled_since is None:  # closed with bytes unread since the last look
            self._stalled_since = now
        return now - self._stalled_since > guard.write_s

    def check_deadline(self, now: float) -> None:
        phase = self._phase()
        if phase is None:
            self.guard.waiting.pop(self, None)
            return
        if not self._expired(phase, now):
            return
        self.guard.timed_out += 1
        if phase == "headers" and self.cycle is None and self.conn.their_state is h11.IDLE:
            self.transport.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain\r\n"
                                 b"content-length: 32\r\nconnection: close\r\n\r\n"
                                 b"request headers took too long.\r\n")
        if phase == "stalled" or self.transport.get_write_buffer_size():
            self.drop(reset=True)  # the client reads nothing (not even a 408)
        else:
            self.guard.waiting.pop(self, None)
            self.transport.close()

    # -- uvicorn's hooks ---------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        self._active = self.loop.time()
        if self._body_since is not None:
            self._body_bytes += len(data)
        super().data_received(data)
        self._mark()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._headers_since = self._active = self.loop.time()  # the next request's clock
        self._body_since = None
        self._mark()

    def pause_writing(self) -> None:
        super().pause_writing()  # the client stopped reading: the answer waits on it
        self._mark()

    def resume_writing(self) -> None:
        super().resume_writing()
        self._stalled_since = None
        if getattr(self, "guard", None) is not None:
            self._mark()

    def connection_lost(self, exc) -> None:
        guard = getattr(self, "guard", None)
        if guard is not None:
            guard.waiting.pop(self, None)
            guard.dropped.discard(self)
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
