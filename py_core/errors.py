"""The errors a run ends with, below every layer that raises them (algorithms and jobs alike)."""
from __future__ import annotations

from collections.abc import Callable


class Stopped(Exception):
    """The job was stopped on request; nothing is posted as a finished run."""


class JobError(ValueError):
    """A job that cannot run as given (unknown kind, bad parameter): the message says which."""


def checker(should_stop: Callable[[], bool] | None) -> Callable[[], None]:
    """check() for the long loops of loading and preparing data: raises Stopped once
    should_stop() returns True (never when should_stop is None). Called every few milliseconds of
    work, it makes Stop end a job within a quarter of a second."""
    def check() -> None:
        if should_stop is not None and should_stop():
            raise Stopped("stopped on request")
    return check
