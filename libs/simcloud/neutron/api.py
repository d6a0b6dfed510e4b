"""Neutron's routes: the same list/show/create/update/delete and tags for every kind, and the extras."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web

from libs.db import Conn
from libs.simcloud import auth, discovery, errors, jsonweb
from libs.simcloud.app import service_app
from libs.simcloud.errors import ApiError, bad_request
from libs.simcloud.neutron import listing, networks, policy, ports, routers, security, store
from libs.simcloud.neutron.bodies import BY_PATH, Body, Kind, for_caller
from libs.simcloud.neutron.context import Op
from libs.simcloud.state import STATE, SimState

Create = Callable[[Op, dict[str, Any]], Awaitable[Body]]
Update = Callable[[Op, Body, dict[str, Any]], Awaitable[Body]]
Delete = Callable[[Op, Body], Awaitable[None]]

_OPS: dict[Kind, tuple[Create, Update, Delete]] = {
    Kind.NETWORK: (networks.create_network, networks.update_network, networks.delete_network),
    Kind.SUBNET: (networks.create_subnet, networks.update_subnet, networks.delete_subnet),
    Kind.PORT: (ports.create_port, ports.update_port, ports.delete_port),
    Kind.ROUTER: (routers.create_router, routers.update_router, routers.delete_router),
    Kind.FLOATINGIP: (routers.create_floatingip, routers.update_floatingip, routers.delete_floatingip),
    Kind.SECURITY_GROUP: (security.create_group, security.update_group, security.delete_group),
    Kind.SECURITY_GROUP_RULE: (security.create_rule, security.update_rule, security.delete_rule),
}
_PATHS = "|".join(BY_PATH)
_TAGGABLE = "|".join(k.info.path for k in Kind if k is not Kind.SECURITY_GROUP_RULE)
VERSION = discovery.ApiVersion("v2.0", "/network/v2.0")


@asynccontextmanager
async def _op(request: web.Request) -> AsyncIterator[Op]:
    """The caller's operation: one connection, one transaction."""
    state = request.app[STATE]
    async with state.pool.acquire() as conn, conn.transaction():
        yield Op(conn, state, auth.auth_of(request))


def _kind(request: web.Request) -> Kind:
    return BY_PATH[request.match_info["kind"]]


def _seen(request: web.Request, kind: Kind, body: Body) -> Body:
    return for_caller(kind, body, admin=auth.auth_of(request).is_admin)


def _params(request: web.Request) -> dict[str, list[str]]:
    return {key: request.query.getall(key) for key in request.query}


async def list_objects(request: web.Request) -> web.Response:
    kind = _kind(request)
    params = _params(request)
    query = listing.parse(params)
    async with _op(request) as op:
        if kind is Kind.SECURITY_GROUP:
            await security.ensure_default(op, op.auth.project_id)
        where = store.push_filters(kind, store.visible(kind, op.scope), query.filters)
        where.tags(request)
        if query.limit and not query.sort and all(store.pushable(kind, f) for f in query.filters):
            # the page in SQL: no filter or order left for Python
            found = await store.page_by_id(op.conn, kind, where, query.limit, query.marker)
            query = dataclasses.replace(query, marker=None)
        else:
            found = await store.bodies(op.conn, kind, where)
    url = f"{request.scheme}://{request.host}{request.path}"
    shown = [_seen(request, kind, b) for b in found]
    return jsonweb.reply(listing.answer(kind.info.collection, shown, query, url, params))


async def show(request: web.Request) -> web.Response:
    kind = _kind(request)
    fields = listing.parse(_params(request)).fields
    async with _op(request) as op:
        body = await store.one(op.conn, kind, request.match_info["id"], op.scope)
    return jsonweb.reply({kind.info.member: listing.project(_seen(request, kind, body), fields)})


async def _request_body(request: web.Request, kind: Kind) -> dict[str, Any]:
    try:
        return await jsonweb.body(request, kind.info.member)
    except jsonweb.BadBody:
        raise bad_request(f"Failed to parse request. Resource body required; '{kind.info.member}' "
                          "not found") from None


async def create(request: web.Request) -> web.Response:
    kind = _kind(request)
    data = await jsonweb.body(request)
    many = data.get(kind.info.collection)
    if isinstance(many, list):  # the bulk create: {"networks": [{...}, ...]}, all or nothing
        admin = auth.auth_of(request).is_admin
        for one in many:
            policy.check(kind, policy.Action.CREATE, one if isinstance(one, dict) else {}, admin=admin)
        async with _op(request) as op:
            made = [await _OPS[kind][0](op, dict(one)) for one in many]
        return jsonweb.reply({kind.info.collection: [_seen(request, kind, b) for b in made]}, status=201)
    wanted = data.get(kind.info.member)
    if not isinstance(wanted, dict):
        raise bad_request(f"Failed to parse request. Resource body required; '{kind.info.member}' "
                          "not found")
    policy.check(kind, policy.Action.CREATE, wanted, admin=auth.auth_of(request).is_admin)
    async with _op(request) as op:
        body = await _OPS[kind][0](op, wanted)
    return jsonweb.reply({kind.info.member: _seen(request, kind, body)}, status=201)


