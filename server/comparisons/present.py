"""What GET /api/runs/{id}/comparisons says of each row: the runner's result beside the browser's,
the speed-up on the kind's main timing, whether the models agree, and why a job waits.
"""
from __future__ import annotations

import json
import sqlite3

from py_core.jobs import kind as kind_of
from server.comparisons.queue import Queue


def speedup(kind: str, browser_timings: dict, timings: dict) -> float | None:
    """Browser time / runner time for the kind's main timing: above 1, the server was faster."""
    found = kind_of(kind)  # its main timing (py_core/jobs/kinds.py)
    key = found.main_timing.key if found is not None and found.runners else None
    b, s = (browser_timings or {}).get(key), (timings or {}).get(key)
    if not isinstance(b, (int, float)) or not isinstance(s, (int, float)) or b <= 0 or s <= 0:
        return None
    return b / s


def agreement(kind: str, runner: str, browser: dict, server: dict) -> dict | None:
    """Whether the browser's model is as good as the runner's, by the tolerance of the issue that
    made the model. Same algorithm (py_core-*): the same forest, so MSE to 1e-4 relative and the
    same accuracy. Other forests (sklearn, cuml): the browser's MSE at most 2% above theirs, its
    accuracy at most 1 point below. Transformer: validation loss within 2%."""
    same = runner.startswith("py_core")
    for metric, relative, lower_is_better, tol in (
            ("mse", True, True, 1e-4 if same else 0.02),
            ("accuracy", False, False, 1e-9 if same else 0.01),
            ("val_loss", True, True, 0.02)):
        b, s = (browser or {}).get(metric), (server or {}).get(metric)
        if not isinstance(b, (int, float)) or not isinstance(s, (int, float)):
            continue
        diff = b - s
        if relative:
            diff = diff / abs(s) if s else (0.0 if b == s else float("inf"))
        excess = abs(diff) if same or kind == "transformer" else (diff if lower_is_better else -diff)
        return {"metric": metric, "browser": b, "server": s, "difference": diff,
                "relative": relative, "tolerance": tol, "within": excess <= tol}
    return None


def waiting(queue: Queue | None, row: sqlite3.Row, ahead: int) -> str | None:
    """Why a queued job has not started (or a running one's end is not in the store yet)."""
    if queue is None:
        return None
    if row["status"] == "running":
        return queue.ends.why(row["id"])
    if row["status"] != "queued":
        return None
    if queue.problem:
        return queue.problem
    if not queue.capacity():
        return f"the Dask cluster {queue.dask.where()} is starting"
    return (f"{ahead} job(s) ahead of it; {queue.capacity()} run at a time" if ahead
            else "next to run")


def present(kind: str, browser: dict, row: sqlite3.Row) -> dict:
    result = json.loads(row["result"]) if row["result"] else {}
    out = {"runner": row["runner"], "status": row["status"], "device": row["device"],
           "hardware": None, "versions": {}, "timings": {}, "metrics": {}, "error": row["error"]}
    out.update({k: v for k, v in result.items() if k != "runner"})
    out["speedup"] = speedup(kind, browser.get("timings"), out["timings"])
    out["agreement"] = agreement(kind, row["runner"], browser.get("metrics"), out["metrics"])
    out.update(created_at=row["created_at"], started_at=row["started_at"],
               finished_at=row["finished_at"])
    return out
