"""The app as a whole: health, error shape, security headers, access control, the 500 handler."""

import uuid

import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from server import runs
from server.app import create_app
from server.security import host_name


def test_health(client):
    r = client.get("/api/health")
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ok" and body["device"] == "cpu"
    assert body["version"] and body["python"].count(".") == 2


def test_security_headers_on_every_response(client):
    for path in ("/api/health", "/api/nothing-here", "/web/missing.js"):
        r = client.get(path)
        csp = r.headers["content-security-policy"]
        assert "'wasm-unsafe-eval'" in csp and "worker-src 'self' blob:" in csp
        assert "connect-src 'self'" in csp and "default-src 'self'" in csp
        assert "unsafe-eval'" not in csp.replace("'wasm-unsafe-eval'", "")
        assert r.headers["x-content-type-options"] == "nosniff"
        # Cross-origin isolated, so Stop and Pause can reach a running job through shared memory.
        assert r.headers["cross-origin-opener-policy"] == "same-origin"
        assert r.headers["cross-origin-embedder-policy"] == "require-corp"


def test_unknown_route_and_method_are_json_errors(client):
    r = client.get("/api/nothing-here")
    assert r.status_code == 404 and r.json()["error"]["message"]
    r = client.delete("/api/health")
    assert r.status_code == 405 and "error" in r.json()


@pytest.mark.parametrize("header, name", [
    ("127.0.0.1:8000", "127.0.0.1"), ("LOCALHOST", "localhost"), ("[::1]:8000", "::1"),
    ("[::1", ""), ("evil.example:80", "evil.example"),
    # A port that is not one (issue 31): the whole header is refused, not its name kept.
    ("localhost:evil", ""), ("localhost:99999", ""), ("localhost:0", ""), ("[::1]:x", ""),
    ("[::1]evil", ""), ("localhost:+80", ""), ("localhost:\uff18\uff10", ""), ("localhost:", ""),
])
def test_host_name(header, name):
    assert host_name(header) == name


def test_loopback_refuses_foreign_host_header(client):
    # DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends Host: evil.example.
    assert client.get("/api/health", headers={"host": "evil.example:8000"}).status_code == 403
    assert client.get("/api/health", headers={"host": "localhost:8000"}).status_code == 200
    assert client.get("/api/health", headers={"host": "localhost:evil"}).status_code == 403


@pytest.mark.parametrize("origin, status", [
    (None, 201), ("http://127.0.0.1", 201), ("http://evil.example", 403), ("null", 403),
    ("http://127.0.0.1:9999", 403),
])
def test_cross_origin_posts_are_refused(client, origin, status):
    headers = {"origin": origin} if origin else {}
    r = client.post("/api/runs", json={"id": str(uuid.uuid4()), "kind": "selftest"}, headers=headers)
    assert r.status_code == status
    # A cross-site GET is harmless (the browser keeps the answer from the other page): allowed.
    assert client.get("/api/health", headers={"origin": "http://evil.example"}).status_code == 200


@pytest.fixture
def token_client(settings):
    settings.host, settings.token = "0.0.0.0", "s3cret-token"
    with TestClient(create_app(settings), base_url="http://192.0.2.7:8000") as client:
        yield client


def test_off_loopback_requires_token(token_client):
    r = token_client.get("/api/health")
    assert r.status_code == 401 and "token" in r.json()["error"]["message"]
    assert r.headers["content-security-policy"]  # refusals carry the headers too
    assert token_client.get("/api/health?token=wrong").status_code == 401
    assert token_client.get("/api/health", headers={"authorization": "Bearer wrong"}).status_code == 401


def test_bearer_token(token_client):
    r = token_client.get("/api/health", headers={"authorization": "Bearer s3cret-token"})
    assert r.status_code == 200 and "set-cookie" not in r.headers


def test_query_token_sets_cookie_for_later_requests(token_client):
    r = token_client.get("/api/health?token=s3cret-token")
    assert r.status_code == 200
    cookie = r.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert token_client.get("/api/health").status_code == 200  # the client sends the cookie back
    token_client.cookies.clear()
    assert token_client.get("/api/health").status_code == 401


def test_malformed_cookie_header_is_a_401_not_a_500(token_client):
    r = token_client.get("/api/health", headers={"cookie": 'playground_token="\\'})
    assert r.status_code == 401


def _boom(request):
    raise RuntimeError("a bug")


def test_server_bug_is_a_json_500(settings):
    feature = type("Feature", (), {"routes": [Route("/api/boom", _boom)]})
    app = create_app(settings, features=[runs, feature])
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        r = client.get("/api/boom")
    assert r.status_code == 500
    assert r.json()["error"]["message"].startswith("Internal server error")


def test_feature_schema_and_lifespan(settings):
    events = []

    class Feature:
        SCHEMA = "CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)"
        routes = []

        @staticmethod
        def lifespan(app):
            from contextlib import asynccontextmanager

            @asynccontextmanager
            async def cm():
                await app.state.store.write(lambda c: c.execute("INSERT INTO notes (text) VALUES ('up')"))
                events.append("start")
                yield
                events.append("stop")

            return cm()

    with TestClient(create_app(settings, features=[runs, Feature]), base_url="http://127.0.0.1") as client:
        assert client.get("/api/health").status_code == 200
        count = client.app.state.store.read_sync(lambda c: c.execute("SELECT count(*) FROM notes").fetchone()[0])
        assert count == 1
    assert events == ["start", "stop"]
