"""The PyTorch twin of py_core's transformer: the same GPT, weights, batches and schedule.

The architecture is nanoGPT's model.py (pre-LayerNorm blocks, causal self-attention, GELU MLP,
tied LM head) with GELU's tanh approximation, as py_core's kernels compute it. The initial
weights, the vocabulary, the batch offsets and the learning-rate schedule come from py_core
itself, so a run here starts from bit-identical weights and sees the same characters in the same
order as the run in the browser; their loss curves can be laid on each other.
"""
from __future__ import annotations

import contextlib
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

from py_core.rng import init_key, quantile_table, scale_of, stream_key, uniform
from py_core.transformer import (
    STREAM_SAMPLE,
    STREAM_TRAIN,
    STREAM_VAL,
    ParamLayout,
    TransformerConfig,
    Vocab,
    batch_offsets,
    choose,
    split,
)
from py_core.transformer.config import TORCH_MODES, parse_job_params


class SelfAttention(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.n_head = cfg.n_head
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))  # (B, H, T, d)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))


class Block(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd)
        self.attn = SelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(cfg.n_embd, 4 * cfg.n_embd),
                                      c_proj=nn.Linear(4 * cfg.n_embd, cfg.n_embd)))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        h = F.gelu(self.mlp.c_fc(self.ln_2(x)), approximate="tanh")
        return x + self.mlp.c_proj(h)


class GPT(nn.Module):
    def __init__(self, cfg: TransformerConfig, vocab_size: int):
        super().__init__()
        self.config = cfg
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, cfg.n_embd), wpe=nn.Embedding(cfg.block_size, cfg.n_embd),
            h=nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer)), ln_f=nn.LayerNorm(cfg.n_embd)))
        self.lm_head = nn.Linear(cfg.n_embd, vocab_size, bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied, as nanoGPT

    def forward(self, idx, targets=None):
        t = idx.shape[1]
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(t, device=idx.device))
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def load_flat(model: GPT, flat, layout: ParamLayout) -> GPT:
    """Copy py_core's flat weights (array of float32 or a tensor, ParamLayout order) into the model."""
    every = flat if isinstance(flat, torch.Tensor) else torch.frombuffer(bytearray(flat.tobytes()),
                                                                          dtype=torch.float32)
    state = model.state_dict()
    with torch.no_grad():
        for p in layout:
            state[p.name].copy_(every[p.offset:p.offset + p.size].view(p.shape))
    return model


def flat_weights(model: GPT, layout: ParamLayout) -> torch.Tensor:
    state = model.state_dict()
    return torch.cat([state[p.name].detach().reshape(-1).float().cpu() for p in layout])


def _mul32(x: torch.Tensor, c: int) -> torch.Tensor:
    """x * c modulo 2**32 for int64 x < 2**32, without overflowing int64 (16-bit halves of c)."""
    return (x * (c & 0xFFFF) + ((x * (c >> 16)) << 16)) & 0xFFFFFFFF


def _mix32(x: torch.Tensor) -> torch.Tensor:
    x = x ^ (x >> 16)
    x = _mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _mul32(x, 0x846CA68B)
    return x ^ (x >> 16)


def normals_torch(key: int, n: int, std: float, device="cpu") -> torch.Tensor:
    """py_core's normals_fixed (the init_normal kernel) vectorised: the same float32 bits."""
    table = torch.tensor(quantile_table().tolist(), dtype=torch.int64, device=device)
    u = _mix32(_mix32(torch.arange(n, dtype=torch.int64, device=device) ^ key))
    r = (u & 0x7FFFFFFF).clamp(min=1)
    octave = torch.frexp(r.double())[1].long() - 1  # floor(log2 r), exact below 2**53
    b = (octave - 8).clamp(min=0)
    rem = r & ((1 << b) - 1)
    f = torch.where(b >= 16, rem >> (b - 16).clamp(min=0), rem << (16 - b).clamp(min=0))
    j = torch.where(octave >= 8, (r >> b) & 255, (r << (8 - octave).clamp(min=0)) & 255)
    f = torch.where(octave >= 8, f, torch.zeros_like(f))
    i = octave * 256 + j
    z = table[i] - (((table[i] - table[i + 1]) * f) >> 16)
    z = torch.where((u >> 31) != 0, -z, z)
    return z.to(torch.float32) * torch.tensor(scale_of(std), dtype=torch.float32, device=device)


