"""Torch version of `shaders/matmul.wgsl`: C = alpha * op(A) @ op(B), or C += that."""
from __future__ import annotations

from ..matmul import ACCUMULATE, PARAMS, TILE, TRANS_A, TRANS_B
from . import params, torch_kernel

WRITTEN_FOR = "c337e7cbbfe8bb44"  # fingerprint of the matmul.wgsl mirrored here


@torch_kernel("matmul", "matmul")
def matmul(bufs, grid, constants):
    p = params(bufs[0], PARAMS)
    a, b, c = (buf.t for buf in bufs[1:])
    M, N, K, flags = p["M"], p["N"], p["K"], p["flags"]
    A = a[:M * K].view(K, M).t() if flags & TRANS_A else a[:M * K].view(M, K)
    B = b[:K * N].view(N, K).t() if flags & TRANS_B else b[:K * N].view(K, N)
    m, n = min(M, grid[1] * TILE), min(N, grid[0] * TILE)  # the tiles the grid covers
    out = p["alpha"] * (A[:m] @ B[:, :n])
    C = c[:M * N].view(M, N)
    if flags & ACCUMULATE:
        C[:m, :n] += out
    else:
        C[:m, :n] = out
