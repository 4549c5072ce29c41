"""The server as its own process (`python -m server`), for tests that need one: its memory, a
SIGKILL, a real bind to 0.0.0.0. Used by tests/test_robust_*.py; not a test module itself."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from server.settings import PROJECT_ROOT


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class CliServer:
    """`python -m server --data-dir DATA --device cpu ARGS`, waited for until it prints its URL.
    `url` is always http://127.0.0.1:PORT (the server may be bound wider); `token` is the one it
    printed, if any. Comparison jobs are off: these tests are about the HTTP layer."""

    def __init__(self, data_dir: Path, *args: str, host: str = "127.0.0.1",
                 env: dict[str, str] | None = None, preexec_fn=None):
        self.data_dir, self.port = Path(data_dir), free_port()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # Output to a file, not a pipe: uvicorn logs every request, and a pipe nobody reads fills
        # up and stalls the server.
        self.log = self.data_dir.parent / f"server-{self.port}.log"
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PLAYGROUND_COMPARISONS": "off", **(env or {})}
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "server", "--data-dir", str(data_dir), "--device", "cpu",
                 "--host", host, "--port", str(self.port), *args],
                cwd=PROJECT_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                preexec_fn=preexec_fn)
        self.url = f"http://{host if host not in ('0.0.0.0', '::') else '127.0.0.1'}:{self.port}"
        self.token = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.proc.poll() is None:
            if m := re.search(r"Playground running at \S+?(?:\?token=(\S+))?\n", self.output()):
                self.token = m[1]
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("the server did not start:\n" + self.output())

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def peak_rss_mb(self) -> float:
        """The process's peak resident memory so far (VmHWM), in MB."""
        status = Path(f"/proc/{self.pid}/status").read_text()
        return int(re.search(r"VmHWM:\s+(\d+) kB", status)[1]) / 1024

    def kill(self) -> None:
        """SIGKILL: no shutdown, no final commit, as a crash or the OOM killer leaves it."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def __enter__(self) -> "CliServer":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
