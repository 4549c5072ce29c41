"""py_core.browser, the worker's glue, under CPython: every failure leaves it in one shape, and a
stopped job is told by its type (web/worker.js reads `kind`, never the traceback's text)."""
import asyncio
import json
from types import SimpleNamespace

import pytest

from py_core import browser
from py_core.data import parse_csv
from py_core.errors import JobError, Stopped
from py_core.gpu import GPUError, get_backend
from py_core.jobs import Session

SHAPE = {"kind", "message", "line", "column", "field", "detail"}
FOREST = {"kind": "random_forest", "dataset": "synthetic:moons?n_samples=200&noise=0.2&seed=1",
          "target": "y", "params": {"n_estimators": 2, "max_depth": 3, "random_state": 0}}


@pytest.fixture
def session(monkeypatch):
    monkeypatch.setattr(browser, "_session", Session(get_backend("reference")))


def hooks(stop: bool):
    return SimpleNamespace(progress=lambda info: None, shouldStop=lambda: stop, isPaused=lambda: False)


def run(job: dict, stop: bool = False) -> dict:
    text, buffers = asyncio.run(browser.run(json.dumps(job), hooks(stop)))
    return json.loads(text)


def test_a_stopped_job_is_told_by_its_type(session):
    error = run(FOREST, stop=True)["error"]
    assert set(error) == SHAPE and error["kind"] == "stopped", error
    assert error["message"].startswith("stopped") and "Stopped" in error["detail"]
    # a message that only says "Stopped" is no stop: the kind comes from the class
    assert browser.error_of(JobError("Stopped by a typo in the config"))["kind"] == "job"


def test_a_failed_job_is_named_as_its_traceback_ended(session):
    error = run({**FOREST, "target": "no_such_column"})["error"]
    assert set(error) == SHAPE and error["kind"] == "job", error
    assert error["message"].startswith("JobError: ") and "no_such_column" in error["message"]


def test_one_shape_for_data_gpu_and_unexpected_errors():
    with pytest.raises(Exception) as bad_csv:
        parse_csv(b'a,b\n1,"x\n2,3\n', name="quotes.csv")
    data = browser.error_of(bad_csv.value)
    assert data["kind"] == "data" and data["line"] == 2 and data["message"].startswith("quotes.csv, line 2")
    gpu = browser.error_of(GPUError("WebGPU validation error:\n  Buffer usages\n"), named=True)
    assert gpu["kind"] == "gpu" and gpu["message"] == "GPUError: WebGPU validation error: Buffer usages"
    other = browser.error_of(KeyError("x"), named=True)
    assert other["kind"] == "error" and other["message"] == "KeyError: 'x'"
    for error in (data, gpu, other, browser.error_of(Stopped("stopped on request"))):
        assert set(error) == SHAPE


def test_a_result_json_cannot_carry_is_named_where_it_is(session, monkeypatch):
    """A NaN or an infinity in a job's result (an overflowed metric, a plot's point) failed the
    job with json's own words ("Out of range float values are not JSON compliant: inf"), naming
    nothing; the page now reads where the number is."""
    forest = run(FOREST)
    assert "metrics" in forest and "error" not in forest  # the job as it is: a result
    real = browser._session.run

    async def overflowed(job, ctx):
        result = await real(job, ctx)
        result["plots"]["importances"][1]["importance"] = float("inf")
        return result
    monkeypatch.setattr(browser._session, "run", overflowed)
    error = run(FOREST)["error"]
    assert set(error) == SHAPE and error["kind"] == "error", error
    assert error["message"] == ("ValueError: the job's result has inf at plots.importances[1]."
                                "importance, which JSON cannot carry: a number that overflowed or "
                                "was undefined")
