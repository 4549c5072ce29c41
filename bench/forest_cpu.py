"""A forest fit's time on the CPU paths, the page's fallback included: the plain-Python reference
backend (what the tab runs through Pyodide without WebGPU) and the native backend (wgpu-native;
lavapipe here, the thread-per-item kernels CPU adapters run), on scikit-learn's digits (10
classes) and diabetes, best of `--repeat` fits. `--tree DIR` times another checkout's py_core
(an A/B: `git worktree add /tmp/old COMMIT`).

    PYTHONPATH=. python -m bench.forest_cpu [--tree /tmp/old] [--backends reference,native]
"""
from __future__ import annotations

import argparse
import asyncio
import sys
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", default=None, help="a checkout whose py_core to time (default: this one)")
    ap.add_argument("--backends", default="reference,native")
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    if a.tree:
        sys.path.insert(0, a.tree)
    from sklearn.datasets import load_diabetes, load_digits

    import py_core
    from py_core.forest import RandomForestClassifier, RandomForestRegressor
    print(f"py_core from {py_core.__file__}")
    sets = [("digits 1797 x 64, 10 classes, 10 trees", load_digits, RandomForestClassifier, 10),
            ("diabetes 442 x 10, 20 trees", load_diabetes, RandomForestRegressor, 20)]
    for backend in a.backends.split(","):
        for name, load, cls, trees in sets:
            X, y = load(return_X_y=True)
            X, y = X.tolist(), y.tolist()
            best = None
            for _ in range(a.repeat):
                forest = cls(n_estimators=trees, random_state=0, backend=backend)
                t0 = time.perf_counter()
                asyncio.run(forest.fit(X, y))
                best = min(best or 1e9, time.perf_counter() - t0)
            check = sum(asyncio.run(forest.predict(X[:50])))
            print(f"{backend:9} {name:40} fit {best:6.2f} s   (sum of 50 predictions {check:.6g})")


if __name__ == "__main__":
    main()