async def update(request: web.Request) -> web.Response:
    kind = _kind(request)
    wanted = await _request_body(request, kind)
    async with _op(request) as op:
        current = await store.one(op.conn, kind, request.match_info["id"], op.scope, lock=True)
        policy.check(kind, policy.Action.UPDATE, wanted, admin=op.auth.is_admin)
        body = await _OPS[kind][1](op, current, wanted)
    return jsonweb.reply({kind.info.member: _seen(request, kind, body)})


async def delete(request: web.Request) -> web.Response:
    kind = _kind(request)
    async with _op(request) as op:
        current = await store.one(op.conn, kind, request.match_info["id"], op.scope, lock=True)
        await _OPS[kind][2](op, current)
    return jsonweb.no_content()


async def _tagged(op: Op, request: web.Request) -> tuple[Kind, Body]:
    kind = _kind(request)
    return kind, await store.one(op.conn, kind, request.match_info["id"], op.scope, lock=True)


def _tag_list(data: dict[str, Any]) -> list[str]:
    tags = data.get("tags")
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise bad_request("Invalid input for tags. Reason: tags must be a list of strings.")
    for tag in tags:
        if not tag or len(tag) > 255 or "," in tag:
            raise bad_request(f"Invalid input for tags. Reason: '{tag}' is not a valid tag.")
    return tags


async def tags_get(request: web.Request) -> web.Response:
    async with _op(request) as op:
        _, body = await _tagged(op, request)
    return jsonweb.reply({"tags": body["tags"]})


async def tags_replace(request: web.Request) -> web.Response:
    tags = _tag_list(await jsonweb.body(request))
    async with _op(request) as op:
        kind, body = await _tagged(op, request)
        await store.set_tags(op.conn, kind, body["id"], tags)
    return jsonweb.reply({"tags": list(dict.fromkeys(tags))})


async def tags_add_many(request: web.Request) -> web.Response:
    tags = _tag_list(await jsonweb.body(request))
    async with _op(request) as op:
        kind, body = await _tagged(op, request)
        merged_tags = list(dict.fromkeys([*body["tags"], *tags]))
        await store.set_tags(op.conn, kind, body["id"], merged_tags)
    return jsonweb.reply({"tags": merged_tags}, status=201)


async def tags_clear(request: web.Request) -> web.Response:
    async with _op(request) as op:
        kind, body = await _tagged(op, request)
        await store.set_tags(op.conn, kind, body["id"], [])
    return jsonweb.no_content()


def _missing_tag(tag: str, body: Body) -> ApiError:
    return ApiError(404, f"Tag {tag} could not be found for resource {body['id']}.", "TagNotFound")


async def tag_one(request: web.Request) -> web.Response:
    tag = request.match_info["tag"]
    async with _op(request) as op:
        kind, body = await _tagged(op, request)
        if request.method == "GET":
            if tag not in body["tags"]:
                raise _missing_tag(tag, body)
            return jsonweb.no_content()
        if request.method == "PUT":
            _tag_list({"tags": [tag]})
            if tag not in body["tags"]:
                await store.set_tags(op.conn, kind, body["id"], [*body["tags"], tag])
            return web.Response(status=201)
        if tag not in body["tags"]:
            raise _missing_tag(tag, body)
        await store.set_tags(op.conn, kind, body["id"], [t for t in body["tags"] if t != tag])
    return jsonweb.no_content()


async def router_interface(request: web.Request) -> web.Response:
    data = await jsonweb.body(request)
    async with _op(request) as op:
        router = await store.one(op.conn, Kind.ROUTER, request.match_info["id"], op.scope, lock=True)
        if request.match_info["action"] == "add_router_interface":
            info = await routers.add_interface(op, router, data)
        else:
            info = await routers.remove_interface(op, router, data)
    return jsonweb.reply(info)


async def _quota_project(op: Op, request: web.Request) -> str:
    project_id = request.match_info["project_id"]
    if project_id != op.auth.project_id and not op.auth.is_admin:
        raise ApiError(403, "Non-admin is not authorised to access quotas for another tenant",
                       "HTTPForbidden")
    return project_id


async def quota_show(request: web.Request) -> web.Response:
    async with _op(request) as op:
        project_id = await _quota_project(op, request)
        if request.match_info.get("details") == "/default":
            return jsonweb.reply({"quota": {"project_id": project_id, **store.DEFAULT_QUOTAS}})
        limits = await store.quotas(op.conn, project_id)
        if not request.match_info.get("details"):
            return jsonweb.reply({"quota": limits})
        used = {store.QUOTA_KIND[k]: await store.count(op.conn, k, project_id) for k in Kind}
    return jsonweb.reply({"quota": {name: {"limit": limit, "used": used.get(name, 0), "reserved": 0}
                                    for name, limit in limits.items()}})


