"""Clearing a hook from outside: Heat's ``{"unset_hook": ...}`` signal, and a NATS request.

Heat's signal clears a hook on any resource type and answers 400
``InvalidBreakPointHook`` for a hook name it does not know or one the
resource is not paused at. The NATS request
(``<prefix>.hookclear.<project>.<stack>``, a :class:`HookClearRequest`) does
the same for integrations and replies whether the clear took effect.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

from libs import pauses
from libs.db import resources, stacks
from libs.engine import hooks as rules
from libs.messaging.bus import Message
from libs.messaging.payloads import HookClearReply, HookClearRequest, PayloadError, decode
from libs.resources.base import described
from libs.resources.registry import Registry
from libs.template import errors
from services.api.keys import REGISTRY, RUNTIME
from services.api.nats_requests import answering


def describe(registry: Registry, stack: stacks.StackRow, row: resources.ResourceRow) -> str:
    """A resource as Heat prints it in messages: ``TestResource "r" [id] Stack "s" [id]``."""
    try:
        kind = registry.implementing(row.type, resource_name=row.name, environment=None).heat_class_name()
    except KeyError:
        kind = "Resource"
    return described(kind, row.name, row.physical_id, stack.name, str(stack.id))


def unset_hook_of(details: Any) -> str | None:
    """The hook a signal's details ask to clear, if they do."""
    if isinstance(details, dict) and "unset_hook" in details:
        return str(details["unset_hook"])
    return None


async def unset_hook(request: web.Request, stack: stacks.StackRow, row: resources.ResourceRow,
                     hook: str) -> web.Response:
    rt = request.app[RUNTIME]
    if not rules.valid_hook(hook):
        raise errors.InvalidBreakPointHook(
            f'Invalid hook type "{hook}" for {describe(request.app[REGISTRY], stack, row)}')
    if not await pauses.clear(rt.pool, rt.bus, stack, row.name, hook, by="signal"):
        raise errors.InvalidBreakPointHook(
            f'The "{hook}" hook is not defined on {describe(request.app[REGISTRY], stack, row)}')
    return web.Response(status=200)


async def _answer(app: web.Application, msg: Message) -> HookClearReply:
    parts = msg.subject.split(".")
    if len(parts) < 4:
        return HookClearReply(error="expected <prefix>.hookclear.<project>.<stack>")
    project, stack_ref = parts[-2], parts[-1]
    try:
        request = decode(msg.data)
    except PayloadError as exc:
        return HookClearReply(error=str(exc))
    if not isinstance(request, HookClearRequest):
        return HookClearReply(error="expected a hook_clear request")
    if not rules.valid_hook(request.hook):
        return HookClearReply(error=f'Invalid hook type "{request.hook}"')
    rt = app[RUNTIME]
    async with rt.pool.acquire() as conn:
        stack = await stacks.identify(conn, project, stack_ref)
    if stack is None:
        return HookClearReply(error=f"no stack {stack_ref} in project {project}")
    released = await pauses.clear(rt.pool, rt.bus, stack, request.resource, request.hook, by="nats")
    if not released:
        return HookClearReply(error=f'The "{request.hook}" hook is not waiting on {request.resource}')
    return HookClearReply(cleared=True)


async def responder_ctx(app: web.Application) -> AsyncIterator[None]:
    async with answering(app, app[RUNTIME].names.hook_clear_all, "hook clear request", _answer,
                         lambda error: HookClearReply(error=error)):
        yield
