"""The transformer job through py_core.jobs: result shape, progress, stop, sampling, export."""
from __future__ import annotations

import asyncio

import pytest

from py_core.jobs import Context, JobError, Session, Stopped, run_job, transformer_job
from py_core.transformer import builtin_text, import_weights

JOB = {"kind": "transformer", "text": "shakespeare",
       "params": {"preset": "micro", "steps": 30, "log_interval": 10, "eval_interval": 15,
                  "eval_steps": 2, "sample_chars": 40, "seed": 7}}


@pytest.mark.native
def test_job_result_and_progress(native_backend):
    seen = []
    ctx = Context(load_text=lambda i: builtin_text(i), progress=seen.append)
    session = Session(native_backend)
    res = asyncio.run(session.run(JOB, ctx))
    m, t = res["metrics"], res["timings"]
    assert [s for s, _ in m["loss_curve"]] == list(range(30))
    assert [s for s, _ in m["val_curve"]] == [15, 30] and m["val_loss"] == m["val_curve"][-1][1]
    assert m["n_params"] > 0 and m["vocab_size"] == 67
    assert t["step"] > 0 and t["tokens_per_s"] == pytest.approx(4 * 16 / t["step"])
    assert t["total"] >= t["train"] > 0
    assert len(res["samples"]) == 40 and set(res["samples"]) <= set(builtin_text("shakespeare"))
    training = [p for p in seen if p["stage"] == "training"]
    # After every group of steps the GPU ran: steps rising to 30, the new losses (together the
    # whole curve, in order), a rate and a time estimate.
    steps = [p["step"] for p in training]
    assert steps == sorted(set(steps)) and steps[-1] == 30 and len(steps) >= 2
    streamed = [[p["losses"][0] + i, v] for p in training for i, v in enumerate(p["losses"][1])]
    assert streamed == m["loss_curve"]
    assert all(p["tokens_per_s"] > 0 and p["loss"] > 0 and p["eta_s"] >= 0 for p in training)
    assert training[-1]["eta_s"] == 0
    assert training[-1]["fraction"] == 1.0 and training[-1]["val_loss"] == m["val_loss"]

    # the model stays in the session for the page: stream a sample, export the weights
    model = session.last_model
    assert model is not None and Session(native_backend).last_model is None
    chars = []

    async def on_char(ch):
        chars.append(ch)

    text = asyncio.run(transformer_job.sample(model, "ROMEO:", 12, 0.8, 10, seed=1, on_char=on_char))
    assert "".join(chars) == text and len(text) == 12
    again = asyncio.run(transformer_job.sample(model, "ROMEO:", 12, 0.8, 10, seed=1))
    assert again == text  # same seed, same text
    cfg, vocab, flat = import_weights(asyncio.run(transformer_job.export(model)))
    with pytest.raises(JobError, match="no trained transformer"):
        asyncio.run(transformer_job.export(None))
    assert cfg.steps == 30 and len(flat) == m["n_params"] and len(vocab) == 67


@pytest.mark.native
def test_a_live_sample_at_each_validation(native_backend):
    """With live_sample, each validation also samples the model as it stands (the page shows it
    while training); the training is the same as without, and the samples' time is kept apart."""
    params = {**JOB["params"], "steps": 8, "eval_interval": 4, "live_sample": 16}
    seen = []
    ctx = Context(load_text=lambda i: builtin_text(i), progress=seen.append)
    live = asyncio.run(Session(native_backend).run({**JOB, "params": params}, ctx))
    samples = {p["step"]: p["sample"] for p in seen if "sample" in p}
    assert list(samples) == [4, 8] and all(len(t) == 16 for t in samples.values())
    assert set("".join(samples.values())) <= set(builtin_text("shakespeare"))
    assert live["timings"]["live_sample"] > 0
    plain = asyncio.run(Session(native_backend).run({**JOB, "params": {**params, "live_sample": 0}},
                                                    Context(load_text=lambda i: builtin_text(i))))
    assert plain["metrics"]["loss_curve"] == live["metrics"]["loss_curve"]
    assert plain["samples"] == live["samples"]  # the sample after training: the same model, seed


