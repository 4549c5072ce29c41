"""Imports run one way (algorithms -> kernel families -> GPU interface; the job layer on top).

The graph is read from the source, not from a running interpreter: every `import` and
`from ... import` in every py_core module, at module level or inside a function (a lazy import is
still a dependency), with relative imports resolved. Any cycle fails the test and is printed.
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
