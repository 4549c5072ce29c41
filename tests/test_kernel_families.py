"""Kernel families: one description (layouts, constants) generates the WGSL header; includes.

The proof that the generated `struct`s match the Python packing: for every family and every
layout, a kernel compiled from the family's generated header reads each field of the uniform and
writes its bits out; on the native backend the words must equal what `Struct.pack` wrote.
"""
from __future__ import annotations

import asyncio
import re

import pytest

from py_core.kernels import family as fam
from py_core.kernels.layout import Struct

FAMILIES = fam.families()


def test_every_family_is_a_package_with_its_wgsl_description_reference_and_cases():
    assert {"matmul", "forest", "transformer_matmul", "transformer_adamw"} <= set(FAMILIES)
    for name in FAMILIES:
        folder = fam.HERE / name
        assert (folder / "__init__.py").is_file() and (folder / "cases.py").is_file(), name
        d = fam.description(name)
        assert d.structs, f"{name}: FAMILY describes no uniform layout"


@pytest.mark.parametrize("name", FAMILIES)
def test_the_wgsl_uses_the_generated_names(name):
    """The family's file declares none of the generated structs or constants itself, and tests
    flags by name, never by a bare number."""
    text = fam.body(name)
    d = fam.description(name)
    for struct in d.structs:
        assert not re.search(rf"^\s*struct\s+{struct}\b", text, re.M), f"{name}.wgsl declares {struct}"
    for const in d.consts:
        assert not re.search(rf"^\s*const\s+{const}\b", text, re.M), f"{name}.wgsl declares {const}"
    bare = re.findall(r"\b\w*flags\w*(?:\.\w+)?\s*&\s*\d+u?\b|\bf\s*&\s*\d+u?\b", text)
    assert not bare, f"{name}.wgsl tests flags by number: {bare}"
    src = fam.shader_source(name)
    assert src.startswith("// Generated from py_core/kernels/") and "#include" not in src
    for struct_name, struct in d.structs.items():
        assert struct.wgsl(struct_name) in src


def test_include_step():
    parts = fam.sections()
    assert {"wg_reduce", "mix32", "hash32"} <= set(parts)
    text = fam.expand_includes("#include hash32\n#include mix32\n", "t.wgsl", parts)
    assert text.count("fn mix32(") == 1 and text.count("fn hash32(") == 1
    with pytest.raises(ValueError, match="no section 'nope'"):
        fam.expand_includes("#include nope\n", "t.wgsl", parts)
    for name in ("transformer_attention", "transformer_layernorm", "transformer_loss"):  # wg_sum written once
        assert "fn wg_sum(" not in fam.wgsl_file(name).read_text()
        assert fam.shader_source(name).count("fn wg_sum(") == 1


def test_fingerprint_covers_the_expanded_text(monkeypatch):
    before = fam.fingerprint("matmul")
    assert re.fullmatch(r"[0-9a-f]{16}", before)
    d = fam.description("matmul")
    monkeypatch.setitem(d.consts, "TRANS_A", 8)
    monkeypatch.setattr(fam, "_SOURCES", {})
    assert "const TRANS_A: u32 = 8u;" in fam.shader_source("matmul")
    assert fam.fingerprint("matmul") != before


def test_struct_declaration():
    s = Struct("n:u32 lr:f32 k:i32")
    assert s.wgsl("P") == "struct P { n: u32, lr: f32, k: i32 }"


def _probe(header: str, name: str, struct: Struct) -> str:
    reads = "\n".join(f"  o[{i}] = bitcast<u32>(p.{f});" for i, (f, _) in enumerate(struct.fields))
    return (header + f"@group(0) @binding(0) var<uniform> p: {name};\n"
            "@group(0) @binding(1) var<storage, read_write> o: array<u32>;\n"
            f"@compute @workgroup_size(1) fn probe() {{\n{reads}\n}}\n")


