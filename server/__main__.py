"""`python -m server` / `playground`: serve the playground with uvicorn.

    playground                               http://127.0.0.1:8000/, no token
    playground --host 0.0.0.0 --port 9000    off loopback: a token is generated and printed in the URL

Before uvicorn starts, the data dir is locked (one server per data dir) and its database checked
(server/datadir.py); a problem there ends the process with one paragraph and exit code 2. The
open-file limit is raised and the connections capped below it (server/connections.py). Ctrl-C
(SIGINT) or SIGTERM stops it cleanly: requests in flight finish, queued writes commit, exit 0.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import sys

# The comparison runners' OpenMP threads (scikit-learn, xgboost, lightgbm) share the machine with
# the page and each other: threads that spin while waiting collapse when cores are oversubscribed
# (measured: 51 s against 1.3 s for one xgboost forest on 2 busy cores). Set before any loads it;
# the worker processes inherit it.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import uvicorn

from server.app import create_app
from server.connections import (
    effective_max_connections,
    loop_exception_handler,
    protocol_class,
    quiet_logs,
    raise_open_file_limit,
)
from server.datadir import StartupError, preflight
from server.settings import Settings, parse_args


def url_for(settings: Settings) -> str:
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    query = f"?token={settings.token}" if settings.token else ""
    return f"http://{host}:{settings.port}/{query}"


class _Server(uvicorn.Server):
    """uvicorn's server, printing our URL once the app has started and the socket listens."""

    def __init__(self, config: uvicorn.Config, settings: Settings):
        super().__init__(config)
        self.settings = settings

    async def startup(self, sockets=None) -> None:
        asyncio.get_running_loop().set_exception_handler(loop_exception_handler)
        await super().startup(sockets=sockets)
        if self.should_exit:
            return
        # The real port: --port 0 asks the OS for any free one.
        self.settings.port = self.servers[0].sockets[0].getsockname()[1]
        # The URL is the one place the token is shown (as Jupyter does); the access log redacts it.
        print(f"Playground running at {url_for(self.settings)}", flush=True)
        if not self.settings.is_loopback:
            # Browsers expose WebGPU only to secure contexts: http://localhost is one, http://<ip> not.
            print("WebGPU needs a secure context: from another machine, forward the port "
                  f"(ssh -L {self.settings.port}:localhost:{self.settings.port} ...) and open "
                  "http://localhost with the token.", flush=True)


def main(argv: list[str] | None = None) -> None:
    settings = parse_args(argv)
    if settings.requires_token and not settings.token:
        settings.token = secrets.token_urlsafe(32)  # 256 bits, URL- and cookie-safe
    try:
        lock = preflight(settings)
    except StartupError as exc:
        print(f"playground: {exc}", file=sys.stderr, flush=True)
        sys.exit(2)
    nofile = raise_open_file_limit()
    config = uvicorn.Config(create_app(settings), host=settings.host, port=settings.port,
                            log_level="info", timeout_graceful_shutdown=10, loop="asyncio",
                            http=protocol_class(settings, nofile),
                            timeout_keep_alive=5, backlog=1024)
    quiet_logs()  # after Config, which configures logging
    print(f"Connections: at most {effective_max_connections(settings.max_connections, nofile)} "
          f"open (open-file limit {nofile}); headers within {settings.header_timeout_s:g} s, body "
          f"pauses under {settings.body_timeout_s:g} s, answers unread for under "
          f"{settings.write_timeout_s:g} s.", flush=True)
    server = _Server(config, settings)
    try:
        server.run()
    except KeyboardInterrupt:
        # uvicorn has shut down gracefully already, then re-raised the SIGINT it caught.
        pass
    finally:
        lock.release()
    if server.started:
        print("Playground stopped.", flush=True)
    sys.exit(0 if server.started else 1)


if __name__ == "__main__":
    main()
