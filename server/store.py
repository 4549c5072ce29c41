"""SQLite store: WAL mode, one writer thread, a pool of reader connections.

Why one writer: SQLite allows one write transaction at a time anyway; funnelling every write
through one thread and one connection means writers never wait on SQLite's file lock (no
"database is locked"), and the event loop never blocks on disk: async code awaits a future that
the writer resolves only after COMMIT returns, so a write is acknowledged only once it is durable
(WAL with synchronous=FULL syncs the log on every commit).

Readers get their own connections (WAL lets them read while the writer writes) and run in worker
threads. Other modules use the same store:

    store.add_schema("CREATE TABLE IF NOT EXISTS jobs (...)")   # before open()
    row_id = await store.write(lambda conn: conn.execute("INSERT ...", args).lastrowid)
    rows = await store.read(lambda conn: conn.execute("SELECT ...").fetchall())

From a plain worker thread (a comparison runner, say) use `write_sync` / `read_sync`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import sqlite3
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Callable, TypeVar

import anyio.to_thread

log = logging.getLogger(__name__)
T = TypeVar("T")

BUSY_TIMEOUT_MS = 10_000  # another process (a CLI tool, a backup) may hold the lock briefly

# Primary SQLite result codes that mean "the store cannot take this now", not "your request is bad".
_UNAVAILABLE = {
    5: "the database is busy",  # SQLITE_BUSY, after busy_timeout
    6: "the database is locked",  # SQLITE_LOCKED
    8: "the database is read-only",  # SQLITE_READONLY
    10: "disk I/O error",  # SQLITE_IOERR
    13: "the disk is full",  # SQLITE_FULL
    14: "the database file cannot be opened",  # SQLITE_CANTOPEN
    3: "permission denied on the database",  # SQLITE_PERM
    11: "the database file is damaged (malformed)",  # SQLITE_CORRUPT: restore or recover it
    26: "the database file is not a database",  # SQLITE_NOTADB
}


class StoreUnavailable(Exception):
    """The store cannot serve the request (disk full, read-only, I/O error); the API answers 503."""


def _translate(exc: sqlite3.Error) -> Exception:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in _UNAVAILABLE:
        return StoreUnavailable(f"{_UNAVAILABLE[code & 0xFF]} ({exc})")
    return exc


class Store:
    def __init__(self, path: Path | str):
        self.path = Path(path)
        self._schemas: list[str] = []
        self._migrations: list[Callable[[sqlite3.Connection], None]] = []
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()  # (fn, Future) or None to stop
        self._writer: threading.Thread | None = None
        self._readers: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        self._all_readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._closed = True
        self._submit_lock = threading.Lock()  # no job may slip in behind close()'s stop marker

    # -- life cycle -----------------------------------------------------------------------------

    def add_schema(self, sql: str) -> None:
        """Register CREATE TABLE/INDEX IF NOT EXISTS statements; they run at open()."""
        if not self._closed:
            raise RuntimeError("add_schema must be called before open()")
        if sql not in self._schemas:
            self._schemas.append(sql)

    def add_migration(self, fn: Callable[[sqlite3.Connection], None]) -> None:
        """Register fn(conn), run at open() after the schemas, in its own write transaction:
        it brings an older database up to date (ALTER TABLE ... ADD COLUMN, backfills) and must
        do nothing on one that is already."""
        if not self._closed:
            raise RuntimeError("add_migration must be called before open()")
        if fn not in self._migrations:
            self._migrations.append(fn)

    def open(self) -> None:
        """Create the file if needed, switch to WAL, migrate, start the writer thread."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():
            self._create()
        conn = self._connect()
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            self.migrate(conn)
        except BaseException:
            conn.close()
            raise
        self._closed = False
        self._writer = threading.Thread(target=self._write_loop, args=(conn,), name="store-writer",
                                        daemon=True)
        self._writer.start()

    def _create(self) -> None:
        """A new database, made aside in WAL mode (which writes its header) and moved into
        place: a crash never leaves an empty file at `path`, so start-up can refuse one as a
        store that was cut short (server/datadir.py) instead of starting empty over it."""
        new = self.path.with_name(self.path.name + ".new")
        new.unlink(missing_ok=True)
        conn = sqlite3.connect(new, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
        finally:
            conn.close()
        os.replace(new, self.path)

    def migrate(self, conn: sqlite3.Connection) -> None:
        # One transaction for all schemas: a half-created set of tables is never left behind.
        conn.executescript("BEGIN IMMEDIATE;\n" + ";\n".join(self._schemas) + ";\nCOMMIT;")
        for fn in self._migrations:
            conn.execute("BEGIN IMMEDIATE")
            try:
                fn(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def close(self) -> None:
        """Finish queued writes, then close every connection."""
        with self._submit_lock:
            if self._closed:
                return
            self._closed = True
            self._jobs.put(None)
        assert self._writer is not None
        self._writer.join()
        # Idle readers now; a reader in use on another thread is closed by that thread when it
        # hands it back (closing a connection under a running query can crash the process).
        with self._readers_lock:
            while True:
                try:
                    conn = self._readers.get_nowait()
                except queue.Empty:
                    break
                conn.close()
                self._all_readers.remove(conn)

    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: we issue BEGIN/COMMIT ourselves, so a commit is exactly where we say.
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA synchronous=FULL")  # durable once COMMIT returns, even on power loss
        conn.execute("PRAGMA foreign_keys=ON")
        conn.row_factory = sqlite3.Row
        return conn

    # -- writes ---------------------------------------------------------------------------------

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run fn(conn) in one write transaction on the writer thread; return after COMMIT."""
        return await asyncio.wrap_future(self._submit(fn))

    def write_sync(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """write() for plain threads. Never call it from the event loop (it blocks) or from fn."""
        if threading.current_thread() is self._writer:
            raise RuntimeError("write_sync called from inside a write: it would wait on itself")
        return self._submit(fn).result()

    def _submit(self, fn: Callable[[sqlite3.Connection], T]) -> Future:
        fut: Future = Future()
        with self._submit_lock:
            if self._closed:
                fut.set_exception(StoreUnavailable("the store is closed"))
            else:
                self._jobs.put((fn, fut))
        return fut

    def _write_loop(self, conn: sqlite3.Connection) -> None:
        while (job := self._jobs.get()) is not None:
            fn, fut = job
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    result = fn(conn)
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                fut.set_exception(_translate(exc))
            except BaseException as exc:  # fn's own error: hand it to the caller, keep writing
                fut.set_exception(exc)
            else:
                fut.set_result(result)
        conn.close()

    # -- reads ----------------------------------------------------------------------------------

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run fn(conn) in one read transaction (a consistent snapshot) on a worker thread."""
        return await anyio.to_thread.run_sync(self.read_sync, fn)

    def read_sync(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        if self._closed:
            raise StoreUnavailable("the store is closed")
        try:
            conn = self._readers.get_nowait()
        except queue.Empty:
            conn = self._new_reader()
        try:
            conn.execute("BEGIN")
            try:
                return fn(conn)
            finally:
                conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise _translate(exc) from exc
        finally:
            with self._readers_lock:
                if self._closed:  # close() ran meanwhile: this reader is the last to use it
                    conn.close()
                    self._all_readers.remove(conn)
                else:
                    self._readers.put(conn)

    def _new_reader(self) -> sqlite3.Connection:
        try:
            conn = self._connect()
            conn.execute("PRAGMA query_only=1")  # a reader that tries to write is a bug: fail loudly
        except sqlite3.Error as exc:
            raise _translate(exc) from exc
        with self._readers_lock:
            self._all_readers.append(conn)
        return conn
