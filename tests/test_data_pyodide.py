"""py_core.data gives the same bits under Pyodide (the browser's Python, run here by Node) as
under this CPython: parsing, summaries, splits, generators, prepared matrices."""

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
                       reason="needs node and the npm package pyodide in web/node_modules "
                              "(make web)"),
]

PROGRAM = r'''
import hashlib, json
from py_core.data import GENERATORS, DataError, generate, parse_csv, prepare, train_test_split

def digest(*arrays):
    h = hashlib.sha256()
    for a in arrays:
        h.update(a.tobytes())
    return h.hexdigest()

out = {"split": [list(a) for a in train_test_split(1000, seed=42,
                                                     stratify=[i % 3 for i in range(1000)])],
       "gens": {n: digest(*(c.values for c in generate(n, n_samples=300).columns))
                for n in GENERATORS}}
rows = b"".join(b"%d,%s,c%d\n" % (i, b"NA" if i % 7 == 0 else b"%.3f" % (i / 3), i % 5)
                for i in range(5000))
table = parse_csv(b"a,b,k\n" + rows)
out["describe"] = table.describe(preview_rows=3)
p = prepare(table, "k")
out["prepare"] = digest(p.X_train, p.y_train, p.X_test, p.y_test)
try:
    parse_csv(b'a,b\n1,"x\n2,3\n')
except DataError as e:
    out["error"] = e.to_dict()
print(json.dumps(out, sort_keys=True))
'''

DRIVER = r'''
import { loadPyodide } from "%(pyodide)s/pyodide.mjs";
import fs from "fs";
import path from "path";
const py = await loadPyodide({ indexURL: "%(pyodide)s/" });
const src = "%(src)s";
for (const file of fs.readdirSync(src, { recursive: true })) {
  if (!file.endsWith(".py")) continue;
  const target = "/home/pyodide/py_core/data/" + file;
  py.FS.mkdirTree(path.dirname(target));
  py.FS.writeFile(target, fs.readFileSync(path.join(src, file)));
}
py.FS.writeFile("/home/pyodide/py_core/__init__.py", "");
py.runPython("import sys; sys.path.insert(0, '/home/pyodide')");
py.setStdout({ batched: (s) => process.stdout.write(s + "\n") });
py.runPython(fs.readFileSync(process.argv[2], "utf8"));
'''


def test_same_results_in_pyodide(tmp_path, capsys):
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    driver = tmp_path / "driver.mjs"
    driver.write_text(DRIVER % {"pyodide": PYODIDE.as_posix(),
                                "src": (ROOT / "py_core" / "data").as_posix()})
    done = subprocess.run(["node", str(driver), str(program)], capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    in_browser = json.loads(done.stdout.strip().splitlines()[-1])
    exec(compile(PROGRAM, "program", "exec"), {})
    here = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert in_browser == here
