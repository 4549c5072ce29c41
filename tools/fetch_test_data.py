"""Copies the csv-test-data corpus into tests/data/csv-test-data (it states no licence, so the
repository does not redistribute it), keeping it only when every file's SHA-256 matches
tests/data/csv-test-data.sha256.

    python tools/fetch_test_data.py [--from DIR]

The copy comes from DIR, by default ../shared/peer/csv-test-data (the team's shared folder beside
the checkout, as on CI). Nothing is downloaded. Without a source the corpus tests skip, naming the
folder; a source whose files differ from the sums exits 1. Does nothing when the folder is already
there and matches.
"""
from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "tests" / "data" / "csv-test-data"
SUMS = ROOT / "tests" / "data" / "csv-test-data.sha256"
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


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--from", dest="source", type=Path, default=None)
    a = p.parse_args(argv)
    if TARGET.is_dir() and matches(TARGET) is None:
        return 0
    folder = a.source or (LOCAL if LOCAL.is_dir() else None)
    if folder is None:
        print(f"fetch_test_data: no copy of csv-test-data at {LOCAL}: its tests will skip",
              file=sys.stderr)
        return 0
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
