"""The forest job's plots of a forest, or of its first trees while it grows (live): the decision
surface over two features (the others at their training medians) and predicted against actual.
Shapes: py_core.jobs.forest_job's docstring.

The surface is one slice of a forest over F features: it says which (the two shown, the others'
values), and says so when the slice hides what decides: a surface of one class under test rows of
several (wine, penguins: the features held at their medians pick the class whatever the two shown
are), or, for regression, one whose predictions barely move while the rows' targets spread."""
from __future__ import annotations

import math
from array import array

from ..errors import JobError

PLOT_POINTS = 2000  # test rows drawn at most
SURFACE = 64        # cells per side of the decision surface
HELD_SHOWN = 6      # features held, named with their values in the surface's "held" (the rest counted)
# A regression surface is "flat" when its predictions span less than this share of the test
# rows' targets drawn on it: the colour scale then shows one colour under points of many.
FLAT_SHARE = 0.1


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
        training medians, and the test rows on top; what the slice holds, and a note when the
        features not shown decide the prediction."""
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
        # A test row missing either feature (a boosted model keeps NaN) has no place to be drawn.
        points = [[x, y, prep.y_test[i]] for i in keep
                  if (x := test[i * F + fx]) == x and (y := test[i * F + fy]) == y]
        held = [[name, self._value(j)] for j, name in enumerate(info["features"]) if j not in (fx, fy)]
        out = {"x_name": info["features"][fx], "y_name": info["features"][fy], "others": F - 2,
               "held": held[:HELD_SHOWN], "grid": {"x": [x0, x1], "y": [y0, y1], "n": n, "values": values},
               "points": points}
        if self.classify:
            out["classes"] = [str(c) for c in info["classes"]]
        else:
            # The scale spans the target's range: a forest predicts within it, so the colours stay
            # put while it grows.
            out["scale"] = [min(min(prep.y_train), min(prep.y_test)), max(max(prep.y_train), max(prep.y_test))]
        out["note"] = self._flat_note(values, [p[2] for p in points], F - 2)
        return out

    def _value(self, j: int):
        """Feature j's value on the surface: its training median, or for a categorical feature
        its most frequent category's name (py_core.data.prepare; codes are the categories' order)."""
        name, median = self.info["features"][j], self.prep.medians[j]
        names = self.info["categories"].get(name)
        if names and self.info["kinds"][j] != "numeric":
            return names[min(len(names) - 1, max(0, int(round(median))))]
        return median

    def _flat_note(self, values: list, truths: list, others: int) -> str | None:
        """A sentence when the surface barely varies under test rows that do: the features held
        (not the two shown) decide the prediction on this slice. None otherwise, or with no
        feature held."""
        if not others or not truths:
            return None
        held = "the feature not shown decides" if others == 1 else f"the {others} features not shown decide"
        if self.classify:
            shown, seen = set(values), set(truths)
            if len(shown) > 1 or len(seen) < 2:
                return None
            name = self.info["classes"][next(iter(shown))]
            return (f"The whole slice predicts {name}, under test rows of {len(seen)} classes: with the "
                    f"other features at their medians, {held} the prediction, not these two.")
        spread, seen = max(values) - min(values), max(truths) - min(truths)
        if not seen or spread >= FLAT_SHARE * seen:
            return None
        return (f"The slice's predictions span {spread:.4g}, under a tenth of the {seen:.4g} the test "
                f"rows' targets span: with the other features at their medians, {held} the prediction.")


def _span(*parts) -> tuple[float, float]:
    """The values' range, padded; missing values (NaN: a boosted model's rows keep them) left
    out, where min() would answer NaN or skip values by their order."""
    values = [v for p in parts for v in p if v == v]
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    pad = (hi - lo) * 0.05 or 0.5
    return lo - pad, hi + pad
