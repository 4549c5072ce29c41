"""PyTorch's twin (server/torch_gpt.py) on the lent GPU's CUDA, without the server: the jobs of
issue 33's report (shakespeare_char b64 in fp16 autocast twice and f32, 8x8x512 T128 b32 fp16,
tiny f32), their step times and loss curves to $OUT/torch.json. From the project root, with the
server's wheels installed as run_suite.sh installs them:
    PYTHONPATH=/tmp/site:$PWD python3 tools/gpu/torch_jobs.py"""
import json
import os

from py_core.transformer import builtin_text
from server.torch_gpt import train_torch

SC = {"preset": "shakespeare_char", "batch_size": 64, "steps": 200, "eval_interval": 100, "seed": 1,
      "sample_chars": 20}
BIG = {"preset": "shakespeare_char", "n_layer": 8, "n_head": 8, "n_embd": 512, "block_size": 128,
       "batch_size": 32, "steps": 60, "eval_interval": 60, "seed": 1, "sample_chars": 2}
TINY = {"preset": "tiny", "batch_size": 12, "steps": 200, "eval_interval": 50, "seed": 1, "sample_chars": 2}
JOBS = [("sc fp16", {**SC, "torch_mode": "fp16"}), ("sc fp16 again", {**SC, "torch_mode": "fp16"}),
        ("sc f32", {**SC, "torch_mode": "f32"}), ("8x512 fp16", {**BIG, "torch_mode": "fp16"}),
        ("tiny f32", {**TINY, "torch_mode": "f32"})]

if __name__ == "__main__":
    text = builtin_text("shakespeare")
    out = {}
    for label, params in JOBS:
        r = train_torch(text, params, device="cuda")
        m = r["metrics"]
        out[label] = {"timings": r["timings"], "val_loss": m["val_loss"], "val_curve": m["val_curve"],
                      "loss_curve": m["loss_curve"]}
        print(label, json.dumps(r["timings"]), "val", m["val_loss"], flush=True)
    with open(os.path.join(os.environ.get("OUT", "."), "torch.json"), "w") as f:
        json.dump(out, f)
