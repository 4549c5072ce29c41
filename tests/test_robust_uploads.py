"""Uploads under abuse: malformed multipart answered fast, part limits, a client that leaves
mid-upload, hostile CSV and text files through the HTTP API, and the server's memory meanwhile.

(The size cap with and without Content-Length is in test_server_datasets.py.)
"""

import re
import socket
import time

import httpx
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from robust_server import CliServer
from server.datasets import FORM_OVERHEAD, MAX_PARTS

BOUNDARY = "b0undary"
FILE_HEAD = (f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\n'
             "Content-Type: text/csv\r\n\r\n").encode()
FORM_END = f"\r\n--{BOUNDARY}--\r\n".encode()


def open_upload(base_url: str, content_type: str, length: int, first: bytes) -> socket.socket:
    """Starts a POST /api/datasets that announces `length` bytes and sends only `first`."""
    host, port = base_url.removeprefix("http://").split(":")
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall((f"POST /api/datasets HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n"
               f"Content-Length: {length}\r\n\r\n").encode() + first)
    return s


def read_response(s: socket.socket) -> tuple[int, bytes]:
    """(status, the whole response), read by its Content-Length."""
    data = b""
    while b"\r\n\r\n" not in data or len(data) < data.index(b"\r\n\r\n") + 4 + int(
            re.search(rb"content-length: (\d+)", data, re.IGNORECASE)[1]):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return int(data.split(b" ", 2)[1]), data


def uploads(settings) -> list[str]:
    return sorted(p.name for p in settings.uploads_dir.iterdir())


# --- malformed multipart: answered before the announced body arrives ---

