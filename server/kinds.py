"""The job kinds the server knows, as the page reads them (py_core/jobs/kinds.py's registry).

    GET /api/kinds   {"kinds": [{"name", "label", "job", "params": [{"name", "default", "label",
                     "help", "types": [{"type", "min", "max", "options", ...}]}], "main_timing":
                     {"key", "label", "words"}, "needs", "costed", "plots", "exports", "snippet",
                     "runners", "tab", "panel", "code"}, ...]}, in the registry's order
    GET /kinds/<name>/package.zip   a kind declared outside py_core: its package (the folder of
                     the module its registry line names), for the tab's worker to unpack
    GET /kinds/<name>/<file>.js     ... and the ES modules in that folder (its panel)

The page fetches GET /api/kinds once at start (web/kinds.js): its run and comparison tables' main
time, its forms' labels, help and ranges, and its kinds' tabs come from here, so they are the
server's own. Only a registered kind's own folder is served, and only its .py, .wgsl and .js
files (the zip) or .js files (one by one): the registry is the operator's, not the client's.
"""
from __future__ import annotations

import importlib
import io
import zipfile
from pathlib import Path

import anyio.to_thread
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from py_core.jobs.kinds import PACKAGE_ZIP, all_kinds, outside
from server.static import media_type_for

SHIPPED = {".py", ".wgsl", ".js"}  # what a kind's package.zip holds
MAX_ZIP_BYTES = 4 << 20  # a kind's package is a few source files; more is a mistake, not code


async def get_kinds(request: Request) -> JSONResponse:
    return JSONResponse({"kinds": [k.describe() for k in all_kinds()]})


def own_folder(name: str) -> tuple[Path, Path]:
    """(the folder of kind `name`'s package, the sys.path root its module is imported from);
    404 for a kind the registry lacks or one declared inside py_core (the wheel has it)."""
    module = outside(name).partition(":")[0]
    if "." not in module:  # none, or a top-level module: no package of its own to hand out
        raise HTTPException(404, f"no kind {name!r} with a package of its own")
    folder = Path(importlib.import_module(module.rpartition(".")[0]).__file__).resolve().parent
    return folder, folder.parents[module.count(".") - 1]


def package_zip(name: str) -> bytes:
    folder, root = own_folder(name)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(folder.rglob("*")):
            if f.suffix in SHIPPED and f.is_file() and "__pycache__" not in f.parts:
                z.write(f, f.relative_to(root).as_posix())
    if out.tell() > MAX_ZIP_BYTES:
        raise HTTPException(413, f"kind {name!r}: its package is over {MAX_ZIP_BYTES >> 20} MB zipped")
    return out.getvalue()


def module_file(name: str, file: str) -> Path:
    folder, _ = own_folder(name)
    path = (folder / file).resolve()
    if path.suffix != ".js" or not path.is_relative_to(folder) or not path.is_file():
        raise HTTPException(404, f"kind {name!r} has no module {file!r}")
    return path


async def get_kind_file(request: Request) -> Response:
    name, file = request.path_params["name"], request.path_params["file"]
    if file == PACKAGE_ZIP:
        data = await anyio.to_thread.run_sync(package_zip, name)
        return Response(data, media_type="application/zip", headers={"cache-control": "no-cache"})
    path = await anyio.to_thread.run_sync(module_file, name, file)
    return Response(await anyio.to_thread.run_sync(path.read_bytes), media_type=media_type_for(path.name),
                    headers={"cache-control": "no-cache"})


routes = [Route("/api/kinds", get_kinds, methods=["GET"]),
          Route("/kinds/{name:str}/{file:path}", get_kind_file, methods=["GET", "HEAD"])]
