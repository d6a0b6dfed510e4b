"""Security groups and their rules: Neutron's defaults, the project's ``default`` group, 409s."""

from __future__ import annotations

from typing import Any

import asyncpg

from libs.simcloud.errors import ApiError, bad_request, conflict
from libs.simcloud.neutron import secgroups, store
from libs.simcloud.neutron.bodies import Body, Kind, fresh, merged, not_found
from libs.simcloud.neutron.context import Op


async def _add_rules(op: Op, group_id: str, project_id: str, rules: list[Body]) -> None:
    for rule in rules:
        body = fresh(Kind.SECURITY_GROUP_RULE, {}, ident=op.state.new_id(), project_id=project_id)
        body.update(rule, security_group_id=group_id)
        await store.insert(op.conn, Kind.SECURITY_GROUP_RULE, body)


async def ensure_default(op: Op, project_id: str) -> str:
    """The project's ``default`` group, made with its four rules the first time it is needed."""
    found = await store.default_group(op.conn, project_id)
    if found is not None:
        return found
    ident = op.state.new_id()
    body = fresh(Kind.SECURITY_GROUP, {"name": "default", "description": "Default security group"},
                 ident=ident, project_id=project_id)
    try:
        async with op.conn.transaction():
            await store.insert(op.conn, Kind.SECURITY_GROUP, body)
            await _add_rules(op, ident, project_id, secgroups.default_rules(ident, is_default=True))
    except asyncpg.UniqueViolationError:
        pass  # made by a concurrent call
    found = await store.default_group(op.conn, project_id)
    assert found is not None
    return found


async def create_group(op: Op, request: dict[str, Any]) -> Body:
    project_id = op.owner(request.get("project_id") or request.get("tenant_id"))
    await ensure_default(op, project_id)
    if request.get("name") == "default":
        raise conflict("Default security group already exists.", "SecurityGroupDefaultAlreadyExists")
    await op.check_quota(Kind.SECURITY_GROUP, project_id)
    body = fresh(Kind.SECURITY_GROUP, request, ident=op.state.new_id(), project_id=project_id)
    await store.insert(op.conn, Kind.SECURITY_GROUP, body)
    await _add_rules(op, body["id"], project_id, secgroups.default_rules(body["id"], is_default=False))
    return await store.one(op.conn, Kind.SECURITY_GROUP, body["id"], None)


async def update_group(op: Op, current: Body, request: dict[str, Any]) -> Body:
    if current["name"] == "default" and request.get("name", "default") != "default":
        raise ApiError(409, "Updating default security group not allowed.",
                       "SecurityGroupCannotUpdateDefault")
    body = merged(Kind.SECURITY_GROUP, current, request)
    await store.update(op.conn, Kind.SECURITY_GROUP, body)
    return await store.one(op.conn, Kind.SECURITY_GROUP, body["id"], None)


async def delete_group(op: Op, current: Body) -> None:
    if current["name"] == "default" and not op.auth.is_admin:
        raise ApiError(409, "Insufficient rights for removing default security group.",
                       "SecurityGroupCannotRemoveDefault")
    if await store.ports_with_group(op.conn, current["id"]):
        raise conflict(f"Security Group {current['id']} in use.", "SecurityGroupInUse")
    await store.delete(op.conn, Kind.SECURITY_GROUP, current["id"])


async def create_rule(op: Op, request: dict[str, Any]) -> Body:
    group_id = request.get("security_group_id")
    if not group_id:
        raise bad_request("Failed to parse request. Required attribute 'security_group_id' not specified")
    group = await store.one(op.conn, Kind.SECURITY_GROUP, str(group_id), op.scope, lock=True)
    fields = secgroups.normalise(request)
    if fields["remote_group_id"]:
        try:
            await store.one(op.conn, Kind.SECURITY_GROUP, fields["remote_group_id"], op.scope)
        except ApiError:
            raise not_found(Kind.SECURITY_GROUP, fields["remote_group_id"]) from None
    secgroups.check_duplicate(fields, group["security_group_rules"])
    project_id = op.owner(request.get("project_id") or request.get("tenant_id"))
    await op.check_quota(Kind.SECURITY_GROUP_RULE, project_id)
    body = fresh(Kind.SECURITY_GROUP_RULE, {"description": request.get("description") or ""},
                 ident=op.state.new_id(), project_id=project_id)
    body.update(fields, security_group_id=group["id"], normalized_cidr=fields["remote_ip_prefix"],
                belongs_to_default_sg=group["name"] == "default")
    await store.insert(op.conn, Kind.SECURITY_GROUP_RULE, body)
    return await store.one(op.conn, Kind.SECURITY_GROUP_RULE, body["id"], None)


async def update_rule(op: Op, current: Body, request: dict[str, Any]) -> Body:
    """Only a rule's description changes (Neutron's standard-attr-description); the rest is read-only."""
    fixed = sorted(set(request) - {"description"})
    if fixed:
        raise bad_request(f"Cannot update read-only attribute {fixed[0]}")
    body = {**current, "description": request.get("description") or "",
            "revision_number": int(current.get("revision_number", 0)) + 1}
    await store.update(op.conn, Kind.SECURITY_GROUP_RULE, body)
    return await store.one(op.conn, Kind.SECURITY_GROUP_RULE, body["id"], None)


async def delete_rule(op: Op, current: Body) -> None:
    await store.delete(op.conn, Kind.SECURITY_GROUP_RULE, current["id"])
