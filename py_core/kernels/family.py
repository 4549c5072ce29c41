"""A kernel family's one description, and the WGSL text a backend compiles.

A family is its WGSL, `shaders/<family>.wgsl` at the top of the repository (`py_core/shaders/` in
the wheel, where the build puts the same files), and a package `py_core/kernels/<family>/`:
`__init__.py` (this description, `FAMILY`, beside the plain-Python reference and the host-side
policy: grids, tilings) and `cases.py` (its self-test cases). Where entry points are written out
per tiling (named registers and accumulators: transformer_matmul's, matmul_f16's), the
description's `generate` makes their text when the shader is loaded, after the family's file
(matmul_f16 has none). The description names the family's uniform
layouts (`Struct`s) and constants (flags, sentinels, sizes); `shader_source(family)` generates
their WGSL declarations and puts them before the family's WGSL, so a layout or a flag is written
once, in Python, and the WGSL uses the names:

    struct Params { M: u32, N: u32, K: u32, flags: u32, alpha: f32 }
    const TRANS_A: u32 = 1u;

Shared WGSL helpers live in `shaders/common.wgsl` and `shaders/lib/*.wgsl`, in sections that
start with a line `// == NAME`; a line `#include NAME` in a family's WGSL is replaced by that
section (once per shader, sections may include others). `fingerprint(family)` is a hash of the expanded text: what ran, exactly.

A family may also live in a package of its own, beside the kind that uses it (tests/kind_demo's
column_sum): its WGSL `<family>.wgsl` beside that package's `__init__.py`, which registers it as
it is imported (`register("column_sum", __name__)`); it includes the same shared sections.
"""
from __future__ import annotations

import hashlib
import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent
COMMON = "common.wgsl"
_INCLUDE = re.compile(r"^#include\s+(\w+)\s*$", re.MULTILINE)
_SECTION = re.compile(r"^// == (\w+)\s*$", re.MULTILINE)
_DIRECTIVE = re.compile(r"^(?:enable|requires|diagnostic)\b[^;\n]*;[ \t]*$", re.MULTILINE)


@dataclass
class Family:
    """The layouts (WGSL struct name -> Struct) and constants (name -> int or float) of a
    family's WGSL. Ints become `u32` constants, floats abstract floats."""
    structs: dict = field(default_factory=dict)
    consts: dict = field(default_factory=dict)
    generate: object = None  # () -> WGSL written out in Python, after the family's shaders/ file

    def header(self, family: str) -> str:
        where = package(family).replace(".", "/")
        lines = [(f"// Generated from {where}/__init__.py (FAMILY) when the shader "
                 "is loaded: edit the layouts and constants there.")]
        lines += [struct.wgsl(name) for name, struct in self.structs.items()]
        for name, value in self.consts.items():
            lines.append(f"const {name}: u32 = {_u32(value)};" if isinstance(value, int)
                         else f"const {name} = {value!r};")
        return "\n".join(lines) + "\n"


def _u32(value: int) -> str:
    if not 0 <= value <= 0xFFFFFFFF:
        raise ValueError(f"constant {value} does not fit a u32")
    return f"0x{value:X}u" if value > 0xFFFF else f"{value}u"


_OWN_PACKAGES: dict[str, str] = {}  # family -> its package, for a family outside py_core/kernels


def register(family: str, package_name: str) -> None:
    """Family `family` is kept in package `package_name` (outside py_core/kernels)."""
    _OWN_PACKAGES[family] = package_name


def package(family: str) -> str:
    """The package of `family`'s description and reference."""
    return _OWN_PACKAGES.get(family, f"{__package__}.{family}")


def description(family: str) -> Family:
    module = importlib.import_module(package(family))
    return getattr(module, "FAMILY", None) or Family()


