"""The buffers a GPT's passes need, sized from the config: activations, scratch and the slabs of
the split weight gradients; what they add up to, and whether each fits the adapter.

Every activation the backward pass needs has its own buffer (each stays under the per-binding
limit), one set per layer; the backward pass reuses a few scratch buffers across layers.
Shapes: B sequences, T positions, M = B * T rows, C = n_embd, H heads, F = 4 C, V vocabulary.
"""
from __future__ import annotations

from ..gpu.backend import LimitError
from ..kernels import transformer_elementwise as ew
from ..kernels import transformer_matmul as mm
from .config import TransformerConfig
from .params import ParamLayout

CHUNK = 64           # rows each first-pass column sum adds up
SPLIT_TARGET = 1024  # workgroups a weight gradient aims at (several waves on a GPU of ~130 SMs)
MIN_SLICE = 256      # rows a weight gradient's slice sums at least
# slices of a weight gradient on the mixed path's direct entries: 32 ran 1.2-1.5x faster than 16
# and 3-4x faster than 8 on the H200 (bench/results/2026-11-28-h200-gemm.md), the column sum of
# 32 slabs costing far less than that
MIXED_SLICES = 32
EMBED_CHUNK = 1024   # positions each workgroup of embed_backward_wte scans


def split_k(n: int, k: int, rows: int, mode: str = "64") -> int:
    """How many slices a weight gradient dW = dy^T x (n x k, summed over `rows`) is split into.
    A few output tiles over a long sum leave most of a large GPU idle (shakespeare_char's MLP
    gradient is 144 tiles summed over 16k rows: one thin wave), so the rows are cut into equal
    slices of at least MIN_SLICE, each slice's product goes to its own slab, and a column sum
    adds the slabs (deterministic, no atomics). The count divides `rows`, so slices are equal."""
    if mode == "mixed":  # matmul_f16's direct entries: measured fastest in 32 slices (or 16)
        want = min(rows // MIN_SLICE, MIXED_SLICES)
        return max(d for d in range(1, want + 1) if rows % d == 0) if want >= 2 else 1
    _, grid = mm.pick(n, k, 1, mode)
    tiles = grid[0] * grid[1]
    want = min(rows // MIN_SLICE, -(-SPLIT_TARGET // tiles), 32)
    if want < 2 or n * k > 64 * ew.MAX_GROUPS:
        return 1
    return max(d for d in range(1, want + 1) if rows % d == 0)


def embed_chunks(rows: int) -> int:
    """Slices of EMBED_CHUNK positions the token embedding's gradient is summed in."""
    return -(-rows // EMBED_CHUNK)


def activation_specs(cfg: TransformerConfig, vocab_size: int, batch: int, length: int,
                     backward: bool, head_rows: int | None = None,
                     precision: str = "f32") -> list[tuple[str, str, int]]:
    """(name, dtype, elements) of every activation buffer of a batch x length pass (the weight
    gradients' slabs sized for the precision's split, see split_k)."""
    c, f, h, v = cfg.n_embd, 4 * cfg.n_embd, cfg.n_head, vocab_size
    m = batch * length
    specs = [("idx", "u32", m), ("tgt", "u32", m), ("x0", "f32", m * c)]
    for i in range(cfg.n_layer):
        specs += [(f"h{i}.{name}", "f32", n) for name, n in (
            ("ln1", m * c), ("stats1", 2 * m), ("qkv", 3 * m * c), ("att", batch * h * length * length),
            ("atty", m * c), ("xm", m * c), ("ln2", m * c), ("stats2", 2 * m), ("fc", m * f),
            ("gelu", m * f), ("out", m * c))]
    specs += [("lnf", "f32", m * c), ("statsf", "f32", 2 * m),
              ("logits", "f32", (head_rows or m) * v), ("losses", "f32", m)]
    if backward:
        chunks = -(-m // CHUNK)
        shapes = ((3 * c, c), (c, c), (f, c), (c, f))  # the blocks' weights, (n, k)
        slices = {(n, k, mode): split_k(n, k, m, mode) for n, k in shapes + ((v, c),)
                  for mode in (*mm.MODES, "mixed") if (mode == "mixed") == (precision == "mixed")}
        slabs = max(s * n * k for (n, k, _), s in slices.items() if n != v or k != c)
        bias_slabs = max(s * n for (n, k, _), s in slices.items())
        head = max(s for (n, k, _), s in slices.items() if (n, k) == (v, c)) + embed_chunks(m)
        specs += [("dres", "f32", m * c), ("dln", "f32", m * c), ("dqkv", "f32", 3 * m * c),
                  ("dfc", "f32", m * f), ("datt", "f32", batch * h * length * length),
                  ("part", "f32", chunks * max(f, 3 * c)), ("slabs", "f32", max(slabs, 1)),
                  ("bias_slabs", "f32", bias_slabs), ("head_slabs", "f32", head * v * c)]
    return specs


# the activations the mixed path keeps an f16 copy of (GPT._f16_copy), besides the weights
F16_COPIED = ("ln1", "atty", "ln2", "gelu", "lnf", "dres", "dqkv", "dfc")


def memory_bytes(cfg: TransformerConfig, vocab_size: int, precision: str = "f32") -> dict:
    """What training needs on the GPU: parameters (x4: weights, grads, two moments), activations,
    and the largest single buffer (to hold against maxStorageBufferBindingSize); on the mixed
    path also the f16 copies of the weights and of the matmuls' operands."""
    n = ParamLayout(cfg, vocab_size).n
    acts = activation_specs(cfg, vocab_size, cfg.batch_size, cfg.block_size, backward=True, precision=precision)
    largest = max([4 * n] + [4 * k for _, _, k in acts])
    act_bytes = sum(4 * k for _, _, k in acts)
    if precision == "mixed":
        act_bytes += 2 * n + sum(2 * k for name, _, k in acts if name.split(".")[-1] in F16_COPIED)
    return {"n_params": n, "params": 16 * n, "activations": act_bytes, "total": 16 * n + act_bytes,
            "largest_buffer": largest}


def check_fits(backend, cfg: TransformerConfig, vocab_size: int, precision: str = "f32") -> None:
    """Raise LimitError, naming the buffer and what to lower, when training needs a buffer larger
    than the adapter binds (maxStorageBufferBindingSize, maxBufferSize)."""
    cap = min(backend.limits["maxStorageBufferBindingSize"], backend.limits["maxBufferSize"])
    n = ParamLayout(cfg, vocab_size).n
    buffers = [("parameters", 4 * n, "n_embd, n_layer")] + [
        (f"activation {name!r}", 4 * k, "batch_size, block_size or n_embd")
        for name, _, k in activation_specs(cfg, vocab_size, cfg.batch_size, cfg.block_size, True,
                                           precision=precision)]
    for what, nbytes, knobs in buffers:
        if nbytes > cap:
            raise LimitError(f"the transformer's {what} needs {nbytes / 2**20:.1f} MiB, but this "
                             f"adapter binds at most {cap / 2**20:.1f} MiB a buffer: lower {knobs}")


class Activations:
    """The buffers of one pass over `batch` sequences of `length` positions (attributes by name)."""

    def __init__(self, backend, cfg: TransformerConfig, vocab_size: int, batch: int, length: int,
                 backward: bool = True, head_rows: int | None = None, precision: str = "f32"):
        self.batch, self.length, self.rows = batch, length, batch * length
        self.head_rows = head_rows or self.rows
        specs = activation_specs(cfg, vocab_size, batch, length, backward, head_rows, precision)
        for name, _, n in specs:  # check all before allocating any
            backend.check_size(4 * n, what=f"transformer activation {name!r} ({n} values)")
        self.buffers = {name: backend.buffer(dtype, n) for name, dtype, n in specs}

    def __getattr__(self, name):
        try:
            return self.__dict__["buffers"][name]
        except KeyError:
            raise AttributeError(name) from None

    def layer(self, i: int, name: str):
        return self.buffers[f"h{i}.{name}"]
