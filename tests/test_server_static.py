"""Static files: media types, the index, and paths that try to leave the served folders."""

import os

import pytest

from server.settings import PROJECT_ROOT, Settings

FILES = {  # path under its root -> expected Content-Type
    ("web", "index.html"): "text/html; charset=utf-8",
    ("web", "main.js"): "text/javascript; charset=utf-8",
    ("web", "worker.mjs"): "text/javascript; charset=utf-8",
    ("web", "style.css"): "text/css; charset=utf-8",
    ("pyodide", "pyodide.asm.wasm"): "application/wasm",
    ("pyodide", "pyodide-lock.json"): "application/json",
    ("pyodide", "python_stdlib.zip"): "application/zip",
    ("wheels", "py_core-0.1.0-py3-none-any.whl"): "application/zip",
    ("wheels", "py_core.tar"): "application/x-tar",
    ("web", "kernel.wgsl"): "text/wgsl; charset=utf-8",
    ("web", "notes.unknownext"): "application/octet-stream",
}


@pytest.fixture
def tree(settings):
    roots = {"web": settings.web_dir, "pyodide": settings.pyodide_dir,
             "wheels": settings.wheels_dir}
    for (root, name), _ in FILES.items():
        (roots[root] / name).write_bytes(f"{root}/{name}".encode())
    (settings.web_dir.parent / "secret.txt").write_text("outside")
    return roots


@pytest.mark.parametrize("root, name", list(FILES))
def test_media_types(tree, client, root, name):
    r = client.get(f"/{root}/{name}")
    assert r.status_code == 200
    assert r.headers["content-type"] == FILES[root, name]
    assert r.content == f"{root}/{name}".encode()
    assert r.headers["x-content-type-options"] == "nosniff"


def test_index_is_web_index_html(tree, client):
    r = client.get("/")
    assert r.status_code == 200 and r.text == "web/index.html"
    assert r.headers["content-type"] == "text/html; charset=utf-8"
    assert client.head("/").status_code == 200


def test_missing_index_and_missing_folder_are_404(settings, client):
    settings.pyodide_dir.rmdir()
    assert client.get("/").status_code == 404
    assert client.get("/pyodide/pyodide.mjs").status_code == 404


def test_revalidation_gives_304(tree, client):
    etag = client.get("/web/main.js").headers["etag"]
    r = client.get("/web/main.js", headers={"if-none-match": etag})
    assert r.status_code == 304


@pytest.mark.parametrize("path", [
    "/web/../secret.txt",
    "/web/%2e%2e/secret.txt",
    "/web/%2E%2E/secret.txt",
    "/web/..%2fsecret.txt",
    "/web/%2e%2e%2fsecret.txt",
    "/web//etc/passwd",
    "/web/%2fetc%2fpasswd",
    "/shaders/%2e%2e/web/index.html",
    "/web/sub/../../secret.txt",
    "/web/%00",
    "/web/" + "a" * 5000,
    "/web/link-out",
    "/web/link-out/secret.txt",
    "/web/loop",
])
def test_traversal_is_404(tree, client, settings, path):
    os.symlink(settings.web_dir.parent / "secret.txt", settings.web_dir / "link-out")
    os.symlink(settings.web_dir / "loop", settings.web_dir / "loop")  # a symlink loop
    r = client.get(path)
    assert r.status_code == 404
    assert b"outside" not in r.content and b"root:" not in r.content


def test_symlink_inside_the_folder_is_served(tree, client, settings):
    os.symlink(settings.web_dir / "main.js", settings.web_dir / "alias.js")
    assert client.get("/web/alias.js").status_code == 200


def test_static_is_read_only(tree, client):
    assert client.post("/web/main.js").status_code == 405


@pytest.mark.skipif(not (PROJECT_ROOT / "web" / "index.html").exists(), reason="web/ not built yet")
def test_real_web_folder(tmp_path):
    from starlette.testclient import TestClient

    from server.app import create_app

    settings = Settings(data_dir=tmp_path, device="cpu")  # default static roots: the real ones
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        r = client.get("/")
        assert r.status_code == 200 and r.headers["content-type"] == "text/html; charset=utf-8"
        for path in sorted((PROJECT_ROOT / "web").glob("*.js")):
            r = client.get(f"/web/{path.name}")
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/javascript")
        wasm = PROJECT_ROOT / "web" / "node_modules" / "pyodide" / "pyodide.asm.wasm"
        if wasm.exists():
            r = client.get("/pyodide/pyodide.asm.wasm")
            assert r.status_code == 200 and r.headers["content-type"] == "application/wasm"
        # the WGSL travels in the wheel, read by the page's Python: nothing serves it on its own
        assert client.get("/shaders/matmul.wgsl").status_code == 404
        assert client.get("/shaders/matmul/matmul.wgsl").status_code == 404
