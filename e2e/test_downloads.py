"""Models out of the page: the forest's ONNX download predicts what the tab predicted, the
transformer's safetensors download loads into nanoGPT's GPT, each with the server's snippet shown
beside its button; and the comparison card's Cancel button stops the server's jobs."""
from __future__ import annotations

import importlib
import json
import shutil
import sys
import uuid
from pathlib import Path

import httpx
import numpy as np

from conftest import wait_ready

TESTS = Path(__file__).resolve().parent.parent / "tests"


def _trained(page, prefix: str, what: str) -> None:
    page.click(f"#{prefix}-train")
    page.wait_for_function(f"() => /^({what}|Training failed)/.test(document.querySelector('#{prefix}-status').textContent)",
                           timeout=600_000)
    status = page.locator(f"#{prefix}-status").inner_text()
    assert status.startswith(what), status


def _newest(server, kind) -> dict:
    newest = httpx.get(f"{server}/api/runs", params={"kind": kind}).json()["runs"][0]
    return httpx.get(f"{server}/api/runs/{newest['id']}").json()


def test_downloads_load_elsewhere_as_their_snippets_say(page, server, tmp_path, monkeypatch):
    """One page (a Pyodide start is the dearest part here): a forest, then a transformer."""
    page.goto("/?tab=forest&tf.preset=micro&tf.steps=3")
    wait_ready(page)
    session = _forest_onnx(page, server)
    _forest_json_snippet(page, session, tmp_path)
    page.click("#tab-transformer")
    _transformer_safetensors(page, server, tmp_path, monkeypatch)


def _forest_onnx(page, server):
    """The ONNX download predicts what the tab predicted; its snippet is beside it."""
    import onnxruntime as ort

    from py_core.data import parse_csv, prepare
    page.wait_for_function("() => window.playground.selection?.dataset === 'diabetes'", timeout=60_000)
    page.fill("#forest-n_estimators", "6")
    page.fill("#forest-max_depth", "6")
    page.fill("#forest-random_state", "5")
    _trained(page, "forest", "Trained")
    run = _newest(server, "random_forest")
    name = f"forest-{run['id'][:8]}.onnx"
    page.locator("#forest-onnx-snippet summary").click()
    page.wait_for_function("(n) => document.querySelector('#forest-onnx-snippet pre').textContent.includes(n)", arg=name)
    assert "onnxruntime" in page.locator("#forest-onnx-snippet pre").text_content()
    with page.expect_download(timeout=120_000) as download:
        page.click("#forest-download-onnx")
    assert download.value.suggested_filename == name
    session = ort.InferenceSession(Path(download.value.path()).read_bytes())
    table = parse_csv(httpx.get(f"{server}/api/datasets/diabetes/file").content, name="diabetes")
    split = run["config"]["split"]
    p = prepare(table, "target", test_size=split["test_size"], seed=split["seed"])
    X = np.asarray(p.X_test, dtype=np.float32).reshape(-1, p.n_features)
    (pred,) = session.run(None, {"X": X})
    # The tab's predictions as the run keeps them (its plot's points, to 5 significant digits).
    tabs = np.array([y for _, y in run["extra"]["plots"]["pred_vs_actual"]])
    assert len(tabs) == len(X)
    np.testing.assert_allclose(pred[:, 0], tabs, rtol=1e-4)
    assert page.locator("#forest-onnx-status").inner_text() == f"Downloaded {name}."
    return session


def _forest_json_snippet(page, session, tmp_path):
    """The JSON snippet's text as the page shows it, run next to the JSON download, prints what
    the ONNX download predicts for its example row (the training medians)."""
    import ast
    import os
    import subprocess
    with page.expect_download(timeout=60_000) as download:
        page.click("#forest-download")
    shutil.copy(download.value.path(), tmp_path / download.value.suggested_filename)
    page.locator("#forest-snippet summary").click()
    (tmp_path / "snippet.py").write_text(page.locator("#forest-snippet pre").text_content(), encoding="utf-8")
    done = subprocess.run([sys.executable, "snippet.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(TESTS.parent)))
    assert done.returncode == 0, done.stderr
    medians = json.loads(session.get_modelmeta().custom_metadata_map["data"])["medians"]
    (onnx,) = session.run(None, {"X": np.float32([medians])})
    np.testing.assert_allclose(ast.literal_eval(done.stdout.strip()), onnx[:, 0], rtol=1e-5)


def _transformer_safetensors(page, server, tmp_path, monkeypatch):
    """The weights load into nanoGPT's GPT strictly; the PyTorch snippet names the file."""
    import torch
    from safetensors import safe_open
    from safetensors.torch import load_file
    page.wait_for_function("() => document.querySelector('#tf-size').textContent.includes('parameters')", timeout=60_000)
    assert page.locator("#tf-preset").input_value() == "micro"
    assert "Train a model" in page.locator("#tf-snippet pre").text_content()
    _trained(page, "tf", "Done")
    run = _newest(server, "transformer")
    name = f"transformer-{run['id'][:8]}.safetensors"
    page.wait_for_function("(n) => document.querySelector('#tf-snippet pre').textContent.includes(n)", arg=name)
    with page.expect_download(timeout=60_000) as download:
        page.click("#tf-download")
    assert download.value.suggested_filename == name
    shutil.copy(TESTS / "nanogpt_standin.py", tmp_path / "model.py")  # nanoGPT's model.py
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "model", raising=False)
    nanogpt = importlib.import_module("model")
    with safe_open(download.value.path(), "pt") as f:
        meta = f.metadata()
    model = nanogpt.GPT(nanogpt.GPTConfig(**json.loads(meta["gpt_config"])))
    model.load_state_dict(load_file(download.value.path()), strict=True)
    assert model.config.n_layer == run["config"]["params"]["n_layer"]
    assert torch.equal(model.lm_head.weight, model.transformer.wte.weight)


SLOW = {"kind": "random_forest", "dataset": "synthetic:regression?n_samples=20000&n_features=20",
        "target": "y", "params": {"n_estimators": 300, "random_state": 0},
        "split": {"test_size": 0.2, "seed": 42}}


def test_cancel_stops_the_servers_comparisons(page, server):
    run_id = str(uuid.uuid4())
    r = httpx.post(f"{server}/api/runs", json={"id": run_id, "kind": "random_forest", "config": SLOW,
                                                "backend": "webgpu", "metrics": {}, "timings": {"fit": 1.0}})
    assert r.status_code == 201, r.text
    page.goto(f"/runs/{run_id}")
    button = page.locator("#compare-cancel")
    button.wait_for(timeout=60_000)
    assert "queued or running" in button.inner_text()
    button.click()
    page.wait_for_function("() => document.querySelector('.comparisons').textContent.includes('failed: cancelled')")
    assert page.locator("#compare-cancel").count() == 0
    rows = httpx.get(f"{server}/api/runs/{run_id}/comparisons").json()["comparisons"]
    assert rows and not [c for c in rows if c["status"] in ("queued", "running")]
    assert {c["error"] for c in rows if c["status"] == "failed"} == {"cancelled"}
