"""Comparison jobs' ends that the store refused (a full disk, a read-only file): kept in memory
and written, with the time each job really ended, once the store takes writes again; tried again
with the cluster's backoff (server/cluster.py). Without this a job that ended while the disk was
full lost its result and its row stayed `running` for good.

    ends = JobEnds(store, finish)           # finish(id, out, ended) -> a write transaction body
    await ends.record(id, out)              # written now, or kept and written later
    ends.why(id)                            # what a row still `running` waits for, or None
    await ends.flush()                      # all kept ends in one transaction (shutdown)

At most UNRECORDED_BYTES of results are kept: past that a result is dropped and its row is
failed saying what was lost (a full disk must not fill the memory as well).
"""
from __future__ import annotations

import asyncio
import json
import logging
from datetime import datetime, timezone

from server import cluster
from server.store import StoreUnavailable

log = logging.getLogger(__name__)
UNRECORDED_BYTES = 64 * 2**20


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


class JobEnds:
    def __init__(self, store, finish):
        self.store, self.finish = store, finish
        # job id -> (its end as `finish` takes it, when it ended, bytes kept, why not written)
        self.kept: dict[int, tuple[dict, str, int, str]] = {}
        self._retry: asyncio.Task | None = None

    async def record(self, job_id: int, out: dict) -> None:
        ended = now()
        try:
            await self.store.write(self.finish(job_id, out, ended))
            return
        except StoreUnavailable as exc:
            problem = str(exc)
        size = len(json.dumps(out.get("result"), ensure_ascii=False, default=str))
        if size > UNRECORDED_BYTES - sum(entry[2] for entry in self.kept.values()):
            out = {"status": "failed", "error": (
                f"this job ended ({out['status']}) at {ended}, but the store could not be written "
                f"then ({problem}) and its result ({size / 2**20:.1f} MB) was more than the "
                f"server keeps in memory meanwhile ({UNRECORDED_BYTES / 2**20:g} MB for all "
                "such jobs): run it again")}
            size = 0
        self.kept[job_id] = (out, ended, size, problem)
        log.error("comparison %s ended at %s; the store refused its end (%s): kept in memory, "
                  "written when it can be", job_id, ended, problem)
        if self._retry is None or self._retry.done():
            self._retry = asyncio.create_task(self._flush_later(), name="comparison ends")

    async def _flush_later(self) -> None:
        failures = 0
        while self.kept:
            await asyncio.sleep(cluster.backoff(failures + 1))
            try:
                await self.flush()
            except StoreUnavailable:
                failures += 1

    async def flush(self) -> None:
        """Write every kept end in one transaction; StoreUnavailable keeps them all."""
        if not self.kept:
            return
        ends = dict(self.kept)

        def fn(conn) -> None:
            for job_id, (out, ended, *_) in ends.items():
                self.finish(job_id, out, ended)(conn)

        await self.store.write(fn)
        for job_id in ends:
            self.kept.pop(job_id, None)
        log.info("comparisons: recorded %d job end(s) the store had refused", len(ends))

    def why(self, job_id: int) -> str | None:
        if job_id not in self.kept:
            return None
        out, ended, _, problem = self.kept[job_id]
        return (f"ended ({out['status']}) at {ended}; recorded when the store can be written "
                f"again ({problem})")

    async def close(self) -> None:
        """Stop retrying, then write what is kept once more (StoreUnavailable when refused)."""
        if self._retry is not None:
            self._retry.cancel()
            await asyncio.gather(self._retry, return_exceptions=True)
        await self.flush()
