"""A backend that runs nothing and holds no memory: what a recording asks of a backend.

A job's recording (a transformer's step, evaluation and sampling plans) picks its kernels by the
sizes it records for (tilings, split sums, f16 entries): recorded here, with the real backend's
limits, features and adapter, it lists the pipelines that job will compile, so the tab can
compile them ahead (`Backend.warm`) while the person is still choosing, not on their click.
"""
from __future__ import annotations

from array import array

from .backend import TYPECODES, Backend, Buffer, Kernel, Plan


class DryBackend(Backend):
    def __init__(self, like: Backend):
        """Records as `like` would: its name (what recordings ask of a backend by name), limits,
        features and adapter."""
        super().__init__()
        self.name = like.name
        self.limits = dict(like.limits)
        self.adapter = dict(like.adapter)
        self.features = list(like.features)
        self.asked: dict = {}  # (family, entry, constants' items) -> (family, entry, constants)

    def kernels(self) -> list:
        """[(family, entry, constants), ...]: every kernel asked for, in the order first asked."""
        return list(self.asked.values())

    def _create(self, buf: Buffer):
        return True

    def _write(self, buf: Buffer, data: array, offset: int) -> None:
        pass

    async def _read(self, buf: Buffer, n: int) -> array:
        return array(TYPECODES[buf.dtype], [0]) * n

    async def _compile(self, kernel: Kernel):
        key = (kernel.family, kernel.entry, tuple(kernel.constants.items()))
        self.asked.setdefault(key, (kernel.family, kernel.entry, dict(kernel.constants)))
        return True

    async def _run(self, plan: Plan, repeat: int) -> None:
        pass
