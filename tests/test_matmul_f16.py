"""matmul_f16 (tensor cores): its reference models f16 operands exactly, its WGSL is the
generator's output, and the self-test runs or skips it by the adapter's features.

The kernel itself needs `shader-f16` and `chromium-experimental-subgroup-matrix`, which neither
lavapipe nor SwiftShader offer: its GPU check is the self-test on a real adapter and
tools/gpu/f16probe (bench/results/2026-11-23-h200-tensor-cores.md)."""
from __future__ import annotations

import asyncio
import random
import struct

import pytest

from py_core import selftest
from py_core.gpu.backend import Dispatch
from py_core.gpu.reference import ReferenceBackend
from py_core.kernels import family as fam
from py_core.kernels import matmul_f16 as mf
from py_core.kernels import transformer_matmul as tm
from py_core.kernels.cases import random_floats
from py_core.kernels.matmul_f16 import wgsl as gen


def test_f16_rounding_is_to_nearest_even_and_saturates_to_inf():
    assert list(mf.round_f16([0.1, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 65504.0, 70000.0, -1e6])) == [
        struct.unpack("<e", struct.pack("<e", 0.1))[0], 1.0, 1 + 2 ** -9, 65504.0,
        float("inf"), float("-inf")]
    words = mf.pack_f16([1.0, -2.0, 0.5])
    assert words.typecode == "I" and len(words) == 2 and words[0] == 0xC0003C00
    assert list(mf.unpack_f16(words)) == [1.0, -2.0, 0.5, 0.0]


def _run(kernel_family, entry, consts, flags, m, n, k, a_vals, b_vals, seed, words=False, tile=None):
    """One dispatch on the reference backend; returns C."""
    rng = random.Random(seed)
    b = ReferenceBackend()

    async def go():
        kern = await b.kernel(kernel_family, entry, consts)
        a = b.buffer("u32", data=mf.pack_f16(a_vals)) if words else b.buffer("f32", data=a_vals)
        bb = b.buffer("u32", data=mf.pack_f16(b_vals)) if words else b.buffer("f32", data=b_vals)
        c = b.buffer("f32", data=random_floats(rng, m * n))
        bias = b.buffer("f32", data=random_floats(rng, n))
        res = b.buffer("f32", data=random_floats(rng, m * n))
        g = b.buffer("f32", m * n)
        prm = b.buffer("u32", data=tm.PARAMS.pack(**tm.params(m, n, k, flags, alpha=0.5)), uniform=True)
        grid = mf.grid(m, n) if tile is None else tm.grid(m, n, 1, tile)
        await b.run(b.plan().dispatch(kern, [prm, a, bb, c, bias, res, g], grid))
        return list(await b.read(c))
    return asyncio.run(go())


@pytest.mark.parametrize("flags", [0, tm.TRANS_A, tm.TRANS_B | tm.BIAS | tm.RESIDUAL,
                                   tm.TRANS_A | tm.TRANS_B | tm.GELU_GRAD | tm.ACCUMULATE,
                                   tm.TRANS_B | tm.SKIP_UPPER, tm.K_UPTO_ROW])
def test_reference_is_the_f32_contract_on_f16_rounded_operands(flags):
    """matmul_f16's reference == transformer_matmul's (128-row tiles) on operands rounded to f16,
    and != it on the unrounded ones: the rounding is modelled, not ignored."""
    m, n, k = 140, 136, 130
    rng = random.Random(flags)
    a = random_floats(rng, m * k)
    b = random_floats(rng, k * n)
    got = _run("matmul_f16", "matmul", mf.constants(flags), flags, m, n, k, a, b, 7)
    want = _run("transformer_matmul", "matmul_big", {}, flags, m, n, k, mf.round_f16(a), mf.round_f16(b), 7,
                tile=tm.BIG_TILE)
    exact = _run("transformer_matmul", "matmul_big", {}, flags, m, n, k, a, b, 7, tile=tm.BIG_TILE)
    assert got == want
    assert max(abs(x - y) for x, y in zip(got, exact)) > 1e-4


