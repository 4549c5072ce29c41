"""The kernel interface on the reference and native backends, and the matmul family against its
reference on fresh random inputs."""
from __future__ import annotations

import asyncio
from array import array

import pytest

from py_core.gpu import LimitError
from py_core.kernels.layout import Struct
from py_core.kernels.matmul import ACCUMULATE, PARAMS, TRANS_A, TRANS_B, grid
from py_core.selftest import max_error, random_floats, run_selftest


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(params=["reference", "native"])
def backend(request):
    return request.getfixturevalue(f"{request.param}_backend")


def test_write_read_clear_copy(backend, rng):
    data = array("f", [rng.uniform(-5, 5) for _ in range(1000)])
    a = backend.buffer("f32", data=data)
    assert run(backend.read(a)) == data
    b = backend.buffer("f32", 1000)
    ints = backend.buffer("u32", data=range(10))
    plan = backend.plan().copy(a, b, 500, src_offset=500).clear(ints)
    run(backend.run(plan))
    assert run(backend.read(b, 500)) == data[500:]
    assert list(run(backend.read(ints))) == [0] * 10
    backend.write(ints, [7, 8], offset=3)
    assert list(run(backend.read(ints)))[:6] == [0, 0, 0, 7, 8, 0]


def test_buffer_over_the_limit_is_refused_with_a_clear_message(backend):
    cap = min(backend.limits["maxStorageBufferBindingSize"], backend.limits["maxBufferSize"])
    with pytest.raises(LimitError, match="MiB"):
        backend.buffer("f32", cap // 4 + 1)


def test_struct_round_trip():
    s = Struct("n:u32 lr:f32 k:i32")
    words = s.pack(n=7, lr=0.5, k=-3)
    assert len(words) == 4 and s.unpack(words) == {"n": 7, "lr": 0.5, "k": -3}
    with pytest.raises(TypeError):
        s.pack(n=1)


@pytest.mark.parametrize("flags", [0, TRANS_A, TRANS_B, TRANS_A | TRANS_B, ACCUMULATE])
def test_matmul_native_matches_reference(native_backend, reference_backend, rng, flags):
    m, n, k = rng.randint(1, 150), rng.randint(1, 150), rng.randint(1, 90)
    inputs = [random_floats(rng, m * k), random_floats(rng, k * n), random_floats(rng, m * n)]
    alpha = rng.uniform(0.5, 2)

    async def matmul(backend):
        kern = await backend.kernel("matmul", "matmul")
        a, b, c = (backend.buffer("f32", data=x) for x in inputs)
        p = backend.buffer("u32", data=PARAMS.pack(M=m, N=n, K=k, flags=flags, alpha=alpha), uniform=True)
        await backend.run(backend.plan().dispatch(kern, [p, a, b, c], grid(m, n)))
        return await backend.read(c)

    got, want = run(matmul(native_backend)), run(matmul(reference_backend))
    abs_err, _, ok = max_error(got, want, atol=1e-5, rtol=1e-4)
    assert ok, f"{m}x{n}x{k} flags={flags}: largest error {abs_err}"


def test_matmul_reference_is_a_matrix_product(reference_backend, rng):
    """The reference itself, against the definition, on a small case."""
    m, n, k = 3, 4, 5
    a = [[rng.uniform(-1, 1) for _ in range(k)] for _ in range(m)]
    b = [[rng.uniform(-1, 1) for _ in range(n)] for _ in range(k)]

    async def go():
        kern = await reference_backend.kernel("matmul", "matmul")
        bufs = [reference_backend.buffer("f32", data=[x for row in a for x in row]),
                reference_backend.buffer("f32", data=[x for row in b for x in row]),
                reference_backend.buffer("f32", m * n)]
        p = reference_backend.buffer("u32", data=PARAMS.pack(M=m, N=n, K=k, flags=0, alpha=1.0), uniform=True)
        await reference_backend.run(reference_backend.plan().dispatch(kern, [p, *bufs], grid(m, n)))
        return await reference_backend.read(bufs[2])

    c = run(go())
    for i in range(m):
        for j in range(n):
            assert c[i * n + j] == pytest.approx(sum(a[i][t] * b[t][j] for t in range(k)), abs=1e-5)


def test_selftest_on_native_passes(native_backend):
    result = run(run_selftest(native_backend))
    assert result["metrics"]["all_ok"], result
    assert all(k["time_s"] > 0 for k in result["metrics"]["kernels"] if not k.get("skipped"))


def test_plan_ops_are_typed_and_extend_keeps_labels():
    from py_core.gpu import Clear, Copy, Dispatch, Kernel, Plan
    from py_core.gpu.backend import Buffer
    k = Kernel("matmul", "matmul", {})
    a, b = Buffer(None, 1, "f32", 4, False), Buffer(None, 2, "f32", 4, False)
    first = Plan().dispatch(k, [a], (2,), label="scores").clear(a)
    second = Plan().copy(a, b, 2, dst_offset=1).dispatch(k, [a, b], (1, 2), label="values")
    joined = Plan().extend(first, second)
    assert [type(op) for op in joined.ops] == [Dispatch, Clear, Copy, Dispatch]
    assert joined.ops[0].grid == (2, 1, 1) and joined.ops[2] == Copy(a, 0, b, 1, 2)
    assert [joined.label(i) for i in range(4)] == ["scores", "clear", "copy", "values"]


# -- ownership: scopes free what runs make, and the backend counts what is alive -----------------

def test_scope_frees_buffers_and_plans_nested_and_on_failure(backend):
    start = backend.memory()
    kern = run(backend.kernel("matmul", "matmul"))

    async def go(fail: bool):
        async with backend.scope("outer") as outer:
            a = backend.buffer("f32", 64)
            async with backend.scope("inner") as inner:
                b = backend.buffer("f32", 64)
                p = backend.buffer("u32", data=PARAMS.pack(M=8, N=8, K=8, flags=0, alpha=1.0), uniform=True)
                plan = backend.plan().dispatch(kern, [p, a, a, b], grid(8, 8))
                await backend.run(plan)
                assert backend.memory()["plans"] == start["plans"] + 1
                assert inner.counts() == {"buffers": 2, "bytes": 4 * 64 + p.nbytes, "plans": 1}
                assert outer.counts()["buffers"] == 3
                keep = backend.buffer("f32", 16)
                outer.own(keep)  # handed out of the inner scope
            assert b.handle is None and plan.compiled is None and keep.handle is not None
            assert backend.memory()["buffers"] == start["buffers"] + 2
            if fail:
                raise RuntimeError("injected")
        assert a.handle is None and keep.handle is None

    run(go(False))
    assert backend.memory() == dict(start, peak_bytes=backend.memory()["peak_bytes"])
    with pytest.raises(RuntimeError, match="injected"):
        run(go(True))
    now = backend.memory()
    assert (now["buffers"], now["bytes"], now["plans"]) == (start["buffers"], start["bytes"], start["plans"])


def test_a_recompiled_plan_releases_its_old_form(backend):
    start = backend.memory()["plans"]
    a, b = backend.buffer("f32", 8), backend.buffer("f32", 8)
    plan = backend.plan().copy(a, b)
    run(backend.run(plan))
    plan.clear(a)  # changed: the compiled form is stale and freed
    run(backend.run(plan))
    assert backend.memory()["plans"] == start + 1
    backend.free_plan(plan)
    backend.free(a)
    backend.free(b)
    backend.free(b)  # twice is harmless
    assert backend.memory()["plans"] == start


def _live(backend):
    m = backend.memory()
    return m["buffers"], m["bytes"], m["plans"]


FOREST_JOB = {"kind": "random_forest", "dataset": "synthetic:friedman1?n_samples=300&seed=3",
              "target": "y", "params": {"n_estimators": 4, "max_depth": 4, "random_state": 0}}
TRANSFORMER_JOB = {"kind": "transformer", "text": "shakespeare", "params": {
    "preset": "micro", "n_layer": 1, "steps": 3, "eval_interval": 3, "eval_steps": 1,
    "sample_chars": 2, "seed": 1}}


@pytest.mark.parametrize("kind", ["forest", "transformer", "selftest", "stopped"])
def test_runs_leave_live_memory_where_it_started(backend, kind):
    """Ten runs in one process (three on the reference backend; the self-test, which checks
    every kernel family, a minute a run on a busy 2-core machine, twice) leave the live buffers,
    bytes and plans where they started: exactly, but for the one kept transformer model (its
    weights and sampler), whose bytes the result states; closing it returns to the start. (Ten
    of each kind in one tab: e2e/test_control.py.)"""
    from py_core.jobs import Context, Session, Stopped
    from py_core.transformer import builtin_text
    session = Session(backend)
    runs = 10 if backend.name == "native" and kind != "selftest" else 3 if kind != "selftest" else 2
    start = _live(backend)
    kept = []
    for i in range(runs):
        if kind == "forest":
            res = run(session.run(FOREST_JOB, Context()))
            assert res["metrics"]["r2"] > 0
        elif kind == "selftest":
            if backend.name == "reference" and i:
                break  # the reference checks itself slowly: once is enough there
            assert run(session.run({"kind": "selftest", "seed": i}, Context()))["metrics"]["all_ok"]
        else:
            calls = []
            stop = (lambda: calls.append(1) or len(calls) > 1) if kind == "stopped" else None
            ctx = Context(load_text=builtin_text, should_stop=stop)
            job = TRANSFORMER_JOB if kind == "transformer" else {
                **TRANSFORMER_JOB, "params": {**TRANSFORMER_JOB["params"], "steps": 50}}
            try:
                res = run(session.run(job, ctx))
                kept.append(res["metrics"]["kept_bytes"])
            except Stopped:
                kept.append(session.last_model.gpu_bytes)
        buffers, nbytes, plans = _live(backend)
        if kind in ("forest", "selftest"):
            assert (buffers, nbytes, plans) == start, f"run {i}"
        else:  # the kept model: the weights, the sampler's buffers and its plan
            assert nbytes - start[1] == session.last_model.gpu_bytes == kept[-1] > 0, f"run {i}"
            assert plans - start[2] <= 1
    if kind in ("transformer", "stopped"):
        assert len(set(kept)) == 1
        session.last_model.close()
        assert _live(backend) == start
