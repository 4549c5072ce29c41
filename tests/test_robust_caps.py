"""The caps are server options: each has a flag with its help text, and a server started with
small ones (a flag, an environment variable) applies them to every request."""

import dataclasses
import subprocess
import sys
import uuid

import httpx

from robust_server import CliServer
from server.settings import PROJECT_ROOT, Settings

CAPS = [f.name for f in dataclasses.fields(Settings) if f.name.startswith("max_")]


def test_every_cap_is_a_documented_flag():
    assert {"max_upload_mb", "max_json_kb"} <= set(CAPS)
    out = subprocess.run([sys.executable, "-m", "server", "--help"], cwd=PROJECT_ROOT,
                         capture_output=True, text=True, timeout=30, check=True).stdout
    text = " ".join(out.split())  # argparse wraps lines
    for name in CAPS:
        flag = "--" + name.replace("_", "-")
        assert f"{flag} {name.upper()} " in text, flag
        described = text.split(f"{flag} {name.upper()} ", 1)[1]
        assert described.startswith(("largest", "most")) and "default" in described.split("--")[0]


def test_small_caps_from_a_flag_and_the_environment_apply(tmp_path):
    with CliServer(tmp_path / "data", "--max-upload-mb", "1",
                   env={"PLAYGROUND_MAX_JSON_KB": "2"}) as server, \
            httpx.Client(base_url=server.url, timeout=30) as http:
        assert http.get("/api/health").json()["limits"] == {"max_upload_mb": 1, "max_json_kb": 2}

        def run(pad: int):
            return http.post("/api/runs", json={"id": str(uuid.uuid4()), "kind": "selftest",
                                                "extra": {"pad": "x" * pad}})

        assert run(1500).status_code == 201
        r = run(2100)
        assert r.status_code == 413 and "2 KB" in r.json()["error"]["message"]

        def upload(path: str, size: int):
            data = b"a,b\n" + b"1,2\n" * (size // 4)
            return http.post(path, files={"file": ("f.csv", data, "text/csv")})

        assert upload("/api/datasets", 900_000).status_code == 201
        for path in ("/api/datasets", "/api/texts"):
            r = upload(path, 1_100_000)
            assert r.status_code == 413 and "1 MB" in r.json()["error"]["message"], path
        assert not list((tmp_path / "data" / "uploads").iterdir())
