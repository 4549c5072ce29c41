"""CI runs the `quick` benchmark suite (SwiftShader) and checks that its report is complete and
that every job succeeded. Figures are reported, never asserted against thresholds here."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import ROOT


def test_quick_suite_report_is_complete(tmp_path):
    # A process of its own: the harness drives Chromium through Playwright's sync API, which
    # cannot start where this worker's session browser (e2e/conftest.py) already runs.
    # The server's comparisons of this suite: scikit-learn and PyTorch keep CI's time bounded.
    env = {**os.environ, "PLAYGROUND_COMPARISON_RUNNERS": "sklearn,torch"}
    out = tmp_path / "report"
    done = subprocess.run([sys.executable, "-m", "bench", "--suite", "quick", "--out", str(out),
                           "--comparison-timeout", "300"], cwd=ROOT, env=env)
    assert done.returncode == 0
    report = json.loads((out / "report.json").read_text())
    suite = json.loads((ROOT / "web" / "suites" / "quick.json").read_text())
    assert report["errors"] == []
    env = report["env"]
    assert env["adapter"]["vendor"] and env["browser"] and env["cpu_cores"] and env["commit"]
    assert env["startup"]["pyodide"] > 0 and env["versions"]["python"]
    for entry, job in zip(suite["jobs"], report["jobs"]):
        assert job["label"] == entry["label"] and len(job["runs"]) == entry.get("repeat", 1)
        for run in job["runs"]:
            assert run["backend"] == "webgpu" and run["metrics"] and run["timings"]["total"] > 0
        if entry["job"]["kind"] in ("random_forest", "transformer"):
            for comps in job["comparisons"]:
                assert comps and all(c["status"] in ("done", "unavailable") for c in comps), comps
                assert any(c["status"] == "done" for c in comps)
    md = (out / "report.md").read_text()
    assert all(entry["label"] in md for entry in suite["jobs"])
    for chart in ("time.png", "accuracy.png", "loss.png"):
        assert (out / chart).stat().st_size > 1000
