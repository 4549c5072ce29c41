"""What every estimator of py_core shares with scikit-learn's: parameters as attributes named by
the class's PARAMS (the kind's table, plus `backend`), get_params / set_params, a repr of them,
and the backend the parameter names (made once, kept by the estimator)."""
from __future__ import annotations


class Estimator:
    PARAMS: tuple = ()

    def get_params(self, deep: bool = True) -> dict:
        return {name: getattr(self, name) for name in self.PARAMS}

    def set_params(self, **params):
        for name, value in params.items():
            if name not in self.PARAMS:
                raise ValueError(f"unknown parameter {name!r}: one of {', '.join(self.PARAMS)}")
            setattr(self, name, value)
        return self

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items()
                         if k != "backend" or isinstance(v, str))
        return f"{type(self).__name__}({args})"

    def _backend(self):
        """`backend` itself, or the backend made from its name (kept by this estimator)."""
        if not isinstance(self.backend, str):
            return self.backend
        named = getattr(self, "_named", None)
        if named is None or named[0] != self.backend:
            from .gpu import get_backend
            self._named = named = (self.backend, get_backend(self.backend))
        return named[1]
