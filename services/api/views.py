"""Heat's JSON shapes for stacks, resources and events (``heat/engine/api.py`` formats).

Pure functions from rows to dicts; the handlers add nothing but the base URL.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

import orjson

from libs.db import events, resources, stacks
from libs.engine import preview
from libs.engine.status import Action, Status
from libs.resources.collect_config import hidden


def isotime(at: datetime.datetime | None) -> str | None:
    """Heat's ``heat_timeutils.isotime``: seconds, UTC, a ``Z``."""
    if at is None:
        return None
    return at.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def stack_url(base: str, stack: stacks.StackRow) -> str:
    return f"{base}/stacks/{stack.name}/{stack.id}"


def stack_summary(base: str, stack: stacks.StackRow, *, description: str = "",
                  with_project: bool = False) -> dict[str, Any]:
    """One item of ``GET /stacks`` (``project`` only in an admin's list of every project's stacks)."""
    body = {
        "id": str(stack.id),
        "links": [{"href": stack_url(base, stack), "rel": "self"}],
        "stack_name": stack.name,
        "description": description,
        "stack_status": stack.stack_status,
        "stack_status_reason": stack.status_reason,
        "creation_time": isotime(stack.created_at),
        # Heat shows no update time for a stack that was only ever created.
        "updated_time": None if stack.action == Action.CREATE else isotime(stack.updated_at),
        "deletion_time": isotime(stack.deleted_at),
        "stack_owner": None,
        "parent": str(stack.parent_id) if stack.parent_id else None,
        "stack_user_project_id": stack.project,
        "tags": list(stack.tags) if stack.tags else None,
    }
    if with_project:
        body["project"] = stack.project
    return body


def stack_detail(base: str, stack: stacks.StackRow, *, description: str, parameters: Mapping[str, str],
                 outputs: list[dict[str, Any]] | None) -> dict[str, Any]:
    """``GET /stacks/{name}/{id}``: the summary and what only show has."""
    body = stack_summary(base, stack, description=description)
    body.update({
        "template_description": description,
        "parameters": dict(parameters),
        "disable_rollback": stack.disable_rollback,
        "timeout_mins": stack.timeout_mins,
        "capabilities": [],
        "notification_topics": [],
        # Heat's show lists no tags as [] (its stack list shows null).
        "tags": list(stack.tags or []),
    })
    if outputs is not None:
        body["outputs"] = outputs
    return body


def resource(base: str, stack: stacks.StackRow, row: resources.ResourceRow, *, needed_by: list[str],
             detail: bool = False, attributes: Mapping[str, Any] | None = None,
             nested: str | None = None, parent_resource: str | None = None) -> dict[str, Any]:
    """A resource as Heat shows it; ``nested`` is the name of the stack it nests, if any.

    ``parent_resource``: in a nested stack, the resource that nests it (Heat
    shows the key only there).
    """
    url = stack_url(base, stack)
    body: dict[str, Any] = {
        "resource_name": row.name,
        "logical_resource_id": row.name,
        "physical_resource_id": row.physical_id or "",
        "resource_type": row.type,
        "resource_status": f"{row.action}_{row.status}",
        "resource_status_reason": row.status_reason,
        "creation_time": isotime(row.created_at),
        "updated_time": isotime(row.updated_at or row.created_at),
        "required_by": sorted(needed_by),
        "links": [{"href": f"{url}/resources/{row.name}", "rel": "self"},
                  {"href": url, "rel": "stack"}],
    }
    if nested is not None:
        body["links"].append({"href": f"{base}/stacks/{nested}/{row.physical_id}", "rel": "nested"})
    if parent_resource is not None:
        body["parent_resource"] = parent_resource
    if detail:
        body["description"] = ""
    if attributes is not None:
        body["attributes"] = shown_attributes(attributes)
    return body


def _identity(project: str, stack_name: str, stack_id: str, path: str = "") -> dict[str, str]:
    return {"tenant": project, "stack_name": stack_name, "stack_id": stack_id, "path": path}


