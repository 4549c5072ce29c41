"""ONNX graphs of the playground's tree models, one module a kind, and what they share.

Each kind that exports to ONNX (its Kind's `exports` holds "onnx") has an `Export` here:

    random_forest       forest.py    ai.onnx.ml TreeEnsembleRegressor / TreeEnsembleClassifier
    gradient_boosting   boosting.py  ai.onnx.ml TreeEnsemble (opset 5), then sigmoid / softmax

server/exports.py serves them (GET /api/runs/{id}/model.onnx): the run's stored model when it
holds one (checked whole by `check` first), else the kind's job run again on the server
(`rebuild`), converted by `convert` in a process of its own.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable


class ExportError(Exception):
    """Why a run's model cannot be exported (a 409 for the client)."""


@dataclass(frozen=True)
class Export:
    convert: Callable   # (model in the kind's JSON format, with its "data") -> ONNX bytes
    check: Callable     # (a client's model) -> None; raises a FormatError (.field, .message)
    rebuild: Callable   # (job, data_dir) -> the model, fit again on the server
    version: int        # the graph's version, in the kept file's name: bumped when the graph
                        # changes, so a file an earlier graph wrote is not served


def export_of(kind: str) -> Export | None:
    """The ONNX export of a job kind, or None for a kind without one."""
    from . import boosting, forest
    return {"random_forest": forest.EXPORT, "gradient_boosting": boosting.EXPORT}.get(kind)


def class_labels(classes: list) -> dict:
    """The classifier's labels as an ONNX attribute: the classes themselves when all are integers
    or all strings, else their indices."""
    if all(isinstance(c, int) and not isinstance(c, bool) for c in classes):
        return {"classlabels_int64s": list(classes)}
    if all(isinstance(c, str) for c in classes):
        return {"classlabels_strings": list(classes)}
    return {"classlabels_int64s": list(range(len(classes)))}


def labels_tensor(labels: dict):
    """The labels as the constant "classes" that the label output gathers from."""
    from onnx import TensorProto, helper
    if "classlabels_strings" in labels:
        values = labels["classlabels_strings"]
        return helper.make_tensor("classes", TensorProto.STRING, [len(values)],
                                  [v.encode() for v in values])
    values = labels["classlabels_int64s"]
    return helper.make_tensor("classes", TensorProto.INT64, [len(values)], values)


def label_nodes(scores: str) -> list:
    """"label" from the scores [rows, classes]: the class of the largest, the first of equals
    (ArgMax keeps the first), as py_core predicts."""
    from onnx import helper
    return [helper.make_node("ArgMax", [scores], ["index"], axis=1, keepdims=0),
            helper.make_node("Gather", ["classes", "index"], ["label"], axis=0)]


def finish(graph, model: dict, opsets: tuple, ir_version: int) -> bytes:
    """The ONNX file of `graph`: its opsets ((domain, version), ...), the model's description in
    the metadata (estimator, n_features, classes, and its "data": the features in order, their
    categories) as JSON, checked."""
    import onnx
    from onnx import helper
    onnx_model = helper.make_model(graph, producer_name="webgpu-playground", opset_imports=[
        helper.make_opsetid(domain, version) for domain, version in opsets])
    onnx_model.ir_version = ir_version
    meta = {"estimator": model.get("estimator", ""), "n_features": str(model["n_features"]),
            "classes": json.dumps(model.get("classes", [])),
            "data": json.dumps(model.get("data") or {})}
    for key, value in meta.items():
        onnx_model.metadata_props.append(onnx.StringStringEntryProto(key=key, value=value))
    onnx.checker.check_model(onnx_model)
    return onnx_model.SerializeToString()


def run_again(job: dict, data_dir, small: bool) -> dict:
    """The result of the run's job, run again by py_core on the server: the same rows,
    parameters and seed give the page's model (py_core-reference is the executable specification
    of the page's kernels). On the reference backend when the job is `small` enough for plain
    Python (each kind's rebuild says), else the native one."""
    import asyncio

    from py_core.jobs import JobError, run_job
    from server.runners.common import server_context
    backend = None
    if not small:
        try:
            from py_core.gpu.native import NativeBackend
            backend = NativeBackend()
        except Exception as exc:  # no wgpu-native, no adapter
            raise ExportError("this model is too large to rebuild on the server's CPU and the "
                              f"server has no WebGPU adapter ({type(exc).__name__})") from None
    if backend is None:
        from py_core.gpu.reference import ReferenceBackend
        backend = ReferenceBackend()
    try:
        return asyncio.run(run_job(job, backend, server_context(data_dir)))
    except JobError as exc:  # its data set deleted since, its parameters refused
        raise ExportError(f"the {job.get('kind')} job fails on the server now: {exc}") from None
