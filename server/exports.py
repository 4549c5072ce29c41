"""Models out of the playground in formats other tools load, and the code that loads them.

    GET /api/runs/{id}/model.onnx  a random_forest run's forest as ONNX (ai.onnx.ml
                                   TreeEnsembleRegressor / TreeEnsembleClassifier), made with the
                                   `onnx` package. 404 unknown run (or deleted while its export
                                   was made); 409 not a forest, or no forest to export (no stored
                                   model and no seed, or its job fails now); 422 over a cap or a
                                   job limit, naming it; 501 without `onnx`; 503 with Retry-After
                                   when the file cannot be written (a full disk), leaving none
    GET /api/runs/{id}/snippet     text/plain: a short Python program that loads the run's
                                   download (server/snippets.py); the page shows it beside the
                                   download links. 404 unknown run, 409 a kind with no download

Where the forest comes from: the run's own model when the client stored it (`extra.model`, the
JSON format of py_core.forest.export, checked whole and bounded first by its `check`: 409
naming the field, e.g. extra.model.trees[0].left[3], before any process is sized by it), else py_core's forest job run again on the server with the
run's job: the same rows, parameters and seed give the page's trees (py_core-reference is the
executable specification of the page's kernels). The job is checked against the caps of
server/jobcost.py first, then runs in a process of its own (server/runners/task.py `run_alone`)
under the comparison jobs' memory limit (--job-memory-mb) and the shorter of --export-timeout and
--job-timeout. Exports wait in a bounded queue (server/bounded.py): `export_workers` at once (as
many jobs of --job-memory-mb as the machine's memory holds, at least one), `export_queue` more
waiting, then 503 at once; a client that leaves cancels its export (its process is killed). Two
askers of one run's export take turns: the second finds the file the first made. The file is kept
under <data_dir>/exports/<run id>.v2.onnx (the graph's version), and removed with its run.

The ONNX graph takes "X": float32 [rows, features], the features in the run's order after the
page's own preprocessing (categories as codes, missing values as the training medians: the
model's "data" description, kept in the ONNX metadata as JSON), and gives
    regression       "variable": float32 [rows, 1], the mean over trees of the leaf values
    classification   "label": [rows], the class (int64 when the classes are integers, string
                     when they are strings, else the index into metadata "classes") of the
                     largest probability, the first of equals, as py_core predicts; and
                     "probabilities": float32 [rows, classes], the mean leaf class fractions
The leaf values are summed in f32 and divided by the number of trees, as py_core does.
A split sends x[feature] <= threshold left (BRANCH_LEQ), as py_core does; py_core compares x
rounded to f32 with an f32 threshold, as onnxruntime does with its f32 input.
"""
from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import os
import threading
import traceback
import uuid
from contextlib import asynccontextmanager
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse
from starlette.routing import Route

from py_core.jobs.kinds import KINDS, kind
from server import jobcost, snippets
from server.bounded import BoundedQueue, unless_disconnected
from server.comparisons import job_problem
from server.errors import STORAGE_ERRNOS, ClientError

log = logging.getLogger(__name__)
ONNX_MEDIA = "application/octet-stream"


class ExportError(Exception):
    """Why a run's forest cannot be exported (a 409 for the client)."""


# -- the conversion ------------------------------------------------------------------------------

