"""The browser's wheel, built as `make wheel` builds it (pypa build on py_core/pyproject.toml):
everything py_core needs in the tab, nothing that imports what the tab has not."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import py_core

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = {"torch", "numpy", "wgpu"}  # server and test packages: not in the tab's Pyodide


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, str(ROOT / "tools" / "build_wheel.py"), str(out)], check=True,
                   capture_output=True)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["wheel"] == f"py_core-{py_core.__version__}-py3-none-any.whl"
    return out / manifest["wheel"]


def imported_roots(source: str, name: str) -> set[str]:
    """Top-level names of every absolute import in a module, lazy ones inside functions too."""
    roots = set()
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_no_module_in_the_wheel_imports_torch_numpy_or_wgpu(wheel):
    with zipfile.ZipFile(wheel) as z:
        modules = [n for n in z.namelist() if n.endswith(".py")]
        assert len(modules) > 50
        bad = {n: sorted(imported_roots(z.read(n).decode(), n) & FORBIDDEN) for n in modules}
    assert not {n: r for n, r in bad.items() if r}


def test_the_check_sees_lazy_imports():
    assert imported_roots("def f():\n    import numpy as np\n    from wgpu.x import y\n", "m") == {"numpy", "wgpu"}


def test_the_wheel_holds_py_core_its_wgsl_and_texts_but_not_the_native_backend(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = z.read(f"py_core-{py_core.__version__}.dist-info/METADATA").decode()
    assert f"Version: {py_core.__version__}" in meta
    sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / "py_core").rglob("*")
               if p.suffix in (".py", ".wgsl", ".txt") and "__pycache__" not in p.parts}
    server_only = {s for s in sources if s.startswith("py_core/gpu/native/")}
    assert server_only and not server_only & names
    assert sources - server_only <= names, sorted(sources - server_only - names)
    assert "py_core/kernels/common.wgsl" in names and "py_core/kernels/forest/forest.wgsl" in names
