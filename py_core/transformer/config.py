"""TransformerConfig: the model and its training run, as nanoGPT's GPTConfig plus train.py's knobs.

Presets are data (`PRESETS`), a config round-trips through JSON, and a job's `params` are a
preset name plus overrides: `TransformerConfig.from_params({"preset": "tiny", "steps": 500})`.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields, replace

from .cosine import cos_pi


@dataclass(frozen=True)
class TransformerConfig:
    # -- model (nanoGPT's GPTConfig) --
    n_layer: int = 4            # transformer blocks
    n_head: int = 4             # attention heads a block; n_embd must be a multiple
    n_embd: int = 128           # width of the residual stream
    block_size: int = 64        # context length in characters (positions the model sees)
    dropout: float = 0.0        # always 0: no dropout, so a run is deterministic and matches PyTorch
    # -- data --
    batch_size: int = 12        # sequences a step; a step sees batch_size * block_size characters
    val_fraction: float = 0.1   # tail of the text held out for validation (nanoGPT: 0.1)
    # -- optimizer: AdamW with decoupled weight decay on the 2-D weights only, as nanoGPT --
    lr: float = 1e-3            # peak learning rate (nanoGPT's shakespeare_char: 1e-3)
    min_lr: float = 1e-4        # end of the cosine decay, lr / 10 (Chinchilla, nanoGPT)
    warmup_steps: int = 100     # linear warm-up: lr * (step + 1) / (warmup_steps + 1)
    lr_decay_steps: int = 0     # cosine decay ends here; 0: at `steps` (nanoGPT: max_iters)
    weight_decay: float = 0.1   # nanoGPT's default; not applied to biases and LayerNorm
    beta1: float = 0.9          # AdamW first-moment decay
    beta2: float = 0.99         # 0.99 rather than 0.999: small batches (nanoGPT shakespeare_char)
    eps: float = 1e-8           # AdamW epsilon (PyTorch's default)
    grad_clip: float = 1.0      # clip the global gradient norm to this; 0 disables
    # -- run --
    steps: int = 2000           # optimizer steps (nanoGPT's max_iters)
    seed: int = 1337            # initial weights and batches; 0 <= seed < 2**32 (nanoGPT: 1337)
    log_interval: int = 10      # read the per-step training losses back this often
    eval_interval: int = 250    # estimate the validation loss this often (and at the end)
    eval_steps: int = 20        # validation batches an estimate averages (nanoGPT: eval_iters)

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head

    @property
    def decay_steps(self) -> int:
        return self.lr_decay_steps or self.steps

    def validate(self) -> "TransformerConfig":
        for f in fields(self):
            v = getattr(self, f.name)
            if f.type in ("int", int) and (not isinstance(v, int) or isinstance(v, bool)):
                raise ValueError(f"{f.name} must be an integer, got {v!r}")
            if f.type in ("float", float) and (not isinstance(v, (int, float)) or isinstance(v, bool)
                                               or not math.isfinite(v)):
                raise ValueError(f"{f.name} must be a number, got {v!r}")
        for name in ("n_layer", "n_head", "n_embd", "block_size", "batch_size", "steps",
                     "log_interval", "eval_interval", "eval_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd ({self.n_embd}) must be a multiple of n_head ({self.n_head})")
        if self.dropout != 0:
            raise ValueError("dropout is not supported (runs are deterministic): set it to 0")
        if not 0 <= self.seed < 2**32:
            raise ValueError(f"seed must be in [0, 2**32), got {self.seed}")
        if not 0 < self.val_fraction < 1:
            raise ValueError(f"val_fraction must be between 0 and 1, got {self.val_fraction}")
        if not (0 <= self.beta1 < 1 and 0 <= self.beta2 < 1):
            raise ValueError("beta1 and beta2 must be in [0, 1)")
        if self.lr <= 0 or self.min_lr < 0 or self.weight_decay < 0 or self.grad_clip < 0 or self.eps <= 0:
            raise ValueError("lr and eps must be positive; min_lr, weight_decay, grad_clip not negative")
        if self.warmup_steps < 0 or self.lr_decay_steps < 0:
            raise ValueError("warmup_steps and lr_decay_steps must not be negative")
        return self

    def lr_at(self, step: int) -> float:
        """nanoGPT's get_lr: linear warm-up, then cosine decay from lr to min_lr, then min_lr.
        (The cosine is cosine.cos_pi, not math.cos, whose last bit differs between C libraries.)"""
        if step < self.warmup_steps:
            return self.lr * (step + 1) / (self.warmup_steps + 1)
        if step > self.decay_steps:
            return self.min_lr
        span = self.decay_steps - self.warmup_steps
        ratio = (step - self.warmup_steps) / span if span > 0 else 1.0
        return self.min_lr + 0.5 * (1.0 + cos_pi(ratio)) * (self.lr - self.min_lr)

    # -- serialisation --------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict) -> "TransformerConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown transformer parameter(s) {unknown}; known: {sorted(known)}")
        return cls(**d).validate()

    @classmethod
    def from_json(cls, text: str) -> "TransformerConfig":
        return cls.from_dict(json.loads(text))

    @classmethod
    def preset(cls, name: str, **overrides) -> "TransformerConfig":
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}: choose one of {', '.join(PRESETS)}")
        return cls.from_dict({**PRESETS[name], **overrides})

    @classmethod
    def from_params(cls, params: dict | None) -> "TransformerConfig":
        """A job's params: {"preset": name (default "tiny"), **overrides}; an override of None
        is none (the job table's default: the preset's value)."""
        params = {k: v for k, v in (params or {}).items() if v is not None}
        return cls.preset(params.pop("preset", "tiny"), **params)

    def replace(self, **changes) -> "TransformerConfig":
        return replace(self, **changes).validate()


# Options of a job's params that are about the run, not the training: the text sampled at the
# end, and a profile of the training step.
SAMPLE_DEFAULTS = {"sample_chars": 200,  # characters sampled after training
                   "live_sample": 0,     # > 0: this many characters sampled at each validation
                                         # during training (the page's live sample)
                   "temperature": 0.8,   # nanoGPT sample.py's default
                   "top_k": 200,         # nanoGPT sample.py's default (more than a char vocabulary)
                   "prompt": "",         # empty: start from a newline
                   "profile": 0,         # > 0: time every kernel of the step plan over this many runs
                   "tiles": "auto",      # matmul tilings (model.DEFAULT_TILES), or "64", "wide", "big"
                   "precision": "f32",   # or "mixed": matmuls on tensor cores (model.PRECISIONS)
                   # the server's PyTorch comparison in f32, tf32, fp16 or bf16 (server/torch_gpt.py);
                   # empty: the twin of precision (f32 -> f32, mixed -> fp16). Not used in the page.
                   "torch_mode": ""}


TORCH_MODES = ("f32", "tf32", "fp16", "bf16")  # server/torch_gpt.py's precisions


def parse_job_params(params: dict | None) -> tuple[TransformerConfig, dict]:
    """A job's params -> (config, run options): {"preset": ..., **config overrides,
    **SAMPLE_DEFAULTS overrides}."""
    params = dict(params or {})
    sampling = {k: params.pop(k, v) for k, v in SAMPLE_DEFAULTS.items()}
    return TransformerConfig.from_params(params), sampling


PRESETS: dict[str, dict] = {
    # The playground's default: trains in a minute or two on a laptop GPU.
    "tiny": {"n_layer": 4, "n_head": 4, "n_embd": 128, "block_size": 64, "batch_size": 12,
             "steps": 2000, "lr": 1e-3, "min_lr": 1e-4, "warmup_steps": 100, "eval_interval": 250,
             "eval_steps": 20},
    # nanoGPT's config/train_shakespeare_char.py (with dropout 0 rather than 0.2).
    "shakespeare_char": {"n_layer": 6, "n_head": 6, "n_embd": 384, "block_size": 256,
                         "batch_size": 64, "steps": 5000, "lr": 1e-3, "min_lr": 1e-4,
                         "warmup_steps": 100, "eval_interval": 250,
                         # nanoGPT's eval_iters is 200; 20 batches of 16k characters already
                         # estimate the validation loss to about 0.01, at a tenth of the cost
                         "eval_steps": 20},
    # For tests and the CPU fallback: small enough for the plain-Python backend.
    "micro": {"n_layer": 2, "n_head": 2, "n_embd": 32, "block_size": 16, "batch_size": 4,
              "steps": 200, "lr": 1e-3, "min_lr": 1e-4, "warmup_steps": 10, "eval_interval": 50,
              "eval_steps": 4},
}
