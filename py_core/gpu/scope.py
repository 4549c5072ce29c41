"""Scopes: who owns a run's GPU buffers and plans, and frees them when the run ends.

    async with backend.scope("forest fit"):          # current while the block runs
        x = backend.buffer("f32", n)                  # owned by the innermost current scope
        plan = backend.plan()                         # plans too (their JS/bind-group side)
        ...
    # here every buffer and plan made inside is freed: on success, on Stop, on failure

A scope made inside another is its child and closes with it. What must outlive the block (a
model's weights) is made in a longer-lived scope, or handed to one with `Scope.own`:

    model = backend.scope("model", detached=True)     # no parent: the caller closes it
    with model.use():                                 # current, but not closed at the end
        weights = backend.buffer("f32", n)
    fit_scope.own(buf)                                # moves buf (from any scope) into fit_scope

The backend counts what is alive (`backend.memory()`): buffers, their bytes, compiled plans.
"""
from __future__ import annotations

import contextlib


class Scope:
    """An owner of buffers, plans and child scopes on one backend."""

    def __init__(self, backend, name: str = "", parent: "Scope | None" = None):
        self.backend, self.name, self.parent = backend, name, parent
        self._buffers: dict = {}   # id(buffer) -> buffer
        self._plans: dict = {}     # id(plan) -> plan
        self._children: list["Scope"] = []
        self.closed = False
        if parent is not None:
            parent._children.append(self)

    # -- ownership ----------------------------------------------------------------------------
    def own(self, *things) -> "Scope":
        """Take buffers or plans from whatever scope holds them (none: they were unowned)."""
        if self.closed:
            raise RuntimeError(f"scope {self.name!r} is closed")
        for thing in things:
            if thing is None:
                continue
            old = getattr(thing, "scope", None)
            if old is not None:
                old._forget(thing)
            (self._plans if _is_plan(thing) else self._buffers)[id(thing)] = thing
            thing.scope = self
        return self

    def _forget(self, thing) -> None:
        (self._plans if _is_plan(thing) else self._buffers).pop(id(thing), None)
        thing.scope = None

    @property
    def nbytes(self) -> int:
        """Bytes of the live buffers this scope and its children own."""
        return (sum(b.nbytes for b in self._buffers.values())
                + sum(c.nbytes for c in self._children))

    def counts(self) -> dict:
        """{"buffers", "bytes", "plans"} owned here and below."""
        out = {"buffers": len(self._buffers), "bytes": sum(b.nbytes for b in self._buffers.values()),
               "plans": len(self._plans)}
        for child in self._children:
            for key, value in child.counts().items():
                out[key] += value
        return out

    # -- lifetime -----------------------------------------------------------------------------
    def close(self) -> None:
        """Free every plan and buffer owned here and in the children (idempotent)."""
        if self.closed:
            return
        self.closed = True
        for child in list(self._children):
            child.close()
        for plan in list(self._plans.values()):
            self.backend.free_plan(plan)
        for buf in list(self._buffers.values()):
            self.backend.free(buf)
        self._plans.clear()
        self._buffers.clear()
        if self.parent is not None:
            with contextlib.suppress(ValueError):
                self.parent._children.remove(self)

    @contextlib.contextmanager
    def use(self):
        """Make this scope current for the block without closing it at the end."""
        if self.closed:
            raise RuntimeError(f"scope {self.name!r} is closed")
        token = self.backend._current_scope.set(self)
        try:
            yield self
        finally:
            self.backend._current_scope.reset(token)

    def __enter__(self) -> "Scope":
        self._token = self.backend._current_scope.set(self)
        return self

    def __exit__(self, *exc) -> None:
        self.backend._current_scope.reset(self._token)
        self.close()

    async def __aenter__(self) -> "Scope":
        return self.__enter__()

    async def __aexit__(self, *exc) -> None:
        self.__exit__(*exc)

    def __repr__(self):
        c = self.counts()
        return (f"Scope({self.name!r}, {c['buffers']} buffers, {c['bytes']} bytes, {c['plans']} plans"
                f"{', closed' if self.closed else ''})")


def _is_plan(thing) -> bool:
    return hasattr(thing, "ops")
