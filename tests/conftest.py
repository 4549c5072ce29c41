"""Shared fixtures: server settings on a tmp data dir, and a TestClient on the real app."""

import os
import warnings
from contextlib import contextmanager

# Before anything loads OpenMP (scikit-learn, xgboost, lightgbm): threads that wait by spinning
# collapse when the cores are shared (pytest -n 2 on 2 cores): digits through xgboost's forest took
# 51 s that way against 1.3 s with passive waits.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import pytest
from starlette.exceptions import StarletteDeprecationWarning

# Starlette 1.10 warns that its TestClient prefers the `httpx2` package to `httpx`; the test extra
# installs httpx, and warnings are errors here. Importing it once here, quietly, serves every test.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient

from server.app import create_app
from server.settings import Settings
from tools.slowest_first import keep_order, slowest_first

# The slowest files first, slowest first (a worker's seconds on CI): tools/slowest_first.py.
SLOWEST_FIRST = (
    "test_forest.py", "test_forest_corpus.py", "test_transformer_parity.py", "test_forest_corpus_classes.py",
    "test_comparisons.py", "test_forest_memory.py", "test_gpu_backends.py", "test_forest_kernels.py",
    "test_data_corpus.py", "test_forest_accuracy.py", "test_server_hardening.py", "test_forest_corpus_trees.py",
    "test_server_runs.py", "test_data_pyodide.py", "test_robust_uploads.py", "test_server_upload_memory.py",
    "test_server_runs_bounded.py", "test_data_summary.py", "test_robust_load.py", "test_matmul_f16.py")


def pytest_configure(config):
    keep_order(config)


def pytest_collection_modifyitems(items):
    slowest_first(items, SLOWEST_FIRST)


def settings_in(root, **changes) -> Settings:
    """Settings for a test server under `root`: its data dir, CPU device, empty static folders."""
    roots = {name: root / name for name in ("web", "pyodide", "wheels")}
    for path in roots.values():
        path.mkdir()
    return Settings(data_dir=root / "data", device="cpu", web_dir=roots["web"],
                    pyodide_dir=roots["pyodide"], wheels_dir=roots["wheels"], **changes)


@pytest.fixture
def settings(tmp_path) -> Settings:
    """Settings for a test server: tmp data dir, CPU device, empty tmp static folders."""
    return settings_in(tmp_path)


@contextmanager
def serving(settings):
    """The real app with its lifespan run; base_url on loopback, as the Host check expects."""
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        yield client


@pytest.fixture
def client(settings):
    with serving(settings) as client:
        yield client


@pytest.fixture
def live_server(settings):
    """The app on a real uvicorn in a thread, on a free loopback port; yields its base URL."""
    import threading

    import uvicorn

    server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=0,
                                           log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        thread.join(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(15)


@pytest.fixture(scope="session")
def native_backend():
    """py_core's native backend (wgpu-native; Mesa's lavapipe on CI), made once per session."""
    from py_core.gpu import GPUError, get_backend
    try:
        return get_backend("native")
    except GPUError as exc:
        pytest.fail(f"{exc}. `make test` installs mesa-vulkan-drivers (lavapipe).")


@pytest.fixture(scope="session")
def reference_backend():
    from py_core.gpu import get_backend
    return get_backend("reference")


@pytest.fixture
def rng(request):
    """A random.Random with a fresh seed each run, printed when the test fails."""
    import os
    import random
    seed = int.from_bytes(os.urandom(4), "little")
    yield random.Random(seed)
    if getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed:
        print(f"\n{request.node.nodeid}: random seed {seed}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, f"rep_{rep.when}", rep)
