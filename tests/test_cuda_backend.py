"""py_core's cuda backend on PyTorch's CPU build: each torch kernel against the plain-Python
reference on fresh random inputs, the reference fallback, and (once the forest's torch kernels
match its WGSL) the same forest as the reference backend for the same seed."""

import asyncio
import random
from array import array

import pytest

torch = pytest.importorskip("torch")

from py_core import kernels  # noqa: E402
from py_core.gpu.backend import Plan  # noqa: E402
from py_core.gpu.cuda import CudaBackend  # noqa: E402
from py_core.gpu.reference import ReferenceBackend  # noqa: E402
from py_core.kernels import torch_impl  # noqa: E402
from py_core.selftest import CASES, _load_families, max_error  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    # These tensors are small: PyTorch's thread pool only costs time on a shared CI machine.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def cuda():
    return CudaBackend(device="cpu")


def run(coro):
    return asyncio.run(coro)


def test_describes_itself(cuda):
    assert cuda.name == "cuda" and cuda.is_gpu and cuda.device_type == "cpu"
    assert cuda.adapter["vendor"] == "cpu" and "PyTorch" in cuda.adapter["description"]


def test_no_cuda_device_fails_loudly():
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    from py_core.gpu import GPUError
    with pytest.raises(GPUError, match="no CUDA device"):
        CudaBackend()


@pytest.mark.parametrize("dtype,values", [
    ("f32", [1.5, -2.25, 3.0e38, -0.0]),
    ("u32", [0, 1, 2**31, 2**32 - 1]),  # the high bit survives the int32 storage
    ("i32", [-2**31, -1, 0, 2**31 - 1]),
])
def test_buffers_round_trip(cuda, dtype, values):
    buf = cuda.buffer(dtype, data=values)
    assert list(run(cuda.read(buf))) == list(array({"f32": "f", "u32": "I", "i32": "i"}[dtype], values))
    cuda.write(buf, values[:2], offset=2)
    assert list(run(cuda.read(buf, 2))) == list(run(cuda.read(buf)))[:2]


def test_clear_and_copy(cuda, rng):
    values = [rng.getrandbits(32) for _ in range(10)]
    a, b = cuda.buffer("u32", data=values), cuda.buffer("u32", 10)
    run(cuda.run(cuda.plan().copy(a, b, n=4, src_offset=3, dst_offset=1).clear(a)))
    assert list(run(cuda.read(a))) == [0] * 10
    assert list(run(cuda.read(b))) == [0] + values[3:7] + [0] * 5


def test_copy_keeps_bits_across_types(cuda):
    f = cuda.buffer("f32", data=[1.5, -2.0])
    u = cuda.buffer("u32", 2)
    run(cuda.run(cuda.plan().copy(f, u)))
    assert list(run(cuda.read(u))) == list(array("I", array("f", [1.5, -2.0]).tobytes()))


_load_families()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_kernel_matches_reference(case, rng):
    """The self-test's cases: each on fresh random inputs, held to the case's tolerance."""
    cuda, ref = CudaBackend(device="cpu"), ReferenceBackend()
    seed = rng.getrandbits(32)
    plan, outs, _ = run(case.setup(cuda, random.Random(seed)))
    rplan, routs, _ = run(case.setup(ref, random.Random(seed)))
    run(cuda.run(plan))
    run(ref.run(rplan))
    for got, want in zip(outs, routs):
        abs_err, ratio, ok = max_error(run(cuda.read(got)), run(ref.read(want)), case.atol, case.rtol)
        assert ok, f"{case.name}: max error {abs_err} is {ratio:.2f}x the tolerance"


def test_which_kernels_are_torch():
    """Every self-tested family but those still to be written runs natively in torch."""
    native = set(torch_impl.implemented())
    assert "matmul.matmul" in native
    assert {"transformer_matmul.matmul", "transformer_attention.softmax_causal",
            "transformer_adamw.adamw", "transformer_embedding.get_batch"} <= native


def test_torch_kernels_mirror_the_current_wgsl():
    """A torch family records the fingerprint of the WGSL and reference it mirrors; a change to
    either makes it stale (and the backend falls back to the reference for that family)."""
    stale = {f: torch_impl.fingerprint(f) for f in torch_impl.families()
             if torch_impl.written_for(torch_impl._module(f), f) != torch_impl.fingerprint(f)}
    assert not stale, (f"torch kernels of {sorted(stale)} mirror an older WGSL or reference: check "
                       f"py_core/kernels/torch_impl against them, then update WRITTEN_FOR "
                       f"(python -m py_core.kernels.torch_impl prints the new fingerprints)")


