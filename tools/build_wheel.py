"""Builds the wheel the page loads into Pyodide, with pypa's `build` (PEP 517, setuptools, offline):

    python -m build --wheel --no-isolation --outdir web/build py_core

from py_core's own pyproject.toml (py_core alone, its WGSL as package data, the version from
py_core/__init__.py), then writes `web/build/manifest.json`: the file name the worker loads, a
SHA-256 over the wheel and its number of files. Run: `python tools/build_wheel.py [OUT_DIR]`.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "py_core"


def build(out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("py_core-*.whl"):
        old.unlink()
    staging = PACKAGE / "build"  # setuptools' staging: stale files there would end in the wheel
    shutil.rmtree(staging, ignore_errors=True)
    try:
        subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
                        str(out_dir), str(PACKAGE)], check=True, stdout=subprocess.DEVNULL)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        for info in PACKAGE.glob("*.egg-info"):
            shutil.rmtree(info, ignore_errors=True)
    (wheel,) = out_dir.glob("py_core-*.whl")
    with zipfile.ZipFile(wheel) as z:
        files = len([n for n in z.namelist() if not n.endswith("/RECORD")])
    # The forest's kernels, which the worker compiles while Pyodide loads (py_core.browser.warm_manifest)
    sys.path.insert(0, str(ROOT))
    from py_core.browser import warm_manifest
    (out_dir / "warm.json").write_text(json.dumps(warm_manifest()))
    (out_dir / "manifest.json").write_text(json.dumps(
        {"wheel": wheel.name, "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
         "files": files}, indent=2))
    return wheel


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "web" / "build"
    print(f"built {build(target)}")
