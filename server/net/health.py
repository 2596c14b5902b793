"""``GET /healthz`` and ``GET /readyz`` on the lobby's own port, for load balancers, service
managers and container orchestrators.

``/healthz`` says the process is up and its loop answers: always 200 while it listens.
``/readyz`` says whether to send it players: 200 once it has started, while its database
answers and it is not draining; 503 otherwise, the body naming why. The database is asked
at most once a second whatever the number of probes (one check at a time, its answer kept
for :data:`CACHE_SECONDS`), and an answer that takes over :data:`CHECK_TIMEOUT` counts as
no answer, so a probe never waits long and a probe storm never loads the database.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from websockets.asyncio.server import ServerConnection
from websockets.datastructures import Headers
from websockets.http11 import Response

HEALTHZ = "/healthz"
READYZ = "/readyz"
PATHS = (HEALTHZ, READYZ)
CACHE_SECONDS = 1.0
CHECK_TIMEOUT = 2.0

STARTING, READY, DRAINING = "starting", "ready", "draining"


class Health:
    """The server's state as the probes see it, and its database's last answer."""

    def __init__(self, probe: Callable[[], Awaitable[str | None]] | None = None) -> None:
        self.probe = probe
        self.state = STARTING
        self._checked_at = -CACHE_SECONDS
        self._problem: str | None = None
        self._check: asyncio.Task[str | None] | None = None

    async def respond(self, connection: ServerConnection, method: str, path: str) -> Response:
        """The answer to a probe (``GET`` or ``HEAD``; any other method: 405)."""
        if method not in ("GET", "HEAD"):
            response = connection.respond(405, "Method not allowed; this address takes GET, HEAD.\n")
            response.headers["Allow"] = "GET, HEAD"
            return response
        if path == HEALTHZ:
            status, text = 200, "ok"
        else:
            status, text = await self.readiness()
        body = (text + "\n").encode()
        headers = Headers([("Content-Type", "text/plain; charset=utf-8"),
                           ("Content-Length", str(len(body))), ("Cache-Control", "no-store"),
                           ("Connection", "close")])
        return Response(status, "OK" if status == 200 else "Service Unavailable", headers,
                        b"" if method == "HEAD" else body)

    async def readiness(self) -> tuple[int, str]:
        """``(200, "ready")`` or ``(503, why)``."""
        if self.state != READY:
            return 503, self.state
        problem = await self.database_problem()
        if problem is not None:
            return 503, f"database: {problem}"
        return 200, READY

    async def database_problem(self) -> str | None:
        """What is wrong with the database (``None``: nothing), asked at most once a second."""
        if self.probe is None:
            return None
        if time.monotonic() - self._checked_at < CACHE_SECONDS:
            return self._problem
        if self._check is None:
            self._check = asyncio.get_running_loop().create_task(self._run_check())
        return await asyncio.shield(self._check)

    async def _run_check(self) -> str | None:
        assert self.probe is not None
        try:
            async with asyncio.timeout(CHECK_TIMEOUT):
                problem = await self.probe()
        except TimeoutError:
            problem = f"the database did not answer within {CHECK_TIMEOUT:g} s"
        except Exception as e:  # whatever the check hit, the answer is "not ready", not a 500
            problem = f"the database check failed ({type(e).__name__})"
        self._problem, self._checked_at, self._check = problem, time.monotonic(), None
        return problem
