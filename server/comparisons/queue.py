"""The comparison jobs of one server: admission (caps, queue room), queueing, and dispatch of the
claimed rows as tasks on a Dask cluster (server/cluster.py), each run by server/runners/task.py.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import math
import re
import uuid
from dataclasses import dataclass, field

from starlette.requests import Request

from py_core.jobs import kind as kind_of
from server import jobcost
from server.cluster import Cluster, backoff
from server.comparisons import table
from server.comparisons.table import Claimed
from server.errors import ClientError
from server.job_ends import JobEnds
from server.runners import RUNNERS, runners_for
from server.settings import default_job_memory_mb
from server.store import StoreUnavailable

log = logging.getLogger("server.comparisons")

WORKER_DIED = ("the worker running this job died {n} time(s) (killed, out of memory, its machine "
               "gone); POST /api/runs/{id}/comparisons queues it again")
LOST = ("the Dask scheduler went away during this job ({error}); POST /api/runs/{id}/comparisons "
        "queues it again")


@dataclass
class Limits:
    timeout_s: float = 1800.0    # a job's wall clock, enforced in the worker
    memory_mb: float = field(default_factory=default_job_memory_mb)  # resident, in the worker
    retries: int = 2             # a job whose worker died runs again at most this often
    client_queue: int = 50       # jobs queued or running for one client
    queue: int = 1000            # jobs queued or running in all
    caps: dict = field(default_factory=lambda: {k: v for k, (v, _) in jobcost.CAPS.items()})


class QueueFull(ClientError):
    def __init__(self, message: str, retry_after: int):
        super().__init__(429, message, field=None)
        self.headers = {"Retry-After": str(retry_after)}


def job_problem(run: dict) -> str | None:
    """Why the run's config is not a job the server can run again, or None."""
    job = run.get("config")
    if not isinstance(job, dict) or job.get("kind") != run["kind"]:
        return "the run's config is not its job (expected {\"kind\": \"%s\", ...})" % run["kind"]
    found = kind_of(run["kind"])
    needs = found.needs if found is not None else ()
    missing = [key for key in needs if not isinstance(job.get(key), str) or not job[key]]
    if missing:
        return f"the run's job has no {' or '.join(repr(k) for k in missing)}: nothing to rerun"
    return None


