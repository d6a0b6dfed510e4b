"""Webhook subscriptions (Ember): per project, or per stack and the stacks nested in it.

``POST /v1/{project}/subscriptions`` or ``POST .../stacks/{name}/{id}/subscriptions``
with ``{"url", "secret", "kinds": ["event", "hook"], "resource": "<pattern>", "hooks": [...]}``;
the notifier POSTs each matching notice there, signed with HMAC-SHA256 of the
body under ``secret`` (``X-Ember-Signature: sha256=<hex>``). The secret is shown
once, in the answer to the POST. ``GET .../subscriptions/{id}/deliveries`` shows
each delivery: its status, attempts and last error.
"""

from __future__ import annotations

import secrets
import uuid
from typing import Any

from aiohttp import web

from libs.db import subscriptions
from libs.engine import hooks as rules
from libs.template.errors import EntityNotFound, MalformedRequest
from services.api import lookup
from services.api.context import context
from services.api.http import json_body, json_response, path_uuid, query_int
from services.api.keys import RUNTIME

KINDS = ("event", "hook")


def subscription_from(body: dict[str, Any], project: str, stack_id: uuid.UUID | None
                      ) -> subscriptions.Subscription:
    """A subscription from a request body, or a 400 naming the bad field."""
    unknown = sorted(set(body) - {"url", "secret", "kinds", "resource", "hooks"})
    if unknown:
        raise MalformedRequest(f"subscription.{unknown[0]}: unknown field; expected url, secret, kinds,"
                               " resource, hooks")
    url = body.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise MalformedRequest("subscription.url: an http(s) URL is required")
    secret = body.get("secret")
    if secret is None:
        secret = secrets.token_urlsafe(32)
    if not isinstance(secret, str) or not secret:
        raise MalformedRequest("subscription.secret: a non-empty string is expected")
    kinds = body.get("kinds", list(KINDS))
    if not isinstance(kinds, list) or not kinds:
        raise MalformedRequest("subscription.kinds: a non-empty list of event, hook is expected")
    for index, kind in enumerate(kinds):
        if kind not in KINDS:
            raise MalformedRequest(f"subscription.kinds[{index}]: one of event, hook is expected,"
                                   f" not {kind!r}")
    resource = body.get("resource", "*")
    if not isinstance(resource, str) or not resource:
        raise MalformedRequest("subscription.resource: a resource name or pattern is expected")
    hooks = body.get("hooks")
    if hooks is not None:
        if not isinstance(hooks, list):
            raise MalformedRequest("subscription.hooks: a list of hooks is expected")
        for index, hook in enumerate(hooks):
            if not rules.valid_hook(hook):
                raise MalformedRequest(f'subscription.hooks[{index}]: Invalid hook type "{hook}"')
    return subscriptions.Subscription(id=uuid.uuid4(), project=project, stack_id=stack_id, url=url,
                                      secret=secret, kinds=list(dict.fromkeys(kinds)), resource=resource,
                                      hooks=hooks, source="api")


def view(sub: subscriptions.Subscription, *, with_secret: bool = False) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "id": str(sub.id), "url": sub.url, "stack_id": str(sub.stack_id) if sub.stack_id else None,
        "kinds": sub.kinds, "resource": sub.resource, "hooks": sub.hooks, "source": sub.source,
        "creation_time": sub.created_at.isoformat() if sub.created_at else None}
    if with_secret:
        shown["secret"] = sub.secret
    return shown


async def _create(request: web.Request, stack_id: uuid.UUID | None) -> web.Response:
    sub = subscription_from(await json_body(request), context(request).project, stack_id)
    async with request.app[RUNTIME].pool.acquire() as conn:
        await subscriptions.add(conn, sub)
        stored = await subscriptions.get(conn, sub.project, sub.id)
    assert stored is not None
    return json_response({"subscription": view(stored, with_secret=True)}, status=201)


async def create(request: web.Request) -> web.Response:
    return await _create(request, None)


async def create_for_stack(request: web.Request) -> web.Response:
    stack = await lookup.stack_of(request)
    return await _create(request, stack.id)


async def list_all(request: web.Request) -> web.Response:
    async with request.app[RUNTIME].pool.acquire() as conn:
        found = await subscriptions.for_project(conn, context(request).project)
    return json_response({"subscriptions": [view(s) for s in found]})


async def list_for_stack(request: web.Request) -> web.Response:
    stack = await lookup.stack_of(request)
    async with request.app[RUNTIME].pool.acquire() as conn:
        found = await subscriptions.for_project(conn, context(request).project, stack.id)
    return json_response({"subscriptions": [view(s) for s in found]})


async def _found(request: web.Request) -> subscriptions.Subscription:
    sub_id = path_uuid(request, "subscription_id", "Subscription")
    async with request.app[RUNTIME].pool.acquire() as conn:
        sub = await subscriptions.get(conn, context(request).project, sub_id)
    if sub is None:
        raise EntityNotFound("Subscription", request.match_info["subscription_id"])
    return sub


async def show(request: web.Request) -> web.Response:
    return json_response({"subscription": view(await _found(request))})


async def delete(request: web.Request) -> web.Response:
    sub = await _found(request)
    async with request.app[RUNTIME].pool.acquire() as conn:
        await subscriptions.remove(conn, sub.project, sub.id)
    return web.Response(status=204)


async def deliveries(request: web.Request) -> web.Response:
    sub = await _found(request)
    limit = query_int(request, "limit", 100, minimum=1) or 100
    async with request.app[RUNTIME].pool.acquire() as conn:
        found = await subscriptions.deliveries_of(conn, sub.id, limit=min(limit, 1000))
    return json_response({"deliveries": [{
        "id": str(d.id), "kind": d.kind, "notice": d.notice_key, "status": d.status, "attempts": d.attempts,
        "last_status": d.last_status, "last_error": d.last_error, "creation_time": d.created_at.isoformat(),
        "delivered_time": d.delivered_at.isoformat() if d.delivered_at else None,
        "next_attempt_time": d.next_at.isoformat() if d.status == "pending" else None} for d in found]})


def add_routes(app: web.Application, prefix: str, one: str) -> None:
    r = app.router
    r.add_get(f"{prefix}/subscriptions", list_all)
    r.add_post(f"{prefix}/subscriptions", create)
    r.add_get(f"{prefix}/subscriptions/{{subscription_id}}", show)
    r.add_delete(f"{prefix}/subscriptions/{{subscription_id}}", delete)
    r.add_get(f"{prefix}/subscriptions/{{subscription_id}}/deliveries", deliveries)
    r.add_get(f"{one}/subscriptions", list_for_stack)
    r.add_post(f"{one}/subscriptions", create_for_stack)
