"""A page job's forest grown on the native backend (lavapipe here): its test metric, to set beside
the page's on a GPU (the same trees give the same figure on every backend).

    python tools/forest_native.py diabetes target '{"n_estimators": 200, "max_depth": 16, "random_state": 0}'

The data set is a built-in one (data/datasets/NAME.csv), split as the page splits it
(`prepare(..., test_size=0.2, seed=42)`); regression prints the test MSE, classification the
accuracy.
"""
from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from py_core.data import parse_csv, prepare  # noqa: E402
from py_core.forest import RandomForestClassifier, RandomForestRegressor  # noqa: E402
from py_core.gpu import get_backend  # noqa: E402


def main(name: str, target: str, params: dict) -> None:
    path = Path(__file__).resolve().parent.parent / "data" / "datasets" / f"{name}.csv"
    p = prepare(parse_csv(path.read_bytes(), name=name), target, test_size=0.2, seed=42)
    F, classes = p.n_features, p.info["classes"]
    cls = RandomForestClassifier if p.info["task"] == "classification" else RandomForestRegressor
    y = [classes[v] for v in p.y_train] if classes else p.y_train
    forest = asyncio.run(cls(**params, backend=get_backend("native")).fit(p.X_train, y, n_features=F))
    rows = [p.X_test[i * F:(i + 1) * F] for i in range(len(p.y_test))]
    pred = asyncio.run(forest.predict(rows))
    if classes:
        print(f"accuracy {sum(a == classes[b] for a, b in zip(pred, p.y_test)) / len(rows):.6f}")
    else:
        print(f"mse {sum((a - b) ** 2 for a, b in zip(pred, p.y_test)) / len(rows):.6f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]) if len(sys.argv) > 3 else {})