def test_packed_f16_operands_give_the_same_product():
    m, n, k = 70, 66, 34
    rng = random.Random(3)
    a, b = random_floats(rng, m * k), random_floats(rng, k * n)
    from_f32 = _run("matmul_f16", "matmul", mf.constants(0), 0, m, n, k, a, b, 5)
    from_f16 = _run("matmul_f16", "matmul", mf.constants(0, in_f16=True), 0, m, n, k, a, b, 5, words=True)
    assert from_f32 == from_f16


def test_constants_must_match_the_flags():
    with pytest.raises(ValueError, match="TRANSPOSE_A"):
        _run("matmul_f16", "matmul", mf.constants(0), tm.TRANS_A, 20, 20, 20,
             random_floats(random.Random(1), 400), random_floats(random.Random(2), 400), 1)


def test_the_wgsl_is_the_generators_output_made_at_load_time():
    """No generated text is committed to go stale: the family has no shaders/ file, and what a
    backend compiles is the generator's output under the family's header."""
    assert not (fam.shader_dir() / "matmul_f16.wgsl").exists()
    src = fam.shader_source("matmul_f16")
    assert src == fam.assemble("matmul_f16", gen.module())
    head = src.split("\nstruct Params", 1)[0]  # the directives sit before every declaration
    assert "enable f16;" in head and "enable chromium_experimental_subgroup_matrix;" in head
    assert src.count("enable f16;") == 1


def test_every_tiling_is_written_out_without_arrays_of_matrices():
    for tiling in (gen.DEFAULT, {"bm": 128, "bn": 256, "bk": 32, "wm": 2, "wn": 4}, {"bm": 64, "bn": 64, "bk": 64, "wm": 2, "wn": 2}):
        text = gen.wgsl(**tiling)
        fm, fn = tiling["bm"] // tiling["wm"] // 16, tiling["bn"] // tiling["wn"] // 16
        assert text.count("subgroupMatrixMultiplyAccumulate(") == fm * fn * tiling["bk"] // 16
        assert "array<subgroup_matrix" not in text
    with pytest.raises(ValueError, match="does not divide"):
        gen.wgsl(bm=100, bn=128, bk=32, wm=2, wn=4)


def test_supports_needs_the_features_and_an_f16_f32_config():
    feats = ["shader-f16", "subgroups", "chromium-experimental-subgroup-matrix"]
    f16 = {"component": "f16", "result": "f32", "M": 16, "N": 16, "K": 16}
    assert mf.supports(feats, [f16])
    assert not mf.supports(feats[1:], [f16])
    assert not mf.supports(feats, [{"component": "i8", "result": "i32", "M": 16, "N": 16, "K": 32}])


class _NoTensorCores(ReferenceBackend):
    """A GPU-named backend without the features (as lavapipe or SwiftShader)."""
    name = "webgpu"


def test_selftest_skips_the_f16_cases_where_the_adapter_lacks_them():
    selftest._load_families()
    f16 = [c for c in selftest.CASES if c.needs]
    assert len(f16) >= 8 and all(c.name.startswith("matmul f16") for c in f16)
    b = _NoTensorCores()
    b.features = ["subgroups"]
    saved = list(selftest.CASES)
    try:
        selftest.CASES[:] = f16[:2]
        out = asyncio.run(selftest.run_selftest(b, seed=1))
    finally:
        selftest.CASES[:] = saved
    rows = out["metrics"]["kernels"]
    assert all(r["skipped"].startswith("the adapter lacks shader-f16") for r in rows)


@pytest.mark.native
def test_native_adapter_without_tensor_cores_is_said_plainly():
    try:
        from py_core.gpu.native import NativeBackend
        native = NativeBackend()
    except (ImportError, RuntimeError) as exc:  # no wgpu, or no Vulkan adapter (GPUError)
        pytest.skip(f"native backend unavailable: {exc}")
    if not mf.supports(native.features):
        pytest.skip("this adapter lacks shader-f16 / chromium-experimental-subgroup-matrix (lavapipe has "
                    "neither): matmul_f16 runs on the lent GPU through tools/gpu/f16probe")
    c = next(c for c in selftest.CASES if c.needs)

    async def outputs(backend):
        plan, outs, _ = await c.setup(backend, random.Random(11))
        await backend.run(plan)
        return [await backend.read(x) for x in outs]
    got, want = asyncio.run(outputs(native)), asyncio.run(outputs(ReferenceBackend()))
    for g, w in zip(got, want):
        assert selftest.max_error(g, w, c.atol, c.rtol)[2]


