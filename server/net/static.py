"""The web page's files, served over plain HTTP on the lobby's port: GET and HEAD only."""

from __future__ import annotations

import mimetypes
from importlib import resources
from pathlib import Path

from websockets.asyncio.server import ServerConnection
from websockets.datastructures import Headers
from websockets.http11 import Response


def web_root() -> Path:
    """The page's folder inside the ``clients`` package: the repository's ``clients/web`` in a
    checkout or an editable install, ``site-packages/clients/web`` from the wheel."""
    return Path(str(resources.files("clients").joinpath("web"))).resolve()


WEB_ROOT = web_root()


def static_response(connection: ServerConnection, method: str, path: str) -> Response:
    """A static file for GET, its headers alone for HEAD, 405 for any other method."""
    if method not in ("GET", "HEAD"):
        return not_allowed(connection, "GET, HEAD")
    return without_body(method, static_file(connection, path))


def static_file(connection: ServerConnection, path: str) -> Response:
    """The web page's files from ``clients/web``; nothing outside it is ever served."""
    relative = "index.html" if path in ("", "/") else path.lstrip("/")
    target = (WEB_ROOT / relative).resolve()
    if not target.is_relative_to(WEB_ROOT) or not target.is_file():
        return connection.respond(404, "Not found.\n")
    body = target.read_bytes()
    ctype = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
    if ctype.startswith("text/") or ctype in ("application/javascript", "application/json"):
        ctype += "; charset=utf-8"
    headers = Headers([
        ("Content-Type", ctype),
        ("Content-Length", str(len(body))),
        ("Cache-Control", "no-cache"),
        ("X-Content-Type-Options", "nosniff"),
        # No other site may frame the page (clickjacking): CSP for today's browsers,
        # X-Frame-Options for the older ones.
        ("Content-Security-Policy", "default-src 'self'; connect-src 'self' ws: wss:; "
                                    "img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
                                    "frame-ancestors 'none'"),
        ("X-Frame-Options", "DENY"),
        ("Connection", "close"),  # websockets answers one request a connection
    ])
    return Response(200, "OK", headers, body)


def not_allowed(connection: ServerConnection, allow: str) -> Response:
    response = connection.respond(405, f"Method not allowed; this address takes {allow}.\n")
    response.headers["Allow"] = allow
    return response


def without_body(method: str, response: Response) -> Response:
    """A HEAD request is answered with the headers GET would get (Content-Length included)."""
    if method == "HEAD":
        response.body = b""
    return response
