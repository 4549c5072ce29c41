"""The data path's speed outside the page: CSV parsing and synthetic generation in CPython and in
Pyodide (run by Node: the same V8 and WebAssembly engine as Chromium), each path py_core has.

    python -m bench.data_speed [--rows 1000000] [--out bench/results/DATE-data-speed.md]

CSV: the `make bench SUITE=data` file (numpy's normals, %.4g, 13 features and y: about 95 MB for
1M rows). Reported: MB/s and rows/s of `parse_csv`, and its peak memory over the file's size
(CPython: tracemalloc's peak during a second, untimed parse, the file's bytes added; Pyodide: the growth of
the WebAssembly memory during the parse plus the file's size, as the tab holds a JavaScript copy).
Paths: CPython general (csv.reader rows), CPython fast (bytes split + float()), Pyodide fast
(pure Python), Pyodide + web/csvparse.js (the tab's). Synthetic: regression 1M x 20 and blobs
500k x 50 in CPython (pure Python; numpy kernels, the server's) and Pyodide + web/synthetic.js (the
tab's). Preparation: `prepare` of the regression set (split, medians, train and test matrices),
as a forest job does before its fit, in CPython and Pyodide. Every figure is one run on whatever
machine runs this: read them against its load.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYODIDE = ROOT / "web" / "node_modules" / "pyodide"

DRIVER = r'''
import { loadPyodide } from "%(pyodide)s/pyodide.mjs";
import { parseNumericFromPython } from "%(web)s/csvparse.js";
import { kernels } from "%(web)s/synthetic.js";
import fs from "fs";
import path from "path";
const py = await loadPyodide({ indexURL: "%(pyodide)s/" });
for (const file of fs.readdirSync("%(src)s", { recursive: true })) {
  if (!file.endsWith(".py")) continue;
  const target = "/home/pyodide/py_core/data/" + file;
  py.FS.mkdirTree(path.dirname(target));
  py.FS.writeFile(target, fs.readFileSync(path.join("%(src)s", file)));
}
py.FS.writeFile("/home/pyodide/py_core/__init__.py", "");
py.FS.writeFile("/home/pyodide/py_core/errors.py", fs.readFileSync("%(src)s/../errors.py"));
py.FS.writeFile("/home/pyodide/data.csv", fs.readFileSync(process.argv[2]));
globalThis.pyCoreParseNumeric = parseNumericFromPython;
globalThis.pyCoreSynthetic = kernels;
globalThis.heapBytes = () => py._module.HEAP8.length;
py.runPython("import sys; sys.path.insert(0, '/home/pyodide')");
py.setStdout({ batched: (s) => process.stdout.write(s + "\n") });
py.runPython(fs.readFileSync(process.argv[3], "utf8"));
'''

PYODIDE_PROGRAM = r'''
import json, time, js
from py_core.data import make_blobs, make_regression, parse_csv, prepare, synthetic, table
out = {}
data = open("/home/pyodide/data.csv", "rb").read()
for label, parser in (("Pyodide fast path (pure Python)", None),
                      ("Pyodide + web/csvparse.js (the tab)", js.pyCoreParseNumeric)):
    table.use_numeric_parser(parser)
    heap = js.heapBytes()
    t0 = time.perf_counter()
    t = parse_csv(data)
    s = time.perf_counter() - t0
    out[label] = {"seconds": s, "rows": t.n_rows, "bytes": len(data),
                  "memory_x_file": (js.heapBytes() - heap + len(data)) / len(data)}
    del t
synthetic.use_bulk(js.pyCoreSynthetic)
for label, make in (("regression 1M x 20", lambda: make_regression(n_samples=%(rows)d, n_features=20,
                                                                     n_informative=5, noise=10)),
                    ("blobs 500k x 50", lambda: make_blobs(n_samples=%(rows)d // 2, n_features=50))):
    t0 = time.perf_counter()
    t = make()
    out["synthetic " + label + ", Pyodide + web/synthetic.js (the tab)"] = {
        "seconds": time.perf_counter() - t0, "rows": t.n_rows}
    if label.startswith("regression"):
        t0 = time.perf_counter()
        prepare(t, "y")
        out["prepare regression 1M x 20, Pyodide (the tab)"] = {
            "seconds": time.perf_counter() - t0, "rows": t.n_rows}
    del t
print(json.dumps(out))
'''


def csv_file(rows: int, folder: Path) -> Path:
    import numpy as np
    rng = np.random.default_rng(0)
    X = rng.standard_normal((rows, 13))
    y = X[:, :6] @ rng.uniform(1, 100, 6) + rng.normal(0, 10, rows)
    path = folder / f"regression-{rows}.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", fmt="%.4g",
               header=",".join([f"x{i}" for i in range(13)] + ["y"]), comments="")
    return path


def cpython(path: Path, rows: int) -> dict:
    from py_core.data import make_blobs, make_regression, parse_csv, prepare, synthetic
    from py_core.data import table as table_module
    data = path.read_bytes()
    out = {}
    fast = table_module._fast_numeric
    for label, patched in (("CPython general path (csv.reader)", lambda *a: None),
                           ("CPython fast path (the server)", fast)):
        table_module._fast_numeric = patched
        t0 = time.perf_counter()
        t = parse_csv(data)
        s = time.perf_counter() - t0
        out[label] = {"seconds": s, "rows": t.n_rows, "bytes": len(data)}
        del t
        if patched is fast:  # memory apart: tracemalloc slows Python down several times
            tracemalloc.start()
            t = parse_csv(data)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            out[label]["memory_x_file"] = (peak + len(data)) / len(data)
            del t
    table_module._fast_numeric = fast
    from server.synthetic_numpy import Kernels
    for kernels, where in ((None, "CPython pure Python"), (Kernels, "CPython + numpy kernels (the server)")):
        synthetic.use_bulk(kernels)
        for label, make in (("regression 1M x 20", lambda: make_regression(
                                n_samples=rows, n_features=20, n_informative=5, noise=10)),
                            ("blobs 500k x 50", lambda: make_blobs(n_samples=rows // 2, n_features=50))):
            if kernels is None and rows > 200_000:  # minutes: time a tenth and say so
                scale = 10
                small = {"regression 1M x 20": lambda: make_regression(
                    n_samples=rows // 10, n_features=20, n_informative=5, noise=10),
                    "blobs 500k x 50": lambda: make_blobs(n_samples=rows // 20, n_features=50)}[label]
                t0 = time.perf_counter()
                small()
                s = (time.perf_counter() - t0) * scale
                out[f"synthetic {label}, {where} (a tenth timed, x10)"] = {"seconds": s, "rows": rows}
                continue
            t0 = time.perf_counter()
            t = make()
            out[f"synthetic {label}, {where}"] = {"seconds": time.perf_counter() - t0, "rows": t.n_rows}
            if kernels is not None and label.startswith("regression"):
                t0 = time.perf_counter()
                prepare(t, "y")
                out["prepare regression 1M x 20, CPython"] = {
                    "seconds": time.perf_counter() - t0, "rows": t.n_rows}
    synthetic.use_bulk(None)
    return out


def pyodide(path: Path, rows: int, folder: Path) -> dict:
    driver = folder / "driver.mjs"
    driver.write_text(DRIVER % {"pyodide": PYODIDE.as_posix(), "web": (ROOT / "web").as_posix(),
                                "src": (ROOT / "py_core" / "data").as_posix()})
    program = folder / "program.py"
    program.write_text(PYODIDE_PROGRAM % {"rows": rows})
    done = subprocess.run(["node", str(driver), str(path), str(program)], capture_output=True,
                          text=True, timeout=3600)
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def report(results: dict, rows: int, size: int) -> str:
    lines = [f"# Data path speed: {time.strftime('%Y-%m-%dT%H:%M:%S%z')}", "",
             f"`python -m bench.data_speed --rows {rows}` on {os.cpu_count()} CPU(s), load average "
             f"{os.getloadavg()[0]:.1f} at the end (a shared machine: read the figures against it). "
             f"CSV: {size / 2**20:.1f} MB, {rows:,} rows x 14 numeric columns.", "",
             "| what | seconds | MB/s | rows/s | peak memory / file size |", "|---|---|---|---|---|"]
    for label, r in results.items():
        mb = r.get("bytes", 0) / 2**20
        lines.append(f"| {label} | {r['seconds']:.2f} | "
                     f"{mb / r['seconds']:.1f} | " if mb else f"| {label} | {r['seconds']:.2f} | – | ")
        lines[-1] += f"{r['rows'] / r['seconds']:,.0f} | " + (
            f"{r['memory_x_file']:.2f} |" if "memory_x_file" in r else "– |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.data_speed", description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory(prefix="data-speed-") as tmp:
        folder = Path(tmp)
        path = csv_file(args.rows, folder)
        results = {**cpython(path, args.rows), **pyodide(path, args.rows, folder)}
        text = report(results, args.rows, path.stat().st_size)
    print(text)
    if args.out:
        args.out.write_text(text)
        args.out.with_suffix(".json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
