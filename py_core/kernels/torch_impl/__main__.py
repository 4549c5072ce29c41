"""python -m py_core.kernels.torch_impl: each torch family's fingerprint, current or stale."""
from . import _module, families, fingerprint, written_for

for family in families():
    now = fingerprint(family)
    state = "current" if written_for(_module(family), family) == now else "STALE"
    print(f"{family:26} {now!r},  # {state}")
