"""Models out of the playground in formats other tools load.

    GET /api/runs/{id}/model.onnx   a random_forest run's forest as ONNX (ai.onnx.ml
                                    TreeEnsembleRegressor / TreeEnsembleClassifier), made here
                                    with the `onnx` package; 404 for an unknown run, 409 for a
                                    run that is not a forest or cannot be rebuilt, 422 over caps

Where the forest comes from: the run's own model when the page stored it (`extra.model`, the
`RandomForest*.to_dict()` of py_core.forest.export), else py_core's forest job run again on the
server with the run's job (same rows, parameters and seed give the same trees as the page's:
py_core-reference is the executable specification of the page's kernels). Rebuilt forests are
cached under <data_dir>/exports/.

The ONNX graph takes "X": float32 [rows, features], the features in the run's order after the
page's own preprocessing (categories as codes, missing values as the training medians: the
model's "data" description, kept in the ONNX metadata as JSON), and gives
    regression       "variable": float32 [rows, 1], the mean over trees of the leaf values
    classification   "label": int64 [rows] (class index into metadata "classes") and
                     "probabilities": float32 [rows, classes], the mean leaf class fractions
A split sends x[feature] <= threshold left (BRANCH_LEQ), as py_core does.
"""
from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from server.errors import ClientError

log = logging.getLogger(__name__)
ONNX_MEDIA = "application/octet-stream"