def init_flat(layout: ParamLayout, seed: int, device="cpu") -> torch.Tensor:
    """py_core's init_weights(layout, seed) with torch ops on `device` (a fraction of a second
    on a GPU, where plain Python takes a minute for shakespeare_char's 10.7M weights): the same
    float32 bits, as tests/test_transformer_parity.py checks."""
    flat = torch.zeros(layout.n, dtype=torch.float32, device=device)
    for p in layout:
        if p.init == "normal":
            flat[p.offset:p.offset + p.size] = normals_torch(init_key(seed, p.name), p.size, p.std, device)
        elif p.init == "ones":
            flat[p.offset:p.offset + p.size] = 1.0
    return flat


def make_model(cfg: TransformerConfig, vocab_size: int, device="cpu") -> GPT:
    """The GPT with py_core's initial weights for cfg.seed (bit-identical to the browser's)."""
    layout = ParamLayout(cfg, vocab_size)
    return load_flat(GPT(cfg, vocab_size).to(device), init_flat(layout, cfg.seed, device), layout)


def optimizer(model: GPT, cfg: TransformerConfig) -> torch.optim.AdamW:
    """nanoGPT's configure_optimizers: weight decay on the 2-D tensors only."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": cfg.weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps)


def get_batch(data: torch.Tensor, cfg: TransformerConfig, stream: int, counter: int, device):
    """The batch numbered `counter` of a split, from the same offsets as py_core's get_batch kernel."""
    t = cfg.block_size
    offsets = batch_offsets(cfg.seed, stream, counter, cfg.batch_size, len(data) - t)
    x = torch.stack([data[o:o + t] for o in offsets])
    y = torch.stack([data[o + 1:o + 1 + t] for o in offsets])
    return x.to(device), y.to(device)


@torch.no_grad()
def estimate_loss(model, val, cfg, evals: int, device) -> float:
    model.eval()
    total = 0.0
    for i in range(cfg.eval_steps):
        x, y = get_batch(val, cfg, STREAM_VAL, evals * cfg.eval_steps + i, device)
        total += model(x, y)[1].item()
    model.train()
    return total / cfg.eval_steps


@torch.no_grad()
def sample_torch(model, vocab: Vocab, prompt="", n=200, temperature=0.8, top_k=200, seed=0, device="cpu") -> str:
    """py_core's sampler (same RNG, same top-k) on the PyTorch model's logits."""
    prompt = prompt or ("\n" if "\n" in vocab.chars else vocab.chars[0])
    ids = vocab.encode(prompt).tolist()
    key = stream_key(seed, STREAM_SAMPLE)
    model.eval()
    for i in range(n):
        ctx = torch.tensor([ids[-model.config.block_size:]], device=device)
        logits = model(ctx)[0][0, -1].float().cpu().tolist()
        ids.append(choose(logits, temperature, top_k, uniform(key, i)))
    model.train()
    return vocab.decode(ids[-n:])


# PyTorch's precisions, to compare like with like: "f32" (TF32 off), "tf32" (f32 storage, TF32
# tensor-core matmuls on CUDA), "fp16" (autocast float16 with a GradScaler) and "bf16" (autocast
# bfloat16). The page's precision picks the default: f32 -> "f32", mixed -> "fp16" (what the
# page's mixed path is: f16 operands, f32 accumulation and master weights, a loss scale).


def torch_mode(params: dict) -> str:
    """The mode of a job's params: "torch_mode" when given, else the page precision's twin."""
    mode = params.get("torch_mode") or ("fp16" if params.get("precision") == "mixed" else "f32")
    if mode not in TORCH_MODES:
        raise ValueError(f"torch_mode must be one of {', '.join(TORCH_MODES)}, not {mode!r}")
    return mode


