"""`python -m server` / `playground`: serve the playground with uvicorn.

    playground                               http://127.0.0.1:8000/, no token
    playground --host 0.0.0.0 --port 9000    off loopback: a token is generated and printed in the URL
"""

from __future__ import annotations

import secrets
import sys

import uvicorn

from server.app import create_app
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
        await super().startup(sockets=sockets)
        if self.should_exit:
            return
        # The real port: --port 0 asks the OS for any free one.
        self.settings.port = self.servers[0].sockets[0].getsockname()[1]
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
    config = uvicorn.Config(create_app(settings), host=settings.host, port=settings.port,
                            log_level="info", timeout_graceful_shutdown=10)
    server = _Server(config, settings)
    server.run()
    sys.exit(0 if server.started else 1)


if __name__ == "__main__":
    main()
