"""server.builtins: scikit-learn's bundled data sets exported to CSV, read back exactly."""

import numpy as np
import pytest
import sklearn.datasets

from py_core.data import features_and_target, parse_csv
from server.builtins import BUILTINS, builtin_path, export_builtins, main


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("data")
    assert len(export_builtins(path)) == len(BUILTINS)
    return path


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_builtin_matches_sklearn(data_dir, name):
    loader, task = BUILTINS[name]
    bunch = getattr(sklearn.datasets, loader)()
    table = parse_csv(builtin_path(data_dir, name).read_bytes(), name=name)
    assert table.names == [*map(str, bunch.feature_names), "target"]
    assert all(c.kind == "numeric" and c.n_missing == 0 for c in table.columns)
    X = np.column_stack([np.asarray(c.values) for c in table.columns[:-1]])
    np.testing.assert_array_equal(X, bunch.data)  # exact: numbers are written round-trip
    np.testing.assert_array_equal(np.asarray(table.column("target").values), bunch.target)
    assert table.column("target").task == task
    _, y, info = features_and_target(table, "target")
    if task == "classification":
        assert info["classes"] == sorted(set(bunch.target.tolist()))
        np.testing.assert_array_equal(np.asarray(y), bunch.target)


def test_export_writes_only_missing_files(data_dir, capsys):
    path = builtin_path(data_dir, "iris")
    before = path.stat().st_mtime_ns
    builtin_path(data_dir, "wine").unlink()
    assert export_builtins(data_dir) == [builtin_path(data_dir, "wine")]
    assert path.stat().st_mtime_ns == before
    main(["--data-dir", str(data_dir), "--overwrite"])
    assert capsys.readouterr().out.count("wrote ") == len(BUILTINS)
    assert not list((data_dir / "datasets").glob(".*.tmp"))
