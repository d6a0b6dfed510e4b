"""The OpenAPI 3.1 document of the api, served at ``/openapi.json``.

One table lists every route with its method, summary, answer and who may call
it (its :class:`~services.api.policy.Rule`, which the auth middleware enforces);
the schemas are JSON Schema (OpenAPI 3.1), so a test can check real answers
against them and that the table and the router agree route for route.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from aiohttp import web

from services.api.http import json_response
from services.api.policy import PUBLIC, Rule, admin, by_body, member, reader

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
    "ResourceList": _obj({"resources": {"type": "array", "items": _ref("Resource")}}, {"links": LINKS}),
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
    "Drift": _obj({"id": {"type": "integer"}, "resource_name": STR,
                   "kind": {"enum": ["gone", "error", "changed"]},
                   "fields": {"type": "array", "items": STR}, "detail": STR, "detected_at": STR,
                   "resolved_at": NSTR, "action_taken": STR}),
    "DriftList": _obj({"drift": {"type": "array", "items": _ref("Drift")}}),
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
    "SoftwareConfigSummary": _obj({"id": STR, "name": NSTR, "group": NSTR, "creation_time": STR},
                                  {"project": STR}),
    "SoftwareConfig": {"allOf": [_ref("SoftwareConfigSummary"), _obj(
        {"config": {}, "inputs": {"type": "array", "items": ANY_OBJ},
         "outputs": {"type": "array", "items": ANY_OBJ}, "options": ANY_OBJ}, {"ember_hash": STR})]},
    "SoftwareConfigList": _obj({"software_configs": {"type": "array",
                                                     "items": _ref("SoftwareConfigSummary")}}),
    "SoftwareConfigShow": _obj({"software_config": _ref("SoftwareConfig")}),
    "SoftwareDeployment": _obj({
        "id": STR, "server_id": STR, "input_values": ANY_OBJ, "output_values": {"type": ["object", "null"]},
        "action": NSTR,
        "status": NSTR, "status_reason": STR, "config_id": STR, "creation_time": STR}, {"updated_time": STR}),
    "SoftwareDeploymentList": _obj({"software_deployments": {"type": "array",
                                                             "items": _ref("SoftwareDeployment")}}),
    "SoftwareDeploymentShow": _obj({"software_deployment": _ref("SoftwareDeployment")}),
    "DeploymentMetadata": _obj({"metadata": {"type": "array", "items": _ref("SoftwareConfig")}}),
    "Object": ANY_OBJ,
}


@dataclasses.dataclass(frozen=True)
class Query:
    """A query parameter of a route; a list one (``array``) may be given again and again."""

    name: str
    schema: dict[str, Any]
    description: str


INT = {"type": "integer", "minimum": 0, "maximum": 2**31 - 1}
TEXTS = {"type": "array", "items": STR}
NESTED_DEPTH = Query("nested_depth", INT, "Levels of nested stacks listed too")
LIMIT = Query("limit", INT, "Items in one page at most")
SORT_DIR = Query("sort_dir", {"enum": ["asc", "desc"]}, "Oldest or newest first (desc)")
RESOURCE_QUERY = (
    NESTED_DEPTH, Query("with_detail", {"type": "boolean"}, "Heat's with_detail"),
    *(Query(name, TEXTS, f"Only resources whose {name} is one of these") for name in (
        "name", "type", "status", "action", "id", "physical_resource_id")),
    Query("limit", INT, "Ember's paging, which Heat's resource list lacks: resources in one page at most,"
                        " in name order (stack by stack with nested_depth); without limit and marker, every"
                        " resource in the order they were made, as Heat"),
    Query("marker", STR, "Ember's paging: the page starts after this resource, named as the last item of the"
                         " previous page (nested/name in a nested stack); the answer's links[rel=next] holds"
                         " the next page's URL. A marker naming no resource is a 404"))
EVENT_MARKER = Query("marker", STR, "Heat's paging: the page starts after this event id")
EVENT_FILTERS = tuple(Query(name, TEXTS, f"Only events whose {name} is one of these")
                      for name in ("resource_action", "resource_status", "resource_type"))
EVENT_QUERY = (LIMIT, EVENT_MARKER, SORT_DIR, NESTED_DEPTH,
               Query("resource_name", TEXTS, "Only events of these resources"), *EVENT_FILTERS)
RESOURCE_EVENT_QUERY = (LIMIT, EVENT_MARKER, SORT_DIR, *EVENT_FILTERS)


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
    query: tuple[Query, ...] = ()
    # Who may call it in keystone mode; no default, so a new route cannot forget it.
    rule: Rule = dataclasses.field(kw_only=True)


P = "/v1/{project_id}"
# Heat's ActionController: the body's one key names the action and its policy.
ACTION_RULES = {"suspend": member("actions:suspend"), "resume": member("actions:resume"),
                "check": reader("actions:check"), "cancel_update": member("actions:cancel_update"),
                "cancel_without_rollback": member("actions:cancel_without_rollback")}

OPERATIONS: list[Op] = [
    Op("GET", "/", "Versions document (300 Multiple Choices)", 300, "Versions", "versions", rule=PUBLIC),
    Op("GET", "/openapi.json", "This document", 200, "Object", "versions", rule=PUBLIC),
    Op("GET", "/ember/v1/health", "Live services and queue probes (Ember)", 200, "Object", "ember",
       rule=PUBLIC),
    Op("POST", f"{P}/validate", "Validate a template", 200, "Validation", "templates", body=True,
       rule=member("stacks:validate_template")),
    Op("GET", f"{P}/resource_types", "List resource types", 200, "ResourceTypes", "types",
       rule=reader("stacks:list_resource_types")),
    Op("GET", f"{P}/resource_types/{{type_name}}", "A resource type's schema", 200,
       "ResourceTypeSchema", "types", rule=reader("stacks:resource_schema")),
    Op("GET", f"{P}/resource_types/{{type_name}}/template",
       "A template wrapping the type (template_type=hot|cfn)", 200, "Object", "types",
       rule=member("stacks:generate_template")),
    Op("GET", f"{P}/template_versions", "Template versions", 200, "TemplateVersions",
       "templates", rule=reader("stacks:list_template_versions")),
    Op("GET", f"{P}/template_versions/{{version}}/functions", "A version's functions", 200,
       "TemplateFunctions", "templates", rule=reader("stacks:list_template_functions")),
    Op("GET", f"{P}/build_info", "Build information", 200, "BuildInfo", "service",
       rule=reader("build_info:build_info")),
    Op("GET", f"{P}/services", "Engine processes and their state (admin)", 200, "Services",
       "service", rule=admin("service:index")),
    Op("GET", f"{P}/stacks", "List stacks", 200, "StackList", rule=reader("stacks:index")),
    Op("POST", f"{P}/stacks", "Create a stack", 201, "CreatedStack", body=True, rule=member("stacks:create")),
    Op("GET", f"{P}/stacks/detail", "List stacks with every field", 200, "StackDetailList",
       rule=reader("stacks:detail")),
    Op("POST", f"{P}/stacks/preview",
       "Preview a create (a nesting resource: the list of its nested ones)", 200, "Object", body=True,
       rule=reader("stacks:preview")),
    *(Op(m, f"{P}/stacks/{{stack_name}}", "Find a stack by name or id (302 to its URL)", 302,
         None, "lookup", rule=reader("stacks:lookup")) for m in ("GET", "POST", "PUT", "PATCH", "DELETE")),
    *(Op(m, f"{P}/stacks/{{stack_name}}/{{tail}}", "Sub-paths of a stack found by name or id "
         "(302 to its URL)", 302, None, "lookup", rule=reader("stacks:lookup"))
      for m in ("GET", "POST", "PUT", "PATCH", "DELETE")),
    Op("GET", S, "Show a stack", 200, "StackShow", rule=reader("stacks:show")),
    Op("PUT", S, "Update a stack (new template)", 202, None, body=True, rule=member("stacks:update")),
    Op("PATCH", S, "Update a stack (existing: merge into what it has)", 202, None, body=True,
       rule=member("stacks:update_patch")),
    Op("DELETE", S, "Delete a stack", 204, None, rule=member("stacks:delete")),
    Op("PUT", f"{S}/preview", "Preview an update (show_nested=true: nested stacks too)", 200,
       "ResourceChanges", body=True, rule=member("stacks:preview_update")),
    Op("PATCH", f"{S}/preview", "Preview a PATCH update", 200, "ResourceChanges", body=True,
       rule=member("stacks:preview_update_patch")),
    Op("GET", f"{S}/template", "The stack's template", 200, "Object", rule=reader("stacks:template")),
    Op("GET", f"{S}/environment", "The stack's environment", 200, "Object",
       rule=reader("stacks:environment")),
    Op("GET", f"{S}/files", "The stack's files", 200, "Object", rule=reader("stacks:files")),
    Op("GET", f"{S}/outputs", "List outputs", 200, "OutputList", rule=reader("stacks:list_outputs")),
    Op("GET", f"{S}/outputs/{{output_key}}", "Show one output", 200, "OutputShow",
       rule=reader("stacks:show_output")),
    Op("POST", f"{S}/actions", "suspend, resume, check, cancel_update or cancel_without_rollback", 200,
       None, body=True, rule=by_body("actions:action", ACTION_RULES)),
    Op("GET", f"{S}/events", "List the stack's events, newest first", 200, "EventList", "events",
       query=EVENT_QUERY, rule=reader("events:index")),
    Op("GET", f"{S}/events/stream", "The stack's events as server-sent events (Ember)", 200, None,
       "events", media="text/event-stream", rule=reader("events:stream")),
    Op("GET", f"{S}/resources", "List resources (limit, marker: Ember's paging)", 200, "ResourceList",
       "resources", query=RESOURCE_QUERY, rule=reader("resource:index")),
    Op("GET", R, "Show a resource", 200, "ResourceShow", "resources", rule=reader("resource:show")),
    Op("PATCH", R, "Mark a resource unhealthy (or not)", 200, "Object", "resources", body=True,
       rule=member("resource:mark_unhealthy")),
    Op("GET", f"{R}/metadata", "A resource's metadata", 200, "Metadata", "resources",
       rule=reader("resource:metadata")),
    # Heat lets a reader signal (wait conditions, scaling policies): PROJECT_READER_OR_STACK_USER.
    Op("POST", f"{R}/signal", "Signal a resource", 200, None, "resources", body=True,
       rule=reader("resource:signal")),
    Op("GET", f"{R}/events", "A resource's events, newest first", 200, "EventList", "events",
       query=RESOURCE_EVENT_QUERY, rule=reader("events:index")),
    Op("GET", f"{R}/events/{{event_id}}", "Show one event", 200, "EventShow", "events",
       rule=reader("events:show")),
    Op("POST", f"{S}/snapshots", "Take a snapshot", 200, "Snapshot", "snapshots", body=True,
       rule=member("stacks:snapshot")),
    Op("GET", f"{S}/snapshots", "List snapshots", 200, "SnapshotList", "snapshots",
       rule=reader("stacks:list_snapshots")),
    Op("GET", f"{S}/snapshots/{{snapshot_id}}", "Show a snapshot", 200, "SnapshotShow", "snapshots",
       rule=reader("stacks:show_snapshot")),
    Op("DELETE", f"{S}/snapshots/{{snapshot_id}}", "Delete a snapshot", 204, None, "snapshots",
       rule=member("stacks:delete_snapshot")),
    Op("POST", f"{S}/snapshots/{{snapshot_id}}/restore", "Restore the stack to a snapshot", 202, None,
       "snapshots", rule=member("stacks:restore_snapshot")),
    Op("GET", f"{S}/drift", "What the observer saw differ in the cloud: gone, error or changed, per"
       " resource, open until the cloud agrees again (Ember)", 200, "DriftList", "drift",
       rule=reader("drift:index")),
    Op("DELETE", f"{S}/abandon", "Abandon: the stack's data, then delete it keeping its resources"
       " (EMBER_ENABLE_STACK_ABANDON)", 200, "Object", "stacks", rule=member("stacks:abandon")),
    Op("GET", f"{S}/export", "The stack's abandon data, nothing deleted (EMBER_ENABLE_STACK_ABANDON)", 200,
       "Object", "stacks", rule=member("stacks:export")),
    Op("GET", f"{S}/breakpoints", "The stack's breakpoints (Ember)", 200, "BreakpointList", "debugger",
       rule=reader("breakpoints:index")),
    Op("POST", f"{S}/breakpoints", "Set a breakpoint: resource (name, pattern or nested path a/b), hooks,"
       " resource_type, timeout (seconds), on_timeout (fail|continue) (Ember)", 201, "BreakpointShow",
       "debugger", body=True, rule=member("breakpoints:create")),
    Op("DELETE", f"{S}/breakpoints", "Clear every breakpoint of the stack (Ember)", 204, None, "debugger",
       rule=member("breakpoints:delete")),
    Op("DELETE", f"{S}/breakpoints/{{breakpoint_id}}", "Clear one breakpoint (Ember)", 204, None,
       "debugger", rule=member("breakpoints:delete")),
    Op("GET", f"{S}/paused", "Nodes paused at hooks in the stack and its nested stacks (Ember)", 200,
       "PausedList", "debugger", rule=reader("breakpoints:paused")),
    Op("POST", f"{S}/step", "Release the paused nodes and pause each node that starts next (Ember)", 200,
       "Released", "debugger", rule=member("breakpoints:step")),
    Op("POST", f"{S}/continue", "Release the paused nodes and run the operation to its end (Ember)", 200,
       "Released", "debugger", rule=member("breakpoints:continue")),
    Op("GET", f"{P}/subscriptions", "The project's webhook subscriptions (Ember)", 200,
       "SubscriptionList", "notifications", rule=reader("subscriptions:index")),
    Op("POST", f"{P}/subscriptions", "Subscribe a webhook to the project's notices: url, secret,"
       " kinds (event|hook), resource (pattern), hooks (Ember)", 201, "SubscriptionShow", "notifications",
       body=True, rule=member("subscriptions:create")),
    Op("GET", f"{P}/subscriptions/{{subscription_id}}", "Show a subscription (Ember)", 200,
       "SubscriptionShow", "notifications", rule=reader("subscriptions:show")),
    Op("DELETE", f"{P}/subscriptions/{{subscription_id}}", "Delete a subscription (Ember)", 204,
       None, "notifications", rule=member("subscriptions:delete")),
    Op("GET", f"{P}/subscriptions/{{subscription_id}}/deliveries",
       "A subscription's deliveries: status, attempts, last error (Ember)", 200, "DeliveryList",
       "notifications", rule=reader("subscriptions:deliveries")),
    Op("GET", f"{S}/subscriptions", "The stack's webhook subscriptions (Ember)", 200, "SubscriptionList",
       "notifications", rule=reader("subscriptions:index")),
    Op("POST", f"{S}/subscriptions", "Subscribe a webhook to the stack's notices, nested stacks included"
       " (Ember)", 201, "SubscriptionShow", "notifications", body=True, rule=member("subscriptions:create")),
    Op("GET", f"{P}/software_configs", "List software configs, newest first (limit, marker)", 200,
       "SoftwareConfigList", "software", rule=reader("software_configs:index")),
    Op("POST", f"{P}/software_configs", "Create a software config: name, group, config, inputs, outputs,"
       " options", 200, "SoftwareConfigShow", "software", body=True, rule=member("software_configs:create")),
    Op("GET", f"{P}/software_configs/{{config_id}}", "Show a software config", 200, "SoftwareConfigShow",
       "software", rule=reader("software_configs:show")),
    Op("DELETE", f"{P}/software_configs/{{config_id}}", "Delete a software config no deployment uses", 204,
       None, "software", rule=member("software_configs:delete")),
    Op("GET", f"{P}/software_deployments", "List software deployments (server_id)", 200,
       "SoftwareDeploymentList", "software", rule=reader("software_deployments:index")),
    Op("POST", f"{P}/software_deployments", "Deploy a config to a server: config_id, server_id, input_values,"
       " action, status, status_reason, stack_user_project_id", 200, "SoftwareDeploymentShow", "software",
       body=True, rule=member("software_deployments:create")),
    Op("GET", f"{P}/software_deployments/metadata/{{server_id}}", "The configs deployed to a server, by"
       " name, as its agent reads them (ember_hash: a derived config's hash)", 200, "DeploymentMetadata",
       "software", rule=reader("software_deployments:metadata")),
    Op("GET", f"{P}/software_deployments/{{deployment_id}}", "Show a software deployment", 200,
       "SoftwareDeploymentShow", "software", rule=reader("software_deployments:show")),
    Op("PUT", f"{P}/software_deployments/{{deployment_id}}", "Update a software deployment: config_id,"
       " input_values, output_values, action, status, status_reason", 200, "SoftwareDeploymentShow",
       "software", body=True, rule=member("software_deployments:update")),
    Op("DELETE", f"{P}/software_deployments/{{deployment_id}}", "Delete a software deployment", 204, None,
       "software", rule=member("software_deployments:delete")),
    # Identity checks its own tokens, as Keystone's policy has it (services/api/identity.py).
    Op("GET", "/identity", "Identity versions (keystone mode)", 300, "Object", "identity",
       keystone_only=True, rule=PUBLIC),
    Op("GET", "/identity/v3", "Identity v3 version (keystone mode)", 200, "Object", "identity",
       keystone_only=True, rule=PUBLIC),
    Op("GET", "/identity/v3/", "Identity v3 version (keystone mode)", 200, "Object", "identity",
       keystone_only=True, rule=PUBLIC),
    Op("POST", "/identity/v3/auth/tokens", "Issue a token: password or token, scoped to a project; the token"
       " is in X-Subject-Token", 201, "Object", "identity", body=True, keystone_only=True, rule=PUBLIC),
    Op("GET", "/identity/v3/auth/tokens", "Validate the token in X-Subject-Token (its owner, an admin or a"
       " service)", 200, "Object", "identity", keystone_only=True, rule=PUBLIC),
    Op("HEAD", "/identity/v3/auth/tokens", "Check the token in X-Subject-Token (its owner or an admin)", 200,
       None, "identity", keystone_only=True, rule=PUBLIC),
    Op("DELETE", "/identity/v3/auth/tokens", "Revoke the token in X-Subject-Token (its owner or an admin)",
       204, None, "identity", keystone_only=True, rule=PUBLIC),
    Op("GET", "/identity/v3/auth/projects", "Projects the caller may scope to", 200, "Object", "identity",
       keystone_only=True, rule=PUBLIC),
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
        params += [{"name": q.name, "in": "query", "required": False, "schema": q.schema,
                    "description": q.description} for q in op.query]
        entry: dict[str, Any] = {
            "summary": op.summary, "tags": [op.tag],
            "operationId": op.method.lower() + op.path.replace("/", "_").replace("{", "").replace("}", ""),
            "responses": {str(op.status): answer,
                          "default": {"description": "Heat's fault body",
                                      "content": {"application/json": {"schema": _ref("Fault")}}}}}
        if params:
            entry["parameters"] = params
        if op.rule.action:
            entry["x-policy"] = {"action": op.rule.action, "role": op.rule.needs.value}
            if op.rule.by_body:
                entry["x-policy"]["by_action"] = {key: {"action": r.action, "role": r.needs.value}
                                                  for key, r in op.rule.by_body.items()}
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
