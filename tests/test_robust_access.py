"""Bound to 0.0.0.0, the real server (its own process, reached through 127.0.0.1) refuses every
route of the app, the page and its files included, without the token it printed; with it, each
answers. Routes are read from the app itself, so a route added later is covered too."""

import re
import uuid

import httpx
import pytest

from robust_server import CliServer
from server.app import create_app
from server.settings import Settings


def app_routes() -> list[tuple[str, str]]:
    """(method, path) for every route and static mount of the app, HEAD left out."""
    out = []
    for route in create_app(Settings(device="cpu")).routes:
        methods = sorted(getattr(route, "methods", None) or {"GET"})
        out += [(m, route.path) for m in methods if m != "HEAD"]
    return out


STATIC_FILES = {  # a real file under each mount, so that with the token the answer is a 200
    "/web": "/web/app.js", "/pyodide": "/pyodide/pyodide.mjs", "/wheels": "/wheels/manifest.json",
    "/vendor/uplot": "/vendor/uplot/uPlot.esm.js",
}


@pytest.fixture(scope="module")
def exposed(tmp_path_factory):
    with CliServer(tmp_path_factory.mktemp("exposed") / "data", host="0.0.0.0") as server:
        assert server.token and len(server.token) >= 40
        yield server


def request(server, method: str, path: str, token: str | None):
    run_id = str(uuid.uuid4())
    path = STATIC_FILES.get(path, path)
    path = path.replace("/api/runs/{id}", f"/api/runs/{run_id}")
    # A built-in is never removed (403, the route's own refusal): DELETE asks for an upload.
    path = path.replace("/api/datasets/{id}", "/api/datasets/" + ("0" * 32 if method == "DELETE" else "iris"))
    path = path.replace("/api/texts/{id}", "/api/texts/shakespeare")
    path = path.replace("/runs/{run_id:str}", f"/runs/{run_id}")  # a run's own page
    path = path.replace("/kinds/{name:str}/{file:path}", "/kinds/random_forest/package.zip")  # a 404
    assert "{" not in path, f"a new route with a parameter: teach this test an id for {path}"
    headers = {"authorization": f"Bearer {token}"} if token else {}
    kwargs = {}
    if path == "/api/runs" and method == "POST":
        kwargs["json"] = {"id": run_id, "kind": "selftest"}
    elif path in ("/api/datasets", "/api/texts") and method == "POST":
        kwargs["files"] = {"file": ("t.csv", b"a,b\n1,2\n", "text/csv")}
    with httpx.Client(base_url=server.url, timeout=30) as http:
        return http.request(method, path, headers=headers, **kwargs), run_id


@pytest.mark.parametrize("method, path", app_routes())
def test_every_route_needs_the_token(exposed, method, path):
    r, run_id = request(exposed, method, path, None)
    assert r.status_code == 401, (method, path, r.status_code)
    assert r.json()["error"]["message"].startswith("A token is required")
    assert r.headers["www-authenticate"] == "Bearer" and r.headers["content-security-policy"]
    r, _ = request(exposed, method, path, "wrong-" + exposed.token[6:])
    assert r.status_code == 401
    if (method, path) == ("POST", "/api/runs"):  # refused means not stored
        ok = {"authorization": f"Bearer {exposed.token}"}
        assert httpx.get(f"{exposed.url}/api/runs/{run_id}", headers=ok).status_code == 404


@pytest.mark.parametrize("method, path", app_routes())
def test_every_route_answers_with_the_token(exposed, method, path):
    r, _ = request(exposed, method, path, exposed.token)
    assert r.status_code not in (401, 403), (method, path, r.text[:200])
    if method == "GET" and "{" not in path and "comparisons" not in path:
        assert r.status_code == 200, (path, r.text[:200])


def test_the_page_url_with_the_token_lets_the_page_in(exposed):
    """The printed URL carries ?token=; the cookie it sets serves the page's own requests."""
    with httpx.Client(base_url=exposed.url, timeout=30) as browser:
        assert browser.get("/").status_code == 401
        page = browser.get(f"/?token={exposed.token}")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        assert re.search(r"HttpOnly.*SameSite=Strict|SameSite=Strict.*HttpOnly",
                         page.headers["set-cookie"])
        for path in ("/web/app.js", "/api/runs", "/api/datasets"):
            assert browser.get(path).status_code == 200
        browser.cookies.clear()
        assert browser.get("/web/app.js").status_code == 401
