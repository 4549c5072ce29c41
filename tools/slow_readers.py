"""The red team's slow-reader reproduction (issue 31.1), by hand: N sockets ask the server for a
large static file (/pyodide/python_stdlib.zip) and never read the answer; meanwhile /api/health is
asked 30 times, 2 s allowed each. Prints how many answered, the slowest, and the memory the
sockets hold (kernel TCP buffers, the server's resident set). Loopback only, bounded in count and
time. tests/test_robust_connections.py checks the same at CI's scale.

    ulimit -n 4096; python tools/slow_readers.py 1000 [SERVER OPTIONS...]

Measured 2026-11-28, 1,000 sockets, on a 2-core machine: at 2f22711 30 of 30 answered, slowest
0.16 s, TCP buffers 383 MB, server RSS 338 MB (at 83d677c slowest 0.65 s; at b15cb4f 0 of 30
answered, TCP buffers 1,529 MB).
"""
from __future__ import annotations

import re
import socket
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from robust_server import CliServer  # noqa: E402  (tests/ is a plain folder)

REQUEST = b"GET /pyodide/python_stdlib.zip HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def tcp_mem_mb() -> float:
    pages = re.search(r"TCP: .* mem (\d+)", Path("/proc/net/sockstat").read_text())
    return int(pages[1]) * 4096 / 2**20


def rss_mb(pid: int) -> float:
    return int(re.search(r"VmRSS:\s+(\d+)", Path(f"/proc/{pid}/status").read_text())[1]) / 1024


def main(n: int, options: list[str]) -> None:
    with tempfile.TemporaryDirectory() as d, CliServer(Path(d) / "data", *options) as server:
        base = tcp_mem_mb()
        socks = []
        for _ in range(n):
            try:
                s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
                s.sendall(REQUEST)
                socks.append(s)
            except OSError as exc:
                print(f"opened {len(socks)}: {exc}")
                break
        time.sleep(2)
        ok = worst = 0
        for _ in range(30):
            t = time.monotonic()
            try:
                ok += httpx.get(f"{server.url}/api/health", timeout=2).status_code == 200
            except httpx.HTTPError:
                pass
            worst = max(worst, time.monotonic() - t)
            time.sleep(0.3)
        print(f"{len(socks)} slow readers: /api/health answered {ok} of 30, slowest {worst:.2f} s; "
              f"TCP buffers {tcp_mem_mb() - base:.0f} MB, server RSS {rss_mb(server.pid):.0f} MB")
        for s in socks:
            s.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000, sys.argv[2:])
