"""The texts API: built-ins, uploads checked as UTF-8 text, nothing stored after a refusal."""
from __future__ import annotations

from py_core.transformer.text import builtin_text


def test_builtin_text_is_listed_and_served(client):
    listed = client.get("/api/texts").json()["texts"]
    assert any(t["id"] == "shakespeare" and t["builtin"] for t in listed)
    summary = client.get("/api/texts/shakespeare").json()
    assert summary["chars"] == len(builtin_text("shakespeare")) and summary["vocab_size"] > 20
    assert client.get("/api/texts/shakespeare/file").text == builtin_text("shakespeare")


def test_upload_round_trip(client):
    body = "To be, or not to be: that is the question.\nÀ bientôt — 日本語\n"
    res = client.post("/api/texts", files={"file": ("poem.txt", body.encode(), "text/plain")})
    assert res.status_code == 201, res.text
    stored = res.json()
    assert stored["chars"] == len(body) and stored["vocab_size"] == len(set(body))
    assert client.get(f"/api/texts/{stored['id']}/file").content == body.encode()
    assert any(t["id"] == stored["id"] for t in client.get("/api/texts").json()["texts"])


def test_not_utf8_is_refused_with_byte_and_line(client):
    res = client.post("/api/texts", files={"file": ("latin1.txt", b"line one\ncaf\xe9\n", "text/plain")})
    assert res.status_code == 400
    err = res.json()["error"]
    assert "not UTF-8 at byte 12 (line 2)" in err["message"] and err["field"] == "file"
    assert len(client.get("/api/texts").json()["texts"]) == 1  # the built-in only


def test_nul_bytes_and_empty_files_are_refused(client):
    assert "NUL byte at byte 3" in client.post("/api/texts", files={"file": ("b.bin", b"abc\x00def", "x")}).json()["error"]["message"]
    for body, said in ((b"", "e.txt: the text is empty"),
                       (b"a", "e.txt: the text is one character; a model needs two or more")):
        res = client.post("/api/texts", files={"file": ("e.txt", body, "text/plain")})
        assert res.status_code == 400 and res.json()["error"]["message"] == said


def test_upload_over_cap_gets_413(client, settings):
    big = b"a" * (settings.max_upload_bytes + 128 * 1024)
    assert client.post("/api/texts", files={"file": ("big.txt", big, "text/plain")}).status_code == 413


def test_unknown_text_is_404(client):
    assert client.get("/api/texts/nope").status_code == 404
    assert client.get("/api/texts/" + "0" * 32 + "/file").status_code == 404
