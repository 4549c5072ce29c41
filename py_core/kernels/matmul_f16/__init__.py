"""Reference of `matmul_f16.wgsl`: transformer_matmul's contract on subgroup matrices (tensor
cores), f16 operands and f32 accumulation. Bindings: params, A, B, C, bias, R, G.

The WGSL is written by `wgsl.py` (named accumulators and staging registers, one tiling). The
reference is transformer_matmul's, on 128 x 128 tiles, over the operands rounded to f16 (to
nearest, ties to even, as the GPU converts): what the tensor cores multiply. Sums are exact here
and f32 on the GPU, in another order: tolerances cover that, not the rounding of the operands.

Pipeline constants (`constants(flags, in_f16)`): IN_F16 (A and B hold packed f16 pairs instead of
f32 values), TRANSPOSE_A and TRANSPOSE_B (must match flags TRANS_A and TRANS_B).
"""
from __future__ import annotations

import struct
from array import array

from .. import reference
from ..transformer_matmul import (  # noqa: F401  (the same contract: layout and flags)
    ACCUMULATE,
    BIAS,
    FAMILY,
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
from .wgsl import DEFAULT

TILE = DEFAULT["bm"]  # rows and columns of C per workgroup (the causal flags act on these)
FEATURES = ("shader-f16", "subgroups", "chromium-experimental-subgroup-matrix")
WRITES = {("matmul_f16", "matmul"): {3, 6}}
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


@reference("matmul_f16", "matmul")
def matmul(bufs, grid_, constants_):
    prm, a, b, c, bias, res, g = bufs
    flags = PARAMS.unpack(prm)["flags"]
    for name, bit in (("TRANSPOSE_A", TRANS_A), ("TRANSPOSE_B", TRANS_B)):
        if bool(constants_.get(name, 0)) != bool(flags & bit):
            raise ValueError(f"matmul_f16: pipeline constant {name}={constants_.get(name, 0)} "
                             f"disagrees with flags {flags}: build the kernel with constants(flags)")
    in_f16 = bool(constants_.get("IN_F16", 0))
    _matmul([prm, _operand(a, in_f16), _operand(b, in_f16), c, bias, res, g], grid_, TILE)
