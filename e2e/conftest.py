"""End-to-end fixtures: the real server on a free port with a fresh data dir, and Debian's
Chromium driven by Playwright (headless, WebGPU on SwiftShader unless told otherwise)."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tools.slowest_first import keep_order, slowest_first

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # bench/ (the benchmark harness) is a folder of the checkout
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--enable-unsafe-webgpu",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--no-first-run",
]


# The slowest files first, slowest first (a worker's seconds on CI): tools/slowest_first.py.
SLOWEST_FIRST = ("test_control.py", "test_forest.py", "test_forest_backends.py", "test_robust_gpu.py",
                 "test_transformer.py", "test_bench.py", "test_foundation.py", "test_page.py", "test_runs.py")


def pytest_configure(config):
    keep_order(config)


def pytest_collection_modifyitems(items):
    slowest_first(items, SLOWEST_FIRST)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The server comparisons that tests look at: scikit-learn's beside a forest, PyTorch's beside a
# transformer (the bench test keeps the same two). The others (py_core's native and reference,
# xgboost, lightgbm) are tests/test_comparisons_runners.py's to check: here nothing reads them,
# and their queue kept a core busy behind the pages (two minutes of jobs for test_forest.py's
# forests, one of them py_core-reference's minute on the Large diabetes forest).
COMPARISON_RUNNERS = "sklearn,torch"


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """The playground server as a person starts it, its comparisons COMPARISON_RUNNERS; yields its
    base URL."""
    yield from serve(tmp_path_factory.mktemp("data"), "--comparison-runners", COMPARISON_RUNNERS)


def serve(data_dir, *options):
    """Starts `python -m server` with `options` on a free port; yields its URL, then stops it."""
    port = _free_port()
    log = open(data_dir / "server.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "server", "--port", str(port), "--data-dir", str(data_dir), *options],
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while True:
        try:
            if httpx.get(f"{url}/api/health", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.time() > deadline:
            raise RuntimeError(f"server did not start: {(data_dir / 'server.log').read_text()}")
        time.sleep(0.2)
    yield url
    proc.terminate()
    proc.wait(10)


def chromium_path() -> str:
    path = os.environ.get("CHROMIUM_BIN") or shutil.which("chromium")
    if not path:
        pytest.fail("Chromium is missing: `make test` installs Debian's chromium")
    return path


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright
    flags = CHROMIUM_FLAGS + os.environ.get("CHROMIUM_GPU_FLAGS", "").split()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), args=flags, headless=True)
        yield b
        b.close()


def open_page(browser, server, **options):
    """A page in a browser context of its own (`options` go to `new_context`), its console kept in
    `page.console_messages`; `page.context.close()` ends both."""
    context = browser.new_context(base_url=server, **options)
    pg = context.new_page()
    pg.console_messages = []
    pg.on("console", lambda m: pg.console_messages.append(f"{m.type}: {m.text}"))
    pg.on("pageerror", lambda e: pg.console_messages.append(f"pageerror: {e}"))
    return pg


@pytest.fixture
def page(browser, server):
    pg = open_page(browser, server)
    yield pg
    pg.context.close()


@pytest.fixture(scope="module")
def shared_page(browser, server):
    """One page for the tests of a module, opened at "/" and ready; they run on it in file order,
    each from where the one before left it. A Pyodide start costs about ten seconds of CI's two
    cores, so a module whose tests need no fresh page starts it once."""
    pg = open_page(browser, server)
    pg.goto("/")
    wait_ready(pg)
    yield pg
    pg.context.close()


def wait_ready(page, timeout_s: float = 120) -> dict:
    """Waits for `window.playground.ready` and returns what it resolves with."""
    page.wait_for_function("() => window.playground !== undefined", timeout=timeout_s * 1000)
    return page.evaluate("() => window.playground.ready")


def small_transformer(page, steps: int = 400) -> None:
    """Opens the Transformer tab and types a model small enough for SwiftShader (one layer of
    width 32, two heads, blocks of 16) and `steps` steps into its form."""
    page.click("#tab-transformer")
    page.wait_for_function("() => document.querySelector('#tf-size').textContent.includes('parameters')", timeout=60_000)
    for name, value in {"n_layer": "1", "n_embd": "32", "n_head": "2", "block_size": "16", "batch_size": "2",
                        "steps": str(steps)}.items():
        page.fill(f"#tf-{name}", value)
        page.dispatch_event(f"#tf-{name}", "change")


def screenshot(page, name: str, tmp_path, **options) -> Path:
    """A screenshot of the page for the README: docs/<name> when SCREENSHOTS=1 is set (the README
    says how to refresh them), else under tmp_path; returns its path."""
    folder = ROOT / "docs" if os.environ.get("SCREENSHOTS") == "1" else tmp_path
    path = folder / name
    page.screenshot(path=str(path), **options)
    return path
