"""Through a real uvicorn on a free port: concurrent posts, raw traversal, and the CLI."""

import os
import re
import socket
import subprocess
import sys
import threading
import time
import uuid

import httpx

from server.settings import PROJECT_ROOT

THREADS, POSTS = 20, 50


def test_concurrent_posts_store_every_run_once(live_server):
    errors, statuses = [], []

    def poster():
        try:
            with httpx.Client(base_url=live_server, timeout=60) as http:
                for _ in range(POSTS):
                    run = {"id": str(uuid.uuid4()), "kind": "selftest", "timings": {"total": 0.1}}
                    r = http.post("/api/runs", json=run)
                    statuses.append(r.status_code)
                    if r.status_code != 201:
                        errors.append(r.text)
                    # A retry of the same id must not add a row, even under load.
                    if len(statuses) % 10 == 0:
                        statuses.append(http.post("/api/runs", json=run).status_code)
        except Exception as exc:  # collected: an exception in a thread would go unseen
            errors.append(repr(exc))

    threads = [threading.Thread(target=poster) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert statuses.count(201) == THREADS * POSTS and set(statuses) <= {200, 201}
    with httpx.Client(base_url=live_server) as http:
        runs = http.get("/api/runs", params={"limit": 1000}).json()["runs"]
    assert len(runs) == THREADS * POSTS == len({r["id"] for r in runs})
    stamps = [r["created_at"] for r in runs]
    assert stamps == sorted(stamps, reverse=True)


def raw_get(base_url: str, target: str) -> bytes:
    """Send the request target as is: HTTP clients normalise '..' away before sending."""
    host, port = base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data


def test_raw_dot_dot_paths_are_404(settings, live_server):
    (settings.web_dir / "ok.js").write_text("ok")
    (settings.web_dir.parent / "secret.txt").write_text("outside")
    assert raw_get(live_server, "/web/ok.js").startswith(b"HTTP/1.1 200")
    for target in ("/web/../secret.txt", "/web/./../secret.txt", "/web/%2e%2e/secret.txt",
                   "/wheels/../../secret.txt", "/web/..\\secret.txt"):
        response = raw_get(live_server, target)
        assert response.startswith(b"HTTP/1.1 404"), (target, response[:80])
        assert b"outside" not in response


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_cli(tmp_path, *args):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "server", "--data-dir", str(tmp_path / "data"),
                             "--device", "cpu", *args], cwd=PROJECT_ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def read_until(proc, pattern: str, seconds=30) -> re.Match:
    deadline, seen = time.monotonic() + seconds, []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        seen.append(line)
        if m := re.search(pattern, line):
            return m
    raise AssertionError(f"{pattern!r} not printed; output:\n{''.join(seen)}")


def stop(proc):
    """SIGTERM, as a service manager sends: the app shuts down cleanly (closing the store)."""
    proc.terminate()
    try:
        rest, _ = proc.communicate(timeout=15)
    finally:
        proc.kill()
        proc.stdout.close()
    # uvicorn re-raises the signal after a graceful shutdown, so the exit status is -SIGTERM.
    assert proc.returncode in (0, -15)
    assert "Application shutdown complete" in rest


def test_cli_prints_its_address_and_serves(tmp_path):
    port = free_port()
    proc = start_cli(tmp_path, "--port", str(port))
    try:
        m = read_until(proc, r"Playground running at (http://\S+)")
        assert m[1] == f"http://127.0.0.1:{port}/"
        r = httpx.get(f"{m[1]}api/health", timeout=10)
        assert r.status_code == 200 and r.json()["device"] == "cpu"
    finally:
        stop(proc)
    assert (tmp_path / "data" / "playground.sqlite3").exists()


def test_cli_off_loopback_generates_a_token(tmp_path):
    proc = start_cli(tmp_path, "--host", "0.0.0.0", "--port", "0")
    try:
        m = read_until(proc, r"Playground running at http://0\.0\.0\.0:(\d+)/\?token=([\w-]{40,})")
        base = f"http://127.0.0.1:{m[1]}"
        assert httpx.get(f"{base}/api/health", timeout=10).status_code == 401
        r = httpx.get(f"{base}/api/health", headers={"authorization": f"Bearer {m[2]}"}, timeout=10)
        assert r.status_code == 200
    finally:
        stop(proc)


def test_cli_refuses_bad_flags(tmp_path):
    r = subprocess.run([sys.executable, "-m", "server", "--device", "tpu"], cwd=PROJECT_ROOT,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--device" in r.stderr
