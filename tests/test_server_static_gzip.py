"""Static files compressed and cached: gzip copies for clients that accept gzip (made once, kept
only when they save space), the decoded size for the page's byte progress, an immutable URL for
the pinned Pyodide, uPlot from node_modules, and the page of one stored run at /runs/<id>."""

import gzip
import json
import random

import pytest


@pytest.fixture
def files(settings):
    rnd = random.Random(1)
    text = ("def f(x):\n    return x * 2\n" * 400).encode()            # compresses well
    noise = bytes(rnd.getrandbits(8) for _ in range(4000))               # does not compress
    (settings.pyodide_dir / "pyodide.asm.wasm").write_bytes(text)
    (settings.pyodide_dir / "python_stdlib.zip").write_bytes(noise)
    (settings.pyodide_dir / "package.json").write_text(json.dumps({"version": "9.8.7"}))
    (settings.web_dir / "run.html").write_text("<!doctype html><title>run</title>")
    (settings.web_dir / "tiny.js").write_text("x")
    dist = settings.web_dir / "node_modules" / "uplot" / "dist"
    dist.mkdir(parents=True)
    (dist / "uPlot.esm.js").write_bytes(b"export default function uPlot() {}\n" * 100)
    return {"text": text, "noise": noise}


def test_gzip_when_accepted_and_smaller(client, settings, files):
    r = client.get("/pyodide/pyodide.asm.wasm", headers={"accept-encoding": "gzip"})
    assert r.status_code == 200
    assert r.headers["content-encoding"] == "gzip"
    assert r.headers["content-type"] == "application/wasm"
    assert r.headers["x-decoded-length"] == str(len(files["text"]))
    assert int(r.headers["content-length"]) < len(files["text"]) / 5
    assert r.content == files["text"]  # httpx decodes it
    assert "accept-encoding" in r.headers["vary"].lower()
    copies = list((settings.data_dir / "static-gz").glob("*.gz"))
    assert len(copies) == 1 and gzip.decompress(copies[0].read_bytes()) == files["text"]
    # Made once: a second request is served from the same copy (same ETag), and revalidates.
    again = client.get("/pyodide/pyodide.asm.wasm", headers={"accept-encoding": "gzip"})
    assert again.headers["etag"] == r.headers["etag"]
    assert client.get("/pyodide/pyodide.asm.wasm", headers={"accept-encoding": "gzip",
                                                            "if-none-match": r.headers["etag"]}).status_code == 304


def test_identity_without_gzip_or_with_a_range(client, files):
    for headers in ({"accept-encoding": "identity"}, {"accept-encoding": "gzip;q=0"},
                    {"accept-encoding": "gzip", "range": "bytes=0-9"}):
        r = client.get("/pyodide/pyodide.asm.wasm", headers=headers)
        assert "content-encoding" not in r.headers, headers
    r = client.get("/pyodide/pyodide.asm.wasm", headers={"accept-encoding": "identity"})
    assert r.content == files["text"] and r.headers["content-length"] == str(len(files["text"]))


def test_incompressible_and_tiny_files_are_sent_as_they_are(client, files):
    r = client.get("/pyodide/python_stdlib.zip", headers={"accept-encoding": "gzip"})
    assert "content-encoding" not in r.headers and r.content == files["noise"]
    r = client.get("/web/tiny.js", headers={"accept-encoding": "gzip"})
    assert "content-encoding" not in r.headers and r.text == "x"


def test_versioned_pyodide_is_immutable_and_the_rest_revalidates(client, files):
    r = client.get("/pyodide/v9.8.7/pyodide.asm.wasm")
    assert r.status_code == 200 and r.content == files["text"]
    assert "immutable" in r.headers["cache-control"] and "max-age=31536000" in r.headers["cache-control"]
    assert client.get("/pyodide/pyodide.asm.wasm").headers["cache-control"] == "no-cache"
    assert client.get("/web/tiny.js").headers["cache-control"] == "no-cache"
    assert client.get("/pyodide/v1.0.0/pyodide.asm.wasm").status_code == 404  # not this version


def test_uplot_from_node_modules_and_the_run_page(client, files):
    r = client.get("/vendor/uplot/uPlot.esm.js")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/javascript")
    r = client.get("/runs/0123456789abcdef")
    assert r.status_code == 200 and "<title>run</title>" in r.text
    assert r.headers["content-type"] == "text/html; charset=utf-8"
