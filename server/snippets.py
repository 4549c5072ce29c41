"""The few lines of Python that load a run's download elsewhere, as the page shows them.

    random_forest   forest-<id>.onnx (GET /api/runs/{id}/model.onnx) in onnxruntime
    gradient_boosting  boosting-<id>.json (the page's download: py_core.boosting's JSON format)
                    in plain Python and numpy, no playground code: the format is the program;
                    and its boosting-<id>.onnx in onnxruntime (`onnx`: ?model=onnx)
    transformer     transformer-<id>.safetensors (the page's download) in PyTorch, with nanoGPT's
                    model.py (github.com/karpathy/nanoGPT): the file holds nanoGPT's parameter
                    names and its GPTConfig in the metadata (py_core/transformer/safetensors.py)

<id> is the run id's first 8 characters. Each text runs as it is, next to its file (tests do).
Whatever a run holds goes in as a Python literal (repr), never into a comment (issue 31.2).
Which function writes a kind's snippet, and its file's stem, is the kind's (`Kind.snippet`).
"""
from __future__ import annotations

from py_core.jobs.kinds import kind, load


def _snippet(run: dict) -> tuple | None:
    """(stem, extension, "module:function") of the run's kind (`Kind.snippet`), or None."""
    found = kind(run["kind"])
    return found.snippet if found is not None else None


def file_name(run: dict, ext: str | None = None) -> str:
    """The run's download as its snippet loads it, or its `ext` download (the ONNX export)."""
    stem, own, _ = _snippet(run) or ("model", "bin", None)
    return f"{stem}-{run['id'][:8]}.{ext or own}"


def for_run(run: dict) -> str | None:
    """The snippet for the run's download, or None for kinds without one."""
    snippet = _snippet(run)
    return load(snippet[2])(run) if snippet else None


def _classifies(run: dict) -> bool:
    task = (run.get("config") or {}).get("task")
    if task in ("classification", "regression"):
        return task == "classification"
    return "accuracy" in (run.get("metrics") or {})


# The ONNX snippet's words for each kind that exports ONNX: what the model is, where a missing
# value goes in, what a regression's output is.
ONNX_WORDS = {
    "random_forest": ("The forest", "the feature's training median", "the mean of the trees' leaf values"),
    "gradient_boosting": ("The gradient-boosted trees", "NaN (the trees route it)",
                          "the baseline plus the trees' leaf values"),
}


def onnx(run: dict) -> str | None:
    """The snippet for the run's ONNX download (GET /api/runs/{id}/model.onnx), or None for
    kinds without one."""
    found = kind(run["kind"])
    if found is None or "onnx" not in found.exports or run["kind"] not in ONNX_WORDS:
        return None
    what, missing, mean = ONNX_WORDS[run["kind"]]
    if _classifies(run):
        predict = ('classes = json.loads(meta["classes"])  # the columns of proba, in order\n'
                   'labels, proba = session.run(None, {"X": X})\n'
                   'print(labels.tolist())  # each row\'s class\n'
                   'print(proba.tolist())  # each row\'s probability of each class\n')
    else:
        predict = (f'(pred,) = session.run(None, {{"X": X}})  # [rows, 1]: {mean}\n'
                   'print(pred[:, 0].tolist())\n')
    return f'''# {what} of run {run["id"][:8]} outside the playground: pip install onnxruntime numpy
import json

import numpy as np
import onnxruntime as ort

session = ort.InferenceSession({file_name(run, "onnx")!r})
meta = session.get_modelmeta().custom_metadata_map
data = json.loads(meta["data"])  # the features in order, their categories, training medians
# A row a sample, its columns in the order of data["features"]: a category as its index in
# data["categories"][feature], a missing value as {missing}.
X = np.array([data["medians"]], dtype=np.float32)  # an example row: every feature's median
{predict}'''


def forest(run: dict) -> str:
    return onnx(run)


def transformer(run: dict) -> str:
    return f'''# The transformer of run {run["id"][:8]} in PyTorch: pip install torch safetensors, and put
# nanoGPT's model.py (github.com/karpathy/nanoGPT) next to this file.
import json

import torch
from safetensors import safe_open
from safetensors.torch import load_file

from model import GPT, GPTConfig

path = {file_name(run)!r}
with safe_open(path, "pt") as f:
    meta = f.metadata()
model = GPT(GPTConfig(**json.loads(meta["gpt_config"])))
model.load_state_dict(load_file(path))  # nanoGPT's names and shapes, every one
for block in model.transformer.h:  # trained with GELU's tanh form: the tab's very logits
    block.mlp.gelu = torch.nn.GELU(approximate="tanh")
model.eval()
chars = json.loads(meta["vocab"])  # token i is the character chars[i]
torch.manual_seed(0)
with torch.no_grad():
    out = model.generate(torch.tensor([[0]]), max_new_tokens=200, temperature=0.8, top_k=200)
print("".join(chars[i] for i in out[0].tolist()))
'''


def boosting(run: dict) -> str:
    return f'''# The gradient-boosted trees of run {run["id"][:8]} in plain Python: pip install numpy
import json

import numpy as np

with open({file_name(run)!r}, encoding="utf-8") as f:
    model = json.load(f)  # py_core.boosting's JSON format


def raw_scores(X):
    """[rows, K]: the baseline plus the values of the leaves each row reaches in the trees of
    each output k (tree i is output i % K's)."""
    X = np.asarray(X, dtype=np.float32)  # the trees compare f32 values
    K, rows = model["n_trees_per_iteration"], np.arange(len(X))
    raw = np.tile(np.asarray(model["baseline"], dtype=np.float64), (len(X), 1))
    for i, tree in enumerate(model["trees"]):
        feature, left, right = (np.asarray(tree[k]) for k in ("feature", "left", "right"))
        threshold = np.asarray(tree["threshold"], dtype=np.float32)
        missing_left = np.asarray(tree["missing_left"], dtype=bool)
        sets = [c or [] for c in tree["categories_left"]]  # codes that go left, by node
        in_set = np.zeros((len(feature), max(map(max, filter(None, sets)), default=0) + 2), bool)
        for node, codes in enumerate(sets):
            in_set[node, codes] = True
        categorical = np.array([c is not None for c in tree["categories_left"]])
        node = np.zeros(len(X), dtype=np.int64)
        while (split := feature[node] >= 0).any():
            x = X[rows, np.maximum(feature[node], 0)]
            code = np.clip(np.nan_to_num(x, nan=-1), -1, in_set.shape[1] - 1).astype(np.int64)
            go_left = np.where(categorical[node], in_set[node, code] & (x == code),
                               x <= threshold[node])
            go_left = np.where(np.isnan(x), missing_left[node], go_left)
            node = np.where(split, np.where(go_left, left[node], right[node]), node)
        raw[:, i % K] += np.asarray(tree["value"])[node]
    return raw


def predict_proba(X):
    raw = raw_scores(X)
    if raw.shape[1] == 1:  # two classes: the second's probability is sigmoid(raw)
        p = np.exp(-np.logaddexp(0, -raw[:, 0]))  # 1 / (1 + exp(-raw)), without overflow
        return np.stack([1 - p, p], axis=1)
    e = np.exp(raw - raw.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def predict(X):
    if "classes" not in model:
        return raw_scores(X)[:, 0]
    return [model["classes"][i] for i in predict_proba(X).argmax(axis=1)]  # the first of equals


# A row a sample, its columns in the order of model["data"]["features"]: a category as its
# index in model["data"]["categories"][feature], a missing value as NaN (the trees route it).
X = np.full((1, model["n_features"]), np.nan)  # an example row: every feature missing
print(predict(X))
'''