def test_missing_torch_kernel_falls_back_to_the_reference(cuda, rng, monkeypatch, caplog):
    monkeypatch.setattr(torch_impl, "lookup", lambda family, entry: None)
    from py_core.kernels.matmul import PARAMS, grid
    m, n, k = 5, 7, 3
    a = [rng.uniform(-1, 1) for _ in range(m * k)]
    b = [rng.uniform(-1, 1) for _ in range(k * n)]
    kern = run(cuda.kernel("matmul", "matmul"))
    bufs = [cuda.buffer("u32", data=PARAMS.pack(M=m, N=n, K=k, flags=0, alpha=1.0), uniform=True),
            cuda.buffer("f32", data=a), cuda.buffer("f32", data=b), cuda.buffer("f32", m * n)]
    run(cuda.run(cuda.plan().dispatch(kern, bufs, grid(m, n))))
    assert cuda.fallbacks == {"matmul.matmul"} and "no torch implementation" in caplog.text
    want = [sum(a[i * k + j] * b[j * n + c] for j in range(k)) for i in range(m) for c in range(n)]
    assert run(cuda.read(bufs[3])).tolist() == pytest.approx(want, rel=1e-5, abs=1e-6)


def test_stale_family_falls_back(monkeypatch):
    monkeypatch.setattr(torch_impl, "_LOADED", set())
    monkeypatch.setattr(torch_impl, "STALE", {})
    monkeypatch.setattr(torch_impl, "fingerprint", lambda family: "changed")
    assert torch_impl.lookup("matmul", "matmul") is None and "matmul" in torch_impl.STALE


# -- the forest: every dispatch checked against the reference, then the trees compared ------------

class CheckedCuda(CudaBackend):
    """Runs each dispatch in torch and, on CPU copies of its buffers, in the reference; any
    difference fails with the kernel's name (u32 exactly, f32 to 1e-6 relative)."""

    async def _run(self, plan, repeat):
        for op in plan.ops * repeat:
            if op[0] != "dispatch":
                await super()._run(Plan([op]), 1)
                continue
            _, kernel, bufs, grid = op
            before = [array(a.typecode, a) for a in (
                b.handle.host if b.handle.host is not None else self._to_array(b.handle.t, b.dtype)
                for b in bufs)]
            await super()._run(Plan([op]), 1)
            kernels.lookup(kernel.family, kernel.entry)(before, grid, kernel.constants)
            for i, (buf, want) in enumerate(zip(bufs, before)):
                got = self._to_array(buf.handle.t, buf.dtype)
                if got == want:  # the usual case, compared at C speed
                    continue
                if buf.dtype == "f32":
                    bad = [j for j, (x, y) in enumerate(zip(got, want))
                           if not (x == y or abs(x - y) <= 1e-6 * abs(y) + 1e-30)]
                else:
                    bad = [j for j, (x, y) in enumerate(zip(got, want)) if x != y]
                assert not bad, (f"{kernel.name} binding {i}: {len(bad)} words differ, first at "
                                 f"{bad[0]}: torch {got[bad[0]]}, reference {want[bad[0]]}")


def _forest_ready():
    try:
        import py_core.forest  # noqa: F401
    except ImportError:
        return "py_core.forest is not there yet"
    if torch_impl.lookup("forest", "bin_features") is None:
        return "the torch forest kernels do not mirror the current forest.wgsl (stale or missing)"
    return None


@pytest.mark.parametrize("task", ["squared_error", "gini", "entropy"])
def test_forest_same_as_reference(task, rng):
    reason = _forest_ready()
    if reason:
        pytest.skip(reason)
    from py_core.forest import RandomForestClassifier, RandomForestRegressor
    n, F = rng.randint(80, 250), rng.randint(2, 7)
    X = [[rng.gauss(0, 1) if rng.random() < 0.7 else float(rng.randint(0, 3)) for _ in range(F)]
         for _ in range(n)]
    kw = dict(n_estimators=rng.randint(2, 5), random_state=rng.getrandbits(32),
              max_depth=rng.choice([None, 4]), max_features=rng.choice([None, "sqrt", 0.5]),
              bootstrap=rng.random() < 0.8, n_bins=rng.choice([8, 256]),
              min_samples_leaf=rng.choice([1, 3]))
    kw["oob_score"] = kw["bootstrap"]
    if task == "squared_error":
        cls, y = RandomForestRegressor, [10 * sum(r) + rng.gauss(0, 1) for r in X]
    else:
        k = rng.randint(2, 4)
        cls, y = RandomForestClassifier, [min(k - 1, max(0, int(r[0] * k / 3 + k / 2))) for r in X]
        kw["criterion"] = task
    a = run(cls(backend=CheckedCuda(device="cpu"), **kw).fit(X, y))
    b = run(cls(backend=ReferenceBackend(), **kw).fit(X, y))
    for i, (ta, tb) in enumerate(zip(a._trees, b._trees)):
        assert ta["feature"] == tb["feature"] and ta["left"] == tb["left"], f"tree {i}: other splits"
        assert ta["threshold"] == tb["threshold"], f"tree {i}: other thresholds"
        flat = (lambda v: v if not v or not isinstance(v[0], list) else [x for r in v for x in r])
        assert flat(ta["value"]) == pytest.approx(flat(tb["value"]), rel=1e-6, abs=1e-12)
    pa, pb = run(a._predict_raw(X)), run(b._predict_raw(X))
    assert list(pa[0]) == pytest.approx(list(pb[0]), rel=1e-6, abs=1e-9)


