"""Random forests trained on the GPU (or the reference backend), with scikit-learn's interface.

    from py_core.forest import RandomForestClassifier
    clf = await RandomForestClassifier(n_estimators=100, random_state=0, backend="native").fit(X, y)

Modules: `estimators` (the two estimators), `builder` (buffers, plans and the level loop),
`binning` (feature thresholds), `trees` (the grown forest as flat arrays; prediction), `export`
(the JSON format).
"""
from .estimators import RandomForestClassifier, RandomForestRegressor, as_matrix, r2_score

__all__ = ["RandomForestClassifier", "RandomForestRegressor", "as_matrix", "r2_score"]
