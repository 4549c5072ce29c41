"""The transformer job: train a character-level GPT on a text, report its curves, sample from it.

    {"kind": "transformer", "text": "shakespeare",
     "params": {"preset": "tiny", "steps": 500, "seed": 1, ...config overrides,
                "sample_chars": 200, "temperature": 0.8, "top_k": 200, "prompt": ""}}

Steps go to the GPU in groups of about a quarter second (py_core.gpu.pacing); after each group the
per-step losses are read back (the readback completes when the GPU has run the group), so
Pause and Stop (`ctx.pause_point()`, between groups) act within a group: one step on a software
adapter. Progress after each group: {"stage", "fraction", "step", "steps", "losses": [first step,
[loss, ...]], "loss", "val_loss", "tokens_per_s", "eta_s", "elapsed_s"} (the page's live chart);
with params {"live_sample": N}, after each validation also "sample": N characters from the model
as it stands (its time is timings["live_sample"], outside the step's).
The result: {"metrics": {"loss_curve": [[step, loss], ...], "val_loss", "val_curve": [[steps
done, loss], ...], "n_params", "kept_bytes" (the kept model's GPU bytes), ..., and with params
{"profile": N} "profile": the step's time by kernel (Trainer.profile)}, "timings": {"step" (median
over the groups of seconds a step, submission to readback), "tokens_per_s", "total", ...},
"samples": text}. The trained model stays in the session (`Session.last_model`) for `sample()`
and `export()`; a new run frees the previous one's first.
"""
from __future__ import annotations

import statistics
import time

from ..errors import JobError, Stopped
from ..gpu.pacing import Pacer
from ..kernels.transformer_matmul import MODES as TILINGS
from ..params import BIG, Bool, Choice, Int, Null, Param, Params, Real, Text
from ..transformer import BUILTIN_TEXTS, Trainer, builtin_text, export_weights, memory_bytes
from ..transformer import sample as _sample
from ..transformer.config import PRESETS, TORCH_MODES, parse_job_params
from ..transformer.model import PRECISIONS, mixed_unavailable
from ..transformer.sample import TrainedModel
from .kinds import Kind, Timing

# The job's params: a preset, overrides of its TransformerConfig fields (null, the default as
# GET /api/kinds shows it, or absent: the preset's), and the run's options (config.SAMPLE_DEFAULTS). Types and ranges are the config's
# own (TransformerConfig.validate, which `whole` runs on the combination) with upper bounds on
# the sizes, so no integer is unbounded; what a job may cost is the server's caps' business
# (server/jobcost.py). Checked by the server at POST /api/runs and before it costs or reruns a job.
_config = [Param(name, None, Null(), *types, label=label, help="default: the preset's")
           for name, label, *types in (
    ("n_layer", "Layers", Int(1, 1024)), ("n_head", "Heads", Int(1, 1024)),
    ("n_embd", "Embedding width", Int(1, 65536)),
    ("block_size", "Context (characters)", Int(1, 1 << 20)), ("dropout", "Dropout", Real(0, 0)),
    ("batch_size", "Batch", Int(1, 1 << 20)),
    ("val_fraction", "Validation share", Real(0, 1, lo_open=True, hi_open=True)),
    ("lr", "Learning rate", Real(0, lo_open=True)), ("min_lr", "Final learning rate", Real(0)),
    ("warmup_steps", "Warm-up steps", Int(0)), ("lr_decay_steps", "Decay steps", Int(0)),
    ("weight_decay", "Weight decay", Real(0)), ("beta1", "AdamW beta1", Real(0, 1, hi_open=True)),
    ("beta2", "AdamW beta2", Real(0, 1, hi_open=True)), ("eps", "AdamW epsilon", Real(0, lo_open=True)),
    ("grad_clip", "Gradient clip", Real(0)), ("steps", "Steps", Int(1)),
    ("seed", "Seed", Int(0, 2**32 - 1)), ("log_interval", "Log every (steps)", Int(1)),
    ("eval_interval", "Validate every (steps)", Int(1)), ("eval_steps", "Validation batches", Int(1)))]
