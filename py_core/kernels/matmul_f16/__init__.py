"""Reference of the matmul_f16 kernels: transformer_matmul's contract on subgroup matrices (tensor
cores), f16 operands and f32 accumulation. Bindings: params, A, B, C, bias, R, G.

The WGSL is written by `wgsl.py` (named accumulators and staging registers, one tiling) when the
shader is loaded: no file in shaders/, so nothing generated is committed to go stale. The
reference is transformer_matmul's, on 128 x 128 tiles, over the operands rounded to f16 (to
nearest, ties to even, as the GPU converts): what the tensor cores multiply. Sums are exact here
and f32 on the GPU, in another order: tolerances cover that, not the rounding of the operands.

Pipeline constants (`constants(flags, in_f16)`): IN_F16 (A and B hold packed f16 pairs instead of
f32 values), TRANSPOSE_A and TRANSPOSE_B (must match flags TRANS_A and TRANS_B).

Beside the staged `matmul`: the direct-load entries (wgsl.DIRECT; `pick_direct` says which one a
product may use), which take A and B as packed f16 always and skip workgroup memory, and
`cast_f16`, which writes those f16 copies (bindings: Cast, S32, D16).
"""
from __future__ import annotations

import struct
from array import array

from .. import reference
from ..family import Family
from ..layout import Struct
from ..transformer_matmul import (  # noqa: F401  (the same contract: layout and flags)
    ACCUMULATE,
    BIAS,
    GELU,
    GELU_GRAD,
    K_FROM_ROW,
    K_UPTO_ROW,
    PARAMS,
    RESIDUAL,
    ROWSUM,
    SKIP_UPPER,
    TRANS_A,
    TRANS_B,
    _matmul,
    params,
)
from ..transformer_matmul import FAMILY as _MM_FAMILY
from .wgsl import DEFAULT, DIRECT, module

CAST = Struct("n:u32 src_off:u32 dst_off:u32 pad:u32")
FAMILY = Family(structs={**_MM_FAMILY.structs, "Cast": CAST}, consts=dict(_MM_FAMILY.consts),
                generate=module)

TILE = DEFAULT["bm"]  # rows and columns of C per workgroup (the causal flags act on these)
FEATURES = ("shader-f16", "subgroups", "chromium-experimental-subgroup-matrix")
F16_MAX = 65504.0
# Dawn asks a buffer that subgroupMatrixStore writes to hold one 16 x 16 f32 result at least (its
# minimum binding size): smaller outputs (a few bias-gradient partials) stay on transformer_matmul
MIN_C_BYTES = 16 * 16 * 4
# workgroup memory of the default tiling: staged A and B tiles (f16) and the f32 scratch
WORKGROUP_BYTES = 2 * 2 * max(DEFAULT["bm"] * (DEFAULT["bk"] + 8), DEFAULT["bk"] * (DEFAULT["bm"] + 8)) + \
    4 * 256 * DEFAULT["wm"] * DEFAULT["wn"]


def constants(flags: int, in_f16: bool = False) -> dict:
    """The pipeline constants of a dispatch with these flags."""
    return {"IN_F16": int(bool(in_f16)), "TRANSPOSE_A": int(bool(flags & TRANS_A)),
            "TRANSPOSE_B": int(bool(flags & TRANS_B))}


