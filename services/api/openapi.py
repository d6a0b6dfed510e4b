"""The OpenAPI 3.1 document of the api, served at ``/openapi.json``.

One table lists every route with its method, summary and answer; the schemas
are JSON Schema (OpenAPI 3.1), so a test can check real answers against them
and that the table and the router agree route for route.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from aiohttp import web

from services.api.http import json_response

S = "/v1/{project_id}/stacks/{stack_name}/{stack_id}"
R = f"{S}/resources/{{resource_name}}"


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _obj(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "object", "required": sorted(required), "properties": {**required, **(optional or {})}}


STR = {"type": "string"}
NSTR = {"type": ["string", "null"]}
LINKS = {"type": "array", "items": _obj({"href": STR, "rel": STR})}
ANY_OBJ = {"type": "object"}

SCHEMAS: dict[str, Any] = {
    "Fault": _obj({"code": {"type": "integer"}, "title": STR, "explanation": STR,
                   "error": _obj({"type": STR, "message": STR, "traceback": {"type": ["string", "null"]}})}),
    "StackSummary": _obj({
        "id": STR, "links": LINKS, "stack_name": STR, "description": STR, "stack_status": STR,
        "stack_status_reason": STR, "creation_time": NSTR, "updated_time": NSTR, "deletion_time": NSTR,
        "stack_owner": NSTR, "parent": NSTR, "stack_user_project_id": STR,
        "tags": {"type": ["array", "null"], "items": STR}}),
    "Stack": {"allOf": [_ref("StackSummary"), _obj({
        "template_description": STR, "parameters": {"type": "object", "additionalProperties": STR},
        "disable_rollback": {"type": "boolean"}, "timeout_mins": {"type": ["integer", "null"]},
        "capabilities": {"type": "array"}, "notification_topics": {"type": "array"}},
        {"outputs": {"type": "array", "items": _ref("Output")},
         "ember_paused": {"type": "array", "items": _ref("Paused")}})]},
    "Output": _obj({"output_key": STR}, {"output_value": {}, "description": NSTR, "output_error": STR}),
    "Resource": _obj({
        "resource_name": STR, "logical_resource_id": STR, "physical_resource_id": STR, "resource_type": STR,
        "resource_status": STR, "resource_status_reason": STR, "creation_time": NSTR, "updated_time": NSTR,
        "required_by": {"type": "array", "items": STR}, "links": LINKS},
        {"description": STR, "attributes": ANY_OBJ, "parent_resource": NSTR,
         "ember_paused": _obj({"hook": STR, "action": STR, "source": STR, "since": STR, "deadline": NSTR},
                              {"properties": {}})}),
    "Event": _obj({
        "id": STR, "links": LINKS, "event_time": NSTR, "resource_name": STR, "logical_resource_id": STR,
        "resource_status": STR, "resource_status_reason": STR, "physical_resource_id": STR},
        {"resource_type": STR, "resource_properties": ANY_OBJ}),
    "CreatedStack": _obj({"stack": _obj({"id": STR, "links": LINKS})}),
    "StackList": _obj({"stacks": {"type": "array", "items": _ref("StackSummary")}},
                      {"links": LINKS, "count": {"type": "integer"}}),
    "StackDetailList": _obj({"stacks": {"type": "array", "items": _ref("Stack")}}),
    "StackShow": _obj({"stack": _ref("Stack")}),
    "ResourceList": _obj({"resources": {"type": "array", "items": _ref("Resource")}}),
    "ResourceShow": _obj({"resource": _ref("Resource")}),
    "EventList": _obj({"events": {"type": "array", "items": _ref("Event")}}),
    "EventShow": _obj({"event": _ref("Event")}),
    "OutputList": _obj({"outputs": {"type": "array", "items": _obj({"output_key": STR})}}),
    "OutputShow": _obj({"output": _ref("Output")}),
    "ResourceChanges": _obj({"resource_changes": _obj({
        k: {"type": "array"} for k in ("added", "deleted", "replaced", "updated", "unchanged")})}),
    "Metadata": _obj({"metadata": ANY_OBJ}),
    "Snapshot": _obj({"id": STR, "name": NSTR, "action": STR, "status": STR, "status_reason": STR,
                      "data": ANY_OBJ, "creation_time": NSTR}),
    "SnapshotList": _obj({"snapshots": {"type": "array", "items": _ref("Snapshot")}}),
    "SnapshotShow": _obj({"snapshot": _ref("Snapshot")}),
    "Validation": _obj({"Parameters": ANY_OBJ}, {"Description": STR, "ParameterGroups": {"type": "array"},
                                                 "Environment": ANY_OBJ}),
    "ResourceTypes": _obj({"resource_types": {"type": "array"}}),
    "ResourceTypeSchema": _obj({"resource_type": STR, "properties": ANY_OBJ, "attributes": ANY_OBJ,
                                "support_status": ANY_OBJ}, {"description": STR}),
    "TemplateVersions": _obj({"template_versions": {"type": "array", "items": _obj(
        {"version": STR, "type": STR, "aliases": {"type": "array", "items": STR}})}}),
    "TemplateFunctions": _obj({"template_functions": {"type": "array", "items": _obj(
        {"functions": STR, "description": STR})}}),
    "BuildInfo": _obj({"api": _obj({"revision": STR}), "engine": _obj({"revision": STR})}),
    "Services": _obj({"services": {"type": "array", "items": _obj({
        k: STR for k in ("id", "engine_id", "host", "hostname", "binary", "topic", "status")})}}),
    "Versions": _obj({"versions": {"type": "array"}}),
    "Breakpoint": _obj({"id": STR, "resource": STR, "hooks": {"type": "array", "items": STR},
                        "resource_type": NSTR, "timeout": {"type": ["number", "null"]},
                        "on_timeout": {"enum": ["fail", "continue"]}}),
    "BreakpointList": _obj({"breakpoints": {"type": "array", "items": _ref("Breakpoint")}}),
    "BreakpointShow": _obj({"breakpoint": _ref("Breakpoint")}),
    "Paused": _obj({"resource": STR, "resource_name": STR, "stack_id": STR, "stack_name": STR, "hook": STR,
                    "action": STR, "source": {"enum": ["environment", "breakpoint", "step"]}, "since": STR,
                    "deadline": NSTR, "on_timeout": STR}),
    "PausedList": _obj({"paused": {"type": "array", "items": _ref("Paused")}}),
    "Released": _obj({"released": {"type": "array", "items": _obj(
        {"stack_id": STR, "stack_name": STR, "resource_name": STR, "hook": STR})}}),
    "Subscription": _obj({"id": STR, "url": STR, "stack_id": NSTR, "kinds": {"type": "array", "items": STR},
                          "resource": STR, "hooks": {"type": ["array", "null"]}, "source": STR,
                          "creation_time": NSTR}, {"secret": STR}),
    "SubscriptionList": _obj({"subscriptions": {"type": "array", "items": _ref("Subscription")}}),
    "SubscriptionShow": _obj({"subscription": _ref("Subscription")}),
    "DeliveryList": _obj({"deliveries": {"type": "array", "items": _obj({
        "id": STR, "kind": STR, "notice": STR, "status": {"enum": ["pending", "delivered", "failed"]},
        "attempts": {"type": "integer"}, "last_status": {"type": ["integer", "null"]}, "last_error": NSTR,
        "creation_time": STR, "delivered_time": NSTR, "next_attempt_time": NSTR})}}),
    "Object": ANY_OBJ,
}


@dataclasses.dataclass(frozen=True)
class Op:
    method: str
    path: str
    summary: str
    status: int = 200
    schema: str | None = "Object"
    tag: str = "stacks"
    body: bool = False
    media: str = "application/json"
    keystone_only: bool = False  # served only with EMBER_AUTH=keystone


OPERATIONS: list[Op] = [
    Op("GET", "/", "Versions document (300 Multiple Choices)", 300, "Versions", "versions"),
    Op("GET", "/openapi.json", "This document", 200, "Object", "versions"),
    Op("GET", "/ember/v1/health", "Live services and queue probes (Ember)", 200, "Object", "ember"),
    Op("POST", "/v1/{project_id}/validate", "Validate a template", 200, "Validation", "templates", body=True),
    Op("GET", "/v1/{project_id}/resource_types", "List resource types", 200, "ResourceTypes", "types"),
    Op("GET", "/v1/{project_id}/resource_types/{type_name}", "A resource type's schema", 200,
       "ResourceTypeSchema", "types"),
    Op("GET", "/v1/{project_id}/resource_types/{type_name}/template",
       "A template wrapping the type (template_type=hot|cfn)", 200, "Object", "types"),
    Op("GET", "/v1/{project_id}/template_versions", "Template versions", 200, "TemplateVersions",
       "templates"),
    Op("GET", "/v1/{project_id}/template_versions/{version}/functions", "A version's functions", 200,
       "TemplateFunctions", "templates"),
    Op("GET", "/v1/{project_id}/build_info", "Build information", 200, "BuildInfo", "service"),
    Op("GET", "/v1/{project_id}/services", "Engine processes and their state (admin)", 200, "Services",
       "service"),
    Op("GET", "/v1/{project_id}/stacks", "List stacks", 200, "StackList"),
    Op("POST", "/v1/{project_id}/stacks", "Create a stack", 201, "CreatedStack", body=True),
    Op("GET", "/v1/{project_id}/stacks/detail", "List stacks with every field", 200, "StackDetailList"),
    Op("POST", "/v1/{project_id}/stacks/preview",
       "Preview a create (a nesting resource: the list of its nested ones)", 200, "Object", body=True),
    *(Op(m, "/v1/{project_id}/stacks/{stack_name}", "Find a stack by name or id (302 to its URL)", 302,
         None, "lookup") for m in ("GET", "POST", "PUT", "PATCH", "DELETE")),
    *(Op(m, "/v1/{project_id}/stacks/{stack_name}/{tail}", "Sub-paths of a stack found by name or id "
         "(302 to its URL)", 302, None, "lookup") for m in ("GET", "POST", "PUT", "PATCH", "DELETE")),
    Op("GET", S, "Show a stack", 200, "StackShow"),
    Op("PUT", S, "Update a stack (new template)", 202, None, body=True),
    Op("PATCH", S, "Update a stack (existing: merge into what it has)", 202, None, body=True),
    Op("DELETE", S, "Delete a stack", 204, None),
    Op("PUT", f"{S}/preview", "Preview an update (show_nested=true: nested stacks too)", 200,
       "ResourceChanges", body=True),
    Op("PATCH", f"{S}/preview", "Preview a PATCH update", 200, "ResourceChanges", body=True),
    Op("GET", f"{S}/template", "The stack's template", 200, "Object"),
    Op("GET", f"{S}/environment", "The stack's environment", 200, "Object"),
    Op("GET", f"{S}/files", "The stack's files", 200, "Object"),
    Op("GET", f"{S}/outputs", "List outputs", 200, "OutputList"),
    Op("GET", f"{S}/outputs/{{output_key}}", "Show one output", 200, "OutputShow"),
    Op("POST", f"{S}/actions", "suspend, resume, check, cancel_update or cancel_without_rollback", 200,
       None, body=True),
    Op("GET", f"{S}/events", "List the stack's events", 200, "EventList", "events"),
    Op("GET", f"{S}/events/stream", "The stack's events as server-sent events (Ember)", 200, None,
       "events", media="text/event-stream"),
    Op("GET", f"{S}/resources", "List resources", 200, "ResourceList", "resources"),
    Op("GET", R, "Show a resource", 200, "ResourceShow", "resources"),
    Op("PATCH", R, "Mark a resource unhealthy (or not)", 200, "Object", "resources", body=True),
    Op("GET", f"{R}/metadata", "A resource's metadata", 200, "Metadata", "resources"),
    Op("POST", f"{R}/signal", "Signal a resource", 200, None, "resources", body=True),
    Op("GET", f"{R}/events", "A resource's events", 200, "EventList", "events"),
    Op("GET", f"{R}/events/{{event_id}}", "Show one event", 200, "EventShow", "events"),
    Op("POST", f"{S}/snapshots", "Take a snapshot", 200, "Snapshot", "snapshots", body=True),
    Op("GET", f"{S}/snapshots", "List snapshots", 200, "SnapshotList", "snapshots"),
    Op("GET", f"{S}/snapshots/{{snapshot_id}}", "Show a snapshot", 200, "SnapshotShow", "snapshots"),
    Op("DELETE", f"{S}/snapshots/{{snapshot_id}}", "Delete a snapshot", 204, None, "snapshots"),
    Op("POST", f"{S}/snapshots/{{snapshot_id}}/restore", "Restore the stack to a snapshot", 202, None,
       "snapshots"),
    Op("DELETE", f"{S}/abandon", "Abandon: the stack's data, then delete it keeping its resources"
       " (EMBER_ENABLE_STACK_ABANDON)", 200, "Object", "stacks"),
    Op("GET", f"{S}/export", "The stack's abandon data, nothing deleted (EMBER_ENABLE_STACK_ABANDON)", 200,
       "Object", "stacks"),
    Op("GET", f"{S}/breakpoints", "The stack's breakpoints (Ember)", 200, "BreakpointList", "debugger"),
    Op("POST", f"{S}/breakpoints", "Set a breakpoint: resource (name, pattern or nested path a/b), hooks,"
       " resource_type, timeout (seconds), on_timeout (fail|continue) (Ember)", 201, "BreakpointShow",
       "debugger", body=True),
    Op("DELETE", f"{S}/breakpoints", "Clear every breakpoint of the stack (Ember)", 204, None, "debugger"),
    Op("DELETE", f"{S}/breakpoints/{{breakpoint_id}}", "Clear one breakpoint (Ember)", 204, None,
       "debugger"),
    Op("GET", f"{S}/paused", "Nodes paused at hooks in the stack and its nested stacks (Ember)", 200,
       "PausedList", "debugger"),
    Op("POST", f"{S}/step", "Release the paused nodes and pause each node that starts next (Ember)", 200,
       "Released", "debugger"),
    Op("POST", f"{S}/continue", "Release the paused nodes and run the operation to its end (Ember)", 200,
       "Released", "debugger"),
    Op("GET", "/v1/{project_id}/subscriptions", "The project's webhook subscriptions (Ember)", 200,
       "SubscriptionList", "notifications"),
    Op("POST", "/v1/{project_id}/subscriptions", "Subscribe a webhook to the project's notices: url, secret,"
       " kinds (event|hook), resource (pattern), hooks (Ember)", 201, "SubscriptionShow", "notifications",
       body=True),
    Op("GET", "/v1/{project_id}/subscriptions/{subscription_id}", "Show a subscription (Ember)", 200,
       "SubscriptionShow", "notifications"),
    Op("DELETE", "/v1/{project_id}/subscriptions/{subscription_id}", "Delete a subscription (Ember)", 204,
       None, "notifications"),
    Op("GET", "/v1/{project_id}/subscriptions/{subscription_id}/deliveries",
       "A subscription's deliveries: status, attempts, last error (Ember)", 200, "DeliveryList",
       "notifications"),
    Op("GET", f"{S}/subscriptions", "The stack's webhook subscriptions (Ember)", 200, "SubscriptionList",
       "notifications"),
    Op("POST", f"{S}/subscriptions", "Subscribe a webhook to the stack's notices, nested stacks included"
       " (Ember)", 201, "SubscriptionShow", "notifications", body=True),
    Op("GET", "/identity", "Identity versions (keystone mode)", 300, "Object", "identity",
       keystone_only=True),
    Op("GET", "/identity/v3", "Identity v3 version (keystone mode)", 200, "Object", "identity",
       keystone_only=True),
    Op("GET", "/identity/v3/", "Identity v3 version (keystone mode)", 200, "Object", "identity",
       keystone_only=True),
    Op("POST", "/identity/v3/auth/tokens", "Issue a token: password or token, scoped to a project; the token"
       " is in X-Subject-Token", 201, "Object", "identity", body=True, keystone_only=True),
    Op("GET", "/identity/v3/auth/tokens", "Validate the token in X-Subject-Token", 200, "Object", "identity",
       keystone_only=True),
    Op("HEAD", "/identity/v3/auth/tokens", "Check the token in X-Subject-Token", 200, None, "identity",
       keystone_only=True),
    Op("DELETE", "/identity/v3/auth/tokens", "Revoke the token in X-Subject-Token", 204, None, "identity",
       keystone_only=True),
    Op("GET", "/identity/v3/auth/projects", "Projects the caller may scope to", 200, "Object", "identity",
       keystone_only=True),
]


def document() -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for op in OPERATIONS:
        answer: dict[str, Any] = {"description": op.summary}
        if op.schema is not None:
            answer["content"] = {op.media: {"schema": _ref(op.schema)}}
        elif op.media != "application/json":
            answer["content"] = {op.media: {"schema": STR}}
        params = [{"name": name, "in": "path", "required": True, "schema": STR}
                  for name in _path_params(op.path)]
        entry: dict[str, Any] = {
            "summary": op.summary, "tags": [op.tag],
            "operationId": op.method.lower() + op.path.replace("/", "_").replace("{", "").replace("}", ""),
            "responses": {str(op.status): answer,
                          "default": {"description": "Heat's fault body",
                                      "content": {"application/json": {"schema": _ref("Fault")}}}}}
        if params:
            entry["parameters"] = params
        if op.body:
            entry["requestBody"] = {"content": {"application/json": {"schema": ANY_OBJ}}}
        paths.setdefault(op.path, {})[op.method.lower()] = entry
    return {"openapi": "3.1.0",
            "info": {"title": "Ember Orchestration API", "version": "1.0",
                     "description": "Heat's Orchestration API v1, and Ember's own routes."},
            "paths": paths, "components": {"schemas": SCHEMAS}}


def _path_params(path: str) -> list[str]:
    return [part[1:-1] for part in path.split("/") if part.startswith("{") and part.endswith("}")]


async def serve(_request: web.Request) -> web.Response:
    return json_response(document())
