"""Lists as OpenStack pages them: filters into a WHERE, limit/marker over the table's ``seq``, ``links``.

Every listed table has ``seq bigserial`` (creation order) and ``id``; a marker is
an id, the page is the rows after the marker's ``seq``. A full page carries a
``next`` link with the same query and the last id as marker, as Nova, Neutron
and Cinder answer (``<key>_links``) and Glance (``next``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from urllib.parse import urlencode

import asyncpg
from aiohttp import web

from libs.db import Conn
from libs.simcloud.errors import ApiError

MAX_LIMIT = 1000


@dataclasses.dataclass(frozen=True)
class Paging:
    limit: int  # the page's size: the asked limit, at most MAX_LIMIT
    marker: str | None


def paging(request: web.Request, max_limit: int = MAX_LIMIT) -> Paging:
    raw = request.query.get("limit")
    limit = max_limit
    if raw is not None:
        try:
            limit = int(raw)
        except ValueError:
            raise ApiError(400, f"Invalid limit: {raw!r}", "BadRequest") from None
        if limit < 0:
            raise ApiError(400, "limit must be >= 0", "BadRequest")
        limit = min(limit, max_limit)
    return Paging(limit=limit, marker=request.query.get("marker") or None)


_LISTS = ("tags", "tags-any", "not-tags", "not-tags-any")


def values(request: web.Request, name: str) -> list[str]:
    """Every value of a query parameter given once or repeated (``id=a&id=b``); tags split on commas."""
    found: list[str] = []
    for value in request.query.getall(name, []):
        if name in _LISTS:
            found.extend(v for v in value.split(",") if v)
        else:
            found.append(value)
    return found


def flag(raw: str | None) -> bool | None:
    if raw is None:
        return None
    return raw.strip().lower() in ("1", "true", "yes", "on")


class Where:
    """A WHERE clause built from conditions; placeholders are numbered as they are added."""

    def __init__(self) -> None:
        self.clauses: list[str] = []
        self.args: list[object] = []

    def add(self, clause: str, *args: object) -> Where:
        """``clause`` with ``{}`` where each arg goes, e.g. ``add("name ~ {}", pattern)``."""
        marks = []
        for arg in args:
            self.args.append(arg)
            marks.append(f"${len(self.args)}")
        self.clauses.append(clause.format(*marks))
        return self

    def eq(self, column: str, value: object | None) -> Where:
        return self if value is None else self.add(f"{column} = {{}}", value)

    def any_of(self, column: str, options: Sequence[object]) -> Where:
        if not options:
            return self
        if len(options) == 1:
            return self.add(f"{column} = {{}}", options[0])
        return self.add(f"{column} = ANY({{}})", list(options))

    def tags(self, request: web.Request, column: str = "tags") -> Where:
        """Neutron's tag filters: tags (all), tags-any, not-tags, not-tags-any."""
        if every := values(request, "tags"):
            self.add(f"{column} @> {{}}::text[]", every)
        if some := values(request, "tags-any"):
            self.add(f"{column} && {{}}::text[]", some)
        if none_all := values(request, "not-tags"):
            self.add(f"NOT ({column} @> {{}}::text[])", none_all)
        if none_any := values(request, "not-tags-any"):
            self.add(f"NOT ({column} && {{}}::text[])", none_any)
        return self

    def sql(self) -> str:
        return ("WHERE " + " AND ".join(self.clauses)) if self.clauses else ""


async def page(conn: Conn, table: str, where: Where, pages: Paging,
               columns: str = "*") -> list[asyncpg.Record]:
    """One page of ``table``'s rows matching ``where``, in creation order, after the marker."""
    if pages.marker is not None:
        seq = await conn.fetchval(f"SELECT seq FROM {table} WHERE id = $1", pages.marker)
        if seq is None:
            raise ApiError(400, f"marker [{pages.marker}] not found", "BadRequest")
        where.add("seq > {}", seq)
    if pages.limit == 0:
        return []
    return list(await conn.fetch(
        f"SELECT {columns} FROM {table} {where.sql()} ORDER BY seq LIMIT {int(pages.limit)}", *where.args))


def next_href(request: web.Request, ids: Sequence[str], pages: Paging) -> str | None:
    """The link to the page after this one when it is full; None on the last page."""
    if not ids or len(ids) < pages.limit:
        return None
    query = [(k, v) for k, v in request.query.items() if k not in ("marker", "limit")]
    query += [("limit", str(pages.limit)), ("marker", ids[-1])]
    return f"{request.scheme}://{request.host}{request.path}?{urlencode(query)}"


def links(request: web.Request, ids: Sequence[str], pages: Paging) -> list[dict[str, str]]:
    """``<key>_links`` of Nova, Neutron and Cinder: a ``next`` link on a full page."""
    href = next_href(request, ids, pages)
    return [{"rel": "next", "href": href}] if href else []


def answer(request: web.Request, key: str, items: Sequence[Mapping[str, object]], ids: Sequence[str],
           pages: Paging) -> dict[str, object]:
    """A list's body as Nova, Neutron and Cinder give it: ``{key: items}``, ``<key>_links`` on a full page."""
    body: dict[str, object] = {key: items}
    if found := links(request, ids, pages):
        body[f"{key}_links"] = found
    return body