PARAMS = Params(
    "transformer",
    Param("preset", "tiny", Choice(tuple(PRESETS)), label="Preset", help="the config the overrides start from"),
    *_config,
    Param("sample_chars", 200, Int(0, 100_000), label="Sample (characters)", help="characters sampled after training"),
    Param("live_sample", 0, Int(0, 100_000), label="Live sample (characters)", help="characters sampled at each validation"),
    Param("temperature", 0.8, Real(0), label="Temperature", help="sampling temperature; 0: the likeliest"),
    Param("top_k", 200, Null(), Int(0, BIG), label="Top k", help="sample among this many likeliest"),
    Param("prompt", "", Text(10_000), label="Prompt", help="the sample's start"),
    Param("profile", 0, Bool(), Int(0, 1000), label="Profile", help="time each kernel over this many runs"),
    Param("tiles", "auto", Choice(("auto", *TILINGS)), label="Tilings", help="matmul tilings"),
    Param("precision", "f32", Choice(PRECISIONS), label="Precision", help="f32, or mixed: tensor cores"),
    Param("torch_mode", "", Choice(("", *TORCH_MODES)),
          label="PyTorch mode", help="the server's PyTorch twin's precision; empty: precision's twin"),
    whole=parse_job_params)


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


class _Holder:
    """Where a run's kept model goes when no session is given."""
    last_model = None


async def run(job: dict, backend, ctx, session=None) -> dict:
    """Train, sample, report. A new run first frees the session's previous model; the run's own
    buffers and plans are freed when it ends (success, Stop or failure) but for the trained
    model's (weights and sampler), kept in `session.last_model` for `sample()` and `export()`.
    A stopped run keeps its model as trained so far and raises Stopped saying so."""
    session = session if session is not None else _Holder()
    t_start = time.perf_counter()
    try:
        cfg, sampling = parse_job_params(job.get("params"))
    except (ValueError, TypeError) as exc:
        raise JobError(str(exc)) from None
    text = await _load_text(job, ctx)
    if sampling["precision"] not in PRECISIONS:
        raise JobError(f"precision must be one of {', '.join(PRECISIONS)}, not {sampling['precision']!r}")
    if sampling["precision"] == "mixed" and (why := mixed_unavailable(backend)):
        raise JobError(f"mixed precision needs tensor cores (f16 subgroup matrices): {why}. "
                       "Choose f32, or in Chrome on NVIDIA start with "
                       "--enable-dawn-features=vulkan_enable_f16_on_nvidia")
    if session.last_model is not None:  # one model at a time on the GPU
        session.last_model.close()
        session.last_model = None
    ctx.progress({"stage": "initialising weights", "fraction": 0.0, "step": 0, "steps": cfg.steps})
    try:
        trainer = Trainer(backend, cfg, text, tiles=sampling["tiles"], precision=sampling["precision"])
    except ValueError as exc:
        raise JobError(str(exc)) from None
    try:
        async with backend.scope("transformer job"):
            return await _train(trainer, cfg, sampling, backend, ctx, session, t_start)
    finally:
        kept = session.last_model
        if kept is None or kept.gpt is not trainer.model:
            trainer.close(model=True)  # failed before a model was kept