async def quota_update(request: web.Request) -> web.Response:
    data = await jsonweb.body(request, "quota")
    unknown = sorted(set(data) - set(store.DEFAULT_QUOTAS))
    if unknown:
        raise bad_request("Unrecognized attribute(s) '" + ", ".join(unknown) + "'")
    async with _op(request) as op:
        project_id = await _quota_project(op, request)
        await store.set_quotas(op.conn, project_id, {k: int(v) for k, v in data.items()})
        limits = await store.quotas(op.conn, project_id)
    return jsonweb.reply({"quota": limits})


async def quota_reset(request: web.Request) -> web.Response:
    async with _op(request) as op:
        await store.reset_quotas(op.conn, await _quota_project(op, request))
    return jsonweb.no_content()


async def extensions(request: web.Request) -> web.Response:
    names = ("router", "external-net", "security-group", "standard-attr-tag", "tag-ext", "quotas",
             "binding", "allowed-address-pairs", "port-security", "extraroute", "ext-gw-mode",
             "standard-attr-description", "standard-attr-timestamp", "standard-attr-revisions",
             "net-mtu", "provider", "sorting", "pagination", "fip-port-details", "filter-validation",
             "subnet_allocation")
    return jsonweb.reply({"extensions": [{"alias": n, "name": n, "description": "", "links": [],
                                          "updated": discovery.UPDATED} for n in names]})


async def subnet_pools(request: web.Request) -> web.Response:
    """Subnet pools: the API answers (as Neutron's with ``subnet_allocation``), none exist, none are made."""
    if "id" in request.match_info:
        raise ApiError(404, f"Subnet pool {request.match_info['id']} could not be found.",
                       "SubnetPoolNotFound")
    return jsonweb.reply({"subnetpools": []})


def make_app(state: SimState) -> web.Application:
    app = service_app(state, errors.ErrorStyle.NEUTRON)
    discovery.add_routes(app, "/network", VERSION)
    base = "/v2.0"
    r = app.router
    r.add_get(f"{base}/extensions", extensions)
    r.add_get(f"{base}/subnetpools", subnet_pools)
    r.add_get(base + "/subnetpools/{id}", subnet_pools)
    r.add_get(base + "/quotas/{project_id}{details:(/details|/default)?}", quota_show)
    r.add_put(base + "/quotas/{project_id}", quota_update)
    r.add_delete(base + "/quotas/{project_id}", quota_reset)
    r.add_put(base + "/routers/{id}/{action:add_router_interface|remove_router_interface}", router_interface)
    one = base + "/{kind:" + _PATHS + "}/{id}"
    tagged = base + "/{kind:" + _TAGGABLE + "}/{id}/tags"
    r.add_get(tagged, tags_get)
    r.add_put(tagged, tags_replace)
    r.add_post(tagged, tags_add_many)
    r.add_delete(tagged, tags_clear)
    r.add_route("*", tagged + "/{tag}", tag_one)
    r.add_get(base + "/{kind:" + _PATHS + "}", list_objects)
    r.add_post(base + "/{kind:" + _PATHS + "}", create)
    r.add_get(one, show)
    r.add_put(one, update)
    r.add_delete(one, delete)
    return app


async def seed(conn: Conn, state: SimState) -> None:
    """Each existing project's ``default`` security group (others get theirs on first use), and
    devstack's ``router1``: demo's, its gateway on ``public``, an interface on ``private-subnet``."""
    for row in await conn.fetch("SELECT id FROM simcloud.projects"):
        op = Op(conn, state, auth.Auth("simcloud", row["id"], ("admin",), 0.0, "seed"))
        await security.ensure_default(op, row["id"])
    await _router1(conn, state)


async def _router1(conn: Conn, state: SimState) -> None:
    if await conn.fetchval("SELECT 1 FROM simcloud.routers WHERE name = 'router1'"):
        return
    demo = await conn.fetchval("SELECT id FROM simcloud.projects WHERE name = 'demo'")
    public = await conn.fetchval("SELECT id FROM simcloud.networks WHERE name = 'public'")
    subnet = await conn.fetchval("SELECT id FROM simcloud.subnets WHERE name = 'private-subnet'")
    if demo is None or public is None or subnet is None:
        return
    op = Op(conn, state, auth.Auth("simcloud", demo, ("admin",), 0.0, "seed"))
    router = await routers.create_router(op, {"name": "router1", "project_id": demo,
                                              "external_gateway_info": {"network_id": public}})
    await routers.add_interface(op, router, {"subnet_id": subnet})
