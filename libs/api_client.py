"""A small client of the Ember API for the ``ember stack`` commands: calls, faults and event streams.

A Heat fault becomes an ``ApiError`` carrying its message; an unreachable API does too. A stack's
events are read from its ``events/stream`` server-sent events, resumed with ``Last-Event-ID``
across dropped connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
from collections.abc import AsyncGenerator
from typing import Any
from urllib.parse import quote, urlsplit

import aiohttp
import orjson

REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=30)
# The API sends a comment every 15 s on an idle stream: a minute of silence is a dead connection.
STREAM_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=60)
RECONNECT_SECONDS = 1.0
# Streams are long-lived connections; past this many, deeper stacks show as first read.
MAX_STREAMS = 50


class ApiError(Exception):
    """What to tell the user: a Heat fault's message, or why the API could not be reached."""


async def _fault(response: aiohttp.ClientResponse) -> ApiError:
    text = await response.text()
    try:
        return ApiError(str(orjson.loads(text)["error"]["message"]))
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return ApiError(text.strip() or f"{response.status} {response.reason}")


@dataclasses.dataclass(frozen=True)
class Message:
    """One server-sent event."""

    id: str
    event: str
    data: str


class SseParser:
    """Server-sent events from a byte stream, fed as it arrives (a line may span chunks)."""

    def __init__(self) -> None:
        self._buffer = b""
        self._id = ""
        self._event = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[Message]:
        *lines, self._buffer = (self._buffer + chunk).split(b"\n")
        out = []
        for raw in lines:
            text = raw.decode(errors="replace").removesuffix("\r")
            if not text:  # a blank line ends an event
                if self._data:
                    out.append(Message(self._id, self._event or "message", "\n".join(self._data)))
                self._event, self._data = "", []
                continue
            field, _, value = text.partition(":")  # no field: a comment, such as the API's keepalive
            value = value.removeprefix(" ")
            if field == "id":
                self._id = value
            elif field == "event":
                self._event = value
            elif field == "data":
                self._data.append(value)
        return out


class Api:
    """The few calls the debugger makes, on paths such as ``/v1/{project}/stacks/{name}/{id}``."""

    def __init__(self, session: aiohttp.ClientSession, url: str, project: str) -> None:
        self.session = session
        self.base = url.rstrip("/")
        self.prefix = f"/v1/{quote(project, safe='')}"

    def _unreachable(self, exc: Exception) -> ApiError:
        return ApiError(f"cannot reach the Ember API at {self.base}: {str(exc) or type(exc).__name__}")

    async def stack_path(self, name_or_id: str) -> str:
        """The stack's canonical path, as the API's redirect from a name or id gives it."""
        if "/" in name_or_id:  # name/id already
            return f"{self.prefix}/stacks/{name_or_id}"
        url = f"{self.base}{self.prefix}/stacks/{quote(name_or_id, safe='')}"
        try:
            async with self.session.get(url, allow_redirects=False) as response:
                location = response.headers.get("Location")
                if response.status in (301, 302, 303, 307, 308) and location:
                    return urlsplit(location).path
                raise await _fault(response)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise self._unreachable(exc) from exc

    async def call(self, method: str, path: str, *, body: Any = None, params: dict[str, str] | None = None,
                   missing_ok: bool = False) -> Any:
        """The answer's JSON (None for no content, or for a 404 when ``missing_ok``); a fault raises."""
        url = f"{self.base}{path}"
        try:
            async with self.session.request(method, url, json=body, params=params) as response:
                if response.status == 404 and missing_ok:
                    return None
                if response.status >= 400:
                    raise await _fault(response)
                if response.status == 204 or response.content_type != "application/json":
                    return None
                return await response.json()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise self._unreachable(exc) from exc

    async def latest_event(self, path: str) -> str | None:
        """The id of the stack's last event, if any."""
        found = await self.call("GET", f"{path}/events", params={"limit": "1", "sort_dir": "desc"})
        return str(found["events"][0]["id"]) if found["events"] else None

    async def resources(self, path: str, depth: int) -> list[dict[str, Any]]:
        found = await self.call("GET", f"{path}/resources", params={"nested_depth": str(depth)})
        return list(found["resources"])

    async def events(self, path: str, *, after: str | None, until_settled: bool
                     ) -> AsyncGenerator[dict[str, Any], None]:
        """The stack's events after ``after`` as they come, across dropped connections."""
        last = after
        params = {"until": "settled"} if until_settled else {}
        while True:
            headers = {"Last-Event-ID": last} if last else {}
            try:
                async with self.session.get(f"{self.base}{path}/events/stream", params=params,
                                            headers=headers, timeout=STREAM_TIMEOUT) as response:
                    if 400 <= response.status < 500:
                        raise await _fault(response)
                    response.raise_for_status()  # a 5xx: the API (or a proxy) is between restarts
                    parser = SseParser()
                    async for chunk in response.content.iter_any():
                        for message in parser.feed(chunk):
                            if message.event == "event":
                                last = message.id or last
                                yield orjson.loads(message.data)
                if until_settled:
                    return  # the API ends this stream once the stack has settled, and only then
            except (aiohttp.ClientError, TimeoutError):
                pass  # dropped (an API restart): resume after the last event read
            await asyncio.sleep(RECONNECT_SECONDS)


class EventStreams:
    """One event-stream reader per stack; what they read goes to one queue."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.queue: asyncio.Queue[tuple[str, str, Any]] = asyncio.Queue()
        self.tasks: dict[str, asyncio.Task[None]] = {}

    def open(self, path: str, marker: str | None, *, until_settled: bool = False) -> None:
        if path not in self.tasks and len(self.tasks) < MAX_STREAMS:
            self.tasks[path] = asyncio.create_task(self._read(path, marker, until_settled))

    async def _read(self, path: str, marker: str | None, until_settled: bool) -> None:
        try:
            # Closed here, not when collected: a cancelled reader lets its connection go at once.
            async with contextlib.aclosing(self.api.events(path, after=marker,
                                                           until_settled=until_settled)) as events:
                async for event in events:
                    await self.queue.put(("event", path, event))
            await self.queue.put(("end", path, None))
        except Exception as exc:  # the watch decides: a fault ends it
            await self.queue.put(("error", path, exc))

    async def close(self, paths: list[str]) -> None:
        tasks = [t for t in (self.tasks.pop(p, None) for p in paths) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def parse_time(value: object) -> datetime.datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        at = datetime.datetime.fromisoformat(value)
    except ValueError:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=datetime.UTC)
