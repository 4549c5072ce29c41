"""Built-in data sets: scikit-learn's bundled ones, exported once to CSV in the data dir.

    python -m server.builtins --data-dir data      (`make setup` runs this; the server's start-up
                                                    does it too for any file that is missing)

Each becomes `<data_dir>/datasets/<name>.csv`: a header of the features as scikit-learn names
them and a last column `target`, class integers for the classification sets. Numbers are written
as Python's shortest round-trip text (integral values without '.0'), so reading the CSV back
gives sklearn's arrays exactly. `sklearn.datasets.load_*` read files shipped inside the package:
no network.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
from pathlib import Path

# name: (sklearn loader, task). The name is also the data set's id in the API.
BUILTINS: dict[str, tuple[str, str]] = {
    "diabetes": ("load_diabetes", "regression"),
    "iris": ("load_iris", "classification"),
    "wine": ("load_wine", "classification"),
    "breast_cancer": ("load_breast_cancer", "classification"),
    "digits": ("load_digits", "classification"),
}


def builtin_path(data_dir: Path | str, name: str) -> Path:
    return Path(data_dir) / "datasets" / f"{name}.csv"


def export_builtins(data_dir: Path | str, overwrite: bool = False) -> list[Path]:
    """Write every built-in's CSV that is missing (all of them with overwrite); return those
    written. Each file is written to a temporary name and renamed, so none is ever half there."""
    todo = [name for name in BUILTINS
            if overwrite or not builtin_path(data_dir, name).exists()]
    written = []
    for name in todo:
        path = builtin_path(data_dir, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{name}.csv.tmp")
        tmp.write_bytes(builtin_csv(name))
        os.replace(tmp, path)
        written.append(path)
    return written


def builtin_csv(name: str) -> bytes:
    """The CSV text of built-in `name`, from sklearn's arrays."""
    import sklearn.datasets  # slow to import (a second): only when a file must be written

    loader, task = BUILTINS[name]
    bunch = getattr(sklearn.datasets, loader)()
    names = [str(n) for n in bunch.feature_names]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*names, "target"])
    for features, target in zip(bunch.data.tolist(), bunch.target.tolist()):
        target = int(target) if task == "classification" else target
        writer.writerow([*map(_number, features), _number(target)])
    return out.getvalue().encode("utf-8")


def _number(v) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) < 2 ** 53:
        return str(int(v))
    return repr(v)


def main(argv: list[str] | None = None) -> None:
    from server.settings import Settings

    p = argparse.ArgumentParser(prog="python -m server.builtins",
                                description="Export scikit-learn's bundled data sets to CSV.")
    p.add_argument("--data-dir", type=Path, default=Settings().data_dir)
    p.add_argument("--overwrite", action="store_true", help="write them even if present")
    a = p.parse_args(argv)
    for path in export_builtins(a.data_dir, overwrite=a.overwrite):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
