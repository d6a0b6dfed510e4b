"""A Neutron list request's filters, fields, sorting and paging, applied to bodies (pure).

openstacksdk sends filters as query parameters (``name=x``, ``admin_state_up=True``, a key
repeated means any of its values), ``tags``/``tags-any``/``not-tags``/``not-tags-any`` as
comma-separated lists, ``fields`` repeated, ``sort_key``/``sort_dir`` repeated in pairs and
``limit``/``marker``. The answer carries ``<collection>_links`` with a ``next`` link while
more remain, as Neutron's pagination does.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

from libs.simcloud.errors import bad_request

Body = dict[str, Any]

_CONTROL = frozenset({"fields", "sort_key", "sort_dir", "limit", "marker", "page_reverse",
                      "tags", "tags-any", "not-tags", "not-tags-any"})


class SortDir(enum.StrEnum):
    ASC = "asc"
    DESC = "desc"


@dataclasses.dataclass(frozen=True)
class TagFilter:
    all_of: frozenset[str] = frozenset()
    any_of: frozenset[str] = frozenset()
    none_of_all: frozenset[str] = frozenset()   # not-tags: excluded when it has all of these
    none_of_any: frozenset[str] = frozenset()   # not-tags-any: excluded when it has any of these

    def admits(self, tags: Iterable[str]) -> bool:
        have = set(tags)
        if self.all_of and not self.all_of <= have:
            return False
        if self.any_of and not self.any_of & have:
            return False
        if self.none_of_all and self.none_of_all <= have:
            return False
        return not (self.none_of_any and self.none_of_any & have)


@dataclasses.dataclass(frozen=True)
class ListQuery:
    filters: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    tags: TagFilter = TagFilter()
    fields: tuple[str, ...] = ()
    sort: tuple[tuple[str, SortDir], ...] = ()
    limit: int | None = None
    marker: str | None = None


def _tag_set(values: Sequence[str]) -> frozenset[str]:
    return frozenset(t for v in values for t in v.split(",") if t)


def parse(params: Mapping[str, Sequence[str]]) -> ListQuery:
    """A query string (each key with all its values) as a :class:`ListQuery`; 400 where Neutron refuses."""
    keys = list(params.get("sort_key", ()))
    dirs = list(params.get("sort_dir", ()))
    if dirs and len(dirs) != len(keys):
        raise bad_request("The number of sort_keys and sort_dirs must be same")
    sort: list[tuple[str, SortDir]] = []
    for i, key in enumerate(keys):
        raw = dirs[i] if dirs else "asc"
        try:
            sort.append((key, SortDir(raw.lower())))
        except ValueError:
            raise bad_request(f"{raw} is invalid attribute for sort_dirs") from None
    limit: int | None = None
    if params.get("limit"):
        raw_limit = params["limit"][-1]
        try:
            limit = int(raw_limit)
        except ValueError:
            raise bad_request(f"Limit must be an integer 0 or greater and not '{raw_limit}'") from None
        if limit < 0:
            raise bad_request(f"Limit must be an integer 0 or greater and not '{raw_limit}'")
        limit = limit or None
    marker = params["marker"][-1] if params.get("marker") else None
    tags = TagFilter(_tag_set(params.get("tags", ())), _tag_set(params.get("tags-any", ())),
                     _tag_set(params.get("not-tags", ())), _tag_set(params.get("not-tags-any", ())))
    fields = tuple(f for v in params.get("fields", ()) for f in v.split(",") if f)
    filters = {k: tuple(v) for k, v in params.items() if k not in _CONTROL and v}
    return ListQuery(filters, tags, fields, tuple(sort), limit, marker)


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _matches_one(value: Any, wanted: str) -> bool:
    if isinstance(value, bool):
        return wanted.lower() == _as_text(value)
    if isinstance(value, list):
        return any(_matches_one(v, wanted) for v in value)
    return _as_text(value) == wanted


def _matches_fixed_ips(fixed_ips: list[Body], wanted: str) -> bool:
    # ``fixed_ips=ip_address=10.0.0.3`` or ``fixed_ips=subnet_id=<id>``
    key, _, value = wanted.partition("=")
    return any(_as_text(ip.get(key)) == value for ip in fixed_ips)


def admits(body: Mapping[str, Any], query: ListQuery) -> bool:
    """Whether one body passes every filter; an attribute the body lacks is ignored, as Neutron does."""
    if not query.tags.admits(body.get("tags", ())):
        return False
    for key, wanted in query.filters.items():
        if key == "fixed_ips" and "fixed_ips" in body:
            if not any(_matches_fixed_ips(body["fixed_ips"], w) for w in wanted):
                return False
            continue
        if key not in body:
            continue
        if not any(_matches_one(body[key], w) for w in wanted):
            return False
    return True


def _sort_value(value: Any) -> tuple[int, Any]:
    if value is None:
        return (0, "")
    if isinstance(value, bool | int | float):
        return (1, value)
    return (2, str(value))


def _by(key: str) -> Callable[[Body], tuple[int, Any]]:
    return lambda body: _sort_value(body.get(key))


def ordered(bodies: Sequence[Body], query: ListQuery) -> list[Body]:
    """The bodies in the requested order; with paging and no sort, by id (Neutron's default)."""
    keys = list(query.sort)
    if not keys and (query.limit or query.marker):
        keys = [("id", SortDir.ASC)]
    if keys and keys[-1][0] != "id":
        keys.append(("id", keys[0][1]))
    if bodies:
        for key, _ in keys:
            if key not in bodies[0]:
                raise bad_request(f"{key} is invalid attribute for sort_keys")
    result = list(bodies)
    for key, direction in reversed(keys):
        result.sort(key=_by(key), reverse=direction is SortDir.DESC)
    return result


@dataclasses.dataclass(frozen=True)
class Page:
    items: list[Body]
    next_marker: str | None


def page(bodies: Sequence[Body], query: ListQuery) -> Page:
    """The page after ``marker`` of at most ``limit`` items, and the marker of the next page if any."""
    start = 0
    if query.marker is not None:
        ids = [b["id"] for b in bodies]
        if query.marker not in ids:
            raise bad_request(f"Marker {query.marker} could not be found.")  # Neutron: 400 on a bad marker
        start = ids.index(query.marker) + 1
    rest = list(bodies[start:])
    if query.limit is None or len(rest) <= query.limit:
        return Page(rest, None)
    items = rest[: query.limit]
    return Page(items, items[-1]["id"])


def project(body: Body, fields: Sequence[str]) -> Body:
    """Only the requested fields (all of them when none is named)."""
    if not fields:
        return body
    return {k: v for k, v in body.items() if k in fields}


def next_link(base_url: str, params: Mapping[str, Sequence[str]], marker: str) -> str:
    """The request's URL with ``marker`` replaced: what openstacksdk follows to the next page."""
    pairs = [(k, v) for k, values in params.items() if k != "marker" for v in values]
    pairs.append(("marker", marker))
    return f"{base_url}?{urlencode(pairs)}"


def answer(collection: str, bodies: Sequence[Body], query: ListQuery,
           base_url: str, params: Mapping[str, Sequence[str]]) -> Body:
    """The whole list answer: filtered, ordered, paged and projected, with its links."""
    chosen = ordered([b for b in bodies if admits(b, query)], query)
    got = page(chosen, query)
    out: Body = {collection: [project(b, query.fields) for b in got.items]}
    if got.next_marker is not None:
        out[f"{collection}_links"] = [{"rel": "next", "href": next_link(base_url, params, got.next_marker)}]
    return out
