"""Reference of `transformer_matmul.wgsl`: strided, batched matmul with offsets, bias,
residual and GELU epilogues. Bindings: params, A, B, C, bias, R, G (see the WGSL)."""
from __future__ import annotations

import math

from .. import reference
from ..family import Family
from ..layout import Struct
from .wgsl import entries

PARAMS = Struct("M:u32 N:u32 K:u32 flags:u32 alpha:f32 inner:u32 lda:u32 ldb:u32 ldc:u32 "
                "a_off:u32 b_off:u32 c_off:u32 bias_off:u32 a_so:u32 a_si:u32 b_so:u32 "
                "b_si:u32 c_so:u32 c_si:u32")
TRANS_A, TRANS_B, ACCUMULATE, BIAS = 1, 2, 4, 8
SKIP_UPPER, K_UPTO_ROW, K_FROM_ROW = 16, 32, 64
RESIDUAL, GELU, GELU_GRAD, ROWSUM = 128, 256, 512, 1024
FAMILY = Family(structs={"Params": PARAMS}, generate=lambda: entries(TILES), consts={
    "TRANS_A": TRANS_A, "TRANS_B": TRANS_B, "ACCUMULATE": ACCUMULATE, "BIAS": BIAS,
    "SKIP_UPPER": SKIP_UPPER, "K_UPTO_ROW": K_UPTO_ROW, "K_FROM_ROW": K_FROM_ROW,
    "RESIDUAL": RESIDUAL, "GELU": GELU, "GELU_GRAD": GELU_GRAD, "ROWSUM": ROWSUM})
TILE = 64        # rows and columns of C per workgroup of `matmul`
BIG_TILE = 128   # ... of `matmul_big`; rows of `matmul_wide` (whose columns are TILE)
BIG_MIN_GROUPS = 96  # matmul_big only when its 128 x 128 tiles still give this many workgroups
BIG_BYTES = 16896    # workgroup memory of matmul_big (two padded 16 x 128 tiles)
TILES = {"matmul": (TILE, TILE), "matmul_wide": (BIG_TILE, TILE), "matmul_big": (BIG_TILE, BIG_TILE)}
K0, K1 = 0.7978845608028654, 0.044715  # GELU's tanh approximation (transformer_elementwise)


def _gelu(x: float) -> float:
    return 0.5 * x * (1.0 + math.tanh(K0 * (x + K1 * x ** 3)))


def _gelu_grad(x: float) -> float:
    t = math.tanh(K0 * (x + K1 * x ** 3))
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * K0 * (1.0 + 3.0 * K1 * x * x)


