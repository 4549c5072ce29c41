"""`python -m bench.load`: the server under 1,000 slow connections plus 50 normal clients.

Starts `python -m server` on a fresh data dir (loopback only), then for `--seconds`:
- `--slow` connections that trickle a request's headers one byte every `--trickle` seconds
  (slowloris) or send nothing at all, half each; each one the server closes is opened again,
  so that many are always pending;
- `--clients` threads, each on its own keep-alive connection (reconnecting when it is closed),
  asking in turn GET /api/health, POST /api/runs (a small run), GET /api/runs?limit=20 and
  GET /api/runs/{id}.
Prints (and writes with --json) the normal clients' requests, errors, reconnects, latency
(median, 95th and 99th percentile, max), throughput, the slow connections opened and closed by
the server, the server's peak memory and its log size. Every loop ends by itself.

    python -m bench.load                          # 1,000 slow + 50 clients for 30 s
    python -m bench.load --slow 1000 --clients 50 --seconds 60 --json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(data_dir: Path, port: int, extra: list[str]) -> tuple[subprocess.Popen, Path]:
    log = data_dir.parent / "server.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "server", "--data-dir", str(data_dir), "--port", str(port),
                                 "--device", "cpu", "--comparisons", "off", *extra],
                                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if "Playground running at" in log.read_text(errors="replace"):
            return proc, log
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("the server did not start:\n" + log.read_text(errors="replace")[-3000:])


async def slow_connections(port: int, n: int, trickle_s: float, stop: threading.Event, stats: dict) -> None:
    request = b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 4000

    async def one(i: int) -> None:
        while not stop.is_set():
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                stats["connect_errors"] += 1
                await asyncio.sleep(0.5)
                continue
            stats["opened"] += 1
            stats["open"] += 1
            try:
                pos = 0
                while not stop.is_set():
                    if i % 2 and pos < len(request):  # the trickling half; the other sends nothing
                        writer.write(request[pos:pos + 1])
                        pos += 1
                    try:
                        data = await asyncio.wait_for(reader.read(1024), timeout=trickle_s)
                    except asyncio.TimeoutError:
                        continue
                    if not data:  # the server closed it
                        stats["closed_by_server"] += 1
                        break
                    stats["answered"] += 1  # a 408
            except OSError:
                stats["closed_by_server"] += 1
            finally:
                stats["open"] -= 1
                writer.close()

    tasks = [asyncio.create_task(one(i)) for i in range(n)]
    samples = []
    while not stop.is_set():  # how many are pending at once, sampled once the first n are open
        if stats["opened"] >= n:
            samples.append(stats["open"])
        await asyncio.sleep(0.2)
    stats["open_min"], stats["open_mean"] = (min(samples), round(sum(samples) / len(samples))) if samples else (0, 0)
    await asyncio.gather(*tasks, return_exceptions=True)


def client(port: int, stop: threading.Event, out: dict) -> None:
    conn = None
    ids: list[str] = []
    i = 0
    while not stop.is_set():
        if conn is None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        step = i % 4
        i += 1
        t0 = time.perf_counter()
        try:
            if step == 0:
                conn.request("GET", "/api/health")
            elif step == 1:
                run_id = str(uuid.uuid4())
                body = json.dumps({"id": run_id, "kind": "selftest", "backend": "webgpu",
                                   "metrics": {"all_ok": True}, "timings": {"kernels": 0.01}})
                conn.request("POST", "/api/runs", body=body, headers={"content-type": "application/json"})
                ids.append(run_id)
            elif step == 2:
                conn.request("GET", "/api/runs?limit=20")
            else:
                conn.request("GET", f"/api/runs/{ids[-1] if ids else uuid.uuid4()}")
            r = conn.getresponse()
            r.read()
            ok = r.status < 500 and (step != 1 or r.status in (200, 201)) and (step != 3 or r.status == 200 or not ids)
        except (OSError, http.client.HTTPException):
            out["reconnects"] += 1
            conn.close()
            conn = None
            continue
        dt = time.perf_counter() - t0
        out["latencies"].append(dt)
        if not ok:
            out["errors"].append(f"{step}: {r.status}")
    if conn is not None:
        conn.close()


def peak_rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status)[1]) / 1024


def run(slow: int, clients: int, seconds: float, trickle_s: float, server_args: list[str]) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="load-"))
    port = free_port()
    proc, log = start_server(tmp / "data", port, server_args)
    stop = threading.Event()
    slow_stats = {"opened": 0, "open": 0, "closed_by_server": 0, "answered": 0, "connect_errors": 0}
    loop_thread = threading.Thread(target=lambda: asyncio.run(slow_connections(port, slow, trickle_s, stop, slow_stats)))
    loop_thread.start()
    # Wait (bounded) until the slow connections are all open, then start the normal clients.
    deadline = time.monotonic() + 60
    while slow_stats["opened"] < slow and time.monotonic() < deadline:
        time.sleep(0.1)
    outs = [{"latencies": [], "errors": [], "reconnects": 0} for _ in range(clients)]
    threads = [threading.Thread(target=client, args=(port, stop, o)) for o in outs]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(60)
    loop_thread.join(60)
    elapsed = time.monotonic() - t0
    rss = peak_rss_mb(proc.pid)
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
    lat = sorted(x for o in outs for x in o["latencies"])
    q = (lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000) if lat else (lambda p: None)
    result = {
        "slow_connections": slow, "clients": clients, "seconds": round(elapsed, 1),
        "requests": len(lat), "requests_per_s": round(len(lat) / elapsed, 1),
        "errors": sum(len(o["errors"]) for o in outs), "error_samples": [e for o in outs for e in o["errors"]][:5],
        "reconnects": sum(o["reconnects"] for o in outs),
        "latency_ms": {"median": q(0.5), "p95": q(0.95), "p99": q(0.99), "max": lat[-1] * 1000 if lat else None,
                       "mean": statistics.fmean(lat) * 1000 if lat else None},
        "slow": slow_stats, "server_peak_rss_mb": round(rss, 1), "server_log_bytes": log.stat().st_size,
        "server_args": server_args, "cpus": os.cpu_count(),
    }
    for k, v in result["latency_ms"].items():
        result["latency_ms"][k] = round(v, 1) if v is not None else None
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__.split("\n\n")[0])
    ap.add_argument("--slow", type=int, default=1000)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--trickle", type=float, default=1.0, help="seconds between two bytes of a slow request")
    ap.add_argument("--json", type=Path, help="write the figures here too")
    ap.add_argument("server_args", nargs="*", help="extra server flags, after --")
    args = ap.parse_args(argv)
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = args.slow + args.clients + 200
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(need, hard), hard))
    result = run(args.slow, args.clients, args.seconds, args.trickle, args.server_args)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 1 if result["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
