"""The errors a run ends with, below every layer that raises them (algorithms and jobs alike)."""
from __future__ import annotations


class Stopped(Exception):
    """The job was stopped on request; nothing is posted as a finished run."""


class JobError(ValueError):
    """A job that cannot run as given (unknown kind, bad parameter): the message says which."""
