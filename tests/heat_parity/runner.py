"""Sending a case's steps to a Heat-compatible API: real Heat when recording, Ember when testing.

The transport is any function that sends one request and answers the status
and the decoded body, so the same steps run against a remote Heat and against
Ember's app in the test process.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from tests.heat_parity.cases import Case, Step, get_path, substitute

Send = Callable[[str, str, Any], Awaitable[tuple[int, Any]]]


def decoded(text: str) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return text


async def _poll(send: Send, path: str, until: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        status, body = await send("GET", path, None)
        if until == "gone" and status == 404:
            return {"deleted": True}
        if status == 200 and isinstance(body, dict) and "resource" in body:
            # A resource's path: wait until it is in the state named with its physical id (a deployment
            # waiting for the signal the next step sends).
            shown = body["resource"]
            if shown.get("resource_status") == until and shown.get("physical_resource_id"):
                return dict(shown)
        if status == 200 and isinstance(body, dict) and "stack" in body:
            stack = body["stack"]
            state = str(stack.get("stack_status", ""))
            if until == "gone" and state == "DELETE_COMPLETE":
                return {"deleted": True}
            # Waiting for "gone", a delete that failed has ended too.
            if not state.endswith("IN_PROGRESS") and (until == "settled" or state.startswith("DELETE")):
                return dict(stack)
        last = (status, body)
        await asyncio.sleep(0.2)
    raise AssertionError(f"{path} did not become {until} within {timeout}s (last: {last!r})")


async def run_step(send: Send, step: Step, variables: dict[str, str], *,
                   wait_timeout: float) -> dict[str, Any]:
    """The answer to one step: ``status``, ``body`` and, after a wait, ``settled`` (the stack then)."""
    path = substitute(step.path, variables)
    status, body = await send(step.method, path, substitute(step.body, variables))
    answer: dict[str, Any] = {"status": status, "body": body}
    if step.method == "POST" and path.rstrip("/") == "/stacks" and status == 201:
        stack = body["stack"]
        name = str(step.body["stack_name"])
        variables.update(stack_id=stack["id"], stack_name=name, stack=f"{name}/{stack['id']}")
    for var, where in step.save.items():
        variables[var] = str(get_path(answer, where))
    if step.wait is not None:
        answer["settled"] = await _poll(send, substitute(step.wait_on, variables), step.wait, wait_timeout)
    return answer


async def run_case(send: Send, case: Case, *, wait_timeout: float) -> list[dict[str, Any]]:
    variables: dict[str, str] = {}
    return [await run_step(send, step, variables, wait_timeout=wait_timeout) for step in case.steps]


def stack_names(case: Case) -> list[str]:
    """Every stack the case creates, for cleaning up a shared Heat."""
    return [str(s.body["stack_name"]) for s in case.steps
            if s.method == "POST" and s.path.rstrip("/") == "/stacks" and isinstance(s.body, dict)
            and "stack_name" in s.body]
