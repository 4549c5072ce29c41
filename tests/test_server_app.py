"""The app as a whole: health, error shape, security headers, access control, the 500 handler."""

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
        assert "cross-origin-opener-policy" not in r.headers


def test_unknown_route_and_method_are_json_errors(client):
    r = client.get("/api/nothing-here")
    assert r.status_code == 404 and r.json()["error"]["message"]
    r = client.delete("/api/health")
    assert r.status_code == 405 and "error" in r.json()
