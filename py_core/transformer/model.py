"""A GPT on a backend: forward, backward and AdamW recorded into plans.

Parameters, gradients and the two AdamW moments are four flat buffers (see params.py); the
activations are buffers.py's. Recording happens once; a training step is then
`backend.write(schedule)` + `backend.run(plan)`. Each dispatch carries a label (the profile of
a step sums the time by label: Trainer.profile).

Shapes in comments: B sequences, T positions, M = B * T rows, C = n_embd, H heads of d = C / H,
F = 4 C, V vocabulary.
"""
from __future__ import annotations

import math
from array import array

from .. import rng
from ..gpu.backend import LimitError
from ..kernels import matmul_f16 as mf
from ..kernels import transformer_adamw as adam
from ..kernels import transformer_attention as att
from ..kernels import transformer_elementwise as ew
from ..kernels import transformer_embedding as emb
from ..kernels import transformer_init as init
from ..kernels import transformer_layernorm as ln
from ..kernels import transformer_loss as loss
from ..kernels import transformer_matmul as mm
from ..kernels import written
from .buffers import (  # noqa: F401
    CHUNK,
    EMBED_CHUNK,
    Activations,
    activation_specs,
    check_fits,
    embed_chunks,
    memory_bytes,
    split_k,
)
from .config import TransformerConfig
from .params import ParamLayout

PRECISIONS = ("f32", "mixed")
LOSS_SCALE = 1024.0  # the mixed path's static loss scale (a power of two: exact to undo)


def mixed_unavailable(backend) -> str:
    """Why `backend` cannot run the mixed-precision path ("" when it can): its adapter needs f16
    subgroup matrices (tensor cores) and the matmul_f16 kernel's workgroup memory."""
    if backend.name == "reference":
        return ""  # the plain-Python kernels model the f16 rounding exactly
    missing = [f for f in mf.FEATURES if f not in backend.features]
    if missing:
        return "this adapter lacks " + ", ".join(missing)
    configs = backend.adapter.get("subgroup_matrix_configs")
    if configs is not None and not mf.supports(backend.features, configs):
        return "this adapter has no f16 x f16 -> f32 16x16x16 subgroup-matrix configuration"
    sizes = (backend.adapter.get("subgroup_min_size"), backend.adapter.get("subgroup_max_size"))
    if sizes != (None, None) and sizes != (32, 32):
        return f"matmul_f16 is written for subgroups of 32 invocations, this adapter's are {sizes}"
    if backend.limits["maxComputeWorkgroupStorageSize"] < mf.WORKGROUP_BYTES:
        return f"matmul_f16 needs {mf.WORKGROUP_BYTES} bytes of workgroup memory"
    return ""


NORM_GROUP = 4096   # gradient elements each first-pass norm workgroup squares and adds
WORKGROUP_BYTES = 16384  # WebGPU's minimum, which every kernel here fits in (matmul_big: mm.BIG_BYTES)
DEFAULT_TILES = "64"     # measured on an H200: 64 x 64 tiles beat 128 x 128 for every product