def _same_dispatches(ops):
    """Run [(entry, [(dtype, data or length, uniform)], grid)] on the cuda and reference backends
    from the same inputs; return both backends' buffers after each dispatch, as arrays."""
    outs = []
    for backend in (CudaBackend(device="cpu"), ReferenceBackend()):
        got = []
        for entry, specs, grid in ops:
            bufs = [backend.buffer(dt, **({"n": d} if isinstance(d, int) else {"data": d}),
                                   uniform=u) for dt, d, u in specs]
            kern = run(backend.kernel("forest", entry))
            run(backend.run(backend.plan().dispatch(kern, bufs, grid)))
            got.append([run(backend.read(b)) for b in bufs])
        outs.append(got)
    return outs


@pytest.mark.parametrize("xd", [0, 1])
def test_forest_data_kernels(rng, xd):
    """The device-side data path (the cuda backend sorts on the host in a fit today, so these
    run here): finiteness checks, the binning subsample and its bitonic sort, fixed-point y."""
    from py_core.kernels.forest import PARAMS, SORT
    n, F = rng.randint(50, 400), rng.randint(1, 5)
    values = [rng.choice([rng.gauss(0, 3), -0.0, 0.0, float(rng.randint(-2, 2))]) for _ in range(n * F)]
    if rng.random() < 0.5:
        values[rng.randrange(n * F)] = rng.choice([float("inf"), float("nan")])
    X = array("d" if xd else "f", values)
    step = rng.choice([1, 2, 3])  # a draw every step rows, as for large n (binning.sample_shape)
    m = -(-n // step)
    SM = 1 << max(0, (m - 1).bit_length())
    base = {name: 0 for name, _ in PARAMS.fields}
    base.update(n=n, F=F, xd=xd, step=step, SM=SM, ye=rng.randint(-3, 20),
                ym_lo=rng.getrandbits(32), ym_hi=rng.getrandbits(32))
    P = ("u32", PARAMS.pack(**base), True)
    words = array("I", memoryview(X).cast("B"))
    y = array("d", [rng.gauss(0, 100) for _ in range(n)])
    if rng.random() < 0.5:
        y[rng.randrange(n)] = float("nan")
    ops = [("check_finite", [P, ("u32", words, False), ("u32", 1, False)], (n * F, 1, 1)),
           ("targets", [P, ("u32", array("I", memoryview(y).cast("B")), False), ("u32", n, False),
                        ("u32", 1, False)], (n, 1, 1))]
    cuda_out, ref_out = _same_dispatches(ops)
    assert cuda_out == ref_out
    # The sample, then the whole bitonic network the builder dispatches, pass by pass.
    cuda, ref = CudaBackend(device="cpu"), ReferenceBackend()
    outs = []
    for b in (cuda, ref):
        samp = b.buffer("u32", F * SM)
        xb = b.buffer("u32", data=words)
        plan = b.plan().dispatch(run(b.kernel("forest", "sample")),
                                 [b.buffer("u32", data=P[1], uniform=True), xb, samp], (1, 1, 1))
        for kk in (2 ** i for i in range(1, SM.bit_length())):
            for j in (kk >> i for i in range(1, kk.bit_length())):
                ps = b.buffer("u32", uniform=True, data=SORT.pack(j=j, k=kk, len=SM, count=F))
                plan.dispatch(run(b.kernel("forest", "sort_pass")), [ps, samp], (1, 1, 1))
        run(b.run(plan))
        outs.append(run(b.read(samp)))
    assert outs[0] == outs[1]
    assert cuda.fallbacks == set()
