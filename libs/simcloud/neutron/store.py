"""Neutron's SQL: rows of each kind in and out, visibility per project, counts and quotas."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import asyncpg

from libs.db import Conn
from libs.simcloud.listing import Where
from libs.simcloud.neutron.bodies import Body, Kind, columns_of, data_of, from_row, not_found
from libs.simcloud.quota_store import QuotaTable

# Neutron's default per-project limits (neutron.conf [quotas]).
DEFAULT_QUOTAS = {"network": 100, "subnet": 100, "port": 500, "router": 10, "floatingip": 50,
                  "security_group": 10, "security_group_rule": 100, "subnetpool": -1, "rbac_policy": 10}
QUOTA_KIND = {Kind.NETWORK: "network", Kind.SUBNET: "subnet", Kind.PORT: "port", Kind.ROUTER: "router",
              Kind.FLOATINGIP: "floatingip", Kind.SECURITY_GROUP: "security_group",
              Kind.SECURITY_GROUP_RULE: "security_group_rule"}
# List filters answered by a column (the others are applied to the bodies).
_PUSHED = {"id": "id", "name": "name", "network_id": "network_id", "device_id": "device_id",
           "device_owner": "device_owner", "project_id": "project_id", "tenant_id": "project_id",
           "security_group_id": "security_group_id", "floating_network_id": "floating_network_id",
           "port_id": "port_id", "mac_address": "mac_address"}


def visible(kind: Kind, project_id: str | None) -> Where:
    """What a project sees: its own objects, and shared or external networks with their subnets.
    ``None``: an admin, who sees everything."""
    where = Where()
    if project_id is None:
        return where
    if kind is Kind.NETWORK:
        return where.add("(project_id = {} OR shared OR external)", project_id)
    if kind is Kind.SUBNET:
        return where.add("(project_id = {} OR network_id IN (SELECT id FROM simcloud.networks"
                         " WHERE shared OR external))", project_id)
    return where.add("project_id = {}", project_id)


def pushable(kind: Kind, attr: str) -> str | None:
    """The column a list filter on ``attr`` is answered by, if any."""
    column = _PUSHED.get(attr)
    if column is not None and (column in ("id", "project_id") or attr in kind.info.columns):
        return column
    return None


def push_filters(kind: Kind, where: Where, filters: Mapping[str, Sequence[str]]) -> Where:
    for attr, values in filters.items():
        column = pushable(kind, attr)
        if column is not None:
            where.any_of(column, list(values))
    return where


async def page_by_id(conn: Conn, kind: Kind, where: Where, limit: int, marker: str | None) -> list[Body]:
    """One page in id order (Neutron's order when paging unsorted): ``limit`` + 1 rows, so the
    caller knows whether another page follows."""
    if marker is not None:
        where.add("id > {}", marker)
    found = await conn.fetch(
        f"SELECT * FROM {kind.info.table} {where.sql()} ORDER BY id LIMIT {int(limit) + 1}", *where.args)
    return await enrich(conn, kind, [from_row(kind, r) for r in found])


async def rows(conn: Conn, kind: Kind, where: Where) -> list[asyncpg.Record]:
    return list(await conn.fetch(f"SELECT * FROM {kind.info.table} {where.sql()} ORDER BY seq", *where.args))


async def bodies(conn: Conn, kind: Kind, where: Where) -> list[Body]:
    found = [from_row(kind, r) for r in await rows(conn, kind, where)]
    return await enrich(conn, kind, found)


async def enrich(conn: Conn, kind: Kind, found: list[Body]) -> list[Body]:
    """What other rows add to a body: a network's subnets, a group's rules."""
    ids = [b["id"] for b in found]
    if not ids:
        return found
    if kind is Kind.NETWORK:
        subnets: dict[str, list[str]] = {}
        for r in await conn.fetch("SELECT id, network_id FROM simcloud.subnets WHERE network_id = ANY($1)"
                                  " ORDER BY seq", ids):
            subnets.setdefault(r["network_id"], []).append(r["id"])
        for body in found:
            body["subnets"] = subnets.get(body["id"], [])
    elif kind is Kind.SECURITY_GROUP:
        rules: dict[str, list[Body]] = {}
        for r in await conn.fetch("SELECT * FROM simcloud.security_group_rules"
                                  " WHERE security_group_id = ANY($1) ORDER BY seq", ids):
            rules.setdefault(r["security_group_id"], []).append(from_row(Kind.SECURITY_GROUP_RULE, r))
        for body in found:
            body["security_group_rules"] = rules.get(body["id"], [])
    return found


async def one(conn: Conn, kind: Kind, ident: str, project_id: str | None, *, lock: bool = False) -> Body:
    """One visible object's body; 404 with Neutron's words when it is not there or not the caller's."""
    where = visible(kind, project_id).add("id = {}", ident)
    found = await conn.fetchrow(f"SELECT * FROM {kind.info.table} {where.sql()}"
                                + (" FOR UPDATE" if lock else ""), *where.args)
    if found is None:
        raise not_found(kind, ident)
    return (await enrich(conn, kind, [from_row(kind, found)]))[0]


async def insert(conn: Conn, kind: Kind, body: Body) -> None:
    columns = columns_of(kind, body)
    columns.update(id=body["id"], project_id=body["project_id"], data=data_of(kind, body))
    if "tags" in body:
        columns["tags"] = list(body["tags"])
    names = list(columns)
    marks = ", ".join(f"${i + 1}" for i in range(len(names)))
    await conn.execute(f"INSERT INTO {kind.info.table} ({', '.join(_quoted(n) for n in names)})"
                       f" VALUES ({marks})", *[_arg(columns[n]) for n in names])


async def update(conn: Conn, kind: Kind, body: Body) -> None:
    columns = columns_of(kind, body)
    columns["data"] = data_of(kind, body)
    if "tags" in body:
        columns["tags"] = list(body["tags"])
    names = list(columns)
    sets = ", ".join(f"{_quoted(n)} = ${i + 2}" for i, n in enumerate(names))
    await conn.execute(f"UPDATE {kind.info.table} SET {sets}, updated_at = now() WHERE id = $1",
                       body["id"], *[_arg(columns[n]) for n in names])


async def set_tags(conn: Conn, kind: Kind, ident: str, tags: Sequence[str]) -> None:
    await conn.execute(f"UPDATE {kind.info.table} SET tags = $2, updated_at = now() WHERE id = $1",
                       ident, list(dict.fromkeys(tags)))


async def delete(conn: Conn, kind: Kind, ident: str) -> None:
    await conn.execute(f"DELETE FROM {kind.info.table} WHERE id = $1", ident)


def _quoted(name: str) -> str:
    return f'"{name}"'


def _arg(value: Any) -> Any:
    # the frame's pool encodes jsonb from Python values
    return value


async def count(conn: Conn, kind: Kind, project_id: str) -> int:
    found = await conn.fetchval(f"SELECT count(*) FROM {kind.info.table} WHERE project_id = $1", project_id)
    return int(found or 0)


QUOTAS = QuotaTable("simcloud.network_quotas", DEFAULT_QUOTAS)


async def quotas(conn: Conn, project_id: str) -> dict[str, int]:
    return await QUOTAS.limits(conn, project_id)


async def set_quotas(conn: Conn, project_id: str, limits: Mapping[str, int]) -> None:
    await QUOTAS.set(conn, project_id, limits)


async def reset_quotas(conn: Conn, project_id: str) -> None:
    await QUOTAS.reset(conn, project_id)


async def used_addresses(conn: Conn, subnet_id: str) -> list[str]:
    return [str(r["ip_address"]) for r in await conn.fetch(
        "SELECT ip_address FROM simcloud.ip_allocations WHERE subnet_id = $1", subnet_id)]


async def allocations_on(conn: Conn, subnet_ids: Sequence[str]) -> int:
    found = await conn.fetchval("SELECT count(*) FROM simcloud.ip_allocations WHERE subnet_id = ANY($1)",
                                list(subnet_ids))
    return int(found or 0)


async def free_addresses(conn: Conn, holder_id: str) -> None:
    """Free what a router's gateway or a floating IP held (their id stands in the port_id column)."""
    await conn.execute("DELETE FROM simcloud.ip_allocations WHERE port_id = $1", holder_id)


async def ports_with_group(conn: Conn, group_id: str) -> int:
    found = await conn.fetchval("SELECT count(*) FROM simcloud.ports WHERE data->'security_groups' ? $1",
                                group_id)
    return int(found or 0)


async def default_group(conn: Conn, project_id: str) -> str | None:
    found = await conn.fetchval("SELECT id FROM simcloud.security_groups WHERE project_id = $1"
                                " AND name = 'default'", project_id)
    return None if found is None else str(found)
