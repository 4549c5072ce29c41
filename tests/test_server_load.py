"""Issue 16, point 9: the load test (bench/load.py) in small: 1,000 slow connections (trickled
headers or nothing at all) and 20 normal clients for a few seconds; every normal request is
answered, none fails, and the log stays small. The figures in docs/limits.md come from the full run,
`python -m bench.load` (1,000 slow connections, 50 clients, 30 s)."""

import resource

import pytest

from bench.load import run


def test_normal_clients_are_served_beside_1000_slow_connections():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1300:
        pytest.skip("needs 1,300 open files in the test process")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1300), hard))
    result = run(slow=1000, clients=20, seconds=5, trickle_s=1.0, server_args=[])
    assert result["errors"] == 0, result["error_samples"]
    assert result["requests"] > 0 and result["reconnects"] == 0
    assert result["slow"]["opened"] >= 1000 and result["slow"]["connect_errors"] == 0
    assert result["server_log_bytes"] < 1_000_000
