"""What a Dask worker runs for one comparison: the job in a child process, under its limits.

`run_comparison` is the function the server submits (server/comparisons.py). The job runs in a
`server.runners.jobproc` child process, one a worker thread, reused between jobs. The worker
thread watches it and kills it (SIGKILL) when

    the job runs past `timeout_s` seconds (wall clock)               limit "timeout"
    the child's resident memory, its own children's included, goes
    past `memory_mb`                                                 limit "memory"
    the server cancelled the job (DELETE /api/runs/{id}/comparisons)  "cancelled"

and returns a failed answer that says which: a job stopped by its limits is an answer, not a
lost worker, so Dask does not run it again. A worker that dies mid-job (SIGKILL, the machine
gone) is what Dask retries on another worker, up to the scheduler's `allowed-failures`.

`run_alone` runs one request the same way in a process of its own that ends with it: the
server's own one-off jobs (an ONNX export's rebuild, server/exports.py) under the same limits,
cancelled when the client that asked for it leaves.
"""
from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

POLL_S = 0.1
PROJECT_ROOT = Path(__file__).resolve().parents[2]


class JobProcess:
    def __init__(self):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT),
                                                          env.get("PYTHONPATH")]))
        self.proc = subprocess.Popen([sys.executable, "-m", "server.runners.jobproc"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                     text=True, encoding="utf-8")
        self.answers: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.answers.put(line)
        self.answers.put(None)  # the process ended

    def alive(self) -> bool:
        return self.proc.poll() is None

    def rss_mb(self) -> float:
        import psutil
        try:
            p = psutil.Process(self.proc.pid)
            total = p.memory_info().rss
            for child in p.children(recursive=True):
                try:
                    total += child.memory_info().rss
                except psutil.Error:
                    pass
            return total / 2**20
        except psutil.Error:
            return 0.0

    def close(self) -> None:
        """End the process: no more requests (it leaves its loop), killed if it lingers."""
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()

    def kill(self) -> None:
        import psutil
        try:
            for child in psutil.Process(self.proc.pid).children(recursive=True):
                child.kill()
        except psutil.Error:
            pass
        self.proc.kill()
        self.proc.wait()


_idle: list[JobProcess] = []
_lock = threading.Lock()


def _take() -> JobProcess:
    with _lock:
        while _idle:
            p = _idle.pop()
            if p.alive():
                return p
    return JobProcess()


def _give_back(p: JobProcess) -> None:
    with _lock:
        _idle.append(p)


def _cancelled() -> bool:
    """Whether the server let go of this task (client.cancel): the worker marks it so."""
    try:
        from distributed import get_worker
        from distributed.worker import thread_state
        worker, key = get_worker(), getattr(thread_state, "key", None)
        ts = worker.state.tasks.get(key) if key is not None else None
        return ts is None or ts.state in ("cancelled", "released", "forgotten")
    except (ValueError, ImportError, AttributeError):
        return False  # not inside a Dask worker (tests call this directly)


def run_comparison(runner: str, job: dict, data_dir: str, device: str, timeout_s: float,
                   memory_mb: float, cancelled=_cancelled) -> dict:
    started = time.time()
    proc = _take()
    answer = _run(proc, {"runner": runner, "job": job, "data_dir": data_dir, "device": device},
                  timeout_s, memory_mb, cancelled)
    if proc.alive():
        _give_back(proc)
    answer["worker"] = {"host": socket.gethostname(), "pid": os.getpid(),
                        "address": _address(), "started": started, "finished": time.time()}
    return answer


def run_alone(request: dict, timeout_s: float, memory_mb: float, cancelled=lambda: False,
              timeout_flag: str = "--job-timeout") -> dict:
    """One request (jobproc.py) in a new process, under the limits; the process ends with it,
    or is killed when `cancelled()` (its client left)."""
    proc = JobProcess()
    try:
        return _run(proc, request, timeout_s, memory_mb, cancelled, timeout_flag)
    finally:
        if proc.alive():
            proc.close()


def _run(proc, request: dict, timeout_s, memory_mb, cancelled,
         timeout_flag: str = "--job-timeout") -> dict:
    """The answer to `request`; the process is killed when a limit or a cancel stops it."""
    t0 = time.monotonic()
    try:
        proc.proc.stdin.write(json.dumps(request) + "\n")
        proc.proc.stdin.flush()
    except OSError as exc:
        proc.kill()
        return {"status": "failed", "error": f"the job's process did not start: {exc}"}
    checks = 0
    while True:
        try:
            line = proc.answers.get(timeout=POLL_S)
        except queue.Empty:
            line = ""
        if line is None:
            code = proc.proc.wait()
            return {"status": "failed", "error": f"the job's process died (exit status {code}; "
                                                 "killed, or a crash in native code)"}
        if line:
            return json.loads(line)
        elapsed = time.monotonic() - t0
        if timeout_s and elapsed > timeout_s:
            proc.kill()
            return {"status": "failed", "limit": "timeout",
                    "error": f"killed: the job ran past its time limit of {timeout_s:g} s "
                             f"({timeout_flag})"}
        if memory_mb and (rss := proc.rss_mb()) > memory_mb:
            proc.kill()
            return {"status": "failed", "limit": "memory",
                    "error": f"killed: the job's memory ({rss:.0f} MB) went past its limit of "
                             f"{memory_mb:g} MB (--job-memory-mb)"}
        checks += 1
        if checks % 5 == 0 and cancelled():
            proc.kill()
            return {"status": "failed", "limit": "cancelled", "error": "cancelled"}


def _address() -> str | None:
    try:
        from distributed import get_worker
        return get_worker().address
    except (ValueError, ImportError):
        return None