async def _train(trainer, cfg, sampling, backend, ctx, session, t_start) -> dict:
    await trainer.setup()
    await backend.finish()
    t_setup = time.perf_counter() - t_start

    loss_curve, val_curve, rates = [], [], []
    t_eval = t_live = 0.0
    # One sampler for the live samples and after training: its buffers are the kept model's.
    kept = trainer.trained()
    t_train = time.perf_counter()
    pause_point = getattr(ctx, "pause_point", None)  # Pause / Stop from the page
    pacer = Pacer()
    done = 0
    while done < cfg.steps:
        try:
            if pause_point is not None:
                await pause_point()  # waits while paused; raises Stopped
            elif ctx.should_stop():
                raise Stopped("stopped on request")
        except Stopped:
            model = session.last_model = kept
            raise Stopped(f"stopped at step {done} of {cfg.steps}: the model as trained so far is "
                          f"kept ({model.gpu_bytes / 2**20:.1f} MiB on the GPU), sample or "
                          f"save it") from None
        # A group of steps, one wait: the losses' readback completes when the GPU has run them.
        to_eval = cfg.eval_interval - done % cfg.eval_interval
        group = pacer.size(min(cfg.steps - done, to_eval))
        t0 = time.perf_counter()
        for _ in range(group):
            await trainer.step()
        fresh = await trainer.losses(done)
        seconds = time.perf_counter() - t0
        pacer.done(group, seconds)
        rates.append(seconds / group)
        loss_curve += [[done + i, v] for i, v in enumerate(fresh)]
        done += group
        live = {}
        if done % cfg.eval_interval == 0 or done == cfg.steps:
            t0 = time.perf_counter()
            val_curve.append([done, await trainer.evaluate()])
            t_eval += time.perf_counter() - t0
            if sampling["live_sample"]:
                t0 = time.perf_counter()
                live["sample"] = await _sample(kept, sampling["prompt"], int(sampling["live_sample"]),
                                               sampling["temperature"], sampling["top_k"], seed=cfg.seed + done)
                t_live += time.perf_counter() - t0
        now = time.perf_counter()
        ctx.progress({"stage": "training", "fraction": done / cfg.steps, "step": done,
                      "steps": cfg.steps, "losses": [done - len(fresh), fresh],
                      "loss": fresh[-1], "val_loss": val_curve[-1][1] if val_curve else None,
                      "tokens_per_s": trainer.tokens_per_step / pacer.last_rate,
                      "eta_s": pacer.eta(cfg.steps - done), "elapsed_s": now - t_train - t_live,
                      **live})
    t_train = time.perf_counter() - t_train - t_live
    extra = {}
    if sampling["profile"]:
        ctx.progress({"stage": "profiling", "fraction": 1.0})
        extra["profile"] = await trainer.profile(int(sampling["profile"]))
    trainer.close()  # gradients, moments, activations and plans: training is over

    model = session.last_model = kept
    ctx.progress({"stage": "sampling", "fraction": 1.0, "step": done, "steps": cfg.steps})
    t0 = time.perf_counter()
    samples = await _sample(model, sampling["prompt"], sampling["sample_chars"],
                            sampling["temperature"], sampling["top_k"], seed=cfg.seed)
    t_sample = time.perf_counter() - t0
    # Seconds a step: the median over the groups (each from submission to its losses' readback).
    step_s = statistics.median(rates)
    mem = memory_bytes(cfg, len(trainer.vocab), trainer.precision)
    return {
        "metrics": {"loss_curve": loss_curve, "val_loss": val_curve[-1][1], "val_curve": val_curve,
                    "n_params": trainer.model.n_params, "vocab_size": len(trainer.vocab),
                    "train_chars": len(trainer.train_ids), "val_chars": len(trainer.val_ids),
                    "gpu_bytes": mem["total"], "kept_bytes": model.gpu_bytes,
                    "precision": sampling["precision"], **extra},
        "timings": {"step": step_s, "tokens_per_s": trainer.tokens_per_step / step_s,
                    "setup": t_setup, "train": t_train, "eval": t_eval, "sample": t_sample,
                    **({"live_sample": t_live} if sampling["live_sample"] else {}),
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
        cfg, sampling = parse_job_params(params)
    except (ValueError, TypeError) as exc:
        return {"ok": False, "problem": str(exc)}
    precision = sampling.get("precision", "f32")
    out = {"ok": True, "problem": None, "config": cfg.to_dict(), **memory_bytes(cfg, vocab_size, precision),
           "tokens_per_step": cfg.batch_size * cfg.block_size}
    if backend is not None:
        try:
            check_fits(backend, cfg, vocab_size, precision)
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


def cost(params: dict, shape) -> dict:
    """What a server job costs (server/jobcost.py): parameters x tokens a step x steps (about a
    sixth of the training FLOPs), the validations' batches, a profile's runs and the sampled
    characters included."""
    from ..transformer.params import ParamLayout
    cfg, run_ = parse_job_params(params)  # a preset's, then the overrides
    vocab = 256  # characters: an upper bound for the playground's texts' vocabularies
    n_params = ParamLayout(cfg, vocab).n
    tokens = cfg.batch_size * cfg.block_size
    evals = cfg.steps // cfg.eval_interval + 1
    # Sampling: a forward pass over at most block_size tokens for each character; a profile
    # runs the step's kernels `profile` times more.
    chars = run_["sample_chars"] + run_["live_sample"] * evals
    steps = cfg.steps + int(run_["profile"]) + cfg.eval_steps * evals
    total = n_params * (tokens * steps + cfg.block_size * chars)
    return {"cost": total, "unit": "parameters x tokens x steps", "transformer_cost": total,
            "parameters": n_params, "tokens_per_step": tokens, "steps": cfg.steps}


KIND = Kind(
    name="transformer", label="Transformer", run=run, params=PARAMS,
    main_timing=Timing("step", "Step", "Seconds a training step"), needs=("text",), cost=cost,
    plots=("loss_curve", "val_curve"), exports=("safetensors",),
    snippet=("transformer", "safetensors", "server.snippets:transformer"),
    runners=("server.runners.pycore_runner:NATIVE", "server.runners.torch_runner:RUNNER"),
    tab="transformer", panel="/web/panels/transformer.js")
