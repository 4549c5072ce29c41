"""The Dask cluster the comparison jobs run on (server/comparisons.py): an embedded LocalCluster,
or an external scheduler (`--cluster tcp://host:8786`), reached again with backoff whenever it
cannot be: at start (not started yet) or later (restarted, its machine down).

    dask = Cluster(address or None, workers, retries)
    if not await dask.try_connect():        # dask.problem says why; try again after
        await asyncio.sleep(backoff(dask.attempts))
    await dask.refresh()                    # worker threads now; 0 (and a problem) when none
    dask.client.submit(...)                 # distributed's Client, while dask.connected()
    await dask.close(futures)

`problem` is what queued jobs are told while they wait; None when the cluster can take jobs.
"""
from __future__ import annotations

import asyncio
import logging
import warnings

log = logging.getLogger(__name__)

# Tried again RETRY_S[0] seconds after a failed attempt, twice as long after each further one, at
# most RETRY_S[1]: a scheduler restarted for an upgrade is found within a minute, and a dead one
# costs one attempt a minute. An attempt waits CONNECT_TIMEOUT_S for the scheduler to answer.
RETRY_S = (1.0, 60.0)
CONNECT_TIMEOUT_S = 10.0


def backoff(attempts: int) -> float:
    """Seconds to wait after the `attempts`-th failure in a row."""
    return min(RETRY_S[0] * 2 ** max(0, attempts - 1), RETRY_S[1])


async def _knock(address: str) -> None:
    """OSError now when nothing listens at a tcp:// or tls:// address: distributed's Client
    retries a refused connection until its timeout, and the page would wait that long to learn
    that no scheduler is there."""
    scheme, _, rest = address.partition("://")
    host, _, port = rest.rpartition(":")
    if scheme not in ("tcp", "tls") or not port.isdigit():
        return
    _, writer = await asyncio.wait_for(asyncio.open_connection(host.strip("[]"), int(port)),
                                       CONNECT_TIMEOUT_S)
    writer.close()


class Cluster:
    def __init__(self, address: str | None, workers: int, retries: int):
        self.address, self.workers, self.retries = address, workers, retries
        self.client = self.local = None  # distributed's Client; the LocalCluster when embedded
        self.capacity = 0  # worker threads at the last refresh
        self.problem: str | None = None
        self.attempts = 0  # failed attempts since the cluster was last reached
        self.connecting = False  # inside an attempt: a cluster half started has processes

    def where(self) -> str:
        return f"at {self.address}" if self.address else "(the embedded LocalCluster)"

    def _say(self, problem: str | None) -> None:
        if problem is None and self.problem is not None:
            log.info("comparisons: the Dask cluster %s is back; queued jobs run", self.where())
        elif problem is not None and problem != self.problem:
            log.warning("comparisons: %s", problem)
        self.problem = problem

    async def _connect(self) -> None:
        import dask
        from distributed import Client, LocalCluster
        if self.address:
            await _knock(self.address)
            self.client = await Client(self.address, asynchronous=True, timeout=CONNECT_TIMEOUT_S)
        else:
            # processes: a job that crashes takes only its worker down; one thread a worker:
            # one job a worker. memory_limit 0: the job's own limit (task.py) applies, not the
            # nanny's, which would restart the worker and have Dask run the job again.
            with dask.config.set({"distributed.scheduler.allowed-failures": self.retries,
                                  "distributed.worker.daemon": False}), \
                    warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # "dashboard is discouraged": off
                self.local = await LocalCluster(
                    n_workers=self.workers, threads_per_worker=1, processes=True,
                    memory_limit=0, dashboard_address=None, dashboard=False, asynchronous=True,
                    silence_logs=logging.ERROR, host="127.0.0.1")
            self.client = await Client(self.local, asynchronous=True)
        for _ in range(300):  # the workers register a moment after the cluster is up
            if await self.refresh():
                break
            await asyncio.sleep(0.1)
        log.info("comparisons: Dask cluster %s with %d worker thread(s)",
                 self.client.scheduler.address, self.capacity)

    async def try_connect(self) -> bool:
        """One attempt; False (and `problem` says why) when the cluster cannot be reached."""
        self.connecting = True
        try:
            await self._connect()
        except Exception as exc:  # no scheduler at --cluster (yet), or workers that cannot start
            await self.close()
            self.attempts += 1
            self._say(f"the Dask scheduler {self.where()} cannot be reached ({type(exc).__name__}: "
                      f"{exc}); queued jobs wait for it: attempt {self.attempts} failed, the "
                      f"next in {backoff(self.attempts):g} s")
            return False
        finally:
            self.connecting = False
        self.attempts = 0
        return True

    def connected(self) -> bool:
        # A client that lost its scheduler tries to reconnect for CONNECT_TIMEOUT_S, then closes
        # itself: from then on only a new client finds the scheduler again.
        return self.client is not None and self.client.status not in ("closing", "closed")

    async def refresh(self) -> int:
        """Worker threads the cluster has now (workers join and leave an external cluster)."""
        if self.client is None:
            self.capacity = 0
            return 0
        try:
            nthreads = await asyncio.wait_for(self.client.nthreads(), CONNECT_TIMEOUT_S)
            self.capacity = sum(int(n) for n in nthreads.values())
        except Exception as exc:  # the scheduler is gone for now: no new jobs until it is back
            self.capacity = 0
            self._say(f"the Dask scheduler {self.where()} does not answer ({type(exc).__name__}: "
                      f"{exc}); queued jobs wait for it")
            return 0
        self._say(None if self.capacity else
                  f"the Dask cluster {self.where()} has no workers; queued jobs wait for one")
        return self.capacity

    async def close(self, futures=()) -> None:
        """Cancel `futures`, close the client, stop the embedded cluster."""
        client, local, self.client, self.local = self.client, self.local, None, None
        self.capacity = 0
        if client is not None:
            try:
                if futures:
                    await client.cancel(list(futures), force=True)
                await client.close()
            except Exception:  # a scheduler already gone
                log.warning("comparisons: closing the Dask client failed", exc_info=True)
        if local is not None:
            await local.close()