def grid(m: int, n: int, batches: int = 1) -> tuple[int, int, int]:
    return (-(-n // TILE), -(-m // TILE), batches)


def supports(features, configs=None) -> bool:
    """Whether an adapter with these features (and subgroup-matrix configs, dicts with
    component/result/M/N/K, when known) runs this family."""
    if not all(f in features for f in FEATURES):
        return False
    if configs is None:
        return True
    return any(c.get("component") == "f16" and c.get("result") == "f32" and
               (c.get("M"), c.get("N"), c.get("K")) == (16, 16, 16) for c in configs)


def round_f16(values) -> array:
    """f32 values rounded to the nearest f16 (ties to even), as f32; beyond f16's range, +-inf."""
    vals = list(values)
    try:
        return array("f", struct.unpack(f"<{len(vals)}e", struct.pack(f"<{len(vals)}e", *vals)))
    except OverflowError:  # some value beyond +-65504 (after rounding): one by one
        out = array("f")
        for v in vals:
            try:
                out.append(struct.unpack("<e", struct.pack("<e", v))[0])
            except OverflowError:
                out.append(float("inf") if v > 0 else float("-inf"))
        return out


def pack_f16(values) -> array:
    """f32 values as packed f16 pairs in 32-bit words (element 2i in the low half): the layout
    of A and B when IN_F16."""
    vals = list(round_f16(values))
    if len(vals) % 2:
        vals.append(0.0)
    raw = struct.pack(f"<{len(vals)}e", *vals)
    return array("I", struct.unpack(f"<{len(vals) // 2}I", raw))


def unpack_f16(words) -> array:
    """The f16 values of packed words, as f32."""
    raw = array("I", words).tobytes() if not isinstance(words, array) or words.typecode != "I" \
        else words.tobytes()
    return array("f", struct.unpack(f"<{len(raw) // 2}e", raw))


def _operand(buf, in_f16: bool) -> array:
    if in_f16:
        return unpack_f16(array("I", buf.tobytes()) if buf.typecode != "I" else buf)
    vals = buf if buf.typecode == "f" else array("f", buf.tobytes())
    return round_f16(vals)


@reference("matmul_f16", "matmul", writes={3, 6})
def matmul(bufs, grid_, constants_):
    prm, a, b, c, bias, res, g = bufs
    flags = PARAMS.unpack(prm)["flags"]
    for name, bit in (("TRANSPOSE_A", TRANS_A), ("TRANSPOSE_B", TRANS_B)):
        if bool(constants_.get(name, 0)) != bool(flags & bit):
            raise ValueError(f"matmul_f16: pipeline constant {name}={constants_.get(name, 0)} "
                             f"disagrees with flags {flags}: build the kernel with constants(flags)")
    in_f16 = bool(constants_.get("IN_F16", 0))
    _matmul([prm, _operand(a, in_f16), _operand(b, in_f16), c, bias, res, g], grid_, TILE)


# -- the direct-load entries and the cast ---------------------------------------------------------
CAUSAL = SKIP_UPPER | K_UPTO_ROW | K_FROM_ROW
# Which direct entry serves a product: the one measured fastest for its shape on the H200 (the
# GPT's products at shakespeare_char b64 and 8x8x512 T128 b32, tools/gpu/f16probe/direct.html,
# bench/results/2026-11-28-h200-gemm.md), keyed (M, N, K, transposes); weight gradients (A
# transposed) on 128 x 128 tiles; any other shape on the largest tile that still gives the grid
# two waves of workgroups (264 on the H200's 132 multiprocessors), at 4096^3 direct_128 (72
# TFLOP/s against direct_64's 60).
MEASURED = {
    (16384, 1152, 384, TRANS_B): "direct_128", (16384, 384, 384, TRANS_B): "direct_64",
    (16384, 1536, 384, TRANS_B): "direct_128", (16384, 384, 1536, TRANS_B): "direct_64",
    (16384, 1536, 384, 0): "direct_32x64", (16384, 384, 1536, 0): "direct_64_u2",
    (16384, 384, 1152, 0): "direct_64",
    (4096, 1536, 512, TRANS_B): "direct_64_u2", (4096, 512, 512, TRANS_B): "direct_64_u2",
    (4096, 2048, 512, TRANS_B): "direct_64x128", (4096, 512, 2048, TRANS_B): "direct_64x128",
    (4096, 2048, 512, 0): "direct_128", (4096, 512, 2048, 0): "direct_64_u2",
    (4096, 512, 1536, 0): "direct_64_u2",
}
WEIGHT_GRADIENT = ("direct_128", "direct_64x128", "direct_32x64")
BY_SIZE = ("direct_128", "direct_64", "direct_32x64")
MIN_GROUPS = 264


def direct_tile(name: str) -> tuple[int, int, int]:
    """(rows, columns, K step) of a direct entry's workgroup."""
    wm, wn, fm, fn, ku = DIRECT[name]
    return 16 * wm * fm, 16 * wn * fn, 16 * ku


def direct_grid(name: str, m: int, n: int, batches: int = 1) -> tuple[int, int, int]:
    bm, bn, _ = direct_tile(name)
    return (-(-n // bn), -(-m // bm), batches)


def pick_direct(values: dict, batches: int = 1) -> str | None:
    """The direct entry for a product with these uniform values (transformer_matmul.params), or
    None where none applies: causal flags, no tile that divides the product, or offsets and
    leading dimensions that break the 16-byte alignment of a subgroup-matrix load (8 f16) or store
    (4 f32)."""
    v = values
    if v["flags"] & CAUSAL:
        return None
    if any(v[f] % 8 for f in ("lda", "ldb", "a_off", "b_off", "a_so", "a_si", "b_so", "b_si")):
        return None
    if any(v[f] % 4 for f in ("ldc", "c_off", "c_so", "c_si")):
        return None
    m, n, k = v["M"], v["N"], v["K"]
    known = MEASURED.get((m, n, k, v["flags"] & (TRANS_A | TRANS_B)))
    if known and _divides(known, m, n, k):
        return known
    order = WEIGHT_GRADIENT if v["flags"] & TRANS_A else BY_SIZE
    fits = [name for name in order if _divides(name, m, n, k)]
    for name in fits:
        g = direct_grid(name, m, n, batches)
        if v["flags"] & TRANS_A or g[0] * g[1] * g[2] >= MIN_GROUPS:
            return name
    return fits[-1] if fits else None


def _divides(name: str, m: int, n: int, k: int) -> bool:
    bm, bn, bk = direct_tile(name)
    return m % bm == 0 and n % bn == 0 and k % bk == 0


def cast_grid(n: int) -> tuple[int, int, int]:
    """Workgroups of cast_f16 for n values (256 pairs a workgroup, folded past 65535)."""
    groups = max(1, -(-n // 512))
    return (min(groups, 65535), -(-groups // 65535), 1)


@reference("matmul_f16", "cast_f16", writes={2})
def cast_f16(bufs, grid_, constants_):
    prm, src, dst = bufs
    c = CAST.unpack(prm)
    if c["dst_off"] % 2:
        raise ValueError("cast_f16: dst_off must be even (whole f16 pairs)")
    vals = src if src.typecode == "f" else array("f", src.tobytes())
    words = pack_f16(vals[c["src_off"]:c["src_off"] + c["n"]])
    out = array("I", dst.tobytes()) if dst.typecode != "I" else dst
    out[c["dst_off"] // 2:c["dst_off"] // 2 + len(words)] = words
    if out is not dst:
        dst[:] = array(dst.typecode, out.tobytes())


def _direct_reference(name):
    @reference("matmul_f16", name, writes={3, 6})
    def run(bufs, grid_, constants_):
        flags = PARAMS.unpack(bufs[0])["flags"]
        if flags & CAUSAL:
            raise ValueError(f"matmul_f16.{name}: no causal flags on the direct entries")
        matmul(bufs, grid_, {**constants_, "IN_F16": 1})
    return run


for _name in DIRECT:
    _direct_reference(_name)
