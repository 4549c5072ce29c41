"""Builds the wheel the page loads into Pyodide: py_core with its WGSL (py_core/kernels/).

Pure Python, so it needs no build tool and no network (`pyodide build` would download a
cross-build environment). Writes `web/build/py_core-<version>-py3-none-any.whl` and
`web/build/manifest.json` (the file name the worker loads). Run: `python tools/build_wheel.py`.
"""
from __future__ import annotations

import base64
import hashlib
import json
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAME, VERSION = "py_core", "0.1.0"
SUFFIXES = {".py", ".wgsl", ".txt", ".json"}


def files() -> list[tuple[str, Path]]:
    """(path inside the wheel, source file), sorted so that builds are reproducible."""
    out = [(p.relative_to(ROOT).as_posix(), p) for p in (ROOT / "py_core").rglob("*")
           if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts]
    return sorted(out)


def build(out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob(f"{NAME}-*.whl"):
        old.unlink()
    wheel = out_dir / f"{NAME}-{VERSION}-py3-none-any.whl"
    dist = f"{NAME}-{VERSION}.dist-info"
    meta = {
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n"
                            "Summary: The playground's ML core: data, forest, transformer, kernels\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: tools/build_wheel.py\nRoot-Is-Purelib: true\n"
                         "Tag: py3-none-any\n",
        f"{dist}/top_level.txt": f"{NAME}\n",
    }
    record = []
    digest = hashlib.sha256()
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        entries = [(arc, src.read_bytes()) for arc, src in files()] + [(k, v.encode()) for k, v in meta.items()]
        for arc, data in entries:
            info = zipfile.ZipInfo(arc, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
            h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{arc},sha256={h},{len(data)}")
            digest.update(arc.encode() + data)
        record.append(f"{dist}/RECORD,,")
        info = zipfile.ZipInfo(f"{dist}/RECORD", date_time=(2026, 1, 1, 0, 0, 0))
        z.writestr(info, "\n".join(record) + "\n")
    (out_dir / "manifest.json").write_text(json.dumps(
        {"wheel": wheel.name, "sha256": digest.hexdigest(), "files": len(record) - 1}, indent=2))
    return wheel


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "web" / "build"
    print(f"built {build(target)}")