def forest_to_onnx(model: dict) -> bytes:
    """py_core.forest's to_dict() (plus its "data" description) -> ONNX bytes."""
    import onnx
    from onnx import TensorProto, helper

    trees = model["trees"]
    n_trees, F = len(trees), int(model["n_features"])
    classify = model.get("estimator") == "RandomForestClassifier"
    K = int(model.get("n_outputs", 1))
    attrs = {k: [] for k in ("nodes_treeids", "nodes_nodeids", "nodes_featureids",
                             "nodes_values", "nodes_modes", "nodes_truenodeids",
                             "nodes_falsenodeids")}
    w_tree, w_node, w_id, w_val = [], [], [], []
    for t, tree in enumerate(trees):
        for node, (f, thr, left, right, value) in enumerate(zip(
                tree["feature"], tree["threshold"], tree["left"], tree["right"], tree["value"])):
            leaf = f < 0
            attrs["nodes_treeids"].append(t)
            attrs["nodes_nodeids"].append(node)
            attrs["nodes_featureids"].append(0 if leaf else int(f))
            attrs["nodes_values"].append(0.0 if leaf else float(thr))
            attrs["nodes_modes"].append("LEAF" if leaf else "BRANCH_LEQ")
            attrs["nodes_truenodeids"].append(0 if leaf else int(left))
            attrs["nodes_falsenodeids"].append(0 if leaf else int(right))
            if not leaf:
                continue
            values = value if classify else [value]
            for k, v in enumerate(values):
                w_tree.append(t)
                w_node.append(node)
                w_id.append(k)
                w_val.append(float(v) / n_trees)  # the sum over trees is then their mean
    X = helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, F])
    if classify:
        outputs = [helper.make_tensor_value_info("label", TensorProto.INT64, [None]),
                   helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, K])]
        node = helper.make_node(
            "TreeEnsembleClassifier", ["X"], ["label", "probabilities"], domain="ai.onnx.ml",
            class_treeids=w_tree, class_nodeids=w_node, class_ids=w_id, class_weights=w_val,
            classlabels_int64s=list(range(K)), post_transform="NONE", **attrs)
    else:
        outputs = [helper.make_tensor_value_info("variable", TensorProto.FLOAT, [None, 1])]
        node = helper.make_node(
            "TreeEnsembleRegressor", ["X"], ["variable"], domain="ai.onnx.ml", n_targets=1,
            target_treeids=w_tree, target_nodeids=w_node, target_ids=w_id, target_weights=w_val,
            aggregate_function="SUM", post_transform="NONE", **attrs)
    graph = helper.make_graph([node], "playground_forest", [X], outputs)
    onnx_model = helper.make_model(graph, producer_name="webgpu-playground", opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
    onnx_model.ir_version = 8  # onnxruntime 1.17+ reads it
    meta = {"estimator": model.get("estimator", ""), "n_features": str(F),
            "classes": json.dumps(model.get("classes", [])),
            "data": json.dumps(model.get("data") or {})}
    for key, value in meta.items():
        onnx_model.metadata_props.append(onnx.StringStringEntryProto(key=key, value=value))
    onnx.checker.check_model(onnx_model)
    return onnx_model.SerializeToString()


def _exports_dir(data_dir) -> Path:
    return Path(data_dir) / "exports"


def rebuild_forest(job: dict, data_dir: Path) -> dict:
    """The run's forest, fit again by py_core on the server (reference backend; the native one
    when wgpu-native is installed and the job is too large for plain Python)."""
    from py_core.jobs import run_job
    from server.jobcost import shape
    from server.runners.common import server_context
    from server.runners.pycore_runner import REFERENCE_CELLS
    rows, cols, _ = shape(job.get("dataset"), data_dir)
    trees = (job.get("params") or {}).get("n_estimators", 100)
    backend = None
    if rows * cols * (trees if isinstance(trees, int) else 100) > REFERENCE_CELLS:
        try:
            from py_core.gpu.native import NativeBackend
            backend = NativeBackend()
        except Exception as exc:  # no wgpu-native, no adapter
            raise ClientError(409, "this forest is too large to rebuild on the server's CPU and "
                              f"the server has no WebGPU adapter ({type(exc).__name__}); "
                              "download the model from the page instead") from None
    if backend is None:
        from py_core.gpu.reference import ReferenceBackend
        backend = ReferenceBackend()
    result = asyncio.run(run_job(job, backend, server_context(data_dir)))
    if "model" not in result:
        raise ClientError(409, "the forest job gave no model: "
                          + str((result.get("error") or {}).get("message", "")))
    return result["model"]


async def get_onnx(request: Request) -> Response:
    from server.runs import UUID_RE
    run_id = request.path_params["id"]
    if not UUID_RE.match(run_id):
        raise ClientError(404, "no run with this id", field="id")
    run_id = run_id.lower()
    row = await request.app.state.store.read(lambda conn: conn.execute(
        "SELECT body FROM runs WHERE id = ?", (run_id,)).fetchone())
    if row is None:
        raise ClientError(404, "no run with this id", field="id")
    run = json.loads(row["body"])
    if run.get("kind") != "random_forest":
        raise ClientError(409, f"only a random_forest run exports to ONNX; this is a {run['kind']}")
    data_dir = request.app.state.settings.data_dir
    cached = _exports_dir(data_dir) / f"{run_id}.onnx"
    if cached.is_file():
        data = cached.read_bytes()
    else:
        model = (run.get("extra") or {}).get("model")
        if not isinstance(model, dict):
            job = run.get("config") or {}
            if (job.get("params") or {}).get("random_state") is None:
                raise ClientError(409, "this run has no seed (params.random_state): the server "
                                  "cannot rebuild the same forest")
            queue = getattr(request.app.state, "comparisons", None)
            if queue is not None:
                from server import jobcost
                try:
                    await asyncio.to_thread(queue.check_caps, run)
                except jobcost.OverCap as exc:
                    raise ClientError(422, str(exc), field=exc.field) from None
            model = await asyncio.to_thread(rebuild_forest, job, Path(data_dir))
        try:
            data = await asyncio.to_thread(forest_to_onnx, model)
        except (KeyError, TypeError, ValueError) as exc:
            raise ClientError(409, f"the stored model cannot be converted: {exc}") from None
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_suffix(".part")
            tmp.write_bytes(data)
            tmp.replace(cached)
        except OSError:
            log.warning("exports: could not cache %s", cached, exc_info=True)
    return Response(data, media_type=ONNX_MEDIA, headers={
        "Content-Disposition": f'attachment; filename="forest-{run_id[:8]}.onnx"'})


routes = [Route("/api/runs/{id}/model.onnx", get_onnx, methods=["GET"])]
