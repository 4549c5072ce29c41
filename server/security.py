"""Who may talk to the server, and what the page may load.

AccessMiddleware: a request that changes something (not GET/HEAD/OPTIONS) and carries an Origin
other than this server's is refused: another site's page must not post runs or upload files, even
as a multipart form (which needs no CORS preflight). On loopback without a token, only requests whose Host is a loopback name pass
(a web page elsewhere could otherwise reach 127.0.0.1 through DNS rebinding). With a token (always
off loopback, as Jupyter does) a request must carry it: `?token=` (which then sets a cookie, so
the page's own fetches need nothing more), `Authorization: Bearer`, or that cookie.

SecurityHeadersMiddleware: a Content-Security-Policy that lets Pyodide compile WebAssembly and
start workers, and loads nothing from anywhere but this server.
"""

from __future__ import annotations

import ipaddress
import re
import secrets
from http.cookies import SimpleCookie

from starlette.datastructures import Headers, MutableHeaders, QueryParams
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.settings import Settings

COOKIE = "playground_token"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")

CSP = "; ".join([
    "default-src 'self'",
    # Pyodide compiles WebAssembly: 'wasm-unsafe-eval' allows that and nothing like eval() of JS.
    "script-src 'self' 'wasm-unsafe-eval'",
    "worker-src 'self' blob:",  # Pyodide runs in a module Web Worker
    "connect-src 'self'",  # fetch of wheels, stdlib zip, data, and posting runs: this server only
    "img-src 'self' data: blob:",  # charts exported as data/blob URLs
    "style-src 'self' 'unsafe-inline'",  # style attributes set from JS; styles cannot run code
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
])
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),  # keeps a ?token= URL out of Referer headers
    # Cross-origin isolation: the page may then share a SharedArrayBuffer with its worker, which
    # Python reads synchronously for Stop and Pause while a job runs. Everything is same-origin.
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-embedder-policy", b"require-corp"),
]


class SecurityHeadersMiddleware:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS:
                    headers.raw.append((name, value))
            await send(message)

        await self.app(scope, receive, send_with_headers)


_HOST_RE = re.compile(r"(\[[^\]]*\]|[^:\[\]]*)(?::([0-9]{1,5}))?")


def host_name(host_header: str) -> str:
    """'[::1]:8000' -> '::1', 'LocalHost:8000' -> 'localhost'; '' when the header is not a name
    with an optional port of 1 to 65535 ('localhost:evil', 'localhost:99999', '[::1')."""
    m = _HOST_RE.fullmatch(host_header.strip().lower())
    if m is None or (m[2] is not None and not 0 < int(m[2]) <= 65535):
        return ""
    return m[1].strip("[]")


def same_origin(headers: Headers) -> bool:
    """No Origin (curl, Python clients) or one naming the host the request was sent to."""
    origin = headers.get("origin")
    if origin is None:
        return True
    scheme, _, netloc = origin.partition("://")  # "null" (sandboxed frames, file://) never matches
    return scheme in ("http", "https") and netloc.lower() == headers.get("host", "").strip().lower()


def _loopback_ip(name: str) -> bool:
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _same(given: str | None, token: str) -> bool:
    return given is not None and secrets.compare_digest(given.encode(errors="replace"), token.encode())


class AccessMiddleware:
    def __init__(self, app: ASGIApp, settings: Settings):
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers = Headers(scope=scope)
        if scope["type"] == "http" and scope["method"] not in SAFE_METHODS and not same_origin(headers):
            return await self._deny(scope, receive, send, 403, "Cross-origin request refused.")
        if not self.settings.requires_token:
            name = host_name(headers.get("host", ""))
            # Any loopback address written as an IP (127.0.0.2, the address bound to, say) is
            # safe: DNS rebinding needs a name, and a page at an IP address is that origin.
            if name in self.settings.loopback_hosts or _loopback_ip(name):
                return await self.app(scope, receive, send)
            return await self._deny(scope, receive, send, 403,
                                    "Host not allowed: open the playground at http://127.0.0.1 or localhost.")

        token = self.settings.token
        assert token, "a server that requires a token has one (main() generates it)"
        if _same(QueryParams(scope.get("query_string", b"")).get("token"), token):
            return await self.app(scope, receive, self._setting_cookie(send, token))
        auth = headers.get("authorization", "")
        if auth[:7].lower() == "bearer " and _same(auth[7:].strip(), token):
            return await self.app(scope, receive, send)
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header is the client's problem: treat as no cookie
            cookie.clear()
        if COOKIE in cookie and _same(cookie[COOKIE].value, token):
            return await self.app(scope, receive, send)
        await self._deny(scope, receive, send, 401,
                         "A token is required: open the URL the server printed at start (…/?token=…), "
                         "or send 'Authorization: Bearer <token>'.")

    @staticmethod
    def _setting_cookie(send: Send, token: str) -> Send:
        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                # HttpOnly: page scripts never see it; SameSite=Strict: other sites cannot use it.
                value = f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"
                MutableHeaders(scope=message).append("set-cookie", value)
            await send(message)

        return wrapped

    @staticmethod
    async def _deny(scope: Scope, receive: Receive, send: Send, status: int, message: str) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        response = JSONResponse({"error": {"message": message, "field": None}}, status, headers=headers)
        await response(scope, receive, send)