def test_mixed_precision_training_follows_f32_from_the_same_weights():
    """The mixed path (every matmul through matmul_f16's reference, loss scale 1024 undone in
    AdamW) trains the micro model along the f32 path's curve, and is not the f32 path."""
    from py_core.transformer import Trainer, builtin_text
    from py_core.transformer.config import TransformerConfig
    from py_core.transformer.model import LOSS_SCALE

    text = builtin_text("shakespeare")[:6000]

    async def curve(precision):
        cfg = TransformerConfig.preset("micro", steps=6, n_layer=1)
        t = Trainer(ReferenceBackend(), cfg, text, precision=precision)
        await t.setup()
        assert t.model.loss_scale == (LOSS_SCALE if precision == "mixed" else 1.0)
        for _ in range(6):
            await t.step()
        return list(await t.losses(0))

    f32, mixed = asyncio.run(curve("f32")), asyncio.run(curve("mixed"))
    assert f32 != mixed
    assert all(abs(a - b) <= 0.01 * abs(a) for a, b in zip(f32, mixed)), (f32, mixed)
    assert mixed[-1] < mixed[0]


def test_mixed_precision_is_refused_plainly_without_tensor_cores():
    from py_core.transformer.model import mixed_unavailable
    b = _NoTensorCores()
    b.features = ["subgroups", "shader-f16"]
    assert mixed_unavailable(b) == "this adapter lacks chromium-experimental-subgroup-matrix"
    b.features = list(mf.FEATURES)
    b.adapter = {"subgroup_matrix_configs": [], "subgroup_min_size": 32, "subgroup_max_size": 32}
    assert "no f16 x f16 -> f32" in mixed_unavailable(b)
    b.adapter["subgroup_matrix_configs"] = [{"component": "f16", "result": "f32", "M": 16, "N": 16, "K": 16}]
    b.limits = {**b.limits, "maxComputeWorkgroupStorageSize": 49152}
    assert mixed_unavailable(b) == ""


def test_benchmark_mode_builds_checks_and_times_each_matmul():
    """run_benchmark at 128^3 on a GPU-named reference backend with the features: each kernel's
    product matches the plain sums at the checked entries (so the shifted-row operands, the f16
    packing and the rounding agree between the buffers and the check)."""
    from py_core.benchmark import run_benchmark
    b = _NoTensorCores()
    b.features = list(mf.FEATURES)
    rows = asyncio.run(run_benchmark(b, n=128, repeat=1))
    assert [r["kernel"].split()[0] for r in rows] == ["transformer_matmul", "matmul_f16", "matmul_f16", "matmul_f16"]
    assert rows[-1]["kernel"].endswith("(direct_32x64)")
    for r in rows:
        assert r["ok"] and r["max_err"] < 1e-3 and r["tflops"] > 0, r
    b.features = ["subgroups"]
    assert len(asyncio.run(run_benchmark(b, n=128, repeat=1))) == 1
    assert asyncio.run(run_benchmark(ReferenceBackend(), n=128)) == []


def test_mixed_model_binds_no_output_smaller_than_one_result_matrix():
    """Dawn's minimum binding size for a subgroupMatrixStore target is one 16 x 16 f32 matrix:
    the mixed path sends smaller outputs to transformer_matmul (seen on the H200: a 272-byte
    bias-gradient buffer refused)."""
    from py_core.transformer import Trainer, builtin_text
    from py_core.transformer.config import TransformerConfig

    async def plans():
        cfg = TransformerConfig.preset("micro", steps=1, n_layer=1)
        t = Trainer(ReferenceBackend(), cfg, builtin_text("shakespeare")[:4000], precision="mixed")
        await t.setup()
        return [p for p in vars(t).values() if hasattr(p, "ops")]
    seen = 0
    for plan in asyncio.run(plans()):
        for i, op in enumerate(plan.ops):
            if isinstance(op, Dispatch) and op.kernel.family == "matmul_f16" and op.kernel.entry != "cast_f16":
                seen += 1
                assert op.buffers[3].nbytes >= mf.MIN_C_BYTES, plan.label(i)
    assert seen > 0


