"""Training: the step plan recorded once, run once a step; losses kept on the GPU until read.

A step is one plan: draw the batch (get_batch hashes the step number), forward, cross-entropy
(the mean loss goes to hist[step] on the GPU), backward, gradient norm, AdamW. Each step Python
writes the 24-byte schedule uniform (step, learning rate, bias corrections) and runs the plan:
two calls, whatever the model's size. Losses come back only when asked for (`losses()`), every
`log_interval` steps in the job runner. A validation estimate is one plan too: eval_steps times
(draw a validation batch, forward, loss into its slot of val_hist), the forward's dispatches
recorded once and listed eval_steps times, each batch with its own schedule uniform.
"""
from __future__ import annotations

import math
from array import array

from ..gpu.backend import by_label
from ..kernels.transformer_embedding import SCHED
from ..kernels.transformer_matmul import MODES
from ..rng import STREAM_TRAIN, STREAM_VAL, stream_key
from .config import TransformerConfig
from .model import GPT, Activations, check_fits
from .text import Vocab, split


class Trainer:
    """Trains a GPT on one text. `await Trainer(backend, config, text).setup()`, then `step()`."""

    def __init__(self, backend, config: TransformerConfig, text: str, tiles: str = "auto",
                 precision: str = "f32"):
        self.backend, self.config, self.tiles = backend, config.validate(), tiles
        self.precision = precision  # "f32" or "mixed" (model.PRECISIONS; checked by GPT)
        if tiles not in ("auto", *MODES):
            raise ValueError(f"tiles must be auto or one of {', '.join(MODES)}, not {tiles!r}")
        self.vocab = Vocab.from_text(text)
        self.train_ids, self.val_ids = split(self.vocab.encode(text), config.val_fraction)
        for what, ids in (("training", self.train_ids), ("validation", self.val_ids)):
            if len(ids) < config.block_size + 2:
                raise ValueError(f"the text's {what} part has {len(ids)} characters; block_size "
                                 f"{config.block_size} needs at least {config.block_size + 2}: use a "
                                 f"longer text or a smaller block_size")
        self.step_no = 0   # steps taken
        self.evals = 0     # validation estimates made
        self.model: GPT | None = None
        self.scope = self.model_scope = None

    @property
    def tokens_per_step(self) -> int:
        return self.config.batch_size * self.config.block_size

    async def setup(self, weights: array | None = None) -> "Trainer":
        """Allocate, upload the initial weights (nanoGPT init from config.seed unless given) and
        record the step and evaluation plans."""
        cfg, b = self.config, self.backend
        check_fits(b, cfg, len(self.vocab), self.precision)
        # Two owners: the model (weights, what sampling needs; outlives training, closed by the
        # TrainedModel's holder) and training (gradients, moments, activations, plans; a child
        # of the caller's current scope, closed by `close`).
        self.model_scope = b.scope("transformer model", detached=True)
        self.scope = b.scope("transformer training")
        with self.model_scope.use():
            self.model = GPT(b, cfg, len(self.vocab), self.tiles, self.precision)
            if weights is None:
                await self.model.init(cfg.seed)  # on the GPU: init_weights' very bits
            else:
                self.model.load(weights)
        with self.scope.use():
            await self._setup_training()
        return self

    async def _setup_training(self) -> None:
        cfg, b = self.config, self.backend
        self.model.allocate_optimizer()
        self.acts = Activations(b, cfg, len(self.vocab), cfg.batch_size, cfg.block_size, backward=True,
                                precision=self.precision)
        self.train_tokens = b.buffer("u32", data=self.train_ids)
        self.val_tokens = b.buffer("u32", data=self.val_ids)
        self.sched = b.buffer("u32", data=self._schedule(0, 0), uniform=True)
        self.eval_scheds = [b.buffer("u32", data=self._schedule(0, i), uniform=True)
                            for i in range(cfg.eval_steps)]
        self.hist = b.buffer("f32", cfg.steps)            # training loss of every step
        self.val_hist = b.buffer("f32", cfg.eval_steps)   # losses of one validation estimate

        m, a = self.model, self.acts
        self.step_plan = b.plan()
        await m.record_batch(self.step_plan, a, self.train_tokens, stream_key(cfg.seed, STREAM_TRAIN), self.sched)
        await m.record_forward(self.step_plan, a)
        await m.record_loss(self.step_plan, a, self.sched, self.hist)
        await m.record_backward(self.step_plan, a)
        await m.record_optimizer(self.step_plan, self.sched)

        forward = b.plan()
        await m.record_forward(forward, a)
        self.eval_plan = b.plan()
        for s in self.eval_scheds:
            await m.record_batch(self.eval_plan, a, self.val_tokens, stream_key(cfg.seed, STREAM_VAL), s)
            first = len(self.eval_plan.ops)
            self.eval_plan.ops += forward.ops
            self.eval_plan.labels.update({first + i: lab for i, lab in forward.labels.items()})
            await m.record_loss(self.eval_plan, a, s, self.val_hist)

    def close(self, model: bool = False) -> None:
        """Free what training holds (and with model=True the model too)."""
        if getattr(self, "scope", None) is not None:
            self.scope.close()
        if model and getattr(self, "model_scope", None) is not None:
            self.model_scope.close()

    def _schedule(self, step: int, slot: int) -> array:
        """The schedule uniform of step `step` (AdamW's t = step + 1), as torch.optim.AdamW
        computes its bias corrections."""
        cfg = self.config
        lr, t = cfg.lr_at(step), step + 1
        return SCHED.pack(step=step, slot=slot, lr=lr, step_size=lr / (1 - cfg.beta1 ** t),
                          bc2_sqrt=math.sqrt(1 - cfg.beta2 ** t), decay=1 - lr * cfg.weight_decay)

    async def step(self) -> None:
        """One optimizer step: O(1) calls, no readback."""
        if self.step_no >= self.config.steps:
            raise RuntimeError(f"all {self.config.steps} steps are taken")
        self.backend.write(self.sched, self._schedule(self.step_no, self.step_no))
        await self.backend.run(self.step_plan)
        self.step_no += 1

    async def losses(self, start: int = 0) -> list[float]:
        """Training losses of steps start .. step_no - 1 (one readback)."""
        got = await self.backend.read(self.hist, self.step_no)
        return got[start:].tolist()

    async def evaluate(self) -> float:
        """Mean loss over eval_steps validation batches (new batches each estimate, as nanoGPT)."""
        n = self.config.eval_steps
        for i, s in enumerate(self.eval_scheds):
            self.backend.write(s, self._schedule(self.evals * n + i, i))
        await self.backend.run(self.eval_plan)
        self.evals += 1
        return sum((await self.backend.read(self.val_hist, n)).tolist()) / n

    async def profile(self, repeat: int = 5) -> dict:
        """Where a step's time goes: backend.profile of the step plan, summed by kernel label
        over the layers: {"method", "span_ms", "sum_ms", "kernels": [[label, ms a step,
        dispatches a step], ...] slowest first}. The profiled runs train on; the weights, AdamW
        moments and loss history are put back afterwards."""
        b, m = self.backend, self.model
        state = [m.params, m.m1, m.m2, self.hist]
        async with b.scope("profile"):  # the copies and their plans, freed at the end
            keep = [b.buffer("f32", buf.length) for buf in state]
            save, restore = b.plan(), b.plan()
            for buf, copy in zip(state, keep):
                save.copy(buf, copy)
                restore.copy(copy, buf)
            await b.run(save)
            await b.run(self.step_plan)  # compiled and warm before the clock
            await b.finish()
            b.profile_start()
            try:
                await b.run(self.step_plan, repeat)
            finally:
                got = await b.profile_stop()
            await b.run(restore)
            await b.finish()
        rows = [[label, seconds * 1e3 / repeat, n // repeat]
                for label, (seconds, n) in by_label(got).items()]
        rows.sort(key=lambda e: -e[1])
        return {"method": got["method"], "span_ms": got["span"] * 1e3 / repeat,
                "sum_ms": sum(e[1] for e in rows), "kernels": [[k, round(t, 4), n] for k, t, n in rows]}

    def trained(self):
        """The model as it stands, for sampling and export."""
        from .sample import TrainedModel
        return TrainedModel(self.config, self.vocab, self.model, scope=self.model_scope)


async def kernels(backend, config: TransformerConfig, vocab_size: int, tiles: str = "auto",
                  precision: str = "f32") -> list:
    """[(family, entry, constants), ...]: the kernels a training run of `config` on `backend`
    compiles (its step, evaluation and sampling plans: their tilings depend on the sizes), from
    the same recording on a DryBackend with `backend`'s limits (nothing allocated, nothing run),
    so the tab can compile them ahead (Backend.warm). The text stands in for one of vocab_size
    characters, long enough for both splits."""
    from ..gpu.dry import DryBackend
    from .sample import _Sampler
    config = config.validate()
    dry = DryBackend(backend)
    part = min(config.val_fraction, 1 - config.val_fraction)
    length = vocab_size + math.ceil((config.block_size + 3) / part)
    text = "".join(chr(32 + i % vocab_size) for i in range(length))
    trainer = await Trainer(dry, config, text, tiles, precision).setup()
    await _Sampler(trainer.trained()).setup()
    return dry.kernels()
