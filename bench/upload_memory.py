"""`python -m bench.upload_memory [MB]`: the server's peak memory growth for one upload of a CSV
of distinct strings (MB megabytes, default 24), and the time it took; loopback only."""

from __future__ import annotations

import random
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.load import free_port, peak_rss_mb, start_server


def distinct_strings_csv(mb: int) -> bytes:
    rng = random.Random(0)
    rows, size, i = ["id,name,note"], 0, 0
    while size < mb * 2**20:
        row = f"k{i},{''.join(rng.choices(string.ascii_letters, k=12))},{''.join(rng.choices(string.ascii_letters, k=20))}"
        rows.append(row)
        size += len(row) + 1
        i += 1
    return ("\n".join(rows) + "\n").encode()


def main(argv=None) -> int:
    mb = int((argv or sys.argv[1:] or ["24"])[0])
    data = distinct_strings_csv(mb)
    tmp = Path(tempfile.mkdtemp(prefix="upload-memory-"))
    port = free_port()
    proc, _ = start_server(tmp / "data", port, [])
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=900) as http:
            http.post("/api/datasets", files={"file": ("small.csv", b"a,b\n1,2\n")}).raise_for_status()
            base = peak_rss_mb(proc.pid)
            t0 = time.perf_counter()
            r = http.post("/api/datasets", files={"file": ("big.csv", data)})
            took = time.perf_counter() - t0
            grown = peak_rss_mb(proc.pid) - base
        rows = data.count(b"\n") - 1
        print(f"{mb} MB CSV ({rows:,} rows of distinct strings): {r.status_code} in {took:.1f} s, "
              f"server peak memory +{grown:.0f} MB, timings {r.json().get('timings')}")
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
