"""The data dir at start-up: one server at a time (a lock file), a sound and writable database
(not empty, its -wal and -shm files plain files, quick_check, a write transaction), no orphan
files. `python -m server` calls `preflight(settings)` before uvicorn starts, so each
problem ends the process with one paragraph naming the file and what to do, and no traceback.

    lock = preflight(settings)        # StartupError(message) when the server must not start
    remove_orphans(conn, folder, "datasets", ".csv")   # files without a row, after a crash
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import sqlite3
from pathlib import Path

from server.settings import Settings

LOCK_NAME = ".playground.lock"
UPLOAD_FILE_RE = re.compile(r"[0-9a-f]{32}\Z")
_held: dict[Path, "DataDirLock"] = {}  # this process's locks, by data dir


class StartupError(Exception):
    """The server must not start; the message is the paragraph to print."""


class DataDirLock:
    """An exclusive flock on <data_dir>/.playground.lock, held while the server runs. The kernel
    drops it when the process dies, however it dies: a stale file never blocks a restart."""

    def __init__(self, data_dir: Path):
        self.data_dir = Path(data_dir).resolve()
        self.path = self.data_dir / LOCK_NAME
        self._fd: int | None = None
        self._users = 0

    @classmethod
    def for_dir(cls, data_dir: Path) -> "DataDirLock":
        key = Path(data_dir).resolve()
        return _held.get(key) or cls(key)

    def acquire(self) -> "DataDirLock":
        if self._fd is not None:  # the same process, again (main() then the app's lifespan)
            self._users += 1
            return self
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            other = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise StartupError(
                    f"Another playground server (pid {other}) is already using the data dir "
                    f"{self.data_dir} (it holds the lock {self.path}). Two servers on one data dir "
                    "would fail each other's jobs and delete each other's uploads. Stop the other "
                    "server, or start this one with --data-dir pointing at another folder.") from None
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd, self._users = fd, 1
        _held[self.data_dir] = self
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        self._users -= 1
        if self._users > 0:
            return
        _held.pop(self.data_dir, None)
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
        except OSError:
            pass
        os.close(fd)  # closing the descriptor drops the flock


SIDE_FILES = {"-wal": "write-ahead log", "-shm": "shared-memory index"}


def check_database(path: Path) -> None:
    """An existing database that the server must not open as it is: StartupError saying what to
    do. Checked before SQLite opens it (SQLite deletes the -wal beside an empty file)."""
    if not path.exists():
        return
    for suffix, what in SIDE_FILES.items():
        side = path.with_name(path.name + suffix)
        if side.exists() and not side.is_file():
            raise StartupError(
                f"{side} is not a file (a directory?), but SQLite keeps the database's {what} "
                "there, so the server did not start and changed nothing. Move it out of the way "
                f"(`mv {side} {side}.aside`) and start again: SQLite makes a new one.")
    if path.stat().st_size == 0:
        wal = path.with_name(path.name + "-wal")
        beside = (f" The {wal.name} beside it holds {wal.stat().st_size:,} bytes: keep it with "
                  "any copy you restore." if wal.is_file() and wal.stat().st_size else "")
        raise StartupError(
            f"The database {path} is empty (0 bytes), so the server did not start and changed "
            "nothing. This server never leaves an empty database behind (it makes a new one "
            "aside and moves it into place), so the file was cut short: a copy or a restore "
            f"that failed, a full disk, a truncation. Restore it from a backup.{beside} To start "
            f"afresh instead, move the whole data dir {path.parent} aside (or start with another "
            "--data-dir): its uploads stay in the old folder.")
    _check_sound(path)
    _check_writable(path)


def _check_sound(path: Path) -> None:
    problem = None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            rows = [r[0] for r in conn.execute("PRAGMA quick_check(5)")]
        finally:
            conn.close()
        if rows != ["ok"]:
            problem = "; ".join(rows)
    except sqlite3.DatabaseError as exc:  # "file is not a database", "disk image is malformed"
        problem = str(exc)
    except OSError as exc:
        problem = exc.strerror or str(exc)
    if problem is None:
        return
    raise StartupError(
        f"The database {path} is damaged ({problem[:300]}), so the server did not start and "
        "changed nothing. To keep what it holds, stop anything else using it, then run "
        f"`sqlite3 {path} .recover | sqlite3 {path.with_name('recovered.sqlite3')}` and, once that "
        f"succeeds, move recovered.sqlite3 over {path.name} (delete the {path.name}-wal and "
        f"{path.name}-shm files beside it). To start afresh instead, move the whole data dir "
        f"{path.parent} aside (or start with another --data-dir): stored runs and uploads stay "
        "in the old folder.")


def _check_writable(path: Path) -> None:
    """A write transaction begins and is rolled back: a read-only file, folder or mount (or a
    -shm SQLite cannot map) is refused here, with what to do, not by a traceback later."""
    try:
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StartupError(
            f"The database {path} cannot be written ({exc}), so the server did not start: it "
            "stores every run the page trains. Check that this user may write the file, the "
            f"{path.name}-wal and {path.name}-shm files beside it and the folder {path.parent}, "
            "that the disk is not mounted read-only or full, and that no other program holds "
            "the database locked; or start with another --data-dir.") from None


def preflight(settings: Settings) -> DataDirLock:
    """Make the data dir, take its lock, check its database. Call release() on the lock at exit."""
    try:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        lock = DataDirLock.for_dir(settings.data_dir).acquire()
    except OSError as exc:
        raise StartupError(
            f"The data dir {settings.data_dir} cannot be used: {exc.strerror or exc}. Check that it "
            "exists, is writable by this user and the disk is not full, or start with another "
            "--data-dir.") from None
    try:
        check_database(settings.db_path)
    except BaseException:
        lock.release()
        raise
    return lock


def remove_orphans(conn: sqlite3.Connection, folder: Path, table: str, suffix: str) -> list[Path]:
    """Delete <folder>/<32 hex><suffix> files that no row of `table` names (a crash between the
    file's move and its row's commit leaves one). Built-ins (named files) are never touched."""
    if not folder.is_dir():
        return []
    known = {r[0] for r in conn.execute(f"SELECT id FROM {table}")}
    removed = []
    for path in folder.iterdir():
        stem = path.name[: -len(suffix)] if path.name.endswith(suffix) else None
        if stem and UPLOAD_FILE_RE.match(stem) and stem not in known:
            try:
                path.unlink()
                removed.append(path)
            except OSError:
                pass
    return removed