@pytest.mark.native
def test_profile_of_the_step(native_backend):
    params = {**JOB["params"], "steps": 4, "eval_interval": 4, "sample_chars": 2, "tiles": "wide"}
    session = Session(native_backend)
    asyncio.run(session.run({**JOB, "params": params}, Context(load_text=builtin_text)))
    unprofiled = asyncio.run(transformer_job.export(session.last_model))
    job = {**JOB, "params": {**params, "profile": 1}}
    res = asyncio.run(session.run(job, Context(load_text=builtin_text)))
    prof = res["metrics"]["profile"]
    labels = {k[0]: k for k in prof["kernels"]}
    assert {"adamw", "ln fwd", "get batch", "att softmax fwd", "embed bwd wte"} <= set(labels)
    assert labels["ln fwd"][2] == 2 * 2 + 1  # two per block, one at the end
    assert any(k.startswith("qkv fwd (matmul") for k in labels)
    assert prof["sum_ms"] > 0 and all(k[1] >= 0 for k in prof["kernels"])
    # the profiled runs leave the trained model as it was
    assert asyncio.run(transformer_job.export(session.last_model)) == unprofiled
    with pytest.raises(JobError, match="tiles"):
        asyncio.run(run_job({**JOB, "params": {**JOB["params"], "tiles": "huge"}}, native_backend, Context()))


@pytest.mark.native
def test_stop_is_clean(native_backend):
    """Stop is seen between groups of steps; the model as trained so far is kept (it samples and
    exports), everything else the run made is freed."""
    calls, seen = [], []
    ctx = Context(should_stop=lambda: calls.append(1) or len(calls) > 5, progress=seen.append)
    before = native_backend.memory()
    session = Session(native_backend)
    with pytest.raises(Stopped, match=r"stopped at step (\d+) of 30: the model as trained so far is kept") as info:
        asyncio.run(session.run(JOB, ctx))  # a context without a loader: built-in text
    assert len(calls) == 6
    steps = [p["step"] for p in seen if p["stage"] == "training"]
    assert len(steps) == 5 and f"step {steps[-1]} of 30" in str(info.value)  # no step after Stop
    kept = session.last_model
    after = native_backend.memory()
    assert after["bytes"] - before["bytes"] <= kept.gpu_bytes and after["plans"] == before["plans"]
    assert len(asyncio.run(transformer_job.sample(kept, "ROMEO:", 5, 0.8, 10, seed=1))) == 5
    cfg, _, flat = import_weights(asyncio.run(transformer_job.export(kept)))
    assert len(flat) == kept.gpt.n_params
    # sampling made the sampler's buffers and plan, owned by the kept model
    assert native_backend.memory()["bytes"] - before["bytes"] <= kept.gpu_bytes


def test_cpu_fallback_on_the_reference_backend(reference_backend):
    job = {"kind": "transformer", "text": "t", "params": {
        "preset": "micro", "n_layer": 1, "steps": 2, "eval_steps": 1, "sample_chars": 3}}
    res = asyncio.run(run_job(job, reference_backend, Context(load_text=lambda i: "to be or not to be, " * 20)))
    assert len(res["metrics"]["loss_curve"]) == 2 and len(res["samples"]) == 3


@pytest.mark.parametrize("params, words", [({"n_head": 3}, "multiple"), ({"wat": 1}, "unknown"),
                                            ({"block_size": 4096}, "too short|at least")])
def test_bad_jobs_raise_job_errors(reference_backend, params, words):
    job = {"kind": "transformer", "text": "shakespeare", "params": {"preset": "micro", **params}}
    with pytest.raises(JobError, match=words):
        asyncio.run(run_job(job, reference_backend, Context()))


def test_missing_text_id(reference_backend):
    with pytest.raises(JobError, match="text"):
        asyncio.run(run_job({"kind": "transformer", "params": {}}, reference_backend, Context()))


def test_estimate_for_the_page(reference_backend):
    est = transformer_job.estimate({"preset": "shakespeare_char"}, 65, reference_backend)
    assert est["ok"] and 10.6e6 < est["n_params"] < 10.9e6 and est["tokens_per_step"] == 64 * 256
    small = type(reference_backend)()
    small.limits["maxStorageBufferBindingSize"] = 1 << 26
    est = transformer_job.estimate({"preset": "shakespeare_char"}, 65, small)
    assert not est["ok"] and "lower batch_size" in est["problem"]
    assert transformer_job.estimate({"n_head": 5}, 65)["problem"].startswith("n_embd")