def planned_resource(project: str, stack_name: str, stack_id: str, planned: preview.PlannedResource, *,
                     parent_resource: str | None, with_properties: bool) -> dict[str, Any]:
    """A resource not made yet, as Heat's engine formats it in previews (``format_stack_resource``)."""
    body: dict[str, Any] = {
        "updated_time": None, "creation_time": None, "resource_name": planned.name,
        "physical_resource_id": "", "resource_action": Action.INIT, "resource_status": Status.COMPLETE,
        "resource_status_reason": "", "resource_type": planned.type,
        "resource_identity": _identity(project, stack_name, stack_id, f"/resources/{planned.name}"),
        "stack_identity": _identity(project, stack_name, stack_id), "stack_name": stack_name,
        "required_by": list(planned.required_by),
    }
    if parent_resource is not None:
        body["parent_resource"] = parent_resource
    body.update(description=planned.description, metadata=planned.metadata,
                attributes=dict(planned.attributes))
    if with_properties:
        body["properties"] = dict(planned.properties)
    return body


def shown_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """A resource's attributes as ``resource show`` gives them: a server's agent password left out
    (Heat shows a server's ``show`` there, not its os-collect-config; its metadata has it)."""
    shown = dict(attributes)
    if "os_collect_config" in shown:
        shown["os_collect_config"] = hidden(shown["os_collect_config"])
    return shown


def write_preview_resources(out: bytearray, project: str, stack: preview.PlannedStack,
                            stack_id: str = "None") -> None:
    """A create preview's ``resources`` as JSON, a nesting resource as the list of its nested stack's,
    added to ``out`` one resource at a time: a group of 10^6 members is never held as 10^6 formatted
    objects, nor as 10^6 texts (each of orjson's keeps kilobytes)."""
    out += b"["
    for number, r in enumerate(stack.resources):
        if number:
            out += b","
        if r.nested is not None:
            write_preview_resources(out, project, r.nested)
        else:
            out += orjson.dumps(planned_resource(project, stack.name, stack_id, r,
                                                 parent_resource=stack.parent_resource, with_properties=True))
    out += b"]"


def existing_resource(project: str, stack: stacks.StackRow, row: resources.ResourceRow, *,
                      needed_by: list[str], parent_resource: str | None,
                      nested: stacks.StackRow | None) -> dict[str, Any]:
    """A resource as it is, as Heat's engine formats it in an update preview."""
    body: dict[str, Any] = {
        "updated_time": isotime(row.updated_at or row.created_at), "creation_time": isotime(row.created_at),
        "resource_name": row.name, "physical_resource_id": row.physical_id or "",
        "resource_action": row.action, "resource_status": row.status,
        "resource_status_reason": row.status_reason, "resource_type": row.type,
        "resource_identity": _identity(project, stack.name, str(stack.id), f"/resources/{row.name}"),
        "stack_identity": _identity(project, stack.name, str(stack.id)), "stack_name": stack.name,
        "required_by": sorted(needed_by),
    }
    if nested is not None:
        body["nested_stack_id"] = _identity(project, nested.name, str(nested.id))
    if parent_resource is not None:
        body["parent_resource"] = parent_resource
    body.update(description="", metadata={}, attributes=shown_attributes(row.attributes))
    return body


def event(base: str, stack: stacks.StackRow, row: events.EventRow, *, detail: bool = False) -> dict[str, Any]:
    url = stack_url(base, stack)
    body: dict[str, Any] = {
        "id": str(row.id),
        "links": [{"href": f"{url}/resources/{row.resource_name}/events/{row.id}", "rel": "self"},
                  {"href": f"{url}/resources/{row.resource_name}", "rel": "resource"},
                  {"href": url, "rel": "stack"}],
        "event_time": isotime(row.created_at),
        "resource_name": row.resource_name,
        "logical_resource_id": row.resource_name,
        "resource_status": row.resource_status,
        "resource_status_reason": row.reason,
        "physical_resource_id": row.physical_resource_id,
    }
    if detail:
        body["resource_type"] = row.resource_type
        body["resource_properties"] = row.properties if row.properties is not None else {}
    return body