def grid(m: int, n: int, batches: int = 1, tile: int = TILE, tile_n: int | None = None) -> tuple[int, int, int]:
    return (-(-n // (tile_n or tile)), -(-m // tile), batches)


def entry_grid(entry: str, m: int, n: int, batches: int = 1) -> tuple[int, int, int]:
    """The grid of `entry` for an m x n product."""
    tm, tn = TILES[entry]
    return grid(m, n, batches, tm, tn)


MODES = ("64", "wide", "big")  # tilings a model may use: 64 x 64 only; + 128 x 64; + 128 x 128
WIDE_MIN_GROUPS = 264  # matmul_wide only when its tiles still give this many workgroups


def pick(m: int, n: int, batches: int = 1, mode: str = "64") -> tuple[str, tuple[int, int, int]]:
    """(entry point, grid) for an m x n product under a tiling mode (MODES): larger tiles (more
    multiply-adds per workgroup-memory load) only where they still leave enough workgroups to
    keep a large GPU busy, else 64 x 64."""
    if mode == "big" and m >= BIG_TILE and n >= BIG_TILE:
        g = grid(m, n, batches, BIG_TILE)
        if g[0] * g[1] * batches >= BIG_MIN_GROUPS:
            return "matmul_big", g
    if mode in ("wide", "big") and m >= BIG_TILE:
        g = entry_grid("matmul_wide", m, n, batches)
        if g[0] * g[1] * batches >= WIDE_MIN_GROUPS:
            return "matmul_wide", g
    return "matmul", grid(m, n, batches)


def params(m, n, k, flags=0, alpha=1.0, lda=None, ldb=None, ldc=None, inner=1, a_off=0,
           b_off=0, c_off=0, bias_off=0, a_so=0, a_si=0, b_so=0, b_si=0, c_so=0, c_si=0) -> dict:
    """The uniform's fields, with leading dimensions defaulting to the dense layouts."""
    if lda is None:
        lda = m if flags & TRANS_A else k
    if ldb is None:
        ldb = k if flags & TRANS_B else n
    return dict(M=m, N=n, K=k, flags=flags, alpha=alpha, inner=inner, lda=lda, ldb=ldb,
                ldc=n if ldc is None else ldc, a_off=a_off, b_off=b_off, c_off=c_off,
                bias_off=bias_off, a_so=a_so, a_si=a_si, b_so=b_so, b_si=b_si, c_so=c_so, c_si=c_si)


@reference("transformer_matmul", "matmul", writes={3, 6})
def matmul(bufs, grid_, constants):
    _matmul(bufs, grid_, TILE)


@reference("transformer_matmul", "matmul_wide", writes={3, 6})
def matmul_wide(bufs, grid_, constants):
    _matmul(bufs, grid_, BIG_TILE, TILE)


@reference("transformer_matmul", "matmul_big", writes={3, 6})
def matmul_big(bufs, grid_, constants):
    _matmul(bufs, grid_, BIG_TILE)


def _matmul(bufs, grid_, tile, tile_n=None):
    """tile: the tile's rows (the causal flags act on them), tile_n its columns."""
    tile_n = tile_n or tile
    prm, a, b, c, bias, res, g = bufs
    p = PARAMS.unpack(prm)
    m, n, k, flags, alpha = p["M"], p["N"], p["K"], p["flags"], p["alpha"]
    lda, ldb, ldc = p["lda"], p["ldb"], p["ldc"]
    for z in range(grid_[2]):
        outer, inner = divmod(z, p["inner"])
        ab = p["a_off"] + outer * p["a_so"] + inner * p["a_si"]
        bb = p["b_off"] + outer * p["b_so"] + inner * p["b_si"]
        cb = p["c_off"] + outer * p["c_so"] + inner * p["c_si"]
        # op(B) as K rows of N
        if flags & TRANS_B:
            b_rows = [[b[bb + j * ldb + kk] for j in range(n)] for kk in range(k)]
        else:
            b_rows = [b[bb + kk * ldb:bb + kk * ldb + n] for kk in range(k)]
        for i in range(m):
            row0 = i // tile * tile
            k_end = min(k, row0 + tile) if flags & K_UPTO_ROW else k
            k_begin = min(row0, k_end) if flags & K_FROM_ROW else 0
            acc = [0.0] * n
            rowsum = 0.0
            for kk in range(k_begin, k_end):
                aik = a[ab + kk * lda + i] if flags & TRANS_A else a[ab + i * lda + kk]
                rowsum += aik
                if aik:
                    acc = [x + aik * y for x, y in zip(acc, b_rows[kk])]
            if flags & ROWSUM:
                g[z * m + i] = rowsum
            for j in range(n):
                if flags & SKIP_UPPER and j // tile_n * tile_n > row0 + tile - 1:
                    continue
                v = alpha * acc[j]
                if flags & BIAS:
                    v += bias[p["bias_off"] + j]
                at = cb + i * ldc + j
                if flags & RESIDUAL:
                    v += res[at]
                if flags & GELU_GRAD:
                    v *= _gelu_grad(res[at])
                c[at] = c[at] + v if flags & ACCUMULATE else v
                if flags & GELU:
                    g[at] = _gelu(c[at])
