"""server/exports.py when the disk or the run goes away mid-export (issue 31): a full disk answers
503 with Retry-After and leaves no partial file; a run deleted while its export was made leaves
no export behind. The run holds its model (extra.model), so no forest is fit again."""
from __future__ import annotations

import asyncio
import resource
import uuid

import pytest

from py_core.forest import RandomForestRegressor
from server import exports
from server.runners import task

pytest.importorskip("onnx")


@pytest.fixture
def run(client):
    """A stored forest run with its model: 10 trees of depth 6 on a tenth of diabetes."""
    from sklearn.datasets import load_diabetes
    X, y = load_diabetes(return_X_y=True)
    forest = RandomForestRegressor(n_estimators=10, max_depth=6, random_state=0)
    asyncio.run(forest.fit(X[:60].tolist(), y[:60].tolist()))
    run = {"id": str(uuid.uuid4()), "kind": "random_forest", "backend": "webgpu",
           "config": {"kind": "random_forest", "dataset": "diabetes", "target": "target"},
           "extra": {"model": forest.to_dict()}}
    assert client.post("/api/runs", json=run).status_code == 201
    return run


def _exports(settings) -> list[str]:
    folder = settings.data_dir / "exports"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_a_full_disk_answers_503_and_leaves_no_part(client, settings, run, monkeypatch):
    """The export's process may write at most 4 KB a file (RLIMIT_FSIZE: a write past it fails
    as on a full disk); the ONNX file is larger."""
    spawn = task.JobProcess.__init__

    def small_disk(self):
        spawn(self)
        resource.prlimit(self.proc.pid, resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))

    monkeypatch.setattr(task.JobProcess, "__init__", small_disk)
    r = client.get(f"/api/runs/{run['id']}/model.onnx")
    assert r.status_code == 503 and r.headers["retry-after"], r.text
    assert "could not be written" in r.json()["error"]["message"]
    assert _exports(settings) == []  # no .part, no export
    monkeypatch.undo()  # space again: the same request succeeds
    r = client.get(f"/api/runs/{run['id']}/model.onnx")
    assert r.status_code == 200 and len(r.content) > 4096
    assert _exports(settings) == [exports.onnx_path(settings.data_dir, run["id"], 2).name]


def test_a_run_deleted_while_its_export_is_made_leaves_no_export(client, settings, run,
                                                                  monkeypatch):
    made = task.run_alone

    def deleted_meanwhile(request, *limits):
        answer = made(request, *limits)
        assert client.delete(f"/api/runs/{run['id']}").status_code == 204
        return answer

    monkeypatch.setattr(task, "run_alone", deleted_meanwhile)
    r = client.get(f"/api/runs/{run['id']}/model.onnx")
    assert r.status_code == 404 and "deleted while its export" in r.json()["error"]["message"]
    assert _exports(settings) == []
