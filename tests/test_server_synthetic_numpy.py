"""The server's numpy kernels for synthetic data (server/synthetic_numpy.py) give py_core's bits."""
import hashlib

import pytest

from py_core.data import make_blobs, make_regression, synthetic

pytest.importorskip("numpy")


def digest(table):
    h = hashlib.sha256()
    for c in table.columns:
        h.update(c.values.tobytes())
    return h.hexdigest()


def test_numpy_kernels_same_bits_as_python(monkeypatch):
    from server.synthetic_numpy import Kernels
    monkeypatch.setattr(synthetic, "_bulk", None)
    tables = lambda: (make_regression(n_samples=20_000, n_features=5, n_informative=3,  # noqa: E731
                                      noise=10, seed=5),
                      make_blobs(n_samples=20_000, n_features=3, centers=4, seed=2))
    python = [digest(t) for t in tables()]
    calls = []

    class Counted(Kernels):
        @staticmethod
        def normals(out, k1, k2):
            calls.append("normals")
            Kernels.normals(out, k1, k2)

    synthetic.use_bulk(Counted)
    assert [digest(t) for t in tables()] == python and calls.count("normals") == 6 + 3


def test_a_kernel_that_differs_falls_back_to_python(monkeypatch):
    monkeypatch.setattr(synthetic, "_bulk", None)
    want = synthetic.normal_column(3, 1, 1000)

    class Wrong:
        @staticmethod
        def normals(out, k1, k2):
            for i in range(len(out)):
                out[i] = 0.5

    synthetic.use_bulk(Wrong)
    assert synthetic.normal_column(3, 1, 1000) == want
