"""Reference of `matmul.wgsl` and the helpers that dispatch it."""
from __future__ import annotations

from array import array

from .. import reference
from ..family import Family
from ..layout import Struct

PARAMS = Struct("M:u32 N:u32 K:u32 flags:u32 alpha:f32")
TRANS_A, TRANS_B, ACCUMULATE = 1, 2, 4
TILE = 64  # rows and columns of C per workgroup
FAMILY = Family(structs={"Params": PARAMS},
                consts={"TRANS_A": TRANS_A, "TRANS_B": TRANS_B, "ACCUMULATE": ACCUMULATE})


def grid(m: int, n: int) -> tuple[int, int, int]:
    return (-(-n // TILE), -(-m // TILE), 1)


@reference("matmul", "matmul")
def matmul(bufs, grid_, constants):
    params, a, b, c = bufs
    p = PARAMS.unpack(params)
    m, n, k, flags, alpha = p["M"], p["N"], p["K"], p["flags"], p["alpha"]
    # op(B) as K rows of N, op(A) read row by row: C's row i = sum_k A[i,k] * B[k,:]
    if flags & TRANS_B:
        b_rows = [[b[j * k + kk] for j in range(n)] for kk in range(k)]
    else:
        b_rows = [b[kk * n:(kk + 1) * n] for kk in range(k)]
    for i in range(m):
        acc = [0.0] * n
        for kk in range(k):
            aik = a[kk * m + i] if flags & TRANS_A else a[i * k + kk]
            if aik:
                acc = [x + aik * y for x, y in zip(acc, b_rows[kk])]
        row = [alpha * x for x in acc]
        if flags & ACCUMULATE:
            row = [x + y for x, y in zip(c[i * n:(i + 1) * n], row)]
        c[i * n:(i + 1) * n] = array("f", row)