def forest_to_onnx(model: dict) -> bytes:
    """py_core.forest's JSON format (plus its "data" description) -> ONNX bytes."""
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
                w_val.append(float(v))
    # The ensemble sums the leaf values in f32 and a Div takes their mean, as py_core does (its
    # sums of class fractions are then exact where the leaves are pure, and so are its ties).
    count = helper.make_tensor("n_trees", TensorProto.FLOAT, [], [float(n_trees)])
    X = helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, F])
    if classify:
        labels = _class_labels(model.get("classes") or list(range(K)))
        classes = _labels_tensor(labels)
        outputs = [helper.make_tensor_value_info("label", classes.data_type, [None]),
                   helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, K])]
        nodes = [
            helper.make_node(
                "TreeEnsembleClassifier", ["X"], ["ensemble_label", "sums"], domain="ai.onnx.ml",
                class_treeids=w_tree, class_nodeids=w_node, class_ids=w_id, class_weights=w_val,
                post_transform="NONE", **labels, **attrs),
            helper.make_node("Div", ["sums", "n_trees"], ["probabilities"]),
            # The ensemble's own label is not py_core's: with two classes onnxruntime takes the
            # second whenever its score is above 0. The label is the first class of the largest
            # probability (ArgMax keeps the first of equals), as py_core's predict.
            helper.make_node("ArgMax", ["probabilities"], ["index"], axis=1, keepdims=0),
            helper.make_node("Gather", ["classes", "index"], ["label"], axis=0)]
        initializers = [count, classes]
    else:
        outputs = [helper.make_tensor_value_info("variable", TensorProto.FLOAT, [None, 1])]
        nodes = [
            helper.make_node(
                "TreeEnsembleRegressor", ["X"], ["sums"], domain="ai.onnx.ml", n_targets=1,
                target_treeids=w_tree, target_nodeids=w_node, target_ids=w_id,
                target_weights=w_val, aggregate_function="SUM", post_transform="NONE", **attrs),
            helper.make_node("Div", ["sums", "n_trees"], ["variable"])]
        initializers = [count]
    graph = helper.make_graph(nodes, "playground_forest", [X], outputs, initializer=initializers)
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


def _class_labels(classes: list) -> dict:
    """The classifier's label attribute: the classes themselves when all are integers or all
    strings, else their indices."""
    if all(isinstance(c, int) and not isinstance(c, bool) for c in classes):
        return {"classlabels_int64s": list(classes)}
    if all(isinstance(c, str) for c in classes):
        return {"classlabels_strings": list(classes)}
    return {"classlabels_int64s": list(range(len(classes)))}


def _labels_tensor(labels: dict):
    """The labels as the constant "classes" that the label output gathers from."""
    from onnx import TensorProto, helper
    if "classlabels_strings" in labels:
        values = labels["classlabels_strings"]
        return helper.make_tensor("classes", TensorProto.STRING, [len(values)],
                                  [v.encode() for v in values])
    values = labels["classlabels_int64s"]
    return helper.make_tensor("classes", TensorProto.INT64, [len(values)], values)


# -- the rebuild, in a job process ---------------------------------------------------------------

def rebuild_forest(job: dict, data_dir: Path) -> dict:
    """The run's forest in the JSON format, fit again by py_core on the server (the reference
    backend; the native one when the job is too large for plain Python)."""
    import asyncio

    from py_core.forest.export import read_bytes
    from py_core.jobs import JobError, run_job
    from server.runners.common import server_context
    from server.runners.pycore_runner import REFERENCE_CELLS
    rows, cols, _ = jobcost.shape(job.get("dataset"), data_dir)
    backend = None
    if rows * cols * jobcost.params(job)["n_estimators"] > REFERENCE_CELLS:
        try:
            from py_core.gpu.native import NativeBackend
            backend = NativeBackend()
        except Exception as exc:  # no wgpu-native, no adapter
            raise ExportError("this forest is too large to rebuild on the server's CPU and the "
                              f"server has no WebGPU adapter ({type(exc).__name__})") from None
    if backend is None:
        from py_core.gpu.reference import ReferenceBackend
        backend = ReferenceBackend()
    try:
        result = asyncio.run(run_job(job, backend, server_context(data_dir)))
    except JobError as exc:  # its data set deleted since, its parameters refused
        raise ExportError(f"the forest's job fails on the server now: {exc}") from None
    head, flat = read_bytes(result["model"]["binary"])
    return {**head, "trees": flat.dicts()}


