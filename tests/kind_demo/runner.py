"""column_mean on the server: the same column read by pandas, its trimmed mean by SciPy."""
from __future__ import annotations

import time
from pathlib import Path

from server.datasets import dataset_path
from server.runners.common import Runner, versions


def run(job: dict, data_dir: Path, device: str) -> dict:
    import pandas as pd
    from scipy.stats import trim_mean

    from .job import PARAMS
    t0 = time.perf_counter()
    trim = PARAMS.values(job.get("params"))["trim"]
    column = pd.read_csv(dataset_path(data_dir, job["dataset"]))[job["column"]].dropna()
    t1 = time.perf_counter()
    mean = float(trim_mean(column.to_numpy(), trim))
    t2 = time.perf_counter()
    return {"runner": RUNNER.name, "device": "cpu", "versions": versions("scipy", "pandas"),
            "timings": {"mean": t2 - t1, "total": t2 - t0},
            "metrics": {"mean": mean, "n": int(column.size)}}


RUNNER = Runner("scipy", ("column_mean",), run)
