"""Settings from flags and PLAYGROUND_* environment variables."""

import pytest

from server.__main__ import url_for
from server.settings import PROJECT_ROOT, Settings, is_loopback_host, parse_args, resolve_device


def test_defaults(monkeypatch):
    for name in ("HOST", "PORT", "DATA_DIR", "DEVICE", "TOKEN", "MAX_JSON_KB", "MAX_UPLOAD_MB"):
        monkeypatch.delenv(f"PLAYGROUND_{name}", raising=False)
    s = parse_args([])
    assert (s.host, s.port, s.device, s.token) == ("127.0.0.1", 8000, "auto", None)
    assert s.data_dir == PROJECT_ROOT / "data" and s.db_path.name == "playground.sqlite3"
    assert (s.max_json_bytes, s.max_upload_bytes) == (1024 * 1024, 200 * 1024 * 1024)
    assert not s.requires_token


def test_flags_win_over_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("PLAYGROUND_PORT", "9001")
    monkeypatch.setenv("PLAYGROUND_DEVICE", "cpu")
    s = parse_args(["--port", "9002", "--data-dir", str(tmp_path), "--max-json-kb", "8"])
    assert (s.port, s.device, s.data_dir, s.max_json_bytes) == (9002, "cpu", tmp_path, 8192)


@pytest.mark.parametrize("host, loopback", [
    ("127.0.0.1", True), ("localhost", True), ("::1", True), ("[::1]", True), ("127.0.0.2", True),
    ("0.0.0.0", False), ("::", False), ("192.168.1.4", False), ("example.org", False),
])
def test_loopback_and_token(host, loopback):
    assert is_loopback_host(host) is loopback
    assert Settings(host=host).requires_token is not loopback
    assert Settings(host=host, token="t").requires_token  # a token given is always enforced


@pytest.mark.parametrize("kwargs", [{"device": "tpu"}, {"port": 70000}, {"max_json_kb": 0},
                                    {"token": "has space"}, {"token": "a;b"}])
def test_bad_settings_fail_loudly(kwargs):
    with pytest.raises(ValueError):
        Settings(**kwargs)


def test_url_for():
    assert url_for(Settings(host="127.0.0.1", port=8000)) == "http://127.0.0.1:8000/"
    assert url_for(Settings(host="::", port=1, token="abc")) == "http://[::]:1/?token=abc"


def test_resolve_device():
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") in ("cpu", "cuda")


def test_the_app_reads_its_settings_not_the_environment(monkeypatch, settings):
    """Settings are read once, from flags and PLAYGROUND_* (parse_args): an app made from a
    Settings obeys it, whatever the environment says beside it (comparisons read
    PLAYGROUND_CLUSTER again and sent jobs to that scheduler)."""
    from starlette.testclient import TestClient

    from server.app import create_app
    monkeypatch.setenv("PLAYGROUND_CLUSTER", "tcp://192.0.2.1:8786")  # TEST-NET-1: nobody
    settings.comparisons, settings.job_timeout_s = "on", 60.0
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        queue = client.app.state.comparisons
        assert queue.address is None and queue.limits.timeout_s == 60.0  # the embedded cluster
    assert parse_args(["--data-dir", str(settings.data_dir)]).cluster == "tcp://192.0.2.1:8786"
