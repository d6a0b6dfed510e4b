"""Validate, resource types, template versions, build info and services, with Heat's bodies."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import jsonschema
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from libs.config import Settings
from services.api import openapi
from services.api.app import make_app

Client = TestClient[web.Request, web.Application]
P = "/v1/demo"


@pytest.fixture
async def api(settings: Settings, aiohttp_client: Callable[[web.Application], Awaitable[Client]]) -> Client:
    return await aiohttp_client(make_app(settings))


def _conforms(schema: str, body: Any) -> None:
    root = {"components": {"schemas": openapi.SCHEMAS}, "$ref": f"#/components/schemas/{schema}"}
    jsonschema.Draft202012Validator(root).validate(body)


async def _get(api: Client, path: str, status: int = 200) -> Any:
    async with api.get(path) as r:
        assert r.status == status, await r.text()
        return await r.json()


async def test_validate_answers_parameters_or_the_bad_fields_path(api: Client) -> None:
    template = {"heat_template_version": "2016-10-14", "description": "d",
                "parameters": {"size": {"type": "number", "default": 1, "description": "how big"}},
                "resources": {"r": {"type": "OS::Heat::None"}}}
    async with api.post(f"{P}/validate", json={"template": template}) as r:
        assert r.status == 200
        body = await r.json()
    _conforms("Validation", body)
    assert body["Description"] == "d"
    assert body["Parameters"]["size"] == {"Type": "Number", "Default": 1, "Description": "how big",
                                          "NoEcho": "false", "Label": "size"}
    bad = {**template, "resources": {"r": {"type": "OS::Heat::None", "depends_on": ["ghost"]}}}
    async with api.post(f"{P}/validate", json={"template": bad}) as r:
        assert r.status == 400
        fault = await r.json()
    jsonschema.Draft202012Validator(openapi.SCHEMAS["Fault"]).validate(fault)
    assert "ghost" in fault["error"]["message"]


async def test_resource_types_list_filter_show_and_template(api: Client) -> None:
    listed = await _get(api, f"{P}/resource_types")
    _conforms("ResourceTypes", listed)
    assert {"OS::Heat::None", "OS::Heat::TestResource", "OS::Heat::RandomString",
            "OS::Heat::Value"} <= set(listed["resource_types"])
    assert (await _get(api, f"{P}/resource_types?name=OS::Heat::Random"))["resource_types"] == [
        "OS::Heat::RandomString"]
    described = await _get(api, f"{P}/resource_types?name=OS::Heat::None&with_description=true")
    assert described["resource_types"][0]["resource_type"] == "OS::Heat::None"
    assert (await _get(api, f"{P}/resource_types?support_status=BOGUS", 400))["error"]["type"] == (
        "HTTPBadRequest")

    schema = await _get(api, f"{P}/resource_types/OS::Heat::RandomString")
    _conforms("ResourceTypeSchema", schema)
    assert schema["properties"]["length"]["type"] == "integer"
    assert "value" in schema["attributes"]
    missing = await _get(api, f"{P}/resource_types/OS::Nope", 404)
    assert missing["error"] == {"type": "ResourceTypeNotFound", "traceback": None,
                                "message": "The Resource Type (OS::Nope) could not be found."}

    hot = await _get(api, f"{P}/resource_types/OS::Heat::RandomString/template?template_type=hot")
    assert hot["heat_template_version"] == "2016-10-14"
    assert hot["resources"]["RandomString"]["properties"]["length"] == {"get_param": "length"}
    assert hot["parameters"]["length"]["type"] == "number"
    assert hot["outputs"]["value"]["value"] == {"get_attr": ["RandomString", "value"]}
    assert "show" in hot["outputs"]
    cfn = await _get(api, f"{P}/resource_types/OS::Heat::RandomString/template")
    assert cfn["HeatTemplateFormatVersion"] == "2012-12-12"
    assert cfn["Resources"]["RandomString"]["Properties"]["length"] == {"Ref": "length"}


async def test_template_versions_and_functions(api: Client) -> None:
    versions = await _get(api, f"{P}/template_versions")
    _conforms("TemplateVersions", versions)
    by_name = {v["version"]: v for v in versions["template_versions"]}
    assert by_name["heat_template_version.2016-10-14"]["aliases"] == ["heat_template_version.newton"]
    assert by_name["AWSTemplateFormatVersion.2010-09-09"]["type"] == "cfn"
    functions = await _get(api, f"{P}/template_versions/heat_template_version.2016-10-14/functions")
    _conforms("TemplateFunctions", functions)
    assert "get_attr" in {f["functions"] for f in functions["template_functions"]}
    await _get(api, f"{P}/template_versions/heat_template_version.1999-01-01/functions", 404)


async def test_build_info_and_services(api: Client) -> None:
    _conforms("BuildInfo", await _get(api, f"{P}/build_info"))
    listed = await _get(api, f"{P}/services")
    _conforms("Services", listed)
    mine = [s for s in listed["services"] if s["binary"] == "ember-api"]
    assert len(mine) == 1 and mine[0]["status"] == "up"


async def test_other_methods_are_405_with_heats_fault(api: Client) -> None:
    async with api.delete(f"{P}/resource_types") as r:
        assert r.status == 405
        assert (await r.json())["error"]["type"] == "HTTPMethodNotAllowed"
