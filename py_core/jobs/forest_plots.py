"""The forest job's plots of a forest, or of its first trees while it grows (live): the decision
surface over two features (the others at their training medians) and predicted against actual.
Shapes: py_core.jobs.forest_job's docstring."""
from __future__ import annotations

import math
from array import array

from ..errors import JobError

PLOT_POINTS = 2000  # test rows drawn at most
SURFACE = 64        # cells per side of the decision surface
LEVELS = 8          # colours of a regression surface


def every(n: int, most: int) -> list[int]:
    """Indices 0..n-1, evenly thinned to at most `most`."""
    step = max(1, math.ceil(n / most))
    return list(range(0, n, step))


def surface_pair(asked, features: list) -> tuple[int, int] | None:
    """The surface's two feature indices: those asked for, both of two, or None (decided later
    from the importances)."""
    if asked is None:
        return (0, 1) if len(features) == 2 else None
    if (not isinstance(asked, (list, tuple)) or len(asked) != 2 or asked[0] == asked[1]
            or any(a not in features for a in asked)):
        raise JobError(f'"surface" must name two different features of {features}, not {asked!r}')
    return features.index(asked[0]), features.index(asked[1])


class Plots:
    """The plots a forest (or its first trees, live) draws, from a predict(X, n) -> (n, K) means
    function. The surface's features: the job's, else the two most important, of the first trees
    grown while it grows (the live surfaces keep them) and of the whole forest at the end."""

    def __init__(self, prep, info, forest, pair):
        self.prep, self.info, self.forest = prep, info, forest
        self.asked = self.pair = pair
        self.classify = info["task"] == "classification"
        self.keep = every(len(prep.y_test), PLOT_POINTS)

    def _labels(self, raw, n: int) -> list:
        """Class codes (the order of info["classes"]) of n rows of (n, K) class fractions, or the
        regression predictions."""
        if not self.classify:
            return list(raw)
        codes = {c: i for i, c in enumerate(self.info["classes"])}
        order = [codes[c] for c in self.forest.classes_]  # forest column -> class code
        K = len(order)
        return [order[max(range(K), key=lambda k: raw[i * K + k])] for i in range(n)]

    async def pred_vs_actual(self, predict) -> list:
        """[[actual, predicted]] of the plotted test rows (regression)."""
        F, test = self.prep.n_features, self.prep.X_test
        X = array("d")
        for i in self.keep:
            X.extend(test[i * F:(i + 1) * F])
        pred = await predict(X, len(self.keep))
        return [[self.prep.y_test[i], pred[j]] for j, i in enumerate(self.keep)]

    async def surface(self, predict, importances, final: bool = False) -> dict:
        """Predictions on a SURFACE x SURFACE grid over two features' range, the others at their
        training medians, and the test rows on top."""
        prep, info = self.prep, self.info
        F = prep.n_features
        if self.pair is None or (final and self.asked is None):
            ranked = await importances()
            self.pair = tuple(sorted(sorted(range(F), key=lambda j: -ranked[j])[:2]))
        fx, fy = self.pair
        (x0, x1) = _span(prep.X_train[fx::F], prep.X_test[fx::F])
        (y0, y1) = _span(prep.X_train[fy::F], prep.X_test[fy::F])
        n = SURFACE
        grid = array("d", prep.medians) * (n * n)
        grid[fx::F] = array("d", [x0 + (c + 0.5) * (x1 - x0) / n for c in range(n)] * n)
        grid[fy::F] = array("d", [y0 + (r + 0.5) * (y1 - y0) / n for r in range(n) for _ in range(n)])
        test, keep = prep.X_test, self.keep
        values = self._labels(await predict(grid, n * n), n * n)
        out = {"x_name": info["features"][fx], "y_name": info["features"][fy], "others": F - 2}
        if self.classify:
            return dict(out, grid={"x": [x0, x1], "y": [y0, y1], "n": n, "values": values},
                        points=[[test[i * F + fx], test[i * F + fy], prep.y_test[i]] for i in keep])
        # Levels over the target's range: a forest predicts within it, so the colours stay put
        # while it grows.
        lo = min(min(prep.y_train), min(prep.y_test))
        hi = max(max(prep.y_train), max(prep.y_test))
        width = (hi - lo) / LEVELS or 1.0

        def level(v):
            return min(LEVELS - 1, max(0, int((v - lo) / width)))

        return dict(out, grid={"x": [x0, x1], "y": [y0, y1], "n": n, "values": [level(v) for v in values]},
                    points=[[test[i * F + fx], test[i * F + fy], level(prep.y_test[i])] for i in keep],
                    levels=[lo + k * width for k in range(LEVELS + 1)])


def _span(*parts) -> tuple[float, float]:
    lo, hi = min(min(p) for p in parts if len(p)), max(max(p) for p in parts if len(p))
    pad = (hi - lo) * 0.05 or 0.5
    return lo - pad, hi + pad
