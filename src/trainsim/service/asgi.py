"""The HTTP plumbing under the API's routes: request bodies read as a config file is read,
a body-size limit, the config checker processes' start, and the requests waiting for a job to
end.

Split from ``service.app`` (robust57: 567 lines), which holds the routes.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from typing import Any

from fastapi import Request
from fastapi.exceptions import HTTPException
from fastapi.routing import APIRoute

from trainsim.config import safe_load
from trainsim.errors import ConfigError
from trainsim.service.api_schema import ApiError
from trainsim.service.store import Job
from trainsim.service.worker import lower_priority


class _BodyError(HTTPException):
    """A request body that is not plain JSON data (answered 422, field 'body')."""


class _WrittenRequest(Request):
    """A request whose JSON body reads numbers as written (``config.safe_load``): FastAPI's
    ``json.loads`` read ``"framework_version": 0.10`` as the float 0.1, Megatron-core's 0.1
    profile, where the CLI reads 0.10. Duplicate keys, NaN/Infinity and over-deep or
    over-long data are refused in one line, as in a config file."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            try:
                self._json = safe_load.loads(body.decode("utf-8"), "body")
            except UnicodeDecodeError:
                raise _BodyError(422, "body is not UTF-8 JSON") from None
            except ConfigError as exc:
                raise _BodyError(422, str(exc)) from None
        return self._json


class _WrittenRoute(APIRoute):
    """Routes whose handlers get a :class:`_WrittenRequest`."""

    def get_route_handler(self) -> Any:
        handler = super().get_route_handler()

        async def route(request: Request) -> Any:
            return await handler(_WrittenRequest(request.scope, request.receive))
        return route



def _start_checker(server_pid: int) -> None:
    """A checker process yields the CPU to the API process, as workers do, and leaves when
    the server is gone (even killed with SIGKILL)."""
    lower_priority()

    def watch() -> None:
        while os.getppid() == server_pid:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


class _Waiters:
    """Requests waiting for jobs to end; the worker pool wakes them (from its thread)."""

    def __init__(self) -> None:
        self._events: dict[str, set[asyncio.Event]] = {}
        self.loop: asyncio.AbstractEventLoop | None = None

    def notify(self, job_id: str) -> None:
        if self.loop is not None and job_id in self._events:
            self.loop.call_soon_threadsafe(self._set, job_id)

    def _set(self, job_id: str) -> None:
        for event in self._events.get(job_id, ()):
            event.set()

    async def until_ended(self, job_id: str, read: Any, wait_s: float) -> Job:
        """The job from ``await read()``, once ended or after ``wait_s`` seconds. The database
        is read again every second too: another server, or the supervisor, may end it."""
        event = asyncio.Event()
        self._events.setdefault(job_id, set()).add(event)
        deadline = time.monotonic() + wait_s
        try:
            while True:
                event.clear()
                job = await read()
                left = deadline - time.monotonic()
                if job.status not in ("queued", "running") or left <= 0:
                    return job
                try:
                    await asyncio.wait_for(event.wait(), min(left, 1.0))
                except asyncio.TimeoutError:
                    pass
        finally:
            self._events[job_id].discard(event)
            if not self._events[job_id]:
                del self._events[job_id]


class _BodyLimit:
    """ASGI middleware: 413 for a body over the limit, declared or streamed."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            return await self._reject(send)
        seen = 0

        async def limited() -> Any:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise ApiError(413, "body", self._message())
            return message

        try:
            await self.app(scope, limited, send)
        except ApiError:
            await self._reject(send)

    def _message(self) -> str:
        return f"request body over {self.max_bytes} bytes (max_body_bytes)"

    async def _reject(self, send: Any) -> None:
        body = json.dumps({"error": self._message(), "field": "body"}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
