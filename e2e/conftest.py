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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # bench/ (the benchmark harness) is a folder of the checkout
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--enable-unsafe-webgpu",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--no-first-run",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """The playground server as a person starts it; yields its base URL."""
    yield from serve(tmp_path_factory.mktemp("data"))


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


@pytest.fixture
def page(browser, server):
    context = browser.new_context(base_url=server)
    pg = context.new_page()
    pg.console_messages = []
    pg.on("console", lambda m: pg.console_messages.append(f"{m.type}: {m.text}"))
    pg.on("pageerror", lambda e: pg.console_messages.append(f"pageerror: {e}"))
    yield pg
    context.close()


def wait_ready(page, timeout_s: float = 120) -> dict:
    """Waits for `window.playground.ready` and returns what it resolves with."""
    page.wait_for_function("() => window.playground !== undefined", timeout=timeout_s * 1000)
    return page.evaluate("() => window.playground.ready")


def screenshot(page, name: str, tmp_path, **options) -> Path:
    """A screenshot of the page for the README: docs/<name> when SCREENSHOTS=1 is set (the README
    says how to refresh them), else under tmp_path; returns its path."""
    folder = ROOT / "docs" if os.environ.get("SCREENSHOTS") == "1" else tmp_path
    path = folder / name
    page.screenshot(path=str(path), **options)
    return path
