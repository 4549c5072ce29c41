"""The column_sum kernel family, kept in the kind's own package (tests/kind_demo): its WGSL
`column_sum.wgsl` beside this file, its description (FAMILY), its plain-Python reference and the
host's side (`total`). One line registers it (`family.register`), as the package is imported.
"""
from __future__ import annotations

import math
from array import array

from py_core.kernels import reference
from py_core.kernels.family import Family, register
from py_core.kernels.layout import Struct

register("column_sum", __name__)

WG = 256          # values a workgroup adds (the WGSL's WG)
MAX_GROUPS = 65535  # workgroups in one dimension of a grid
PARAMS = Struct("n:u32")
FAMILY = Family(structs={"Params": PARAMS})


@reference("column_sum", "partial_sums", writes={2})
def partial_sums(bufs, grid, constants):
    prm, x, part = bufs
    n = PARAMS.unpack(prm)["n"]
    for g in range(-(-n // WG)):
        part[g] = math.fsum(x[g * WG:min(n, (g + 1) * WG)])


def grid(groups: int) -> tuple[int, int, int]:
    return (min(groups, MAX_GROUPS), -(-groups // MAX_GROUPS), 1)


async def total(backend, values) -> float:
    """The sum of `values` (rounded to f32) on `backend`: the parts on the GPU, then their sum
    here (a few numbers: n / 256)."""
    n = len(values)
    if n == 0:
        return 0.0
    groups = -(-n // WG)
    async with backend.scope("column_sum"):
        x = backend.buffer("f32", data=array("f", values))
        part = backend.buffer("f32", groups)
        u = backend.buffer("u32", data=PARAMS.pack(n=n), uniform=True)
        kern = await backend.kernel("column_sum", "partial_sums")
        await backend.run(backend.plan().dispatch(kern, [u, x, part], grid(groups)))
        return math.fsum(await backend.read(part))