def test_pick_direct_takes_the_measured_entry_and_refuses_what_it_cannot_load():
    fc = tm.params(16384, 1536, 384, tm.TRANS_B | tm.BIAS | tm.GELU)
    assert mf.pick_direct(fc) == "direct_128"                     # measured fastest for this shape
    assert mf.pick_direct(tm.params(384, 1536, 512, tm.TRANS_A), 32) == "direct_128"  # a dW slice
    assert mf.pick_direct(tm.params(4096, 4096, 4096)) == "direct_128"
    assert mf.pick_direct(tm.params(256, 256, 64, tm.TRANS_B | tm.SKIP_UPPER)) is None  # causal
    assert mf.pick_direct(tm.params(16384, 65, 384, tm.TRANS_B)) is None  # the head: 65 columns
    assert mf.pick_direct({**fc, "b_off": 4}) is None   # an operand 8 bytes off 16-byte alignment
    assert mf.pick_direct({**fc, "c_off": 2}) is None


def test_mixed_model_runs_its_blocks_on_direct_entries_and_samples_after_training_is_freed():
    """The mixed path sends the blocks' products (forward, dX and split-K dW) to direct entries
    reading f16 copies, and those copies live in their sources' scopes: once training's scope is
    closed, sampling the model (its weights' copy in the model's scope) still runs."""
    from py_core.transformer import Trainer, builtin_text
    from py_core.transformer.config import TransformerConfig
    from py_core.transformer.sample import sample

    async def go():
        cfg = TransformerConfig.preset("micro", steps=2, n_layer=1, n_embd=64, block_size=32)
        t = Trainer(ReferenceBackend(), cfg, builtin_text("shakespeare")[:4000], precision="mixed")
        await t.setup()
        entries = [op.kernel.entry for op in t.step_plan.ops
                   if isinstance(op, Dispatch) and op.kernel.family == "matmul_f16"]
        await t.step()
        model = t.trained()
        t.close()
        text = await sample(model, n=3)
        freed = [b for op in model._sampler.plan.ops if isinstance(op, Dispatch) for b in op.buffers
                 if b.handle is None]
        model.close()
        return entries, text, freed
    entries, text, freed = asyncio.run(go())
    direct = [e for e in entries if e.startswith("direct_")]
    assert len(direct) >= 6 and "cast_f16" in entries, entries
    assert len(text) == 3
    assert not freed  # no buffer of training's closed scope bound by the sampler


def test_memory_counts_the_mixed_paths_slices_and_f16_copies():
    """The mixed path's weight gradients go in 32 slices (the f32 path's slabs stay as they were)
    and its f16 copies (weights, and the activations and gradients the direct products read)
    count towards the memory the page shows before training."""
    from py_core.transformer.buffers import activation_specs, memory_bytes, split_k
    from py_core.transformer.config import TransformerConfig
    from py_core.transformer.params import ParamLayout

    cfg = TransformerConfig.preset("shakespeare_char", batch_size=64)
    m, c, f = 64 * 256, 384, 4 * 384
    specs = {p: dict((name, k) for name, _, k in activation_specs(cfg, 65, 64, 256, True, precision=p))
             for p in ("f32", "mixed")}
    assert specs["mixed"]["slabs"] == 32 * f * c
    assert specs["f32"]["slabs"] == max(split_k(n, k, m, mode) * n * k for n, k in ((3 * c, c), (c, c), (f, c), (c, f))
                                        for mode in tm.MODES)
    f32, mixed = memory_bytes(cfg, 65), memory_bytes(cfg, 65, "mixed")
    copies = 2 * ParamLayout(cfg, 65).n + 2 * (cfg.n_layer * m * (3 * c + f) + m * c + m * (c + 3 * c + f))
    grown = 4 * sum(specs["mixed"][k] - specs["f32"][k] for k in specs["f32"])
    assert mixed["activations"] - f32["activations"] == copies + grown
