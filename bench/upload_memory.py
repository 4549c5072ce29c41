"""`python -m bench.upload_memory`: the memory and time an uploaded CSV's summary takes.

For each kind of file and each size it writes the CSV to a temporary folder and runs the
summary the way the server does (`python -m server.describe_worker`: py_core.data.summarize_csv,
streamed, in a process of its own), reporting that process's peak resident memory (ru_maxrss)
and wall time. Kinds:

- `mixed`: numbers, a 50-level category, booleans, dates, 1,000 distinct words, repeated
  (distinct values do not grow with the file);
- `numeric`: ten columns of floats (the fast path);
- `distinct`: an id and two random strings a row (every value distinct: the high-cardinality
  case, where memory is the distinct values).

`--compare` also runs the summary as it was before streaming (the whole typed table,
`parse_csv(bytes).describe()`, in a process of its own), and `--reference` the memory of a
Python set of the largest column's distinct values alone (what "about 2x the largest column's
distinct values" is measured against). `--server` uploads each file of at most --max-upload-mb
to a fresh server on loopback and reports its growth in peak memory and the answer's timings.

    python -m bench.upload_memory --sizes 10,100,500 --kinds mixed,numeric,distinct --compare
    python -m bench.upload_memory --sizes 24 --kinds distinct --server
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BLOCK = 1 << 20  # bytes written at a time


def write_csv(path: Path, kind: str, mb: int) -> int:
    """A CSV of `kind` of about `mb` megabytes at `path`; returns its rows."""
    rng = random.Random(0)
    target, rows = mb * 2**20, 0
    with open(path, "w", newline="") as f:
        if kind == "mixed":
            f.write("x,noise,count,price,cat,flag,day,word\n")
            words = [base64.b32encode(rng.randbytes(5)).decode().lower() for _ in range(1000)]
            lines = [f"{rng.random():.6f},{rng.gauss(0, 1):.5f},{rng.randint(0, 1000)},"
                     f"{rng.random() * 1e4:.2f},c{rng.randrange(50)},{rng.choice(['TRUE', 'FALSE'])},"
                     f"2024-0{rng.randint(1, 9)}-1{rng.randint(0, 9)},{rng.choice(words)}\n"
                     for _ in range(20_000)]
            block = "".join(lines)
            while f.tell() < target:
                f.write(block)
                rows += len(lines)
        elif kind == "numeric":
            f.write(",".join(f"x{j}" for j in range(10)) + "\n")
            lines = [",".join(f"{rng.random():.6f}" for _ in range(10)) + "\n" for _ in range(20_000)]
            block = "".join(lines)
            while f.tell() < target:
                f.write(block)
                rows += len(lines)
        elif kind == "distinct":
            f.write("id,name,note\n")
            while f.tell() < target:
                noise = base64.b32encode(os.urandom(20 * 10_000)).decode()  # 32 letters a row
                f.write("".join(f"k{rows + i},{noise[32 * i:32 * i + 12]},{noise[32 * i + 12:32 * i + 32]}\n"
                                for i in range(10_000)))
                rows += 10_000
        else:
            raise SystemExit(f"unknown kind {kind!r}")
    return rows


def child(code: list[str]) -> dict:
    """Run a Python child, its last stdout line JSON; adds wall time and the child's peak."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, *code], capture_output=True, text=True, env=env, cwd=ROOT)
    took = time.perf_counter() - t0
    if done.returncode:
        raise SystemExit(f"{code[:2]} failed: {done.stderr[-2000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return {**out, "seconds": round(took, 2)}


def streamed(path: Path) -> dict:
    out = child(["-m", "server.describe_worker", str(path), path.name, "", "65536"])
    if "summary" not in out:
        raise SystemExit(f"no summary for {path}: {out}")
    s = out.pop("summary")
    return {**out, "rows": s["rows"], "distinct": max((c["stats"].get("distinct") or 0) for c in s["columns"])}


WHOLE = """import json, resource, sys
from pathlib import Path
from py_core.data import parse_csv
parse_csv(Path(sys.argv[1]).read_bytes(), name='x.csv').describe()
print(json.dumps({"peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

DISTINCT_SET = """import csv, json, resource, sys
j = int(sys.argv[2])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
with open(sys.argv[1], newline="") as f:
    rows = csv.reader(f)
    next(rows)
    seen = {row[j] for row in rows}
print(json.dumps({"set_mb": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024,
                  "distinct": len(seen)}))
"""


def through_server(path: Path) -> dict:
    import httpx

    from bench.load import free_port, peak_rss_mb, start_server
    tmp = Path(tempfile.mkdtemp(prefix="upload-memory-"))
    port = free_port()
    proc, _ = start_server(tmp / "data", port, [])
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=3600) as http:
            http.post("/api/datasets", files={"file": ("small.csv", b"a,b\n1,2\n")}).raise_for_status()
            base = peak_rss_mb(proc.pid)
            with open(path, "rb") as f:
                t0 = time.perf_counter()
                r = http.post("/api/datasets", files={"file": (path.name, f)})
                took = time.perf_counter() - t0
            r.raise_for_status()
            grown = peak_rss_mb(proc.pid) - base
        return {"status": r.status_code, "seconds": round(took, 2), "server_grew_mb": round(grown, 1),
                "timings": r.json().get("timings")}
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.upload_memory", description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="10,100", help="file sizes in MB, comma-separated")
    p.add_argument("--kinds", default="mixed,numeric,distinct")
    p.add_argument("--compare", action="store_true", help="also the whole-table summary of before")
    p.add_argument("--compare-max-mb", type=int, default=100, help="largest file --compare runs on")
    p.add_argument("--reference", action="store_true", help="also a set of the largest column's values")
    p.add_argument("--server", action="store_true", help="also upload to a server (files <= 200 MB)")
    p.add_argument("--json", help="write the results here")
    a = p.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory(prefix="upload-memory-") as tmp:
        for kind in a.kinds.split(","):
            for mb in map(int, a.sizes.split(",")):
                path = Path(tmp) / f"{kind}-{mb}mb.csv"
                rows = write_csv(path, kind, mb)
                row = {"kind": kind, "mb": round(path.stat().st_size / 2**20, 1), "rows": rows,
                       "streamed": streamed(path)}
                if a.compare and mb <= a.compare_max_mb:
                    row["whole_table"] = child(["-c", WHOLE, str(path)])
                if a.reference and kind == "distinct":
                    row["largest_column_set"] = child(["-c", DISTINCT_SET, str(path), "2"])
                if a.server and mb <= 200:
                    row["server"] = through_server(path)
                path.unlink()
                results.append(row)
                print(json.dumps(row), flush=True)
    print("\n| file | rows | summary: peak memory | time | before: peak memory | time |"
          " set of the largest column's values |\n| --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        s, w, ref = r["streamed"], r.get("whole_table"), r.get("largest_column_set")
        print(f"| {r['kind']} {r['mb']:.0f} MB | {r['rows']:,} | {s['peak_mb']:.0f} MB | {s['seconds']:.1f} s | "
              + (f"{w['peak_mb']:.0f} MB | {w['seconds']:.1f} s | " if w else "- | - | ")
              + (f"{ref['set_mb']:.0f} MB |" if ref else "- |"))
    if a.json:
        Path(a.json).write_text(json.dumps({"python": sys.version.split()[0], "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
