"""Work submitted in groups, sized by the GPU's measured rate.

A long job (a forest's tree levels, a transformer's steps) records its units once and submits
them in groups; after each group it waits for the GPU to finish it (a readback, or
`backend.finish()`: onSubmittedWorkDone), so progress reports what the GPU has done, Stop and
Pause act between groups, and the time estimate comes from measured rates. The group size is
what the last group's rate says takes about `target` seconds: small on a software adapter (one
level or step), large on a fast GPU, so the waits cost little (a group is one submission).
"""
from __future__ import annotations

import time

GROUP_SECONDS = 0.25  # GPU time a group aims at: progress about 4 times a second, Stop within it


class Pacer:
    """How many units to submit before the next wait, from the rates measured so far."""

    def __init__(self, target: float = GROUP_SECONDS, first: int = 1):
        self.target, self.next = target, max(1, first)
        self.units, self.seconds = 0, 0.0   # measured so far
        self.last_rate: float | None = None  # seconds a unit, of the last group
        self.started = time.perf_counter()

    def size(self, most: int | None = None) -> int:
        """Units in the next group (at least 1, at most `most`)."""
        return max(1, min(self.next, most)) if most is not None else self.next

    def done(self, units: int, seconds: float) -> None:
        """A group of `units` took `seconds` (submission to completion)."""
        if units <= 0:
            return
        self.units += units
        self.seconds += seconds
        self.last_rate = seconds / units
        want = int(self.target / self.last_rate) if self.last_rate > 0 else 2 * units
        self.next = max(1, min(want, 2 * units))  # grow at most twofold: later units may cost more

    @property
    def rate(self) -> float | None:
        """Seconds a unit, over everything measured."""
        return self.seconds / self.units if self.units else None

    def eta(self, remaining: float) -> float | None:
        """Seconds left for `remaining` units at the measured rate."""
        rate = self.last_rate if self.last_rate is not None else None
        return None if rate is None else max(0.0, remaining * rate)