def build_onnx(request: dict) -> dict:
    """A job process's answer to {"task": "onnx", "job", "data_dir", "model" (or None), "out"}:
    writes the ONNX file to "out" (the server's .part name: the server moves it into place) and
    answers {"status": "done"}, or {"status": "failed", "error"} (with "errno" when the file could
    not be written: a full disk); never raises, and leaves no partial file."""
    try:
        model = request.get("model") or rebuild_forest(request["job"], Path(request["data_dir"]))
        data = forest_to_onnx(model)
        out = Path(request["out"])
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(data)
        except OSError as exc:
            out.unlink(missing_ok=True)
            return {"status": "failed", "errno": exc.errno,
                    "error": f"the export could not be written: {exc.strerror or exc}"}
        return {"status": "done", "bytes": len(data)}
    except ExportError as exc:
        return {"status": "failed", "error": str(exc)}
    except (KeyError, TypeError, ValueError) as exc:
        return {"status": "failed", "error": f"the forest cannot be converted: {exc}",
                "traceback": traceback.format_exc(limit=20)}
    except Exception as exc:
        return {"status": "failed", "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(limit=20)}


# -- the routes ----------------------------------------------------------------------------------

async def _run_of(request: Request) -> dict:
    from server.runs import UUID_RE
    run_id = request.path_params["id"]
    if not UUID_RE.match(run_id):
        raise ClientError(404, "no run with this id", field="id")
    row = await request.app.state.store.read(lambda conn: conn.execute(
        "SELECT body FROM runs WHERE id = ?", (run_id.lower(),)).fetchone())
    if row is None:
        raise ClientError(404, "no run with this id", field="id")
    return json.loads(row["body"])


# The graph's version, in the kept file's name: a file written by an earlier graph is not served
# (version 1, <run id>.onnx, took onnxruntime's own label: wrong for two classes).
GRAPH_VERSION = 2


def onnx_path(data_dir, run_id: str, version: int = GRAPH_VERSION) -> Path:
    name = f"{run_id}.onnx" if version == 1 else f"{run_id}.v{version}.onnx"
    return Path(data_dir) / "exports" / name


async def get_onnx(request: Request) -> FileResponse:
    run = await _run_of(request)
    found = kind(run["kind"])  # what a kind exports is its Kind's (py_core/jobs/kinds.py)
    others = [e for e in (found.exports if found is not None else ()) if e != "onnx"]
    if found is None or "onnx" not in found.exports:
        onnx = " or ".join(k for k in KINDS if "onnx" in kind(k).exports)
        raise ClientError(409, f"only a {onnx} run exports to ONNX; this run is a {run['kind']}"
                          + (f" (its weights download from the page as {', '.join(others)})"
                             if others else ""))
    settings = request.app.state.settings
    path = onnx_path(settings.data_dir, run["id"])

    async def queued(cancel: threading.Event) -> None:
        async with request.app.state.exports.slot(run["id"]):
            if not path.is_file():  # a second asker of the same run finds the file made
                await _build(run, path, settings, request.app.state.store, cancel)

    if not path.is_file():
        await unless_disconnected(request, queued)
    return FileResponse(path, media_type=ONNX_MEDIA, filename=snippets.file_name(run))


def export_workers(settings) -> int:
    """Exports built at once: the setting, but no more jobs of --job-memory-mb than the machine's
    memory holds (one at least)."""
    if not settings.job_memory_mb:
        return settings.export_workers
    memory_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20
    return max(1, min(settings.export_workers, int(memory_mb // settings.job_memory_mb)))


def _time_limit(settings) -> tuple[float, str]:
    """An export's time limit (0: none) and the flag that set it: the shorter one."""
    limits = [(s, flag) for s, flag in ((settings.export_timeout_s, "--export-timeout"),
                                        (settings.job_timeout_s, "--job-timeout")) if s]
    return min(limits) if limits else (0, "")


async def _build(run: dict, path: Path, settings, store, cancel: threading.Event) -> None:
    from server.runners.task import run_alone
    if importlib.util.find_spec("onnx") is None:
        raise ClientError(501, "this server cannot write ONNX: the onnx package is not installed "
                          "(pip install onnx, or the server's extra: pip install '.[server]')")
    model = (run.get("extra") or {}).get("model")
    model = model if isinstance(model, dict) and "trees" in model else None
    job = run.get("config")
    if model is not None:  # a client's: checked whole before a process is sized by it
        from py_core.forest.export import FormatError, check
        try:
            await asyncio.to_thread(check, model)
        except FormatError as exc:
            raise ClientError(409, f"this run's stored model cannot be converted: {exc.message}",
                              field=f"extra.model.{exc.field}") from None
    if model is None:
        problem = job_problem(run)
        if problem is not None:
            raise ClientError(409, f"this run stored no model and {problem}", field="config")
        if (job.get("params") or {}).get("random_state") is None:
            raise ClientError(409, "this run stored no model and has no seed "
                              "(config.params.random_state): the server cannot rebuild the same "
                              "forest", field="config.params.random_state")
        try:
            await asyncio.to_thread(jobcost.check, job, settings.data_dir,
                                    jobcost.caps_of(settings))
        except jobcost.Refused as exc:
            raise ClientError(422, str(exc), field=exc.field) from None
    timeout_s, flag = _time_limit(settings)
    part = path.with_name(f"{path.stem}.{uuid.uuid4().hex[:8]}.part")
    try:
        job_call = asyncio.ensure_future(asyncio.to_thread(run_alone, {
            "task": "onnx", "job": job, "model": model, "data_dir": str(settings.data_dir),
            "out": str(part)}, timeout_s, settings.job_memory_mb, cancel.is_set, flag))
        try:
            answer = await asyncio.shield(job_call)
        except asyncio.CancelledError:  # the client left: its process is killed, then the slot freed
            cancel.set()
            await job_call
            raise
        if answer.get("traceback"):
            log.warning("ONNX export of run %s failed:\n%s", run["id"], answer["traceback"])
        if answer.get("errno") in STORAGE_ERRNOS:  # 503 with Retry-After, as every full disk
            raise OSError(answer["errno"], answer["error"])
        if answer["status"] != "done":
            status = 422 if answer.get("limit") else 409
            raise ClientError(status, f"no ONNX export of this run: {answer['error']}")
        # The run may have been deleted while its export was made: its file must not outlive it.
        # Deleting commits, then removes the file (forget): a check after the move sees the
        # delete, or comes before it and the delete's forget removes the file.
        await asyncio.to_thread(part.replace, path)
        if not await store.read(lambda conn: conn.execute(
                "SELECT 1 FROM runs WHERE id = ?", (run["id"],)).fetchone()):
            path.unlink(missing_ok=True)
            raise ClientError(404, "the run was deleted while its export was made: nothing kept",
                              field="id")
    finally:
        part.unlink(missing_ok=True)  # a limit or a cancel stopped the job mid-write


async def get_snippet(request: Request) -> PlainTextResponse:
    run = await _run_of(request)
    text = snippets.for_run(run)
    if text is None:
        raise ClientError(409, f"a {run['kind']} run has no model to download, so no snippet")
    return PlainTextResponse(text)


@asynccontextmanager
async def lifespan(app):
    app.state.exports = BoundedQueue(export_workers(app.state.settings),
                                     app.state.settings.export_queue, "ONNX exports",
                                     "this run's export")

    def forget(run_id: str) -> None:  # a deleted (or retired) run's export goes with it
        for version in range(1, GRAPH_VERSION + 1):
            onnx_path(app.state.settings.data_dir, run_id, version).unlink(missing_ok=True)

    app.state.on_run_deleted.append(forget)
    for part in (Path(app.state.settings.data_dir) / "exports").glob("*.part"):
        part.unlink(missing_ok=True)  # a server stopped mid-export left it
    try:
        yield
    finally:
        app.state.on_run_deleted.remove(forget)


routes = [Route("/api/runs/{id}/model.onnx", get_onnx, methods=["GET"]),
          Route("/api/runs/{id}/snippet", get_snippet, methods=["GET"])]
