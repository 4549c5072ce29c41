"""Fetches the csv-test-data corpus into tests/data/csv-test-data (it states no licence, so the
repository does not redistribute it), at a pinned commit, keeping it only when every file's
SHA-256 matches tests/data/csv-test-data.sha256.

    python tools/fetch_test_data.py [--from DIR]

--from DIR copies a local checkout of the corpus instead of downloading; by default a copy at
../shared/peer/csv-test-data (beside the checkout, as on CI) is used when there is one. Exits 1
with the reason when neither works. Does nothing when the folder is already there and matches.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import shutil
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "tests" / "data" / "csv-test-data"
SUMS = ROOT / "tests" / "data" / "csv-test-data.sha256"
COMMIT = "e4c25ebd65902671bc53eedc67275c2328067dbe"
URL = f"https://codeload.github.com/sineemore/csv-test-data/tar.gz/{COMMIT}"
LOCAL = ROOT.parent / "shared" / "peer" / "csv-test-data"


def expected() -> dict[str, str]:
    out = {}
    for line in SUMS.read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        out[name.removeprefix("./")] = digest
    return out


def matches(folder: Path) -> str | None:
    """None when `folder` holds exactly the expected files, else what differs."""
    want = expected()
    for name, digest in want.items():
        path = folder / name
        if not path.is_file():
            return f"{name} is missing"
        if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            return f"{name} differs from {SUMS.name}"
    return None


def download(into: Path) -> Path:
    with urllib.request.urlopen(URL, timeout=60) as r:
        data = r.read()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(into, filter="data")
    (top,) = [p for p in into.iterdir() if p.is_dir()]
    return top


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--from", dest="source", type=Path, default=None)
    a = p.parse_args(argv)
    if TARGET.is_dir() and matches(TARGET) is None:
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        source = a.source or (LOCAL if LOCAL.is_dir() else None)
        try:
            folder = source if source is not None else download(Path(tmp))
        except OSError as exc:
            print(f"fetch_test_data: could not download {URL}: {exc}", file=sys.stderr)
            return 1
        problem = matches(folder)
        if problem:
            print(f"fetch_test_data: {folder}: {problem}", file=sys.stderr)
            return 1
        shutil.rmtree(TARGET, ignore_errors=True)
        for name in expected():
            (TARGET / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(folder / name, TARGET / name)
    print(f"fetch_test_data: {TARGET.relative_to(ROOT)} ready ({len(expected())} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
