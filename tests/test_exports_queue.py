"""Issue 31, point 2: ONNX exports wait in a bounded queue that refuses at once when full, run
more than one at a time, each within its own time limit, and stop when their client leaves.

Against uvicorn on 127.0.0.1 (a client that leaves needs a real socket). The slow export is the
rebuild of 50 trees on 3,000 synthetic rows by the plain-Python reference: minutes on CI's cores;
each test stops it within seconds. An export's rebuild is a process of this one
(server.runners.jobproc), so the tests count them."""

import asyncio
import socket
import time
import uuid

import httpx
import psutil
import pytest

from server.bounded import PER_KEY, BoundedQueue
from server.errors import ClientError

SLOW_JOB = {"kind": "random_forest", "dataset": "synthetic:regression?n_samples=3000",
            "target": "y", "params": {"n_estimators": 50, "random_state": 1},
            "split": {"test_size": 0.25, "seed": 7}}


@pytest.fixture
def server(settings, request):
    settings.comparisons = "off"
    settings.export_workers, settings.export_queue = 2, 1
    settings.job_memory_mb = 1024  # two such jobs fit the memory of any machine that runs this
    return request.getfixturevalue("live_server")


def rebuilds() -> set[int]:
    """The export processes running now (children of this process)."""
    found = set()
    for child in psutil.Process().children(recursive=True):
        try:
            if "server.runners.jobproc" in " ".join(child.cmdline()):
                found.add(child.pid)
        except psutil.Error:
            pass
    return found


def wait_until(predicate, what: str, timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"not within {timeout_s} s: {what}"
        time.sleep(0.1)


def post_slow_run(http: httpx.Client) -> str:
    run = {"id": str(uuid.uuid4()), "kind": "random_forest", "config": SLOW_JOB,
           "backend": "webgpu", "metrics": {}, "timings": {}}
    assert http.post("/api/runs", json=run).status_code == 201
    return run["id"]


def ask_export(url: str, run_id: str) -> socket.socket:
    """A client that asks for the export and waits (the test closes it: the client leaves)."""
    host, port = url.removeprefix("http://").split(":")
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(f"GET /api/runs/{run_id}/model.onnx HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    return s


def test_two_at_once_one_waiting_the_rest_refused_and_leaving_stops_them(server):
    before = rebuilds()
    with httpx.Client(base_url=server, timeout=10) as http:
        ids = [post_slow_run(http) for _ in range(4)]
        clients = [ask_export(server, run_id) for run_id in ids[:3]]
        try:
            wait_until(lambda: len(rebuilds() - before) == 2, "two exports at work")
            r = http.get(f"/api/runs/{ids[3]}/model.onnx")  # the third waits: no room left
            assert r.status_code == 503 and r.headers["retry-after"], r.text
            assert "2 at a time, 1 waiting" in r.json()["error"]["message"]
            assert http.get("/api/health").status_code == 200
        finally:
            for s in clients:
                s.close()
        # Their clients gone, the exports are cancelled: processes killed, the queue empty.
        wait_until(lambda: not rebuilds() - before, "the rebuilds killed")
        again = ask_export(server, ids[3])
        try:
            wait_until(lambda: rebuilds() - before, "the fourth export let in")
        finally:
            again.close()
        wait_until(lambda: not rebuilds() - before, "the fourth rebuild killed")


def test_an_export_has_a_time_limit_of_its_own(server, settings):
    settings.export_timeout_s = 1  # read at each request; the job limit stays at 30 min
    with httpx.Client(base_url=server, timeout=60) as http:
        r = http.get(f"/api/runs/{post_slow_run(http)}/model.onnx")
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    assert "time limit of 1 s" in message and "--export-timeout" in message


def test_asks_for_one_export_cannot_fill_the_line():
    """40 clients asking for one run's export: PER_KEY wait their turn, the rest get 503 at once,
    and another run's export still finds its place in the line."""
    async def scenario():
        line, done = BoundedQueue(1, 8, "exports", "this run's export"), asyncio.Event()

        async def ask(key: str) -> None:
            async with line.slot(key):
                await done.wait()

        asks = [asyncio.ensure_future(ask("slow")) for _ in range(40)]
        await asyncio.sleep(0.01)
        refused = [t for t in asks if t.done()]
        assert len(refused) == 40 - PER_KEY
        assert all(isinstance(t.exception(), ClientError) and t.exception().status == 503
                   for t in refused)
        other = asyncio.ensure_future(ask("other"))
        await asyncio.sleep(0.01)
        assert not other.done() and line.inside == PER_KEY + 1
        done.set()
        await asyncio.gather(other, *[t for t in asks if t not in refused])
        assert line.inside == 0

    asyncio.run(scenario())
