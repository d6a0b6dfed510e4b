"""What the outage tests share: Heat's API over plain HTTP, a slow chained stack, a stream reader."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from typing import Any

from tests.support import wait_until


def call(url: str, method: str = "GET", body: object = None) -> tuple[int, Any]:
    """Status and JSON body; status 0 while nothing answers (the api itself restarting)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")
    except OSError as exc:
        return 0, str(exc)


def chained_template(count: int, wait_seconds: float = 1.0) -> dict[str, Any]:
    """``count`` test resources one after the other, each taking ``wait_seconds`` to create."""
    def props(i: int) -> dict[str, object]:
        chained = {"update_replace_value": {"get_attr": [f"r{i - 1}", "output"]}} if i else {}
        return {"value": f"v{i}", "action_wait_secs": {"create": wait_seconds}, **chained}
    return {"heat_template_version": "2016-10-14",
            "resources": {f"r{i}": {"type": "OS::Heat::TestResource", "properties": props(i)}
                          for i in range(count)}}


def create(api: str, name: str, template: dict[str, Any]) -> str:
    """Create a stack; the stack's URL."""
    status, created = call(api + "/v1/demo/stacks", "POST", {"stack_name": name, "template": template})
    assert status == 201, created
    return f"{api}/v1/demo/stacks/{name}/{created['stack']['id']}"


def settle(stack_url: str, timeout: float = 60.0) -> dict[str, Any]:
    """The stack once no longer in progress; never a 500 on the way, even while a server is down."""
    def settled() -> dict[str, Any] | None:
        status, body = call(stack_url)
        assert status in (0, 200, 503), body
        if status != 200 or body["stack"]["stack_status"].endswith("IN_PROGRESS"):
            return None
        stack: dict[str, Any] = body["stack"]
        return stack
    return wait_until(settled, timeout=timeout, interval=0.3, what=f"{stack_url} to settle")


def assert_one_event_per_transition(stack_url: str, resources: int) -> list[dict[str, Any]]:
    """Every resource started and completed exactly once; the stack's events."""
    status, body = call(stack_url + "/events")
    assert status == 200, body
    name = stack_url.split("/")[-2]
    seen: dict[tuple[str, str], int] = {}
    for event in body["events"]:
        if event["resource_name"] != name:
            key = (event["resource_name"], event["resource_status"])
            seen[key] = seen.get(key, 0) + 1
    assert len(seen) == 2 * resources and set(seen.values()) == {1}, seen
    events: list[dict[str, Any]] = body["events"]
    return events


class StreamReader(threading.Thread):
    """Reads a stack's event stream (``until=settled``) to its end, keeping each event."""

    def __init__(self, stack_url: str) -> None:
        super().__init__(daemon=True)
        self.url = stack_url + "/events/stream?until=settled"
        self.events: list[dict[str, Any]] = []
        self.opened = threading.Event()

    def run(self) -> None:
        with urllib.request.urlopen(self.url, timeout=30) as response:
            self.opened.set()
            for line in response:
                if line.startswith(b"data: "):
                    self.events.append(json.loads(line[len(b"data: "):]))