def _rows_grid(rows: int) -> tuple[int, int, int]:
    return (min(rows, ew.MAX_GROUPS), -(-rows // ew.MAX_GROUPS), 1)


class _Recorder:
    """Appends dispatches to a plan: one uniform buffer per dispatch, made once here."""

    def __init__(self, backend, plan):
        self.backend, self.plan = backend, plan

    async def __call__(self, family, entry, struct, values, bufs, grid, label=None, constants=None):
        kern = await self.backend.kernel(family, entry, constants)
        if struct is not None:
            bufs = [self.backend.buffer("u32", data=struct.pack(**values), uniform=True), *bufs]
        for i in written(family, entry):  # WebGPU forbids a written buffer bound twice
            if any(b is bufs[i] for j, b in enumerate(bufs) if j != i):
                raise RuntimeError(f"{family}.{entry}: binding {i} is written and bound again")
        self.plan.dispatch(kern, bufs, grid, label)
        return bufs[0]


class GPT:
    """A GPT's parameters on `backend`, and the recording of its passes into plans."""

    def __init__(self, backend, config: TransformerConfig, vocab_size: int, tiles: str = "auto",
                 precision: str = "f32"):
        """tiles: the matmul tilings to use (mm.MODES); "auto": DEFAULT_TILES. precision: "f32",
        or "mixed": every matmul on tensor cores (matmul_f16: f16 operands, f32 accumulation),
        f32 master weights, f32 LayerNorm, softmax and loss, gradients under a static loss scale."""
        if not 1 <= vocab_size <= ew.MAX_GROUPS:
            raise ValueError(f"vocabulary of {vocab_size} characters: 1 to {ew.MAX_GROUPS} supported")
        self.backend, self.config, self.vocab_size = backend, config.validate(), vocab_size
        self.layout = ParamLayout(config, vocab_size)
        lim = backend.limits
        if lim["maxComputeWorkgroupStorageSize"] < WORKGROUP_BYTES or lim["maxComputeInvocationsPerWorkgroup"] < 256:
            raise LimitError("this adapter offers less than 16 KiB of workgroup memory or 256 "
                             "invocations a workgroup; the transformer's kernels need both")
        if lim["maxStorageBuffersPerShaderStage"] < 6:
            raise LimitError("the transformer's kernels bind 6 storage buffers; this adapter allows "
                             f"{lim['maxStorageBuffersPerShaderStage']}")
        self.params = self.grads = self.m1 = self.m2 = None
        mode = DEFAULT_TILES if tiles == "auto" else tiles
        if mode not in mm.MODES:
            raise ValueError(f"tiles must be auto or one of {', '.join(mm.MODES)}, not {tiles!r}")
        if mode == "big" and lim["maxComputeWorkgroupStorageSize"] < mm.BIG_BYTES:
            mode = "wide"  # matmul_big's tiles need more workgroup memory than this adapter has
        self.mode = mode
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
        if precision == "mixed":
            why = mixed_unavailable(backend)
            if why:
                raise LimitError(f"mixed precision needs tensor cores: {why}. Use precision f32.")
        self.precision = precision
        # the loss gradient is scaled up so that small gradients survive rounding to f16 (as
        # in PyTorch's GradScaler, but static: gradients are stored in f32, only matmul
        # operands are rounded, so nothing overflows at this scale); AdamW divides it out
        self.loss_scale = LOSS_SCALE if precision == "mixed" else 1.0
        self.spare = backend.buffer("f32", 4)  # bound where a kernel's optional output is unused
        # the mixed path's f16 copies (packed pairs) of matmul operands, for the direct-load
        # tensor-core entries (see _f16_copy), and the buffers whose copy the forward pass writes
        # (the backward pass reads those again): id -> buffer
        self._cast_in_forward = {}
        self.params16 = None

    @property
    def n_params(self) -> int:
        return self.layout.n

    def load(self, weights: array) -> "GPT":
        if len(weights) != self.layout.n:
            raise ValueError(f"{len(weights)} weights given, the model has {self.layout.n}")
        self.backend.check_size(4 * self.layout.n, what=f"the {self.layout.n} parameters")
        if self.params is None:
            self.params = self.backend.buffer("f32", self.layout.n)
        self.backend.write(self.params, weights)
        return self

    async def init(self, seed: int) -> "GPT":
        """params <- params.init_weights(layout, seed), the normals drawn on the GPU (init_normal,
        the same bits as the Python reference) and the LayerNorm gains and zeros written here."""
        L, b = self.layout, self.backend
        b.check_size(4 * L.n, what=f"the {L.n} parameters")
        if self.params is None:
            self.params = b.buffer("f32", L.n)
        plain = array("f", bytes(4 * (L.n - L.n_decay)))
        for p in L:
            if p.init == "ones":
                plain[p.offset - L.n_decay:p.offset - L.n_decay + p.size] = array("f", [1.0]) * p.size
        b.write(self.params, plain, offset=L.n_decay)
        async with b.scope("init"):  # the table, the plan and its uniforms: freed when done
            table = b.buffer("u32", data=rng.quantile_table())
            plan = b.plan()
            r = _Recorder(b, plan)
            for p in L:
                if p.init == "normal":
                    await r("transformer_init", "init_normal", init.INIT, dict(
                        n=p.size, offset=p.offset, key=rng.init_key(seed, p.name), scale=rng.scale_of(p.std)),
                        [table, self.params], ew.grid_1d(p.size), "init")
            await b.run(plan)
            await b.finish()
        return self

    async def weights(self) -> array:
        return await self.backend.read(self.params)

    def allocate_optimizer(self) -> None:
        n = self.layout.n
        self.grads, self.m1, self.m2 = (self.backend.buffer("f32", n) for _ in range(3))
        self.norm_part = self.backend.buffer("f32", -(-n // NORM_GROUP))
        self.state = self.backend.buffer("f32", 4)  # [squared gradient norm, unused x3]

    # -- recording -----------------------------------------------------------------------------
    async def record_batch(self, plan, a: Activations, tokens, key: int, sched) -> None:
        """idx, tgt <- the batch numbered sched.step of `tokens` (u32), drawn on the GPU."""
        t = a.length
        n_windows = tokens.length - t
        if n_windows < 1:
            raise ValueError(f"a split of {tokens.length} characters is too short for block_size {t}")
        await _Recorder(self.backend, plan)(
            "transformer_embedding", "get_batch", emb.BATCH,
            dict(B=a.batch, T=t, n_windows=n_windows, key=key), [sched, tokens, a.idx, a.tgt],
            (-(-a.rows // 64), 1, 1), "get batch")

    def _f16_copy(self, buf):
        """The f16 copy of an f32 buffer (packed pairs), made on first use and owned by the
        buffer's own scope (the weights' copy lives as long as the model, an activation's as
        long as its pass), kept on the buffer."""
        copy = getattr(buf, "f16_copy", None)
        if copy is None or copy.handle is None:
            n = buf.nbytes // 4
            self.backend.check_size(2 * n, what=f"an f16 copy of {n} values")
            copy = buf.f16_copy = self.backend.buffer("u32", -(-n // 2))
            if buf.scope is not None and not buf.scope.closed:
                buf.scope.own(copy)
        return copy

    async def _cast(self, r, buf, label="cast f16"):
        """buf's f16 copy <- buf (all of it), recorded; returns the copy."""
        out = self._f16_copy(buf)
        n = buf.nbytes // 4
        await r("matmul_f16", "cast_f16", mf.CAST, dict(n=n, src_off=0, dst_off=0, pad=0), [buf, out],
                mf.cast_grid(n), label)
        return out

    def _direct(self, values: dict, batches: int = 1) -> str | None:
        """The direct-load tensor-core entry for this product, or None (the f32 path, or one that
        mf.pick_direct refuses)."""
        return mf.pick_direct(values, batches) if self.precision == "mixed" else None

    async def _mm(self, r, values: dict, bufs: list, batches: int = 1, label=None, entry=None, f16=None):
        """A transformer_matmul dispatch, on the tiles its size suits (mm.pick) unless `entry`
        says. bufs: [A, B, C] and optionally bias, R, G; unused ones are bound to stand-ins.
        f16: (A16, B16), f16 copies of A and B (see _f16_copy): on the mixed path, a product that
        a direct-load entry serves reads those instead (the caller has recorded their casts)."""
        if self.precision == "mixed" and bufs[2].nbytes >= mf.MIN_C_BYTES:
            a, b, c = bufs[:3]
            bias = bufs[3] if len(bufs) > 3 and bufs[3] is not None else b
            res = bufs[4] if len(bufs) > 4 and bufs[4] is not None else a
            g = bufs[5] if len(bufs) > 5 and bufs[5] is not None else self.spare
            direct = self._direct(values, batches) if f16 is not None else None
            if direct:
                return await r("matmul_f16", direct, mf.PARAMS, values, [f16[0], f16[1], c, bias, res, g],
                               mf.direct_grid(direct, values["M"], values["N"], batches),
                               label and f"{label} ({direct})", mf.constants(values["flags"], True))
            return await r("matmul_f16", "matmul", mf.PARAMS, values, [a, b, c, bias, res, g],
                           mf.grid(values["M"], values["N"], batches), label and f"{label} (f16)",
                           mf.constants(values["flags"]))
        pick, grid = mm.pick(values["M"], values["N"], batches, self.mode)
        if entry is not None:
            pick, grid = entry, mm.entry_grid(entry, values["M"], values["N"], batches)
        a, b, c = bufs[:3]
        bias = bufs[3] if len(bufs) > 3 and bufs[3] is not None else b
        res = bufs[4] if len(bufs) > 4 and bufs[4] is not None else a
        g = bufs[5] if len(bufs) > 5 and bufs[5] is not None else self.spare
        return await r("transformer_matmul", pick, mm.PARAMS, values, [a, b, c, bias, res, g], grid,
                       label and f"{label} ({pick})")

    async def _linear(self, r, x, w, out, rows, n, k, bias=None, a_off=0, flags=0, res=None,
                      gelu=None, label=None):
        """out = x W^T (+ b) (+ res) (gelu <- GELU(out)): x (rows, k), W (n, k) and b (n) in the
        parameter buffer."""
        L = self.layout
        flags |= mm.TRANS_B | (mm.BIAS if bias else 0) | (mm.RESIDUAL if res is not None else 0) | (
            mm.GELU if gelu is not None else 0)
        values = mm.params(rows, n, k, flags, a_off=a_off, b_off=L.offset(w),
                           bias_off=L.offset(bias) if bias else 0)
        f16 = None
        if self._direct(values):  # x's f16 copy, which the backward pass's dW reads again
            f16 = (await self._cast(r, x), self.params16)
            self._cast_in_forward[id(x)] = x
        return await self._mm(r, values, [x, self.params, out, self.params, res, gelu], label=label, f16=f16)

    async def _layernorm(self, r, x, name, y, stats, rows, label="ln fwd"):
        await r("transformer_layernorm", "layernorm_forward", ln.PARAMS, dict(
            rows=rows, C=self.config.n_embd, w_off=self.layout.offset(name + ".weight"), flags=0,
            eps=ln.EPS, chunk=CHUNK), [x, self.params, y, stats], _rows_grid(rows), label)

    def _heads(self, b, t):
        """matmul fields of the batched per-(sequence, head) products over qkv (M, 3C)."""
        c, h, d = self.config.n_embd, self.config.n_head, self.config.head_dim
        qkv = dict(so=t * 3 * c, si=d)        # q, k, v of (b, h): rows of 3C, columns h*d..
        tt = dict(so=h * t * t, si=t * t)     # att (B, H, T, T)
        y = dict(so=t * c, si=d)              # y (M, C), head h in columns h*d..
        return c, h, d, qkv, tt, y

    async def record_forward(self, plan, a: Activations) -> object:
        """logits <- the model on idx. Returns the head matmul's uniform (its a_off picks the
        row when the activations keep fewer head rows than positions, as sampling does)."""
        r = _Recorder(self.backend, plan)
        cfg, L = self.config, self.layout
        bt, t, m = a.batch, a.length, a.rows
        c, h, d, sq, st, sy = self._heads(bt, t)
        f = 4 * c
        if self.precision == "mixed":  # the weights' f16 copy, read by the direct-load products
            self.params16 = await self._cast(r, self.params, "cast f16 weights")
        await r("transformer_embedding", "embed_forward", emb.EMBED, dict(
            M=m, T=t, C=c, V=self.vocab_size, wte_off=L.offset("transformer.wte.weight"),
            wpe_off=L.offset("transformer.wpe.weight")), [a.idx, self.params, a.x0], ew.grid_1d(m * c),
            "embed fwd")
        x = a.x0
        for i in range(cfg.n_layer):
            p, A = f"transformer.h.{i}.", (lambda name, i=i: a.layer(i, name))
            await self._layernorm(r, x, p + "ln_1", A("ln1"), A("stats1"), m)
            await self._linear(r, A("ln1"), p + "attn.c_attn.weight", A("qkv"), m, 3 * c, c,
                               p + "attn.c_attn.bias", label="qkv fwd")
            # att = softmax(q k^T / sqrt(d)) per (sequence, head): (B, H, T, T)
            await self._mm(r, mm.params(
                t, t, d, mm.TRANS_B | mm.SKIP_UPPER, alpha=1 / math.sqrt(d), lda=3 * c, ldb=3 * c,
                inner=h, b_off=c, a_so=sq["so"], a_si=sq["si"], b_so=sq["so"], b_si=sq["si"],
                c_so=st["so"], c_si=st["si"]), [A("qkv"), A("qkv"), A("att")], bt * h, "att scores fwd")
            await r("transformer_attention", "softmax_causal", att.PARAMS, dict(
                T=t, rows=bt * h * t, scale=1.0, pad=0), [A("att")], _rows_grid(bt * h * t), "att softmax fwd")
            # atty = att v, heads side by side: (M, C)
            await self._mm(r, mm.params(
                t, d, t, mm.K_UPTO_ROW, lda=t, ldb=3 * c, ldc=c, inner=h, b_off=2 * c,
                a_so=st["so"], a_si=st["si"], b_so=sq["so"], b_si=sq["si"], c_so=sy["so"], c_si=sy["si"]),
                [A("att"), A("qkv"), A("atty")], bt * h, "att pv fwd")
            # residual: xm = x + atty Wo^T + b
            await self._linear(r, A("atty"), p + "attn.c_proj.weight", A("xm"), m, c, c,
                               p + "attn.c_proj.bias", res=x, label="proj fwd")
            await self._layernorm(r, A("xm"), p + "ln_2", A("ln2"), A("stats2"), m)
            # fc = ln2 Wfc^T + b and gelu = GELU(fc), both kept for the backward pass
            await self._linear(r, A("ln2"), p + "mlp.c_fc.weight", A("fc"), m, f, c, p + "mlp.c_fc.bias",
                               gelu=A("gelu"), label="fc+gelu fwd")
            # residual: out = xm + gelu Wp^T + b
            await self._linear(r, A("gelu"), p + "mlp.c_proj.weight", A("out"), m, c, f,
                               p + "mlp.c_proj.bias", res=A("xm"), label="fcproj fwd")
            x = A("out")
        await self._layernorm(r, x, "transformer.ln_f", a.lnf, a.statsf, m)
        # logits = lnf wte^T (the head is tied to the token embedding)
        return await self._linear(r, a.lnf, "transformer.wte.weight", a.logits, a.head_rows,
                                  self.vocab_size, c, label="head fwd")

    async def record_loss(self, plan, a: Activations, sched, hist) -> None:
        """losses, hist[sched.slot] <- cross-entropy against tgt; logits <- its gradient."""
        r = _Recorder(self.backend, plan)
        u = dict(rows=a.rows, V=self.vocab_size, inv_rows=1.0 / a.rows, pad=0)
        await r("transformer_loss", "cross_entropy", loss.PARAMS, {**u, "inv_rows": self.loss_scale / a.rows},
                [a.logits, a.tgt, a.losses],
                _rows_grid(a.rows), "cross-entropy")
        await r("transformer_loss", "loss_mean", loss.PARAMS, u, [sched, a.losses, hist], (1, 1, 1), "loss mean")

    async def _colsum(self, r, a, src, rows, cols, out_off, label="bias grads"):
        """grads[out_off:+cols] = column sums of src (rows, cols), in two deterministic passes."""
        chunks = -(-rows // CHUNK)
        await r("transformer_elementwise", "colsum", ew.COLSUM, dict(rows=rows, cols=cols, chunk=CHUNK, out_off=0),
                [src, a.part], (-(-cols // 64), chunks, 1), label)
        await r("transformer_elementwise", "colsum", ew.COLSUM, dict(rows=chunks, cols=cols, chunk=chunks,
                out_off=out_off), [a.part, self.grads], (-(-cols // 64), 1, 1), label)

    async def _weight_grad(self, r, a, dy, x, rows, n, k, c_off, label, bias_off=None, slabs=None, f16=None):
        """grads[c_off:+n*k] = dy^T x for dy (rows, n) and x (rows, k), and with bias_off the
        bias gradient grads[bias_off:+n] = column sums of dy; split along the rows (split_k)
        when the output alone would not fill the GPU: each slice's product to its own slab (and
        its column sums, ROWSUM, to bias_slabs), then a column sum over the slabs. `slabs`
        (head_slabs: the token embedding's gradient adds its parts there): sum nothing yet, return
        the slices written."""
        s = split_k(n, k, rows, "mixed" if self._direct(mm.params(n, k, rows, mm.TRANS_A)) else self.mode)
        if s == 1 and slabs is None:
            await self._mm(r, mm.params(n, k, rows, mm.TRANS_A, c_off=c_off), [dy, x, self.grads],
                           label=label, f16=f16)
            if bias_off is not None:
                await self._colsum(r, a, dy, rows, n, bias_off, label.replace("dW", "db"))
            return s
        part = rows // s  # slab z = dy[z*part:(z+1)*part]^T x[z*part:(z+1)*part]
        flags = mm.TRANS_A | (mm.ROWSUM if bias_off is not None else 0)
        await self._mm(r, mm.params(
            n, k, part, flags, lda=n, ldb=k, a_so=part * n, b_so=part * k, c_so=n * k),
            [dy, x, slabs or a.slabs, None, None, a.bias_slabs if bias_off is not None else None], s,
            label=label, entry=mm.pick(n, k, 1, self.mode)[0], f16=f16)
        if slabs is not None:
            return s
        await r("transformer_elementwise", "colsum", ew.COLSUM, dict(rows=s, cols=n * k, chunk=s, out_off=c_off),
                [a.slabs, self.grads], (-(-n * k // 64), 1, 1), label + " slabs")
        if bias_off is not None:
            await r("transformer_elementwise", "colsum", ew.COLSUM, dict(rows=s, cols=n, chunk=s, out_off=bias_off),
                    [a.bias_slabs, self.grads], (-(-n // 64), 1, 1), label.replace("dW", "db") + " slabs")
        return s

    async def _linear_backward(self, r, a, dy, x, w, bias, dx, rows, n, k, flags=0, res=None, label=""):
        """For y = x W^T + b with dy (rows, n): dx (+)= dy W (flags: ACCUMULATE, or GELU_GRAD
        with res the pre-activation); dW = dy^T x; db = colsum(dy)."""
        L = self.layout
        values = mm.params(rows, k, n, flags, b_off=L.offset(w))
        dy16 = x16 = None
        if self.precision == "mixed":  # dy's f16 copy serves both products; x's the forward made
            dy16 = await self._cast(r, dy)
            x16 = self._f16_copy(x) if self._cast_in_forward.get(id(x)) is x else await self._cast(r, x)
        await self._mm(r, values, [dy, self.params, dx, None, res], label=label + " dx",
                       f16=None if dy16 is None else (dy16, self.params16))
        await self._weight_grad(r, a, dy, x, rows, n, k, L.offset(w), label + " dW",
                                L.offset(bias) if bias else None, f16=None if dy16 is None else (dy16, x16))

    async def _layernorm_backward(self, r, a, x, name, stats, dy, accumulate=True):
        """dres (+)= LayerNorm backward of dy; the weight and bias gradients into grads."""
        m, c = a.rows, self.config.n_embd
        u = dict(rows=m, C=c, w_off=self.layout.offset(name + ".weight"), eps=ln.EPS, chunk=CHUNK)
        await r("transformer_layernorm", "layernorm_backward", ln.PARAMS,
                dict(u, flags=ln.ACCUMULATE if accumulate else 0),
                [x, self.params, stats, dy, a.dres], _rows_grid(m), "ln bwd")
        chunks = -(-m // CHUNK)
        await r("transformer_layernorm", "layernorm_param_grads", ln.PARAMS, dict(u, flags=0),
                [x, stats, dy, a.part], (-(-c // 64), chunks, 1), "ln bwd params")
        await r("transformer_elementwise", "colsum", ew.COLSUM, dict(
            rows=chunks, cols=2 * c, chunk=chunks, out_off=u["w_off"]), [a.part, self.grads],
            (-(-2 * c // 64), 1, 1), "ln bwd params")

    async def record_backward(self, plan, a: Activations) -> None:
        """grads <- d(mean loss)/d(params), from the logits' gradient that record_loss left."""
        r = _Recorder(self.backend, plan)
        cfg, L = self.config, self.layout
        bt, t, m = a.batch, a.length, a.rows
        c, h, d, sq, st, sy = self._heads(bt, t)
        f, v = 4 * c, self.vocab_size
        wte = L.offset("transformer.wte.weight")
        # head: dlnf = dlogits wte; dwte = dlogits^T lnf into head_slabs (summed at the end with
        # the token embedding's part)
        await self._mm(r, mm.params(m, c, v, 0, b_off=wte), [a.logits, self.params, a.dln], label="head bwd dx")
        head_parts = await self._weight_grad(r, a, a.logits, a.lnf, m, v, c, wte, "head bwd dW",
                                             slabs=a.head_slabs)
        last = a.layer(cfg.n_layer - 1, "out") if cfg.n_layer else a.x0
        await self._layernorm_backward(r, a, last, "transformer.ln_f", a.statsf, a.dln, accumulate=False)
        for i in reversed(range(cfg.n_layer)):
            p, A = f"transformer.h.{i}.", (lambda name, i=i: a.layer(i, name))
            x = a.layer(i - 1, "out") if i else a.x0
            # MLP: dres holds d(out); out = xm + gelu(fc) Wp^T + bp; dfc = (dres Wp) * gelu'(fc)
            await self._linear_backward(r, a, a.dres, A("gelu"), p + "mlp.c_proj.weight",
                                        p + "mlp.c_proj.bias", a.dfc, m, c, f, mm.GELU_GRAD, A("fc"),
                                        label="fcproj bwd")
            await self._linear_backward(r, a, a.dfc, A("ln2"), p + "mlp.c_fc.weight", p + "mlp.c_fc.bias",
                                        a.dln, m, f, c, label="fc bwd")
            await self._layernorm_backward(r, a, A("xm"), p + "ln_2", A("stats2"), a.dln)
            # attention: dres holds d(xm); xm = x + atty Wo^T + bo
            await self._linear_backward(r, a, a.dres, A("atty"), p + "attn.c_proj.weight",
                                        p + "attn.c_proj.bias", a.dln, m, c, c, label="proj bwd")
            # datt = d(atty) v^T; dv = att^T d(atty)   (a.dln holds d(atty))
            await self._mm(r, mm.params(
                t, t, d, mm.TRANS_B | mm.SKIP_UPPER, lda=c, ldb=3 * c, inner=h, b_off=2 * c,
                a_so=sy["so"], a_si=sy["si"], b_so=sq["so"], b_si=sq["si"], c_so=st["so"], c_si=st["si"]),
                [a.dln, A("qkv"), a.datt], bt * h, "att dP bwd")
            await self._mm(r, mm.params(
                t, d, t, mm.TRANS_A | mm.K_FROM_ROW, lda=t, ldb=c, ldc=3 * c, inner=h, c_off=2 * c,
                a_so=st["so"], a_si=st["si"], b_so=sy["so"], b_si=sy["si"], c_so=sq["so"], c_si=sq["si"]),
                [A("att"), a.dln, a.dqkv], bt * h, "att dv bwd")
            # dscores = softmax backward, times 1/sqrt(d); dq = dscores k; dk = dscores^T q
            await r("transformer_attention", "softmax_causal_backward", att.PARAMS, dict(
                T=t, rows=bt * h * t, scale=1 / math.sqrt(d), pad=0), [A("att"), a.datt],
                _rows_grid(bt * h * t), "att softmax bwd")
            for c_off, b_off, flags, what in ((0, c, mm.K_UPTO_ROW, "att dq bwd"),
                                              (c, 0, mm.TRANS_A | mm.K_FROM_ROW, "att dk bwd")):
                await self._mm(r, mm.params(
                    t, d, t, flags, lda=t, ldb=3 * c, ldc=3 * c, inner=h, b_off=b_off, c_off=c_off,
                    a_so=st["so"], a_si=st["si"], b_so=sq["so"], b_si=sq["si"], c_so=sq["so"], c_si=sq["si"]),
                    [a.datt, A("qkv"), a.dqkv], bt * h, what)
            await self._linear_backward(r, a, a.dqkv, A("ln1"), p + "attn.c_attn.weight",
                                        p + "attn.c_attn.bias", a.dln, m, 3 * c, c, label="qkv bwd")
            await self._layernorm_backward(r, a, x, p + "ln_1", A("stats1"), a.dln)
        # embeddings: dres holds d(x0) = d(wte[idx] + wpe[t]); the token embedding's gradient in
        # parts after the head's, then grads[wte] = the sum of them all
        chunks = embed_chunks(m)
        await r("transformer_embedding", "embed_backward_wte", emb.EMBED_PART, dict(
            M=m, C=c, V=v, chunk=EMBED_CHUNK, out_off=head_parts * v * c), [a.idx, a.dres, a.head_slabs],
            (-(-c // 64), v, chunks), "embed bwd wte")
        await r("transformer_elementwise", "colsum", ew.COLSUM, dict(
            rows=head_parts + chunks, cols=v * c, chunk=head_parts + chunks, out_off=wte),
            [a.head_slabs, self.grads], (-(-v * c // 64), 1, 1), "embed bwd wte")
        u = dict(M=m, T=t, C=c, V=v, wte_off=wte, wpe_off=L.offset("transformer.wpe.weight"))
        await r("transformer_embedding", "embed_backward_wpe", emb.EMBED, u, [a.dres, self.grads],
                ew.grid_1d(t * c), "embed bwd wpe")

    async def record_optimizer(self, plan, sched) -> None:
        """Clip by the global gradient norm and take an AdamW step (hyperparameters from config,
        learning rate and bias corrections from the schedule uniform)."""
        r = _Recorder(self.backend, plan)
        cfg, n = self.config, self.layout.n
        groups = -(-n // NORM_GROUP)
        await r("transformer_adamw", "reduce_sum", adam.REDUCE, dict(n=n, per_group=NORM_GROUP, out_off=0,
                flags=adam.SQUARE), [self.grads, self.norm_part], ew.grid_1d(groups, 1), "grad norm")
        await r("transformer_adamw", "reduce_sum", adam.REDUCE, dict(n=groups, per_group=groups, out_off=0,
                flags=0), [self.norm_part, self.state], (1, 1, 1), "grad norm")
        await r("transformer_adamw", "adamw", adam.ADAM, dict(
            n=n, n_decay=self.layout.n_decay, beta1=cfg.beta1, beta2=cfg.beta2, eps=cfg.eps,
            clip=cfg.grad_clip, gscale=1.0 / self.loss_scale), [sched, self.state, self.params, self.grads, self.m1, self.m2], ew.grid_1d(n),
            "adamw")
