"""The transformer job: train a character-level GPT on a text, report its curves, sample from it.

    {"kind": "transformer", "text": "shakespeare",
     "params": {"preset": "tiny", "steps": 500, "seed": 1, ...config overrides,
                "sample_chars": 200, "temperature": 0.8, "top_k": 200, "prompt": ""}}

Pause and Stop: `ctx.pause_point()` before every step (it raises `Stopped`).
Progress: {"stage", "fraction", "step", "loss", "val_loss", "tokens_per_s"} every log_interval
steps (the page's live chart). The result: {"metrics": {"loss_curve": [[step, loss], ...],
"val_loss", "val_curve": [[steps done, loss], ...], "n_params", ..., and with params
{"profile": N} "profile": the step's time by kernel (Trainer.profile)}, "timings": {"step" (median
seconds a step, queue drained around the timed steps), "tokens_per_s", "total", ...},
"samples": text}. The trained model stays in the session (`Session.last_model`) for `sample()`
and `export()`.
"""
from __future__ import annotations

import statistics
import time

from ..errors import JobError, Stopped
from ..transformer import BUILTIN_TEXTS, Trainer, builtin_text, export_weights, memory_bytes
from ..transformer import sample as _sample
from ..transformer.config import parse_job_params
from ..transformer.model import PRECISIONS, mixed_unavailable
from ..transformer.sample import TrainedModel


async def _load_text(job, ctx) -> str:
    text_id = job.get("text")
    if not isinstance(text_id, str) or not text_id:
        raise JobError('a transformer job needs "text": the id of a text')
    try:
        return await ctx.load_text(text_id)
    except JobError:
        if text_id in BUILTIN_TEXTS:  # a context without a loader still has the built-in texts
            return builtin_text(text_id)
        raise


async def run(job: dict, backend, ctx, session=None) -> dict:
    t_start = time.perf_counter()
    try:
        cfg, sampling = parse_job_params(job.get("params"))
    except (ValueError, TypeError) as exc:
        raise JobError(str(exc)) from None
    text = await _load_text(job, ctx)
    ctx.progress({"stage": "initialising weights", "fraction": 0.0})
    try:
        trainer = Trainer(backend, cfg, text, tiles=sampling["tiles"], precision=sampling["precision"])
    except ValueError as exc:
        raise JobError(str(exc)) from None
    if sampling["precision"] not in PRECISIONS:
        raise JobError(f"precision must be one of {', '.join(PRECISIONS)}, not {sampling['precision']!r}")
    if sampling["precision"] == "mixed" and (why := mixed_unavailable(backend)):
        raise JobError(f"mixed precision needs tensor cores (f16 subgroup matrices): {why}. "
                       "Choose f32, or in Chrome on NVIDIA start with "
                       "--enable-dawn-features=vulkan_enable_f16_on_nvidia")
    await trainer.setup()
    await backend.finish()
    t_setup = time.perf_counter() - t_start

    loss_curve, val_curve, timed = [], [], []
    time_every = max(1, cfg.steps // 20)  # about 20 timed steps, spread over the run
    read, t_eval = 0, 0.0
    t_train = t_mark = time.perf_counter()
    pause_point = getattr(ctx, "pause_point", None)  # Pause / Stop from the page
    for step in range(cfg.steps):
        if pause_point is not None:
            await pause_point()  # waits while paused; raises Stopped
        elif ctx.should_stop():
            raise Stopped("stopped on request")
        timing = step % time_every == time_every // 2
        if timing:
            await backend.finish()
            t0 = time.perf_counter()
        await trainer.step()
        if timing:
            await backend.finish()
            timed.append(time.perf_counter() - t0)
        done = step + 1
        if done % cfg.eval_interval == 0 or done == cfg.steps:
            t0 = time.perf_counter()
            val_curve.append([done, await trainer.evaluate()])
            t_eval += time.perf_counter() - t0
        if done % cfg.log_interval == 0 or done == cfg.steps:
            fresh = await trainer.losses(read)  # one readback: also drains the queue
            loss_curve += [[read + i, v] for i, v in enumerate(fresh)]
            now = time.perf_counter()
            ctx.progress({"stage": "training", "fraction": done / cfg.steps, "step": done,
                          "loss": fresh[-1], "val_loss": val_curve[-1][1] if val_curve else None,
                          "tokens_per_s": (done - read) * trainer.tokens_per_step / (now - t_mark)})
            read, t_mark = done, now
    t_train = time.perf_counter() - t_train

    model = trainer.trained()
    if session is not None:
        session.last_model = model
    ctx.progress({"stage": "sampling", "fraction": 1.0})
    t0 = time.perf_counter()
    samples = await _sample(model, sampling["prompt"], sampling["sample_chars"],
                            sampling["temperature"], sampling["top_k"], seed=cfg.seed)
    t_sample = time.perf_counter() - t0
    step_s = statistics.median(timed)
    mem = memory_bytes(cfg, len(trainer.vocab))
    extra = {}
    if sampling["profile"]:
        ctx.progress({"stage": "profiling", "fraction": 1.0})
        extra["profile"] = await trainer.profile(int(sampling["profile"]))
    return {
        "metrics": {"loss_curve": loss_curve, "val_loss": val_curve[-1][1], "val_curve": val_curve,
                    "n_params": trainer.model.n_params, "vocab_size": len(trainer.vocab),
                    "train_chars": len(trainer.train_ids), "val_chars": len(trainer.val_ids),
                    "gpu_bytes": mem["total"], "precision": sampling["precision"], **extra},
        "timings": {"step": step_s, "tokens_per_s": trainer.tokens_per_step / step_s,
                    "setup": t_setup, "train": t_train, "eval": t_eval, "sample": t_sample,
                    "sample_chars_per_s": len(samples) / t_sample if t_sample > 0 else None,
                    "total": time.perf_counter() - t_start},
        "config": cfg.to_dict(),
        "samples": samples,
    }


def estimate(params: dict | None, vocab_size: int, backend=None) -> dict:
    """What a config needs, for the page to show before training: parameter count, GPU bytes
    (weights, gradients and two AdamW moments, activations), the largest single buffer and,
    given a backend, whether it fits the adapter's per-buffer limit (and why not)."""
    from ..gpu import LimitError
    from ..transformer.model import check_fits
    try:
        cfg, _ = parse_job_params(params)
    except (ValueError, TypeError) as exc:
        return {"ok": False, "problem": str(exc)}
    out = {"ok": True, "problem": None, "config": cfg.to_dict(), **memory_bytes(cfg, vocab_size),
           "tokens_per_step": cfg.batch_size * cfg.block_size}
    if backend is not None:
        try:
            check_fits(backend, cfg, vocab_size)
        except LimitError as exc:
            out.update(ok=False, problem=str(exc))
    return out


async def sample(model_state: TrainedModel | None, prompt: str = "", n: int = 200,
                 temperature: float = 0.8, top_k: int | None = 200, seed: int = 0, on_char=None) -> str:
    """n characters from a trained model (a session's `last_model`), streamed through on_char."""
    if model_state is None:
        raise JobError("no trained transformer yet: train one first")
    try:
        return await _sample(model_state, prompt, n, temperature, top_k, seed, on_char)
    except ValueError as exc:
        raise JobError(str(exc)) from None


async def export(model_state: TrainedModel | None) -> bytes:
    """The model's weights as safetensors bytes (config and vocabulary in the metadata)."""
    if model_state is None:
        raise JobError("no trained transformer yet: train one first")
    return export_weights(model_state.config, model_state.vocab, await model_state.gpt.weights())
