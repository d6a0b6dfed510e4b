"""The OpenAPI document and the router agree route for route, and the document is well formed."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from libs import config
from services.api import openapi, resources_api
from services.api.app import make_app
from services.api.policy import Need, allows


def _routes(extra: dict[str, str] | None = None) -> set[tuple[str, str]]:
    app = make_app(config.load({"EMBER_DATABASE_URL": "postgresql://x/y", "EMBER_NATS_URL": "nats://x:1",
                                **(extra or {})}))
    found = set()
    for route in app.router.routes():
        info = route.resource.get_info() if route.resource is not None else {}
        path = route.resource.canonical if route.resource is not None else ""
        if (route.method == "HEAD" and path != "/identity/v3/auth/tokens") or not path:
            continue  # aiohttp's HEAD beside each GET
        # A pattern like {tail:resources(/.*)?} is documented as its parameter.
        found.add((route.method, path if "formatter" not in info else str(info["formatter"])))
    return found


def test_every_route_is_documented_and_every_documented_route_exists(tmp_path: Path) -> None:
    everywhere = {(op.method, op.path) for op in openapi.OPERATIONS if not op.keystone_only}
    keystone = {(op.method, op.path) for op in openapi.OPERATIONS}
    assert _routes() == everywhere
    users = tmp_path / "auth.yaml"
    users.write_text("projects: [{name: demo}]\nusers: [{name: a, password: b, roles: {demo: [member]}}]\n")
    assert _routes({"EMBER_AUTH": "keystone", "EMBER_AUTH_CONFIG": str(users)}) == keystone


def test_the_documents_schemas_are_valid_json_schema() -> None:
    doc = openapi.document()
    assert doc["openapi"].startswith("3.1")
    for schema in doc["components"]["schemas"].values():
        jsonschema.Draft202012Validator.check_schema(schema)
    for path, methods in doc["paths"].items():
        for method, op in methods.items():
            assert op["responses"], (method, path)
            names = [p["name"] for p in op.get("parameters", []) if p["in"] == "path"]
            assert names == openapi._path_params(path)


def test_every_route_declares_who_may_call_it() -> None:
    # With the test above (router == table), a route added without a rule fails here or at import.
    with pytest.raises(TypeError, match="rule"):
        openapi.Op("PATCH", "/v1/{project_id}/new", "A route that forgot its rule")  # type: ignore[call-arg]
    for op in openapi.OPERATIONS:
        in_project = op.path.startswith("/v1/{project_id}/")
        assert (op.rule.needs is not Need.ANYONE) == in_project, (op.method, op.path)
        assert bool(op.rule.action) == in_project, (op.method, op.path)
        if op.method in ("GET", "HEAD") and in_project:
            # Heat's reads that still need a member: exports and generated templates.
            assert op.rule.needs is Need.READER or op.rule.action in (
                "stacks:export", "stacks:generate_template", "service:index"), op.path
    # The actions route picks its rule by the body's key: every action the handler takes has one.
    assert set(openapi.ACTION_RULES) == set(resources_api.ACTIONS)
    documented = openapi.document()["paths"]["/v1/{project_id}/stacks/{stack_name}/{stack_id}/actions"]
    assert documented["post"]["x-policy"]["by_action"]["check"] == {"action": "actions:check",
                                                                    "role": "reader"}


def test_roles_imply_as_keystones_do() -> None:
    assert [need for need in Need if allows(need, frozenset({"reader"}))] == [Need.ANYONE, Need.READER]
    assert [need for need in Need if allows(need, frozenset({"member"}))] == [
        Need.ANYONE, Need.READER, Need.MEMBER]
    assert all(allows(need, frozenset({"admin"})) for need in Need)
    assert [need for need in Need if allows(need, frozenset({"service", "observer"}))] == [Need.ANYONE]


def test_the_paged_lists_document_their_query_parameters() -> None:
    paths = openapi.document()["paths"]
    listed = paths[f"{openapi.S}/resources"]["get"]["parameters"]
    # Every parameter the resource list takes is documented, Ember's paging among them.
    assert {p["name"] for p in listed if p["in"] == "query"} == resources_api.RESOURCE_PARAMS
    for path in (f"{openapi.S}/resources", f"{openapi.S}/events", f"{openapi.R}/events"):
        query = {p["name"]: p for p in paths[path]["get"]["parameters"] if p["in"] == "query"}
        assert query["limit"]["schema"] == {"type": "integer", "minimum": 0, "maximum": 2**31 - 1}, path
        assert query["marker"]["schema"] == {"type": "string"}, path
    assert "links" in openapi.SCHEMAS["ResourceList"]["properties"]
