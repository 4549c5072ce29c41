"""What a server-side comparison job will cost, from its config alone, and the caps it must fit.

Checked before a job is queued (server/comparisons.py), never after it started. A kind's cost
is its own (`Kind.cost`, beside its job: py_core/jobs/forest_job.py `cost`, transformer_job.py
`cost`), on its params as its table reads them (as the runners read them) and the data set's
shape: rows and columns of a synthetic set from its generator's size, of a file as its upload's
parse counted them. A kind without a cost is refused (Invalid): never free.

    random_forest   rows x trees x depth; also trees alone and the generated table's cells
    gradient_boosting  (rows x features x depth + nodes x (features x bins + 40,000)) x trees
                    (py_core/boosting/cost.py; trees: the iterations, times the classes past
                    two; a node's split search and its grower's own work); the generated
                    table's cells
    transformer     parameters x tokens a step x steps, validations, profile and samples in

Caps (server options, PLAYGROUND_* environment variables too; 0 turns one off):

    --max-forest-cost     1e10   rows x trees x depth (1M rows x 100 trees x depth 12 = 1.2e9)
    --max-trees           5000   n_estimators
    --max-boosting-cost   2e11   (rows x features x depth + nodes x (features x bins +
                                 40,000)) x trees (1M rows x 20 features x 200 iterations of
                                 31 leaves = 2.06e10)
    --max-table-cells     1e8    rows x columns of a generated data set (800 MB as float64)
    --max-transformer-cost 2e15  parameters x tokens x steps (nanoGPT's shakespeare_char: 8.8e14)

A job over a cap is refused with OverCap's message, which names the cap, the job's figure, the
limit and the flag that raises it: 422 on POST /api/runs/{id}/comparisons; on POST /api/runs the
run is stored and its comparisons are `unavailable` with the same message (server/comparisons.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl

CAPS = {  # option: (default, what it limits)
    "max_forest_cost": (1e10, "rows x trees x depth of a random_forest job"),
    "max_trees": (5000, "n_estimators of a random_forest job"),
    "max_boosting_cost": (2e11, "rows x features x depth and each node's work, x trees, of a "
                                "gradient_boosting job"),
    "max_table_cells": (1e8, "rows x columns of a generated data set"),
    "max_transformer_cost": (2e15, "parameters x tokens a step x steps of a transformer job"),
}


class Refused(Exception):
    """A job the server will not queue: over a cap (OverCap), or one it cannot cost (an unknown
    kind, params its kind's table refuses: a run stored before that table). `field` names where
    in the run: "config.params.n_estimators"."""
    field: str = "config"


class Invalid(Refused):
    def __init__(self, message: str, field: str):
        super().__init__(message)
        self.field = field


@dataclass
class OverCap(Refused):
    cap: str        # the option's name, e.g. "max_trees"
    value: float    # the job's estimate
    limit: float    # the cap
    field: str      # where in the run it comes from, e.g. "config.params.n_estimators"

    def __str__(self) -> str:
        flag = "--" + self.cap.replace("_", "-")
        return (f"this job is over the server's limit {self.cap} ({CAPS[self.cap][1]}): "
                f"{_fmt(self.value)} > {_fmt(self.limit)} ({flag} raises it)")


def _fmt(x: float) -> str:
    return f"{x:,.0f}" if x < 1e7 else f"{x:.3g}"


def caps_of(settings) -> dict:
    out = {}
    for name, (default, _) in CAPS.items():
        value = getattr(settings, name, None)
        out[name] = float(default if value is None else value)
    return out


def estimate(job: dict, data_dir: Path) -> dict:
    """{"cost": ..., "unit": ..., and the parts}: its kind's `cost` (py_core/jobs/kinds.py) on
    the params as its table checks them and the data set's shape; Invalid for a job it cannot
    cost: a kind without a cost is refused, never free."""
    from py_core.jobs.kinds import KINDS
    from py_core.jobs.kinds import kind as kind_of
    name = job.get("kind") if isinstance(job, dict) else None
    found = kind_of(name)
    if found is None or found.cost is None:
        costed = [k for k in KINDS if kind_of(k).cost is not None]
        raise Invalid(f"the server cannot cost a {name!r} job, so it runs none (it costs "
                      f"{', '.join(costed)})", "config.kind")
    return found.cost(params(job, defaults=False), Data(job, data_dir))


def check(job: dict, data_dir: Path, caps: dict) -> dict:
    """The estimate, or OverCap naming the first cap it breaks (Invalid: no estimate)."""
    est = estimate(job, data_dir)
    for cap, key, field in (("max_trees", "trees", "config.params.n_estimators"),
                            ("max_table_cells", "generated_cells", "config.dataset"),
                            ("max_forest_cost", "forest_cost", "config.params"),
                            ("max_boosting_cost", "boosting_cost", "config.params"),
                            ("max_transformer_cost", "transformer_cost", "config.params")):
        limit = caps.get(cap) or 0
        if limit and est.get(key, 0) > limit:
            raise OverCap(cap, est[key], limit, field)
    return est


def params(job: dict, defaults: bool = True) -> dict:
    """The job's params as its kind's table reads them (py_core/params.py), with every
    default filled in or as given: what the runners run. Invalid naming the parameter the table
    refuses."""
    from py_core.jobs import ParamError, params_of
    table = params_of(job["kind"])
    try:
        return table.values(job.get("params")) if defaults else table.check(job.get("params"))
    except ParamError as exc:
        raise Invalid(exc.message, "config.params" + (f".{exc.name}" if exc.name else "")) \
            from None


class Data:
    """What a kind's cost reads of its job's data set, each part read only when asked:
    `data()` is (rows, columns, generated?) (`shape`); `data.classes()` the most classes the
    job's target can hold for its task (1 for regression): what a model of a tree a class each
    round (gradient boosting) multiplies its work by. A target the data set lacks counts 1 (the
    job fails as it loads it)."""

    def __init__(self, job: dict, data_dir: Path):
        self.job, self.data_dir = job, data_dir

    def __call__(self) -> tuple[int, int, bool]:
        return shape(self.job.get("dataset"), self.data_dir)

    def classes(self) -> int:
        from py_core.data import GENERATORS
        from py_core.data.features import MAX_CLASSES
        from py_core.data.table import CLASS_LEVELS
        from py_core.jobs import SYNTHETIC
        task, dataset = self.job.get("task"), self.job.get("dataset")
        if task == "regression" or not isinstance(dataset, str):
            return 1
        rows = max(2, self()[0])
        if dataset.startswith(SYNTHETIC):
            name, _, query = dataset[len(SYNTHETIC):].partition("?")
            gen = GENERATORS.get(name)
            if gen is None or (gen.task == "regression" and task != "classification"):
                return 1
            if gen.task == "regression":  # real values taken as classes: as many as rows
                return min(MAX_CLASSES, rows)
            given = {**gen.params, **dict(parse_qsl(query))}
            try:
                k = int(float(given.get("n_classes", given.get("centers", 2))))
            except (ValueError, OverflowError):  # not a number, or inf: no count of classes
                return 1  # the job itself will say what is wrong
            return max(2, min(k, MAX_CLASSES, rows))
        from server.datasets import dataset_column
        try:
            column = dataset_column(self.data_dir, dataset, self.job.get("target"))
        except LookupError:
            return 1
        except RuntimeError as exc:
            raise Invalid(f"the server cannot count this job's classes: {exc}",
                          "config.dataset") from None
        if column is None or (task or column.get("task")) != "classification":
            return 1
        stats = column.get("stats") or {}
        if "distinct" in stats:  # categorical or boolean: counted at upload
            return max(2, min(int(stats["distinct"]), MAX_CLASSES))
        if task is None:  # a numeric column that is classes by itself: few integers
            span = stats.get("max", 0) - stats.get("min", 0) + 1
            return max(2, min(CLASS_LEVELS, rows, int(span) if math.isfinite(span) else rows))
        return min(MAX_CLASSES, rows)  # a numeric column made classes by the job: not counted


def shape(dataset, data_dir: Path) -> tuple[int, int, bool]:
    """(rows, columns, generated?) of a data set, cheaply: a file's as its upload's parse counted
    them (server/datasets.py `dataset_shape`), a generated one's from its parameters."""
    from py_core.data import GENERATORS
    from py_core.jobs import SYNTHETIC
    if not isinstance(dataset, str):
        return 0, 0, False  # the job itself will say what is wrong
    if dataset.startswith(SYNTHETIC):
        name, _, query = dataset[len(SYNTHETIC):].partition("?")
        params = {**(GENERATORS[name].params if name in GENERATORS else {}),
                  **dict(parse_qsl(query))}
        try:
            rows = float(params.get("n_samples", 0))
            cols = float(params.get("n_features", 2)) + 1
        except ValueError:
            return 0, 0, True
        if not (math.isfinite(rows) and math.isfinite(cols)):
            return 0, 0, True
        return int(rows), int(cols), True
    from server.datasets import dataset_shape
    try:
        rows, cols = dataset_shape(data_dir, dataset)
    except LookupError:
        return 0, 0, False  # no such data set: the job fails as it loads it
    except RuntimeError as exc:  # never costed as 0 rows
        raise Invalid(f"the server cannot count this job's rows: {exc}", "config.dataset") \
            from None
    return rows, cols, False