@pytest.mark.native
@pytest.mark.parametrize("name", FAMILIES)
def test_generated_structs_match_the_python_packing(name, native_backend):
    """Distinct values packed by Python come back field by field from the generated struct."""
    b = native_backend
    d = fam.description(name)
    header = d.header(name)
    for struct_name, struct in d.structs.items():
        values = {}
        for i, (f, kind) in enumerate(struct.fields):
            values[f] = {"u32": 0x01020300 + i, "i32": -1000 - i, "f32": 1.5 + i}[kind]
        words = struct.pack(**values)
        module = b.device.create_shader_module(code=_probe(header, struct_name, struct))
        pipeline = b.device.create_compute_pipeline(layout="auto",
                                                    compute={"module": module, "entry_point": "probe"})
        u = b.buffer("u32", data=words, uniform=True)
        out = b.buffer("u32", len(struct.fields))
        group = b.device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=[
            {"binding": 0, "resource": {"buffer": u.handle}},
            {"binding": 1, "resource": {"buffer": out.handle}}])
        enc = b.device.create_command_encoder()
        cp = enc.begin_compute_pass()
        cp.set_pipeline(pipeline)
        cp.set_bind_group(0, group)
        cp.dispatch_workgroups(1)
        cp.end()
        b.device.queue.submit([enc.finish()])
        got = asyncio.run(b.read(out))
        assert list(got) == list(words[:len(struct.fields)]), f"{name}: {struct_name}"
        b.free(u)
        b.free(out)


def test_the_wgsl_lives_in_the_top_level_shaders_folder():
    """One file a family in shaders/ (or a generator in its description), the shared sections
    beside them, and nothing else: no stray file a family no longer reads."""
    folder = fam.shader_dir()
    assert folder == fam.PACKAGE.parent / "shaders"
    files = {p.stem for p in folder.glob("*.wgsl")} - {"common"}
    generated = {n for n in FAMILIES if fam.description(n).generate}
    assert generated == {"matmul_f16", "transformer_matmul"} and files == set(FAMILIES) - {"matmul_f16"}
    used = set()
    for name in FAMILIES:
        used |= set(re.findall(r"^#include\s+(\w+)", fam.body(name), re.M))
    assert used <= set(fam.sections())


def test_shared_sections_are_written_once():
    """GELU and the matmul epilogue are sections of the shared WGSL: no family writes them out,
    and each family that uses them gets them once, from the include."""
    for name in FAMILIES:
        own = fam.body(name)
        assert "fn tanh_(" not in own and "fn store1(" not in own and "const K0" not in own, name
    for name in ("transformer_elementwise", "transformer_matmul", "matmul_f16"):
        assert fam.shader_source(name).count("fn gelu_grad(") == 1, name
    for name in ("transformer_matmul", "matmul_f16"):
        assert fam.shader_source(name).count("fn store1(") == 1, name


def test_the_f32_tilings_are_written_out_with_constant_accumulator_indices():
    from py_core.kernels import transformer_matmul as tm
    src = fam.shader_source("transformer_matmul")
    for entry, (rows, cols) in tm.TILES.items():
        assert src.count(f"fn {entry}(") == 1
        blocks = (rows // 64) * (cols // 64)
        assert src.count(f"var acc: array<vec4<f32>, {4 * blocks}>;") >= 1
    # every multiply-add and store names its accumulator by a number: none indexed by a variable
    written = tm.entries(tm.TILES)
    assert written in src and not re.search(r"acc\[[a-z]", written)
    assert len(re.findall(r"acc\[\d+\] = fma\(", src)) == sum(
        4 * (r // 64) * (c // 64) for r, c in tm.TILES.values())


def test_an_entry_declares_the_bindings_it_writes(reference_backend):
    """A reference names the bindings its entry writes; the transformer's recorder refuses a
    written buffer bound a second time (WebGPU's rule), from that declaration alone."""
    from py_core.kernels import transformer_layernorm as ln
    from py_core.kernels import written
    from py_core.transformer.model import _Recorder
    assert written("transformer_layernorm", "layernorm_forward") == {3, 4}
    assert written("matmul_f16", "direct_64") == {3, 6} and written("transformer_init", "init_normal") == {2}
    b = reference_backend
    x, w, stats = b.buffer("f32", 8), b.buffer("f32", 8), b.buffer("f32", 4)
    record = _Recorder(b, b.plan())
    values = {"rows": 2, "C": 4, "w_off": 0, "flags": 0, "eps": 1e-5, "chunk": 2}
    asyncio.run(record("transformer_layernorm", "layernorm_forward", ln.PARAMS, values,
                       [x, w, b.buffer("f32", 8), stats], (2, 1, 1)))
    with pytest.raises(RuntimeError, match="binding 3 is written and bound again"):
        asyncio.run(record("transformer_layernorm", "layernorm_forward", ln.PARAMS, values,
                           [x, w, x, stats], (2, 1, 1)))
