"""Issue 16, point 7: the server's memory stays bounded for an upload within the caps, however
its values look (a CSV of distinct strings made the server's peak grow 14 times the file), and
the answer says how long the upload and its summary took. The summary is streamed
(tests/test_data_summary.py checks that its memory does not grow with the rows) in a process of
its own; texts are checked streaming, a chunk at a time."""

import random
import string

import httpx

from robust_server import CliServer


def distinct_strings_csv(mb: int) -> bytes:
    rng = random.Random(0)
    letters = string.ascii_letters
    rows, size, i = ["id,name,note"], 0, 0
    while size < mb * 2**20:
        row = f"k{i},{''.join(rng.choices(letters, k=12))},{''.join(rng.choices(letters, k=20))}"
        rows.append(row)
        size += len(row) + 1
        i += 1
    return ("\n".join(rows) + "\n").encode()


def test_a_file_of_distinct_strings_leaves_the_server_small(tmp_path):
    data = distinct_strings_csv(24)
    text = ("".join(random.Random(1).choices(string.ascii_letters + " \n", k=24 * 2**20))).encode()
    with CliServer(tmp_path / "data") as server, httpx.Client(base_url=server.url, timeout=600) as http:
        assert http.post("/api/datasets", files={"file": ("small.csv", b"a,b\n1,2\n")}).status_code == 201
        base = server.peak_rss_mb()
        r = http.post("/api/datasets", files={"file": ("big.csv", data)})
        assert r.status_code == 201, r.text
        body = r.json()
        assert body["rows"] > 500_000 and body["columns"][1]["type"] == "text"
        assert body["columns"][1]["stats"]["distinct"] == body["rows"]
        assert body["timings"]["parse"] > 0 and body["timings"]["upload"] > 0
        r = http.post("/api/texts", files={"file": ("big.txt", text)})
        assert r.status_code == 201 and r.json()["chars"] == len(text), r.text
        grown = server.peak_rss_mb() - base
    # 1.2 million distinct strings are counted in the summary's process, not the server's.
    assert grown < 80, f"the server's peak memory grew {grown:.0f} MB for 24 MB files"


def test_a_summary_over_its_memory_cap_is_a_413(tmp_path):
    with CliServer(tmp_path / "data", "--max-parse-mb", "64") as server, \
            httpx.Client(base_url=server.url, timeout=600) as http:
        r = http.post("/api/datasets", files={"file": ("big.csv", distinct_strings_csv(24))})
        assert r.status_code == 413 and "--max-parse-mb" in r.json()["error"]["message"], r.text
        assert http.post("/api/datasets", files={"file": ("ok.csv", b"a,b\n1,2\n")}).status_code == 201
        assert "Traceback" not in server.output()
