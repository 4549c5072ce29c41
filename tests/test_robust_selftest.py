"""A GPU that returns NaN: the self-test reports the kernel as wrong (error null, not ok) and
its result stays postable JSON, instead of failing to serialise an infinite error."""

import asyncio
import json
import math
from array import array

from py_core import selftest
from py_core.gpu.reference import ReferenceBackend


class NaNBackend(ReferenceBackend):
    """The reference backend, but every float buffer reads back as NaN, as from a faulty GPU."""
    name = "nan-gpu"

    async def read(self, buf):
        got = await super().read(buf)
        return array(got.typecode, [math.nan] * len(got)) if got.typecode in "fd" else got


def test_nan_output_is_a_failed_kernel_in_valid_json(monkeypatch):
    selftest._load_families()
    # two matmuls: fast, float outputs (by name: another test's import may register the forest's first)
    matmuls = [c for c in selftest.CASES if c.name.startswith("matmul")][:2]
    monkeypatch.setattr(selftest, "CASES", matmuls)
    result = asyncio.run(selftest.run_selftest(NaNBackend(), seed=1))
    kernels = result["metrics"]["kernels"]
    assert result["metrics"]["all_ok"] is False and len(kernels) == 2
    for k in kernels:
        assert (k["ok"], k["max_abs_err"], k["err_over_tol"]) == (False, None, None)
    json.dumps(result, allow_nan=False)  # what py_core.browser.run does before posting
