"""The auth middleware: a :class:`~services.api.context.RequestContext` for every project route.

``noauth`` (Heat's noauth pipeline, the dev default): the project is the one
in the path, with or without a token. ``keystone``: ``X-Auth-Token`` must name
a live token; its project must be the path's (else 403, as Heat's
``tenant_local`` check), and a reader is refused anything but reads (403).
"""

from __future__ import annotations

from aiohttp import web

from services.api.context import RequestContext, set_context
from services.api.faults import Handler, fault
from services.api.keys import AUTHENTICATOR, SETTINGS

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Reads that Heat routes through POST: a reader may validate and preview.
READ_POSTS = ("/validate", "/stacks/preview")


def _project_of(request: web.Request) -> str | None:
    parts = request.path.split("/")
    if len(parts) >= 3 and parts[1] == "v1" and parts[2]:
        return parts[2]
    return None


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    project = _project_of(request)
    if project is None:
        return await handler(request)
    settings = request.app[SETTINGS].api
    token = request.headers.get("X-Auth-Token")
    if settings.auth == "noauth":
        set_context(request, RequestContext(project=project, user=request.headers.get("X-User-Id"),
                                            token=token))
        return await handler(request)
    if not token:
        return fault(401, "HTTPUnauthorized", "Authentication required",
                     headers={"WWW-Authenticate": 'Keystone uri="/identity/v3"'})
    ctx = await request.app[AUTHENTICATOR].verify(token)
    if ctx is None:
        return fault(401, "HTTPUnauthorized", "The request you have made requires authentication.",
                     headers={"WWW-Authenticate": 'Keystone uri="/identity/v3"'})
    if ctx.project != project and not ctx.is_admin:
        return fault(403, "Forbidden", "You are not authorized to complete this action.")
    ctx = RequestContext(project=project, user=ctx.user, user_name=ctx.user_name, roles=ctx.roles,
                         token=token)
    writing = request.method not in READ_METHODS and not any(
        request.path.endswith(p) for p in READ_POSTS)
    if writing and not ctx.can_write:
        return fault(403, "Forbidden", "You are not authorized to complete this action.")
    set_context(request, ctx)
    return await handler(request)
