"""Run a program under Pyodide (the browser's Python, run here by Node) and under this CPython, for
the tests that py_core gives the same bits in the tab as on the server.

    in_browser, here = run_both(PROGRAM, tmp_path, capsys, ["data", "errors.py"],
                                js={"pyCoreSynthetic": ("synthetic.js", "kernels")})

The program prints JSON as its last line; both runs' last lines come back parsed. `modules` are
the parts of py_core (folders or files) the program needs, copied into Pyodide's file system;
`js` puts a web/ module's export on the global scope, as web/worker.js does for py_core.browser.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYODIDE = ROOT / "web" / "node_modules" / "pyodide"

# pytestmark of a test file that runs Pyodide: slow (Pyodide starts in about 5 s), and skipped
# where Node or the npm package is missing
NEEDS_PYODIDE = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("node") is None or not (PYODIDE / "pyodide.mjs").exists(),
                       reason="needs node and the npm package pyodide in web/node_modules (make web)"),
]

DRIVER = r'''
import { loadPyodide } from "%(pyodide)s/pyodide.mjs";
import fs from "fs";
import path from "path";
%(globals)s
const py = await loadPyodide({ indexURL: "%(pyodide)s/" });
const root = "%(root)s";
for (const part of %(modules)s) {
  const from = path.join(root, part);
  const files = fs.statSync(from).isDirectory()
    ? fs.readdirSync(from, { recursive: true }).map((f) => path.join(part, f)) : [part];
  for (const file of files) {
    if (!file.endsWith(".py") && !file.endsWith(".txt")) continue;
    const target = "/home/pyodide/py_core/" + file;
    py.FS.mkdirTree(path.dirname(target));
    py.FS.writeFile(target, fs.readFileSync(path.join(root, file)));
  }
}
py.FS.writeFile("/home/pyodide/py_core/__init__.py", "");  // not the real one: it imports all of py_core
py.runPython("import sys; sys.path.insert(0, '/home/pyodide')");
py.setStdout({ batched: (s) => process.stdout.write(s + "\n") });
py.runPython(fs.readFileSync(process.argv[2], "utf8"));
'''


def run_both(program: str, tmp_path: Path, capsys, modules: list[str],
             js: dict[str, tuple[str, str]] | None = None, timeout: float = 300) -> tuple[dict, dict]:
    """(the program's last line under Pyodide, and under this CPython), each as JSON.
    js: {global name: (file under web/, the name it exports)}."""
    source = tmp_path / "program.py"
    source.write_text(program)
    driver = tmp_path / "driver.mjs"
    globals_js = "".join(f'import {{ {export} as {name} }} from "{(ROOT / "web" / file).as_posix()}";\n'
                         f"globalThis.{name} = {name};\n" for name, (file, export) in (js or {}).items())
    driver.write_text(DRIVER % {"pyodide": PYODIDE.as_posix(), "root": (ROOT / "py_core").as_posix(),
                                "modules": json.dumps(modules), "globals": globals_js})
    done = subprocess.run(["node", str(driver), str(source)], capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stderr[-2000:]
    in_browser = json.loads(done.stdout.strip().splitlines()[-1])
    exec(compile(program, "program", "exec"), {})
    here = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    return in_browser, here
