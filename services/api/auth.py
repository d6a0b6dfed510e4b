"""The auth middleware: a :class:`~services.api.context.RequestContext` for every project route.

``noauth`` (Heat's noauth pipeline, the dev default): the project is the one
in the path, with or without a token; the caller is an admin unless ``X-Roles``
(a comma list, as the reference Heat's launcher takes) names other roles, whose
route rules then apply as in keystone mode. ``keystone``: ``X-Auth-Token`` must name
a live token; its project must be the path's (else 403, as Heat's
``tenant_local`` check), and its roles must satisfy the rule the matched route
declares in :data:`~services.api.openapi.OPERATIONS` (else Heat's 403 naming
the policy). The rule is found by route, never by the look of the path. A stack
user's token reaches its own resource alone (:mod:`services.api.stack_user_access`);
a signal URL signed with a resource's secret needs no token.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from libs.resources import stack_user
from services.api import openapi, policy, stack_user_access
from services.api.context import RequestContext, StackUserScope, set_context
from services.api.faults import Handler, answer, fault
from services.api.http import json_value
from services.api.keys import AUTHENTICATOR, SETTINGS

RULES: Mapping[tuple[str, str], policy.Rule] = {(op.method, op.path): op.rule for op in openapi.OPERATIONS}


def _project_of(request: web.Request) -> str | None:
    parts = request.path.split("/")
    if len(parts) >= 3 and parts[1] == "v1" and parts[2]:
        return parts[2]
    return None


def _declared(request: web.Request) -> policy.Rule | None:
    """The matched route's rule; None when no route matched (the handler answers 404 or 405)."""
    route = _route(request)
    if route is None:
        return None
    method = "GET" if request.method == "HEAD" else request.method
    # A route missing from the table (a test fails on it) is for admins only, never open.
    return RULES.get((method, route), policy.admin(f"{method} {route}"))


async def _body_key(request: web.Request) -> str | None:
    """The one key of a JSON object body, if that is what the request carries.

    A body that is not JSON is Heat's 400 here already, as the handler would answer.
    """
    body: Any = await json_value(request)
    if isinstance(body, dict) and len(body) == 1:
        return str(next(iter(body)))
    return None


async def _rule(request: web.Request) -> policy.Rule | None:
    rule = _declared(request)
    if rule is not None and rule.by_body:
        key = await _body_key(request)
        # A body naming no known action goes on to the handler's 400, as in Heat.
        return rule.by_body.get(key) if key is not None else None
    return rule


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    project = _project_of(request)
    if project is None:
        return await handler(request)
    settings = request.app[SETTINGS].api
    token = request.headers.get("X-Auth-Token")
    if settings.auth == "noauth":
        given = request.headers.get("X-Roles")
        roles = frozenset(r.strip() for r in given.split(",") if r.strip()) if given else None
        if roles is not None:
            rule = await _rule(request)
            if rule is not None and not policy.allows(rule.needs, roles):
                return answer(policy.Forbidden(rule.action))
        noauth = RequestContext(project=project, user=request.headers.get("X-User-Id"), token=token)
        set_context(request, noauth if roles is None else dataclasses.replace(noauth, roles=roles))
        return await handler(request)
    signature = request.query.get(stack_user.SIGNATURE)
    if not token and signature is not None and stack_user_access.signs(request.method, _route(request)):
        return await _signed(request, handler, project, signature)
    if not token:
        return fault(401, "HTTPUnauthorized", "Authentication required",
                     headers={"WWW-Authenticate": 'Keystone uri="/identity/v3"'})
    ctx = await request.app[AUTHENTICATOR].verify(token)
    if ctx is None:
        return fault(401, "HTTPUnauthorized", "The request you have made requires authentication.",
                     headers={"WWW-Authenticate": 'Keystone uri="/identity/v3"'})
    if ctx.project != project and not ctx.is_admin:
        # Heat's tenant check: a bare webob 403, before any policy is asked.
        return fault(403, "HTTPForbidden", "Access was denied to this resource.")
    route = _route(request)
    if ctx.stack_user is not None and route is not None and not stack_user_access.allows(
            ctx.stack_user, request.method, route, request.match_info):
        # Heat's deny_stack_user: the route's policy refuses it, whatever it needs of others.
        refusing = _declared(request)
        assert refusing is not None  # a route matched
        return answer(policy.Forbidden(refusing.action))
    rule = await _rule(request)
    if ctx.stack_user is None and rule is not None and not policy.allows(rule.needs, ctx.roles):
        return answer(policy.Forbidden(rule.action))
    set_context(request, RequestContext(project=project, user=ctx.user, user_name=ctx.user_name,
                                        roles=ctx.roles, token=token, stack_user=ctx.stack_user))
    return await handler(request)


def _route(request: web.Request) -> str | None:
    resource = request.match_info.route.resource
    return None if resource is None else resource.canonical


async def _signed(request: web.Request, handler: Handler, project: str, signature: str) -> web.StreamResponse:
    """A signal on a signed URL: no token, the resource's secret in the query (Heat's pre-signed URL)."""
    match = request.match_info
    user = await request.app[AUTHENTICATOR].signed(project, match.get("stack_id", ""),
                                                   match.get("resource_name", ""), signature)
    if user is None:
        # Heat's answer to a pre-signed URL whose signature is not the resource's.
        return fault(403, "HTTPForbidden", "The request signature does not match the resource's.")
    scope = StackUserScope(stack_id=match["stack_id"], resource_name=match["resource_name"], physical_id=None)
    set_context(request, RequestContext(project=project, user=user, roles=frozenset({stack_user_access.ROLE}),
                                        stack_user=scope))
    return await handler(request)