class Queue:
    """The comparison jobs of one server: rows in the store, tasks on a Dask cluster."""

    def __init__(self, store, data_dir, device: str, workers: int = 1,
                 runners: list[str] | None = None, cluster: str | None = None,
                 limits: Limits | None = None):
        if workers < 1:
            raise ValueError(f"comparison_workers must be at least 1, not {workers}")
        unknown = set(runners or ()) - set(RUNNERS)
        if unknown:
            raise ValueError(f"comparison_runners: no runner {sorted(unknown)}; the runners are "
                             f"{', '.join(RUNNERS)}")
        self.store, self.data_dir, self.device, self.workers = store, str(data_dir), device, workers
        self.runners = runners  # None: all of them
        self.address, self.limits = cluster or None, limits or Limits()
        self.dask = Cluster(self.address, workers, self.limits.retries)
        self._wake = asyncio.Event()
        self._inflight: dict[int, asyncio.Task] = {}
        self._futures: dict[int, object] = {}
        self._cancelling: set[int] = set()
        # run id -> (client, estimate or OverCap), from POST /api/runs' check to its enqueue
        self._admitted: dict[str, tuple] = {}
        self._loop_task: asyncio.Task | None = None
        self.store_problem: str | None = None  # why a claim failed: the store refused it
        self.ends = JobEnds(store, table.finish)  # job ends the store refused, kept until it takes them

    # -- life cycle -----------------------------------------------------------------------------
    async def start(self) -> None:
        await self.store.write(table.add_columns)
        failed = await self.store.write(table.fail_running)
        if failed:
            log.warning("%d comparison(s) were running when the server stopped: marked failed",
                        failed)
        self._loop_task = asyncio.create_task(self._dispatch(), name="comparisons")
        self._wake.set()  # resume what is queued

    @property
    def problem(self) -> str | None:
        """Why queued jobs wait (GET .../comparisons shows it), or None when nothing stops them."""
        return "; ".join(p for p in (self.dask.problem, self.store_problem) if p) or None

    @property
    def client(self):
        return self.dask.client

    def capacity(self) -> int:
        return self.dask.capacity

    async def stop(self) -> None:
        """Stop dispatching, cancel running tasks, put their rows back in the queue, write the
        job ends the store refused until now (once more: what still fails is logged)."""
        if self._loop_task is not None and self.dask.connecting and not self.address:
            deadline = asyncio.get_running_loop().time() + 120
            while self.dask.connecting and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.1)  # a cluster half started would leave its processes
            if self.dask.connecting:
                log.warning("comparisons: the Dask cluster did not start within 120 s")
        if self._loop_task is not None:
            self._loop_task.cancel()
            await asyncio.gather(self._loop_task, return_exceptions=True)
        running, tasks = list(self._inflight), list(self._inflight.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        try:
            if running:
                await self.store.write(table.requeue(running))
                log.info("comparison(s) %s interrupted by shutdown: queued again", running)
            await self.ends.close()
        except StoreUnavailable as exc:  # left `running`: the next start marks them failed
            log.error("comparisons: at shutdown the store refused %d job end(s): %s",
                      len(running) + len(self.ends.kept), exc)
        await self.dask.close(self._futures.values())

    # -- admission ------------------------------------------------------------------------------
    def check_caps(self, run: dict) -> dict:
        """The job's estimate; OverCap when it breaks a cap."""
        return jobcost.check(run.get("config"), self.data_dir, self.limits.caps)

    async def admit(self, run: dict) -> dict | jobcost.Refused | None:
        """The run's job against the caps: its estimate, the OverCap it breaks, or None for a
        run whose config is not a job (job_problem says why)."""
        if job_problem(run) is not None:
            return None
        try:
            return await asyncio.to_thread(self.check_caps, run)
        except jobcost.Refused as exc:
            return exc

    async def check_room(self, client: str, jobs: int) -> None:
        """QueueFull (429) when `jobs` more would take the client or the server past its limit."""
        if not jobs:
            return
        mine, total, avg = await self.store.read(table.load(client))
        for count, limit, who in ((mine, self.limits.client_queue, "your"),
                                  (total, self.limits.queue, "the server's")):
            if limit and count + jobs > limit:
                per = max(1, self.capacity() or self.workers)
                wait = int(min(3600, max(1, math.ceil((count - limit + jobs) * avg / per))))
                raise QueueFull(f"{who} comparison queue is full ({count} job(s) queued or "
                                f"running, at most {limit}; --"
                                f"{'client-queue-limit' if who == 'your' else 'queue-limit'}); "
                                f"try again in {wait} s", wait)

    def queueable(self, run: dict, runners: list[str] | None = None) -> list:
        """The runners that would queue a job for this run (not turned off, able to run here)."""
        return [r for r in self.jobs_for(run, runners)
                if (self.runners is None or r.name in self.runners) and not r.check(self.device)]

    def jobs_for(self, run: dict, runners: list[str] | None = None) -> list:
        return [r for r in runners_for(run.get("kind")) if runners is None or r.name in runners]

    async def before_run_stored(self, run: dict, request: Request) -> None:
        """POST /api/runs, before the insert: a full queue refuses the post with 429 (a run over
        a cap queues nothing, so it is never refused for room)."""
        if not self.jobs_for(run):
            return
        exists = await self.store.read(lambda conn: conn.execute(
            "SELECT 1 FROM runs WHERE id = ?", (run["id"],)).fetchone())
        if exists:
            return
        client, admitted = client_of(request), await self.admit(run)
        if not isinstance(admitted, jobcost.Refused):
            await self.check_room(client, len(self.queueable(run)))
        self._admitted[run["id"]] = (client, admitted)

    # -- queueing -------------------------------------------------------------------------------
    async def enqueue(self, run: dict, runners: list[str] | None = None,
                      client: str | None = None, admitted=None) -> None:
        """One row per runner of the run's kind (on_run_stored callback: a run just stored).
        admitted: what `admit` said of the run, when the caller asked it already."""
        chosen = self.jobs_for(run, runners)
        client_then, admitted_then = self._admitted.pop(run["id"], (None, None))
        client = client or client_then or "-"
        if not chosen:
            return
        problem = job_problem(run)
        if problem is None and admitted is None:
            admitted = admitted_then if admitted_then is not None else await self.admit(run)
        over = str(admitted) if isinstance(admitted, jobcost.Refused) else None
        cost = admitted.get("cost") if isinstance(admitted, dict) else None
        rows = []
        for r in chosen:
            off = self.runners is not None and r.name not in self.runners
            reason = problem or ("turned off on this server (comparison_runners)" if off
                                 else r.check(self.device) or over)
            status = "failed" if problem else "unavailable" if reason else "queued"
            rows.append((run["id"], r.name, status, reason, self.device, client, cost))
        await self.store.write(table.insert(rows))
        if any(row[2] == "queued" for row in rows):
            self._wake.set()

    async def cancel(self, run_id: str) -> int:
        """Cancel the run's queued and running jobs; how many there were."""
        running = await self.store.write(table.cancel(run_id))
        for cid in running:
            self._cancelling.add(cid)
            fut = self._futures.get(cid)
            if fut is not None and self.client is not None:
                try:
                    await self.client.cancel([fut], force=True)
                except Exception:
                    log.warning("comparisons: cancelling task %s failed", cid, exc_info=True)
            task = self._inflight.get(cid)
            if task is not None:
                task.cancel()
        return len(running)

    # -- dispatching ----------------------------------------------------------------------------
    async def _dispatch(self) -> None:
        # The cluster starts with the first job to run, not with the server: a server whose
        # runs need no job (or the tests that post none) starts no processes.
        while not await self.store.read(table.any_queued):
            await self._wake.wait()
            self._wake.clear()
        while True:
            if not self.dask.connected():
                await self.dask.close(self._futures.values())
                if not await self.dask.try_connect():
                    await asyncio.sleep(backoff(self.dask.attempts))
                    continue
            try:
                await asyncio.wait_for(self._wake.wait(), 1.0)  # workers come and go
            except asyncio.TimeoutError:
                pass
            self._wake.clear()
            await self.dask.refresh()
            try:
                while len(self._inflight) < self.capacity():
                    claimed = await self.store.write(table.claim(self.device))
                    if claimed is None:
                        break
                    self._inflight[claimed.id] = asyncio.create_task(self._run(claimed))
            except StoreUnavailable as exc:  # tried again within a second
                if self.store_problem is None:
                    log.warning("comparisons: the store refuses to start jobs: %s", exc)
                self.store_problem = f"the store cannot be written ({exc}); queued jobs wait"
            else:
                self.store_problem = None

    async def _run(self, job: Claimed) -> None:
        from distributed import KilledWorker

        from server.runners.task import run_comparison
        cid = job.id
        try:
            device = "auto" if self.address else self.device  # external workers: their own
            fut = self.client.submit(run_comparison, job.runner, job.job, self.data_dir, device,
                                     self.limits.timeout_s, self.limits.memory_mb, pure=False,
                                     key=f"comparison-{cid}-{uuid.uuid4().hex[:8]}")
            self._futures[cid] = fut
            try:
                out = await fut
            except KilledWorker:
                out = {"status": "failed",
                       "error": WORKER_DIED.format(n=self.limits.retries + 1, id=job.run_id)}
            except Exception as exc:  # the job could not be sent, the scheduler went away
                if cid in self._cancelling:
                    return
                error = f"{type(exc).__name__}: {exc}"
                # A client that loses its scheduler cancels every future it holds.
                lost = isinstance(exc, concurrent.futures.CancelledError)
                out = {"status": "failed",
                       "error": LOST.format(error=error, id=job.run_id) if lost else error}
            if out.get("traceback"):
                log.warning("comparison %s (%s) failed:\n%s", cid, job.runner, out["traceback"])
            if cid not in self._cancelling:
                await self.ends.record(cid, out)
        except asyncio.CancelledError:
            if cid in self._cancelling:
                return
            raise
        except Exception:
            log.exception("comparison %s (%s): could not record its end", cid, job.runner)
        finally:
            self._inflight.pop(cid, None)
            self._futures.pop(cid, None)
            self._cancelling.discard(cid)
            self._wake.set()


CLIENT_HEADER = "x-playground-client"
CLIENT_ID_RE = re.compile(r"[A-Za-z0-9_-]{8,64}\Z")


def client_of(request: Request) -> str:
    """Whose share of the queue a request's jobs take: the address, and the tab's id when the
    page sent one (anything else in the header is ignored: the address alone)."""
    host = request.client.host if request.client else "-"
    tab = request.headers.get(CLIENT_HEADER, "")
    return f"{host} tab {tab}" if CLIENT_ID_RE.match(tab) else host
