"""The transformer's initial weights, vocabulary and batches are the same bits under Pyodide (the
browser's Python, run here by Node) as under this CPython: what lets the tab and the server train
from the same start on the same data."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYODIDE = ROOT / "web" / "node_modules" / "pyodide"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("node") is None or not (PYODIDE / "pyodide.mjs").exists(),
                       reason="needs node and the npm package pyodide in web/node_modules (make web)"),
]

PROGRAM = r'''
import hashlib, json
from py_core.transformer import (STREAM_TRAIN, STREAM_VAL, ParamLayout, TransformerConfig, Vocab,
                                 batch_offsets, builtin_text, init_weights)
text = builtin_text("shakespeare")
cfg = TransformerConfig.preset("micro", n_layer=3, n_embd=48, n_head=3)
vocab = Vocab.from_text(text + "ü☃")
w = init_weights(ParamLayout(cfg, len(vocab)), 4242)
out = {"weights": hashlib.sha256(w.tobytes()).hexdigest(), "vocab": vocab.chars,
       "batches": [batch_offsets(s, st, k, 7, 30000) for s in (0, 1337, 2**32 - 1)
                   for st in (STREAM_TRAIN, STREAM_VAL) for k in (0, 1, 99999)],
       "lr": [cfg.lr_at(k) for k in range(0, cfg.steps, 7)]}
print(json.dumps(out, sort_keys=True))
'''

DRIVER = r'''
import { loadPyodide } from "%(pyodide)s/pyodide.mjs";
import fs from "fs";
import path from "path";
const py = await loadPyodide({ indexURL: "%(pyodide)s/" });
const root = "%(root)s";
for (const dir of ["gpu", "kernels", "transformer", "texts"]) {
  for (const file of fs.readdirSync(path.join(root, dir), { recursive: true })) {
    if (!file.endsWith(".py") && !file.endsWith(".txt")) continue;
    const target = "/home/pyodide/py_core/" + dir + "/" + file;
    py.FS.mkdirTree(path.dirname(target));
    py.FS.writeFile(target, fs.readFileSync(path.join(root, dir, file)));
  }
}
py.FS.writeFile("/home/pyodide/py_core/__init__.py", "");
py.FS.writeFile("/home/pyodide/py_core/rng.py", fs.readFileSync(path.join(root, "rng.py")));
py.runPython("import sys; sys.path.insert(0, '/home/pyodide')");
py.setStdout({ batched: (s) => process.stdout.write(s + "\n") });
py.runPython(fs.readFileSync(process.argv[2], "utf8"));
'''


def test_same_weights_and_batches_in_pyodide(tmp_path, capsys):
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    driver = tmp_path / "driver.mjs"
    driver.write_text(DRIVER % {"pyodide": PYODIDE.as_posix(), "root": (ROOT / "py_core").as_posix()})
    done = subprocess.run(["node", str(driver), str(program)], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    in_browser = json.loads(done.stdout.strip().splitlines()[-1])
    exec(compile(PROGRAM, "program", "exec"), {})
    here = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert in_browser == here
