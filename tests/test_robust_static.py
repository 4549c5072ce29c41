"""Range requests on static files, through a real uvicorn: however many ranges a client asks for,
the answer is fast, never a 500, and never larger than the file (overlaps are merged, and past 100
ranges the header is ignored). Traversal and symlinks are in test_server_static.py."""


import httpx
import pytest

SIZE = 2**20  # a 1 MB file: big enough that a multiplied answer would show


def ranges(spans) -> str:
    return "bytes=" + ",".join(spans)


CASES = {
    "one": (ranges(["0-9"]), {206}),
    "5,000 one-byte ranges": (ranges(f"{2 * i}-{2 * i}" for i in range(5000)), {200}),
    "5,000 whole-file ranges": (ranges("0-" for _ in range(5000)), {200}),
    "99 whole-file ranges": (ranges("0-" for _ in range(99)), {206}),
    "99 suffixes": (ranges(f"-{SIZE - i}" for i in range(99)), {206}),
    "99 disjoint ranges": (ranges(f"{i * 9000}-{i * 9000 + 99}" for i in range(99)), {206}),
    "99 past the end": (ranges(f"{SIZE + i}-" for i in range(99)), {416}),
    "5,000 past the end": (ranges(f"{SIZE + i}-" for i in range(5000)), {200}),
    "5,000 malformed": (ranges("a-b" for _ in range(5000)), {200}),
    "99 malformed": (ranges("a-b" for _ in range(99)), {400}),
    "99 backwards": (ranges(f"{i + 5}-{i}" for i in range(99)), {400}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_many_ranges_are_answered_small(settings, live_server, name):
    (settings.web_dir / "big.js").write_bytes(bytes(range(256)) * (SIZE // 256))
    header, statuses = CASES[name]
    with httpx.Client(base_url=live_server, timeout=10) as http:
        r = http.get("/web/big.js", headers={"range": header})
    assert r.status_code in statuses, (r.status_code, r.text[:200])
    # Each of 99 parts carries ~150 bytes of part headers; the data itself is at most the file.
    assert len(r.content) <= SIZE + 100 * 200
    if r.status_code == 206 and len(r.content) < SIZE:
        assert r.headers["content-type"].startswith(("multipart/byteranges", "text/javascript"))