@contextlib.contextmanager
def _tf32(enabled: bool):
    """TF32 matmuls on or off for the block (PyTorch's process-wide switches, restored after)."""
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def _sync(device):
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def train_torch(text: str, params: dict, device="cpu", progress=None, should_stop=None) -> dict:
    """Train the twin on `text` with a job's params; the result has the browser run's shape:
    {"metrics": {"loss_curve", "val_loss", "val_curve", "n_params"}, "timings": {"step" (median
    seconds a step, device synchronised around the timed steps), "tokens_per_s", "total"},
    "samples": text}."""
    return train_torch_model(text, params, device, progress, should_stop)[0]


def train_torch_model(text: str, params: dict, device="cpu", progress=None, should_stop=None):
    """(result, model, vocab): train_torch's result and the trained model."""
    t_start = time.perf_counter()
    params = dict(params or {})
    mode = torch_mode(params)
    params.pop("torch_mode", None)
    with _tf32(mode == "tf32"):
        return _train(text, params, mode, device, progress, should_stop, t_start)


def _train(text, params, mode, device, progress, should_stop, t_start):
    cfg, sampling = parse_job_params(params)
    kind = "cuda" if str(device).startswith("cuda") else "cpu"
    half = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(mode)
    autocast = (lambda: torch.autocast(kind, dtype=half)) if half else contextlib.nullcontext
    scaler = torch.amp.GradScaler(kind) if mode == "fp16" else None
    torch.manual_seed(cfg.seed)
    vocab = Vocab.from_text(text)
    train_ids, val_ids = split(vocab.encode(text), cfg.val_fraction)
    train = torch.tensor(train_ids.tolist(), dtype=torch.long)
    val = torch.tensor(val_ids.tolist(), dtype=torch.long)
    model = make_model(cfg, len(vocab), device)
    opt = optimizer(model, cfg)
    n_params = ParamLayout(cfg, len(vocab)).n
    losses = torch.zeros(cfg.steps, device=device)  # kept on the device; read every log_interval
    timed, val_curve, evals, done = [], [], 0, 0
    time_every = max(1, cfg.steps // 20)
    for step in range(cfg.steps):
        if should_stop is not None and should_stop():
            break
        timing = step % time_every == time_every // 2
        if timing:
            _sync(device)
            t0 = time.perf_counter()
        lr = cfg.lr_at(step)
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = get_batch(train, cfg, STREAM_TRAIN, step, device)
        with autocast():
            _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        if scaler is not None:  # as PyTorch's AMP recipe: scale, unscale before clipping, step, update
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
        else:
            loss.backward()
        if cfg.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        if scaler is not None:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        losses[step] = loss.detach()
        if timing:
            _sync(device)
            timed.append(time.perf_counter() - t0)
        done = step + 1
        if done % cfg.eval_interval == 0 or done == cfg.steps:
            with autocast():
                val_curve.append([done, estimate_loss(model, val, cfg, evals, device)])
            evals += 1
        if progress is not None and (done % cfg.log_interval == 0 or done == cfg.steps):
            progress({"stage": "training (PyTorch)", "fraction": done / cfg.steps, "step": done,
                      "loss": losses[step].item()})
    if not val_curve or val_curve[-1][0] != done:
        with autocast():
            val_curve.append([done, estimate_loss(model, val, cfg, evals, device)])
    step_s = statistics.median(timed) if timed else float("nan")
    samples = sample_torch(model, vocab, sampling["prompt"], sampling["sample_chars"], sampling["temperature"],
                           sampling["top_k"], seed=cfg.seed, device=device)
    return {"metrics": {"loss_curve": [[i, v] for i, v in enumerate(losses[:done].tolist())],
                        "val_loss": val_curve[-1][1], "val_curve": val_curve, "n_params": n_params,
                        "torch_mode": mode},
            "timings": {"step": step_s, "tokens_per_s": cfg.batch_size * cfg.block_size / step_s,
                        "total": time.perf_counter() - t_start},
            "samples": samples, "device": str(device)}, model, vocab
