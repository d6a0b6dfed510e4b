"""Request parts the stack, event and snapshot routes share: sort_dir, marker, a uuid in the path."""

from __future__ import annotations

import uuid

import pytest
from aiohttp.test_utils import make_mocked_request

from libs.template.errors import EntityNotFound, MalformedRequest, TemplateError
from services.api.faults import status_of
from services.api.http import path_uuid, query_marker, query_sort_desc
from services.api.stacks import TemplateSummaries, TemplateSummary

ID = uuid.UUID(int=5)


@pytest.mark.parametrize(("query", "desc"), [("", True), ("?sort_dir=desc", True), ("?sort_dir=asc", False)])
def test_sort_dir(query: str, desc: bool) -> None:
    assert query_sort_desc(make_mocked_request("GET", f"/x{query}")) is desc


def test_sort_dir_other_than_asc_or_desc_is_a_400() -> None:
    with pytest.raises(MalformedRequest, match=r"^Unknown sort direction, must be 'desc' or 'asc'$"):
        query_sort_desc(make_mocked_request("GET", "/x?sort_dir=up"))


def test_marker() -> None:
    assert query_marker(make_mocked_request("GET", "/x"), "Stack") is None
    assert query_marker(make_mocked_request("GET", f"/x?marker={ID}"), "Stack") == ID


@pytest.mark.parametrize("entity", ["Stack", "Event"])
def test_a_marker_not_a_uuid_is_the_entitys_404(entity: str) -> None:
    with pytest.raises(EntityNotFound, match=rf"^The {entity} \(nope\) could not be found\.$"):
        query_marker(make_mocked_request("GET", "/x?marker=nope"), entity)


def test_path_uuid() -> None:
    request = make_mocked_request("GET", "/x", match_info={"event_id": str(ID), "snapshot_id": "bad"})
    assert path_uuid(request, "event_id", "Event") == ID
    with pytest.raises(EntityNotFound, match=r"^The Snapshot \(bad\) could not be found\.$") as raised:
        path_uuid(request, "snapshot_id", "Snapshot")
    assert isinstance(raised.value, TemplateError) and status_of(raised.value) == 404


def test_template_summaries_keep_the_most_recently_used() -> None:
    cache = TemplateSummaries(2)
    keys = [(uuid.UUID(int=i), ID, "s", "p") for i in range(3)]
    summaries = [TemplateSummary(f"d{i}", {}) for i in range(3)]
    cache.put(keys[0], summaries[0])
    cache.put(keys[1], summaries[1])
    assert cache.get(keys[0]) == summaries[0]  # now the most recent: keys[1] goes first
    cache.put(keys[2], summaries[2])
    assert [cache.get(k) for k in keys] == [summaries[0], None, summaries[2]]
