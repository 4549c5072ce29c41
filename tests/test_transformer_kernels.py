"""Each transformer kernel family on the native backend against its plain-Python reference.

Fresh random inputs every run: the seed comes from os.urandom and is in the failure message.
"""
from __future__ import annotations

import asyncio
import os
import random

import pytest

from py_core import selftest
from py_core.gpu.reference import ReferenceBackend

selftest._load_families()
CASES = [c for c in selftest.CASES if c.name.startswith("transformer")]


@pytest.fixture(scope="module")
def native():
    try:
        from py_core.gpu.native import NativeBackend
        return NativeBackend()
    except Exception as exc:  # no wgpu or no Vulkan adapter
        pytest.skip(f"native backend unavailable: {exc}")


async def _outputs(backend, c, seed):
    plan, outs, _ = await c.setup(backend, random.Random(seed))
    await backend.run(plan)
    return [await backend.read(b) for b in outs]


@pytest.mark.native
@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_kernel_matches_reference(native, c):
    seed = int.from_bytes(os.urandom(4), "little")
    got = asyncio.run(_outputs(native, c, seed))
    want = asyncio.run(_outputs(ReferenceBackend(), c, seed))
    for i, (g, w) in enumerate(zip(got, want)):
        abs_err, ratio, ok = selftest.max_error(g, w, c.atol, c.rtol)
        assert ok, (f"{c.name}: output {i} off by {abs_err:.3g} ({ratio:.3g} x tolerance, "
                    f"atol {c.atol} rtol {c.rtol}); seed {seed}")


def test_cases_registered():
    assert len(CASES) >= 10