@pytest.mark.parametrize("content_type, first, words", [
    # No boundary: nothing can be parsed, so nothing is read.
    ("multipart/form-data", b"", "names no boundary"),
    # A preamble of blank lines, which the parser skips: refused once it passes FORM_OVERHEAD.
    (f"multipart/form-data; boundary={BOUNDARY}", b"\r\n" * (FORM_OVERHEAD // 2 + 4096),
     "no part in the first 64 KB"),
    # Any other preamble: refused at its first byte.
    (f"multipart/form-data; boundary={BOUNDARY}", b"This is a preamble. " * 1000, "malformed"),
    # More parts than a form of file, name and delimiter could need.
    (f"multipart/form-data; boundary={BOUNDARY}",
     b"".join(f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="f{i}"\r\n\r\nv\r\n'.encode()
              for i in range(MAX_PARTS + 1)), f"more than {MAX_PARTS} parts"),
    # A part header longer than python-multipart's limit.
    (f"multipart/form-data; boundary={BOUNDARY}",
     FILE_HEAD[:-4] + b"\r\nX-Padding: " + b"p" * 100_000, "header size"),
])
def test_malformed_multipart_is_a_400_before_the_body(live_server, settings, content_type, first, words):
    with open_upload(live_server, content_type, 100 * 2**20, first) as s:
        status, response = read_response(s)  # 100 MB announced; only `first` was sent (a server
    assert status == 400, response          # waiting for the rest would hit the socket's timeout)
    assert words.encode() in response
    assert uploads(settings) == []


def test_client_leaving_mid_upload_leaves_no_file(live_server, settings):
    with open_upload(live_server, f"multipart/form-data; boundary={BOUNDARY}", 2**20,
                     FILE_HEAD + b"a,b\n" + b"1,2\n" * 60_000):  # 240 KB of 1 MB
        deadline = time.monotonic() + 10
        while not uploads(settings):  # the upload is under way: its temp file exists
            assert time.monotonic() < deadline, "no temp file appeared"
            time.sleep(0.01)
    # The socket is closed mid-body: the server sees the disconnect and removes the temp file.
    deadline = time.monotonic() + 10
    while uploads(settings):
        assert time.monotonic() < deadline, f"left behind: {uploads(settings)}"
        time.sleep(0.02)
    with httpx.Client(base_url=live_server) as http:  # and it still serves
        assert http.get("/api/datasets").status_code == 200
        assert not [d for d in http.get("/api/datasets").json()["datasets"] if not d["builtin"]]


# --- hostile files through the API: a clear 400 that names the place, nothing stored ---

def upload(client, data: bytes, path="/api/datasets", filename="hostile.csv"):
    return client.post(path, files={"file": (filename, data, "text/csv")})


def wide(n: int) -> bytes:
    return (",".join(f"c{i}" for i in range(n)) + "\n" + ",".join(["1"] * n) + "\n").encode()


@pytest.mark.parametrize("data, words, line, column, field", [
    (b"a,b\n1,2\n3,\x004\n", "NUL byte at byte offset 10", 3, None, None),
    (b"name,score,name\nann,1,bob\n", "duplicate column name 'name'", 1, 3, "name"),
    (wide(10_001), "more than the limit of 10,000 columns in the header", 1, None, None),
    (b"a,b\n1," + b"x" * 1_000_001 + b"\n", "field longer than 1,000,000", 2, 2, "b"),
])
def test_hostile_csv_is_a_clear_400(client, settings, data, words, line, column, field):
    r = upload(client, data)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert words in err["message"] and err["message"].startswith("hostile.csv"), err
    assert (err["line"], err["column"], err["field"]) == (line, column, field)
    assert uploads(settings) == [] and not list((settings.data_dir / "datasets").glob("*[0-9]*.csv"))


def test_wide_and_long_fields_within_the_limits_are_stored(client):
    r = upload(client, wide(10_000))
    assert r.status_code == 201 and len(r.json()["columns"]) == 10_000
    long_field = "é" * 200_000  # 200,000 characters, 400,000 bytes
    r = upload(client, f"id,text\n1,{long_field}\n".encode())
    assert r.status_code == 201 and r.json()["columns"][1]["name"] == "text"
    stored = client.get(f"/api/datasets/{r.json()['id']}/file").content.decode()
    assert stored.endswith(long_field + "\n")


def test_huge_single_line_is_refused_with_bounded_memory(tmp_path):
    """A 50 MB line is read as one string, but never split into millions of fields: csv would
    make 16M strings of `12`, about 2.3 GB, before any column count could be checked."""
    row = b"12," * 16_700_000  # 50 MB, no line end
    text = b"To be, or not to be. " * 2_400_000  # 50 MB of text on one line
    with CliServer(tmp_path / "data") as server, httpx.Client(base_url=server.url,
                                                              timeout=60) as http:
        base = server.peak_rss_mb()
        r = http.post("/api/datasets", files={"file": ("line.csv", row, "text/csv")})
        assert r.status_code == 400, r.text
        assert "more than the limit of 10,000 columns" in r.json()["error"]["message"]
        r = http.post("/api/datasets", files={"file": ("rows.csv", b"a,b\n" + row, "text/csv")})
        assert r.status_code == 400 and r.json()["error"]["line"] == 2, r.text
        assert "row has more than" in r.json()["error"]["message"]
        # Text for the transformer: a single 50 MB line is fine, and costs a few copies of it.
        r = http.post("/api/texts", files={"file": ("one-line.txt", text, "text/plain")})
        assert r.status_code == 201 and r.json()["chars"] == len(text)
        grown = server.peak_rss_mb() - base
        assert grown < 500, f"the server's peak memory grew {grown:.0f} MB for 50 MB files"
        assert not list((tmp_path / "data" / "uploads").iterdir())


# --- nothing a client sends to the upload endpoints is a 500 ---

form_bodies = st.one_of(
    st.binary(max_size=300),  # anything at all
    st.lists(st.sampled_from([f"--{BOUNDARY}\r\n", f"--{BOUNDARY}--\r\n", "\r\n",
                              'Content-Disposition: form-data; name="file"; filename="x.csv"\r\n',
                              'Content-Disposition: form-data; name="name"\r\n',
                              'Content-Disposition: form-data; name="delimiter"\r\n',
                              "Content-Type: text/csv\r\n", "a,b\n1,2\n", ";", "\x00", "\xff",
                              '"', "é"]), max_size=20).map(lambda parts: "".join(parts).encode()),
)


@hsettings(max_examples=150, deadline=None,
           suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(["/api/datasets", "/api/texts"]), body=form_bodies,
       file=st.binary(max_size=200))
def test_random_forms_and_files_never_give_500(client, path, body, file):
    r = client.post(path, content=body,
                    headers={"content-type": f"multipart/form-data; boundary={BOUNDARY}"})
    assert r.status_code in (201, 400, 413), r.text
    r = upload(client, file, path)
    assert r.status_code in (201, 400), r.text
    assert "error" in r.json() or r.json()["id"]
