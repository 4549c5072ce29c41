"""The registry of the self-test's cases: what a kernel family registers with `@case(...)`.

A case builds its inputs from a seeded `random.Random`, records a plan on a backend and names its
output buffers (`py_core.selftest` runs them against the reference backend). This module sits
below the families and imports none of them, so the families' cases import it one way.
"""
from __future__ import annotations

import math
import random
from array import array
from dataclasses import dataclass


@dataclass
class Case:
    name: str
    setup: object        # async (backend, rng) -> (plan, [output buffers], work)
    atol: float
    rtol: float
    unit: str = "GFLOP/s"
    needs: tuple = ()    # adapter features a GPU backend must have (else the case is skipped)


CASES: list[Case] = []


def case(name: str, atol: float = 1e-5, rtol: float = 1e-4, unit: str = "GFLOP/s", needs: tuple = ()):
    def register(setup):
        CASES.append(Case(name, setup, atol, rtol, unit, tuple(needs)))
        return setup
    return register


def max_error(got, want, atol: float, rtol: float) -> tuple[float, float, bool]:
    """Largest absolute error, largest error relative to the tolerance, and whether all pass."""
    if len(got) != len(want):
        return math.inf, math.inf, False
    worst_abs, worst_ratio = 0.0, 0.0
    for g, w in zip(got, want):
        err = abs(g - w)
        if err != err:  # NaN
            return math.inf, math.inf, False
        worst_abs = max(worst_abs, err)
        worst_ratio = max(worst_ratio, err / (atol + rtol * abs(w)))
    return worst_abs, worst_ratio, worst_ratio <= 1.0


def random_floats(rng: random.Random, n: int, scale: float = 1.0) -> array:
    return array("f", [rng.uniform(-scale, scale) for _ in range(n)])


def uniform(backend, struct, **values):
    """A uniform buffer holding `struct` packed with `values`."""
    return backend.buffer("u32", data=struct.pack(**values), uniform=True)
