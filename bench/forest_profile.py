"""Per-kernel time of a forest fit on the native backend (lavapipe here), for comparing kernel
structures without a GPU. The histogram budget can be scaled down so that small data meets the
regime of a big GPU fit: 500k x 50 with 10 classes on an H200 holds 1906 of its 8192 deepest slots
a pass; `--budget-mib 32` gives 3000 rows the same shape.

    PYTHONPATH=. python -m bench.forest_profile --rows 3000 --trees 3 --depth 14 --budget-mib 32
"""
from __future__ import annotations

import argparse
import asyncio
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=3000)
    ap.add_argument("--features", type=int, default=50)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--trees", type=int, default=3)
    ap.add_argument("--depth", type=int, default=14)
    ap.add_argument("--budget-mib", type=int, default=0, help="histogram budget (0: the default)")
    a = ap.parse_args()
    from py_core.data import prepare
    from py_core.forest import RandomForestClassifier, sizes
    from py_core.gpu import get_backend
    from py_core.jobs import synthetic_table
    if a.budget_mib:
        sizes.HIST_BUDGET = a.budget_mib * 2**20
    table = synthetic_table(f"synthetic:blobs?n_samples={a.rows}&n_features={a.features}"
                            f"&centers={a.classes}&cluster_std=12&seed=0")
    p = prepare(table, "y", test_size=0.2, seed=42)
    y = [p.info["classes"][v] for v in p.y_train]
    forest = RandomForestClassifier(a.trees, max_depth=a.depth, random_state=0, backend=get_backend("native"))
    t0 = time.perf_counter()
    asyncio.run(forest.fit(p.X_train, y, n_features=a.features, profile=True))
    kernels = sorted(((k[2:], v) for k, v in forest.timings_.items() if k.startswith("k_")), key=lambda kv: -kv[1])
    print(f"fit {time.perf_counter() - t0:.2f} s, nodes {sum(forest._forest.counts)}, "
          f"kernels {sum(v for _, v in kernels):.2f} s")
    for name, seconds in kernels[:10]:
        print(f"  {name:16s} {seconds:8.3f} s")
    print_levels(forest.timings_)


def print_levels(timings: dict) -> None:
    """A fit's profile level by level (kernel_times' kl_, kn_ and kLEVEL_KERNEL timings): seconds,
    dispatches and the three costliest kernels of each level, over every batch."""
    levels = sorted(int(k[3:]) for k in timings if k.startswith("kl_"))
    for e in levels:
        mine = sorted(((k.split("_", 1)[1], v) for k, v in timings.items() if k.startswith(f"k{e}_")),
                      key=lambda kv: -kv[1])
        top = ", ".join(f"{name} {v:.3f}" for name, v in mine[:3])
        print(f"  level {e:2d}: {timings[f'kl_{e}']:7.3f} s in {int(timings[f'kn_{e}']):5d} dispatches ({top})")


if __name__ == "__main__":
    main()
