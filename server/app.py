"""The Starlette app: a plain list of routes, two middlewares, a lifespan. Build it with
`create_app(settings)`; `python -m server` (server/__main__.py) serves it with uvicorn.

Features: a feature is a module with
    routes                    a list of Route/Mount (paths under /api/<feature>)
    SCHEMA (optional)         CREATE TABLE/INDEX IF NOT EXISTS statements, run at start-up
    lifespan(app) (optional)  an async context manager entered after the store opens (start
                              worker threads, resume queued jobs) and left before it closes
To add one, import it here and append it to FEATURES. Shared state lives on `app.state`:
settings, device (resolved: "cuda" or "cpu"), store, on_run_stored (callbacks, see runs.py).
"""

from __future__ import annotations

import platform
from contextlib import AsyncExitStack, asynccontextmanager
from importlib import metadata
from types import ModuleType

import anyio.to_thread
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from server import comparisons, datasets, exports, kinds, runs, suite, texts
from server.datadir import DataDirLock
from server.errors import EXCEPTION_HANDLERS
from server.security import AccessMiddleware, SecurityHeadersMiddleware
from server.settings import Settings, resolve_device
from server.static import static_routes
from server.store import Store

FEATURES: list[ModuleType] = [runs, datasets, texts, comparisons, exports, suite, kinds]

try:
    VERSION = metadata.version("webgpu-playground")
except metadata.PackageNotFoundError:  # running from a checkout that was never pip-installed
    VERSION = "0+unknown"


async def health(request: Request) -> JSONResponse:
    return JSONResponse({
        "status": "ok",
        "version": VERSION,
        "device": request.app.state.device,
        "python": platform.python_version(),
        # The page refuses a file over the cap before reading it into memory.
        "limits": {"max_upload_mb": request.app.state.settings.max_upload_mb,
                   "max_json_kb": request.app.state.settings.max_json_kb},
    })


def create_app(settings: Settings | None = None, features: list[ModuleType] | None = None) -> Starlette:
    settings = settings or Settings()
    features = FEATURES if features is None else features

    @asynccontextmanager
    async def lifespan(app: Starlette):
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        # One server per data dir (main() took it already; taking it again here is a no-op).
        lock = DataDirLock.for_dir(settings.data_dir).acquire()
        try:
            async with _lifespan(app):
                yield
        finally:
            lock.release()

    @asynccontextmanager
    async def _lifespan(app: Starlette):
        settings.uploads_dir.mkdir(parents=True, exist_ok=True)
        # Importing PyTorch to look for a GPU takes seconds: keep it off the event loop.
        app.state.device = await anyio.to_thread.run_sync(resolve_device, settings.device)
        store = Store(settings.db_path)
        for feature in features:
            if getattr(feature, "SCHEMA", None):
                store.add_schema(feature.SCHEMA)
            if hasattr(feature, "migrate"):
                store.add_migration(feature.migrate)
        await anyio.to_thread.run_sync(store.open)
        app.state.store = store
        try:
            async with AsyncExitStack() as stack:
                for feature in features:
                    if hasattr(feature, "lifespan"):
                        await stack.enter_async_context(feature.lifespan(app))
                yield
        finally:
            await anyio.to_thread.run_sync(store.close)  # waits for queued writes to commit

    routes = [
        Route("/api/health", health, methods=["GET"]),
        *[route for feature in features for route in feature.routes],
        *static_routes(settings),
    ]
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(SecurityHeadersMiddleware),  # outermost: refusals get the headers too
            Middleware(AccessMiddleware, settings=settings),
        ],
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.device = settings.device  # replaced by the resolved device at start-up
    app.state.on_run_stored = []  # callbacks(run: dict), sync or async, after a new run commits
    app.state.before_run_stored = []  # async hooks(run, request) before the insert (runs.py)
    app.state.on_run_deleted = []  # callbacks(run_id: str), after a run is deleted (or retired)
    return app
