"""Comparisons: the job behind each posted run, run again by the server's runners, side by side.

    GET    /api/runs/{id}/comparisons  {"run", "kind", "device", "enabled", "browser": {...},
                                        "problem": why queued jobs wait, or null,
                                        "comparisons": [{runner, status, device, hardware,
                                        versions, timings, metrics, error, note, speedup,
                                        agreement, created_at, started_at, finished_at,
                                        waiting}, ...]}  (waiting: why a queued job has not
                                        started, or a running one's end is not stored yet)
    POST   /api/runs/{id}/comparisons  queue the run's runners again (those not queued or running
                                        now; {"runners": [...]} to pick); 202 with the GET answer;
                                        422 naming the cap a job is over, 429 + Retry-After when
                                        the client's or the server's queue is full
    DELETE /api/runs/{id}/comparisons  cancel the run's queued and running jobs (a running one's
                                        process is killed); 200 with the GET answer

Life of a comparison (table `comparisons`, one row per run and runner; the table, not the
cluster, is the source of truth):
    queued -> running -> done | failed         the job ran (failed: its error, its limit, or
                                               "cancelled")
    unavailable                                never queued: the runner cannot run here, or the
                                               job is over a cap; `error` says why

Where jobs run: a Dask `distributed` cluster. By default the server starts an embedded
`LocalCluster` (`comparison_workers` worker processes, one thread each: one job at a time a
worker, since a job may use every core or the GPU); `--cluster tcp://host:8786` uses an existing
scheduler instead, whose workers may sit on other machines (docs/deploy.md: "Comparisons on a cluster").
The server claims queued rows oldest first, as many as the cluster has worker threads, and
submits each as a task (server/runners/task.py) that runs the job in a child process under its
limits: `job_timeout_s` (wall clock) and `job_memory_mb` (resident memory), both enforced in the
worker. A job stopped by a limit or a cancel is failed with the reason and never re-queued.
A worker lost mid-job (killed, its machine gone) is retried by Dask on another worker, at most
`job_retries` times (the embedded scheduler's `allowed-failures`; an external scheduler's own
setting), then failed; the result is written once, by the server, when the task's future ends.

Before a job is queued its cost is estimated from its config (server/jobcost.py) and checked
against the caps, then against the queues: each client may have `client_queue_limit` jobs queued
or running, the server `queue_limit` in all. A client is its address and the tab id the page sends
(header X-Playground-Client), so a local script's jobs do not fill the local page's share; a
script may send ids of its own, and the server's limit bounds them all. Both routes that
queue jobs say the same about a job over a cap, the cap's name, the job's figure, the limit and
the flag that raises it (jobcost.OverCap):
    POST /api/runs                 the run is stored (it ran in the browser): 201, and each
                                   runner that would have run it is `unavailable` with that
                                   message (the others keep their own reason, "turned off", "no
                                   CUDA device"); such a run takes no room in the queues
    POST /api/runs/{id}/comparisons  422 with that message and the field, nothing changed
A full queue answers 429 with Retry-After on both, and POST /api/runs then stores nothing (the
page posts it again after that many seconds; the run's id makes the retry safe).

Outages: an unreachable scheduler (at start or later) is tried again with backoff
(server/cluster.py); meanwhile jobs stay queued, and GET says why they wait (`problem`, and each
queued row's `waiting`). A job whose end the store cannot take (a full disk, a read-only file)
keeps it in memory and records it, with the time it really ended, once the store takes writes
again (server/job_ends.py).

Restarts: a row still `running` at start-up belonged to a server that died mid-job; it is marked
failed ("the server stopped during this job") rather than re-run, because the job may be what
killed it. `queued` rows are resumed. A clean shutdown cancels the running tasks and puts those
rows back to `queued`, so they resume on the next start.

Settings (server.settings.Settings, read once from flags and PLAYGROUND_* environment variables):
comparisons on|off, comparison_workers, comparison_runners, cluster, job_timeout_s, job_memory_mb,
job_retries, client_queue_limit, queue_limit, and the caps of server/jobcost.py.

The package, by concept: `table` (the schema and every SQL transaction), `queue` (admission,
queueing, dispatch to Dask), `present` (what GET says of a row), `routes` (HTTP and the lifespan).
This module is the feature the app mounts (server/app.py reads SCHEMA, routes, lifespan).
"""
from server.comparisons.present import agreement, speedup, waiting
from server.comparisons.queue import (
           CLIENT_HEADER,
           LOST,
           WORKER_DIED,
           Limits,
           Queue,
           QueueFull,
           client_of,
           job_problem,
)
from server.comparisons.routes import lifespan, limits_of, routes
from server.comparisons.table import CANCELLED, DIED, SCHEMA, Claimed

__all__ = ["CANCELLED", "CLIENT_HEADER", "DIED", "LOST", "SCHEMA", "WORKER_DIED",
           "Claimed", "Limits", "Queue", "QueueFull", "agreement", "client_of", "job_problem",
           "lifespan", "limits_of", "routes", "speedup", "waiting"]