def shader_dir() -> Path:
    """Where the WGSL lies: py_core/shaders/ in the installed wheel, else the repository's
    shaders/ (the one source: the wheel's build copies it, nothing commits it twice)."""
    for folder in (PACKAGE / "shaders", PACKAGE.parent / "shaders"):
        if (folder / COMMON).is_file():
            return folder
    raise FileNotFoundError(f"no shaders/ beside or inside {PACKAGE}")


def _wgsl_path(family: str) -> Path:
    if family in _OWN_PACKAGES:
        return Path(importlib.import_module(_OWN_PACKAGES[family]).__file__).parent / f"{family}.wgsl"
    return shader_dir() / f"{family}.wgsl"


def wgsl_file(family: str) -> Path:
    path = _wgsl_path(family)
    if not re.fullmatch(r"\w+", family) or not path.is_file():
        raise FileNotFoundError(f"no shader family {family!r} (looked for {path})")
    return path


def body(family: str) -> str:
    """The family's own WGSL: its shaders/ file (if any), then what its description generates
    (if anything: entry points written out per tiling)."""
    own = family in _OWN_PACKAGES or (HERE / family / "__init__.py").is_file()
    generate = description(family).generate if own else None
    path = _wgsl_path(family)
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    if not text and not generate:
        wgsl_file(family)  # raises: no such family
    return text + ("\n" + generate() if text and generate else generate() if generate else "")


def section_files() -> list[Path]:
    folder = shader_dir()
    return [folder / COMMON, *sorted((folder / "lib").glob("*.wgsl"))]


_SECTIONS: dict[str, str] = {}


def sections() -> dict[str, str]:
    """The shared sections (common.wgsl, lib/*.wgsl) by name; a name is defined once."""
    if not _SECTIONS:
        for path in section_files():
            text = path.read_text(encoding="utf-8")
            marks = list(_SECTION.finditer(text))
            for i, m in enumerate(marks):
                if m.group(1) in _SECTIONS:
                    raise ValueError(f"{path.name}: section {m.group(1)!r} is defined twice")
                _SECTIONS[m.group(1)] = text[m.start():marks[i + 1].start() if i + 1 < len(marks) else len(text)]
    return dict(_SECTIONS)


def expand_includes(text: str, where: str, available: dict[str, str], done: set | None = None) -> str:
    """`text` with every `#include NAME` line replaced by its section (each section once)."""
    done = set() if done is None else done

    def replace(m):
        name = m.group(1)
        if name not in available:
            raise ValueError(f"{where}: #include {name}: shaders/ has no section {name!r} "
                             f"(it has {', '.join(sorted(available))})")
        if name in done:
            return f"// (section {name}: included above)"
        done.add(name)
        return expand_includes(available[name].rstrip("\n"), f"section {name}", available, done)

    return _INCLUDE.sub(replace, text)


_SOURCES: dict[str, str] = {}


def shader_source(family: str) -> str:
    """The WGSL a backend compiles for `family`: the generated header, then the family's file with
    its includes expanded. Made once per family and process."""
    if family not in _SOURCES:
        _SOURCES[family] = assemble(family, body(family))
    return _SOURCES[family]


def assemble(family: str, body: str) -> str:
    """The generated header of `family`, then `body` with its includes expanded. WGSL wants its
    directives (enable, requires, diagnostic) before any declaration: they move from the body to
    just after the header's first (comment) line."""
    directives = _DIRECTIVE.findall(body)
    body = _DIRECTIVE.sub("", body)
    first, rest = description(family).header(family).split("\n", 1)
    return "\n".join([first, *directives, rest]) + "\n" + expand_includes(body, f"{family}.wgsl", sections())


def fingerprint(family: str) -> str:
    """16 hex digits of the SHA-256 of the expanded WGSL of `family`."""
    return hashlib.sha256(shader_source(family).encode()).hexdigest()[:16]


def families() -> list[str]:
    """Every kernel family: the packages beside this module with their self-test cases."""
    return sorted(p.name for p in HERE.iterdir() if (p / "cases.py").is_file())
