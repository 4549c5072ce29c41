"""Imports run one way (algorithms -> kernel families -> GPU interface; the job layer on top).

The graph is read from the source, not from a running interpreter: every `import` and
`from ... import` in every py_core module, at module level or inside a function (a lazy import is
still a dependency), with relative imports resolved. Any cycle fails the test and is printed, and
so does any import against the layers the README draws (`LAYERS`), and any import of the server's
below py_core's public surface.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "py_core"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The py_core modules `name` imports (a package import counts as its __init__)."""
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            # `from pkg import sub` imports the module pkg.sub when there is one, else pkg itself
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod
                       for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # `import py_core.gpu.backend` -> the module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    # (Importing a.b.c also runs a.b's __init__ first; like other import linters, that implicit
    # parent import is not an edge, so a package may re-export its submodules.)
    return {name: imports_of(name, path, known) for name, path in mods.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_the_graph_sees_lazy_and_relative_imports():
    g = graph()
    assert "py_core.gpu.backend" in g["py_core.gpu"]            # from .backend import ...
    assert "py_core.gpu" in g["py_core.forest.builder"]          # from ..gpu import LimitError
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles_among_py_core_modules():
    found = cycles(graph())
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


# The layers, lowest first: a module imports its own layer and those below, never one above.
# `py_core` itself (its __init__) is the composition root: it wires the families into the GPU
# interface (py_core.kernels registers their WGSL and references there), so it is in none.
LAYERS = [
    ("base", ("py_core.errors", "py_core.rng", "py_core.wasm", "py_core.params")),  # below every layer
    ("GPU interface", ("py_core.gpu",)),
    ("kernel families", ("py_core.kernels",)),
    ("algorithms", ("py_core.estimator", "py_core.data", "py_core.forest", "py_core.boosting",
                    "py_core.transformer")),
    ("jobs", ("py_core.jobs", "py_core.selftest", "py_core.benchmark")),
    ("the worker's entry", ("py_core.browser",)),
]
# What the server may import of py_core: the algorithms, the jobs, the backends it runs them on
# and the shared RNG; not the kernel families (the algorithms' own business) nor the tab's entry.
SERVER_MAY_IMPORT = ("py_core.data", "py_core.forest", "py_core.boosting", "py_core.transformer", "py_core.jobs",
                     "py_core.gpu", "py_core.rng", "py_core.errors", "py_core.params")


def layer_of(module: str) -> int | None:
    for i, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return i
    return None


def layer_violations(g: dict[str, set[str]]) -> list[str]:
    out = []
    for name, targets in sorted(g.items()):
        mine = layer_of(name)
        for target in sorted(targets):
            theirs = layer_of(target)
            if mine is not None and theirs is not None and theirs > mine:
                out.append(f"{name} ({LAYERS[mine][0]}) imports {target} ({LAYERS[theirs][0]})")
    return out


def server_imports() -> list[tuple[str, str, str]]:
    """(server file, py_core module, name) for every py_core import in server/, lazy ones too."""
    found = []
    for path in sorted((ROOT / "server").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                found += [(path.name, a.name, "") for a in node.names if a.name.startswith("py_core")]
            elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("py_core"):
                found += [(path.name, node.module, a.name) for a in node.names]
    return found


def test_every_py_core_module_has_a_layer():
    assert not [m for m in modules() if m != "py_core" and layer_of(m) is None and not m.endswith(".setup")]


def test_imports_follow_the_layers():
    found = layer_violations(graph())
    assert not found, "imports against the layers:\n" + "\n".join(found)


def test_the_layer_check_sees_an_upward_import():
    g = {"py_core.gpu.backend": {"py_core.kernels.family"}, "py_core.kernels.matmul": {"py_core.gpu"},
         "py_core.forest.trees": {"py_core.rng"}, "py_core.rng": set()}
    assert layer_violations(g) == [
        "py_core.gpu.backend (GPU interface) imports py_core.kernels.family (kernel families)"]


def test_the_server_imports_only_py_cores_public_surface():
    found = server_imports()
    assert len(found) > 10  # the check sees the server's imports, lazy ones included
    bad = [f"{f}: {m} {n}" for f, m, n in found
           if not any(m == p or m.startswith(p + ".") for p in SERVER_MAY_IMPORT)
           or n.startswith("_") or any(part.startswith("_") for part in m.split("."))]
    assert not bad, "the server imports below py_core's public surface:\n" + "\n".join(bad)
