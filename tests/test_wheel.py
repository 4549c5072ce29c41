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


def test_the_wheel_holds_py_core_the_shaders_and_texts_but_not_the_native_backend(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = z.read(f"py_core-{py_core.__version__}.dist-info/METADATA").decode()
    assert f"Version: {py_core.__version__}" in meta
    sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / "py_core").rglob("*")
               if p.suffix in (".py", ".txt") and "__pycache__" not in p.parts} - {"py_core/setup.py"}
    server_only = {s for s in sources if s.startswith("py_core/gpu/native/")}
    assert server_only and not server_only & names and "py_core/setup.py" not in names
    assert sources - server_only <= names, sorted(sources - server_only - names)
    # the WGSL has one source, the top-level shaders/: none inside py_core, all of it in the wheel
    assert not list((ROOT / "py_core").rglob("*.wgsl"))
    shaders = {"py_core/" + p.relative_to(ROOT).as_posix() for p in (ROOT / "shaders").rglob("*.wgsl")}
    assert {"py_core/shaders/common.wgsl", "py_core/shaders/forest.wgsl"} <= shaders <= names
    assert {n for n in names if n.endswith(".wgsl")} == shaders


def test_the_installed_wheel_compiles_the_same_shaders(wheel, tmp_path):
    """Installed (unpacked, as Pyodide's micropip does), py_core reads its WGSL from
    py_core/shaders/: every family's assembled source hashes as the repository's does."""
    from py_core.kernels import family as fam
    with zipfile.ZipFile(wheel) as z:
        z.extractall(tmp_path)
    code = ("import json; from py_core.kernels import family as f; "
            "print(json.dumps({n: [f.fingerprint(n), str(f.shader_dir())] for n in f.families()}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={"PYTHONPATH": str(tmp_path)},
                         check=True, capture_output=True, text=True).stdout
    installed = json.loads(out)
    assert set(installed) == set(fam.families())
    for name, (print_, folder) in installed.items():
        assert print_ == fam.fingerprint(name) and folder == str(tmp_path / "py_core" / "shaders"), name
