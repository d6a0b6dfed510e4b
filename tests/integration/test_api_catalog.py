"""Validate, resource types, template versions, build info and services, with Heat's bodies."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import re
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from libs.config import Settings
from libs.db import services
from services.api import openapi
from services.api.app import make_app
from services.api.identity_config import stable_id
from services.api.keys import RUNTIME

Client = TestClient[web.Request, web.Application]
P = "/v1/demo"
HOT = {"heat_template_version": "2016-10-14"}
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}$")


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


async def _validate(api: Client, body: Any, query: str = "", status: int = 200) -> Any:
    async with api.post(f"{P}/validate{query}", json=body) as r:
        assert r.status == status, await r.text()
        answer = await r.json()
    _conforms("Validation" if status == 200 else "Fault", answer)
    return answer


# ---- POST /validate ----------------------------------------------------------------------------

SIZE = {"Type": "Number", "Default": 1, "Description": "how big", "NoEcho": "false", "Label": "size"}
SIZED = {**HOT, "description": "d",
         "parameters": {"size": {"type": "number", "default": 1, "description": "how big"}},
         "resources": {"r": {"type": "OS::Heat::None"}}}


@pytest.mark.parametrize("template", [
    SIZED,
    json.dumps(SIZED),
    "heat_template_version: 2016-10-14\ndescription: d\nparameters:\n"
    "  size: {type: number, default: 1, description: how big}\nresources:\n  r: {type: OS::Heat::None}\n",
], ids=["map", "json-text", "yaml-text"])
async def test_validate_describes_the_parameters(api: Client, template: Any) -> None:
    body = await _validate(api, {"template": template, "parameters": {"size": 3}})
    assert body == {"Description": "d", "Parameters": {"size": {**SIZE, "Value": 3}},
                    "Environment": {"parameters": {"size": 3}, "parameter_defaults": {},
                                    "resource_registry": {"resources": {}}, "event_sinks": []}}


async def test_validate_a_cfn_template_with_its_environment(api: Client) -> None:
    template = {"AWSTemplateFormatVersion": "2010-09-09", "Parameters": {"Word": {"Type": "String"}},
                "Resources": {}}
    body = await _validate(api, {"template": template, "environment": "parameter_defaults: {Word: hi}\n"})
    assert body["Description"] == "No description"
    assert body["Parameters"]["Word"] == {"Type": "String", "Description": "", "NoEcho": "false",
                                          "Label": "Word", "Default": "hi"}
    assert body["Environment"]["parameter_defaults"] == {"Word": "hi"}


NESTED = ("heat_template_version: 2015-10-15\nparameters:\n  name: {type: string}\n"
          "  tags: {type: comma_delimited_list, default: []}\n"
          "parameter_groups:\n- {label: Naming, parameters: [name]}\n")
MEMBER = {"Type": "My::Member", "Description": "No description", "ParameterGroups": [
    {"label": "Naming", "parameters": ["name"]}]}
NAME = {"Type": "String", "Description": "", "NoEcho": "false", "Label": "name"}
TAGS = {"Type": "CommaDelimitedList", "Description": "", "NoEcho": "false", "Label": "tags", "Default": []}


async def test_validate_show_nested_describes_every_nested_stack(api: Client) -> None:
    # A resource that nests nothing is not looked into: its unset parameter is no error here.
    template = {**HOT, "parameters": {"unset": {"type": "string"}}, "resources": {
        "single": {"type": "My::Member", "properties": {"name": "one", "tags": ["a", "b"]}},
        "group": {"type": "OS::Heat::ResourceGroup", "properties": {
            "count": 0, "resource_def": {"type": "My::Member", "properties": {"name": "m%index%"}}}},
        "plain": {"type": "OS::Heat::None", "properties": {"a": {"get_param": "unset"}}}}}
    request = {"template": template, "files": {"member.yaml": NESTED},
               "environment": {"resource_registry": {"My::Member": "member.yaml"}}}
    assert "NestedParameters" not in await _validate(api, request)
    body = await _validate(api, request, "?show_nested=true")
    assert list(body) == ["Description", "Parameters", "NestedParameters", "Environment"]
    assert body["NestedParameters"] == {
        "single": {**MEMBER, "Parameters": {"name": {**NAME, "Value": "one"},
                                            "tags": {**TAGS, "Value": "a,b"}}},
        # Heat shows a group as if it had one member, whatever its count.
        "group": {"Type": "OS::Heat::ResourceGroup", "Description": "No description", "Parameters": {},
                  "NestedParameters": {"0": {**MEMBER, "Parameters": {"name": {**NAME, "Value": "m0"},
                                                                      "tags": TAGS}}}},
    }


async def test_validate_show_nested_stops_at_heats_depth_limit(api: Client) -> None:
    itself = "heat_template_version: 2016-10-14\nresources:\n  again: {type: loop.yaml}\n"
    request = {"template": itself, "files": {"loop.yaml": itself}}
    fault = await _validate(api, request, "?show_nested=true", 400)
    assert fault["error"]["type"] == "RequestLimitExceeded"
    assert fault["error"]["message"] == "Request limit exceeded: Recursion depth exceeds 5."


BAD_REQUESTS = [
    # (body, query, error type, message: exact, or a prefix ending in "...")
    ({}, "", "HTTPBadRequest", "No template specified"),
    ({"template_url": "http://templates.invalid/t.yaml"}, "", "HTTPBadRequest",
     "Could not retrieve template: ..."),
    ({"template": "resources: [\n"}, "", "HTTPBadRequest",
     "Template not in valid format: Error parsing template [root stack] ..."),
    ({"template": "resources: {}\n"}, "", "HTTPBadRequest",
     "Template not in valid format: Template format version not found."),
    ({"template": HOT, "environment": {"bogus": {}}}, "", "HTTPBadRequest",
     'Environment not in valid format: environment has wrong section "bogus"'),
    ({"template": HOT}, "?show_nested=maybe", "HTTPBadRequest",
     'Unrecognized value "maybe" for "show_nested", acceptable values are: true, false.'),
    ({"template": HOT}, "?ignore_errors=99001,123", "HTTPBadRequest",
     "Invalid codes in ignore_errors : ['123']"),
    ({"template": {"heat_template_version": "2099-01-01"}}, "", "InvalidTemplateVersion",
     'The template version is invalid: "heat_template_version: 2099-01-01". ...'),
    ({"template": HOT, "parameters": {"ghost": 1}}, "", "UnknownUserParameter",
     "The Parameter (ghost) was not defined in template."),
    # The engine's failures are Heat's plain 400, naming the path of the bad field.
    ({"template": {**HOT, "resources": {"r": {"type": "OS::Heat::None",
                                              "properties": {"a": {"str_replace": "x"}}}}}}, "",
     "HTTPBadRequest", 'resources.r.properties.a.str_replace: Arguments to "str_replace" must be a map'),
    ({"template": {**HOT, "resources": {"r": {"type": "OS::Heat::None", "depends_on": ["ghost"]}}}}, "",
     "InvalidTemplateReference", 'The specified reference "ghost" (in r) is incorrect.'),
]


@pytest.mark.parametrize(("body", "query", "error_type", "message"), BAD_REQUESTS)
async def test_validate_refuses_with_heats_faults(api: Client, body: Any, query: str, error_type: str,
                                                  message: str) -> None:
    fault = await _validate(api, body, query, 400)
    assert fault["error"]["type"] == error_type
    if message.endswith("..."):
        assert fault["error"]["message"].startswith(message[:-3]), fault
    else:
        assert fault["error"]["message"] == message


async def test_validate_accepts_heats_one_ignorable_code(api: Client) -> None:
    assert (await _validate(api, {"template": HOT}, "?ignore_errors=99001"))["Parameters"] == {}


# ---- /resource_types ---------------------------------------------------------------------------

BUILTIN = [f"OS::Heat::{name}" for name in (
    "AutoScalingGroup", "CloudConfig", "InstanceGroup", "MultipartMime", "None", "RandomString",
    "ResourceChain", "ResourceGroup", "ScalingPolicy", "SoftwareComponent", "SoftwareConfig",
    "SoftwareDeployment", "SoftwareDeploymentGroup", "Stack", "StructuredConfig", "StructuredDeployment",
    "StructuredDeploymentGroup", "TestResource", "Value",
    "WaitCondition", "WaitConditionHandle")]


@pytest.mark.parametrize(("query", "expected"), [
    ("", BUILTIN),
    # A regular expression matched at the start of the name, as Heat's re.match.
    ("?name=OS::Heat::Random", ["OS::Heat::RandomString"]),
    ("?name=.*Wait", ["OS::Heat::WaitCondition", "OS::Heat::WaitConditionHandle"]),
    ("?name=Heat", []),
    ("?name=[", []),
    ("?name=OS::Heat::None&name=OS::Heat::Value", ["OS::Heat::Value"]),
    ("?name=OS::Nova::Server", ["OS::Nova::Server", "OS::Nova::ServerGroup"]),
    ("?name=OS::Cinder", ["OS::Cinder::Volume", "OS::Cinder::VolumeAttachment"]),
    ("?version=2014.1", [f"OS::Heat::{name}" for name in (
        "AutoScalingGroup", "CloudConfig", "MultipartMime", "RandomString", "ResourceGroup", "ScalingPolicy",
        "SoftwareConfig", "SoftwareDeployment", "StructuredConfig", "StructuredDeployment")]),
    ("?support_status=SUPPORTED", BUILTIN),
    ("?support_status=DEPRECATED", []),
    ("?support_status=HIDDEN", []),
])
async def test_resource_types_filter_as_heat(api: Client, query: str, expected: list[str]) -> None:
    listed = await _get(api, f"{P}/resource_types{query}")
    _conforms("ResourceTypes", listed)
    # Cloud types (OS::Nova::*, OS::Neutron::*...) are listed too; a query that names none
    # of them is compared on the OS::Heat::* types alone.
    shown = listed["resource_types"]
    if all(t.startswith("OS::Heat::") for t in expected):
        shown = [t for t in shown if t.startswith("OS::Heat::")]
    assert shown == expected


async def test_resource_types_with_description_and_bad_filters(api: Client) -> None:
    described = await _get(api, f"{P}/resource_types?name=OS::Heat::None&with_description=true")
    assert [t["resource_type"] for t in described["resource_types"]] == ["OS::Heat::None"]
    assert described["resource_types"][0]["description"]
    bogus = await _get(api, f"{P}/resource_types?support_status=BOGUS", 400)
    assert bogus["error"] == {"type": "Invalid", "traceback": None, "message": (
        "Data supplied was not valid: Invalid support status and should be one of "
        "('UNKNOWN', 'SUPPORTED', 'DEPRECATED', 'UNSUPPORTED', 'HIDDEN')")}
    assert (await _get(api, f"{P}/resource_types?with_description=maybe", 400))["error"]["type"] == (
        "HTTPBadRequest")


async def test_cloud_resource_type_schema(api: Client) -> None:
    schema = await _get(api, f"{P}/resource_types/OS::Nova::Server")
    _conforms("ResourceTypeSchema", schema)
    assert schema["properties"]["flavor"]["constraints"] == [{"custom_constraint": "nova.flavor"}]
    assert schema["properties"]["flavor"]["update_allowed"] is True
    assert "first_address" not in schema["attributes"] and "networks" in schema["attributes"]


CLOUD_TYPES = [
    "OS::Cinder::Volume", "OS::Cinder::VolumeAttachment", "OS::Glance::WebImage", "OS::Neutron::FloatingIP",
    "OS::Neutron::FloatingIPAssociation", "OS::Neutron::Net", "OS::Neutron::Port", "OS::Neutron::Router",
    "OS::Neutron::RouterInterface", "OS::Neutron::SecurityGroup", "OS::Neutron::SecurityGroupRule",
    "OS::Neutron::Subnet", "OS::Nova::Flavor", "OS::Nova::KeyPair", "OS::Nova::Server",
    "OS::Nova::ServerGroup"]


async def test_every_cloud_type_is_listed_shown_and_generated(api: Client) -> None:
    listed = (await _get(api, f"{P}/resource_types"))["resource_types"]
    assert [t for t in listed if not t.startswith(("OS::Heat::", "Ember::"))] == CLOUD_TYPES
    for type_name in CLOUD_TYPES:
        schema = await _get(api, f"{P}/resource_types/{type_name}")
        _conforms("ResourceTypeSchema", schema)
        assert list(schema) == ["resource_type", "properties", "attributes", "support_status"]
        assert schema["resource_type"] == type_name and schema["properties"]
        assert "show" in schema["attributes"]
        hot = await _get(api, f"{P}/resource_types/{type_name}/template?template_type=hot")
        assert [r["type"] for r in hot["resources"].values()] == [type_name]


async def test_embers_own_types_are_listed_and_shown(api: Client) -> None:
    listed = (await _get(api, f"{P}/resource_types"))["resource_types"]
    assert [t for t in listed if t.startswith("Ember::")] == ["Ember::LifecycleConfig"]
    schema = await _get(api, f"{P}/resource_types/Ember::LifecycleConfig")
    _conforms("ResourceTypeSchema", schema)
    assert {"create_config", "update_config", "suspend_config", "resume_config", "delete_config",
            "group"} <= set(schema["properties"])


async def test_resource_type_schema(api: Client) -> None:
    # heatclient quotes the type name into the path.
    schema = await _get(api, f"{P}/resource_types/OS%3A%3AHeat%3A%3ARandomString")
    _conforms("ResourceTypeSchema", schema)
    assert schema["resource_type"] == "OS::Heat::RandomString"
    assert schema["properties"]["length"]["type"] == "integer"
    assert {"value", "show"} <= set(schema["attributes"])
    assert schema["support_status"]["status"] == "SUPPORTED"
    assert "description" not in schema
    described = await _get(api, f"{P}/resource_types/OS::Heat::RandomString?with_description=true")
    assert described["description"]


@pytest.mark.parametrize("path", ["/resource_types/OS::Nope", "/resource_types/OS::Nope/template"])
async def test_an_unknown_resource_type_is_heats_entity_not_found(api: Client, path: str) -> None:
    fault = await _get(api, f"{P}{path}", 404)
    assert fault["error"] == {"type": "EntityNotFound", "traceback": None,
                              "message": "The Resource Type (OS::Nope) could not be found."}


SHOW_DESCRIPTION = "Detailed information about resource."


@pytest.mark.parametrize(("query", "expected"), [
    ("", {"HeatTemplateFormatVersion": "2012-12-12", "Description": "Initial template of NoneResource",
          "Parameters": {}, "Resources": {"NoneResource": {"Type": "OS::Heat::None", "Properties": {}}},
          "Outputs": {"show": {"Value": {"Fn::GetAtt": ["NoneResource", "show"]},
                               "Description": SHOW_DESCRIPTION},
                      "OS::stack_id": {"Value": {"Ref": "NoneResource"}}}}),
    ("?template_type=HOT", {
        "heat_template_version": "2016-10-14", "description": "Initial template of NoneResource",
        "parameters": {}, "resources": {"NoneResource": {"type": "OS::Heat::None", "properties": {}}},
        "outputs": {"show": {"value": {"get_attr": ["NoneResource", "show"]},
                             "description": SHOW_DESCRIPTION},
                    "OS::stack_id": {"value": {"get_resource": "NoneResource"}}}}),
])
async def test_generated_template_is_heats_document(api: Client, query: str, expected: Any) -> None:
    assert await _get(api, f"{P}/resource_types/OS::Heat::None/template{query}") == expected


async def test_generated_template_maps_properties_as_heat(api: Client) -> None:
    path = f"{P}/resource_types/OS::Heat::RandomString/template"
    hot = await _get(api, f"{path}?template_type=hot")
    assert hot["parameters"]["length"]["type"] == "number"
    assert hot["parameters"]["length"]["constraints"] == [{"range": {"min": 1, "max": 512}}]
    assert hot["parameters"]["character_classes"]["type"] == "comma_delimited_list"
    assert hot["resources"]["RandomString"]["properties"]["character_classes"] == {
        "get_param": "character_classes"}
    assert hot["outputs"]["value"]["value"] == {"get_attr": ["RandomString", "value"]}
    cfn = await _get(api, path)
    assert cfn["Parameters"]["length"] | {"Description": None} == {
        "Type": "Number", "Default": 32, "MinValue": 1, "MaxValue": 512, "Description": None}
    # A CommaDelimitedList parameter is text, split back into the list property.
    assert cfn["Resources"]["RandomString"]["Properties"]["character_classes"] == {
        "Fn::Split": [",", {"Ref": "character_classes"}]}
    test_resource = await _get(api, f"{P}/resource_types/OS::Heat::TestResource/template")
    assert test_resource["Parameters"]["fail"]["AllowedValues"] == ["True", "true", "False", "false"]
    # Heat names the resource after its class, which Ember keeps where its own is called otherwise.
    waits = await _get(api, f"{P}/resource_types/OS::Heat::WaitCondition/template?template_type=hot")
    assert list(waits["resources"]) == ["HeatWaitCondition"]
    bad = await _get(api, f"{path}?template_type=Xml", 400)
    assert bad["error"]["message"] == (
        'Template type is not supported: Invalid template type "Xml", valid types are: cfn, hot.')


# ---- /template_versions ------------------------------------------------------------------------

async def test_template_versions_are_heats(api: Client) -> None:
    listed = await _get(api, f"{P}/template_versions")
    _conforms("TemplateVersions", listed)
    hot_dates = ["2013-05-23", "2014-10-16", "2015-04-30", "2015-10-15", "2016-04-08", "2016-10-14",
                 "2017-02-24", "2017-09-01", "2018-03-02", "2018-08-31", "2021-04-16"]
    aliases = {"2016-10-14": "newton", "2017-02-24": "ocata", "2017-09-01": "pike", "2018-03-02": "queens",
               "2018-08-31": "rocky", "2021-04-16": "wallaby"}
    assert listed["template_versions"] == [
        {"version": "AWSTemplateFormatVersion.2010-09-09", "type": "cfn", "aliases": []},
        {"version": "HeatTemplateFormatVersion.2012-12-12", "type": "cfn", "aliases": []},
    ] + [{"version": f"heat_template_version.{d}", "type": "hot",
          "aliases": [f"heat_template_version.{aliases[d]}"] if d in aliases else []} for d in hot_dates]


def _names(body: Any) -> list[str]:
    return [f["functions"] for f in body["template_functions"]]


@pytest.mark.parametrize(("version", "present", "absent"), [
    ("heat_template_version.2016-10-14", {"get_attr", "if", "map_replace"}, {"equals", "Fn::Select"}),
    ("heat_template_version.newton", {"get_attr", "if"}, {"equals"}),
    ("heat_template_version.2013-05-23", {"Fn::Select", "get_file"}, {"if"}),
    ("AWSTemplateFormatVersion.2010-09-09", {"Fn::GetAtt", "Fn::If"}, {"Fn::Equals"}),
])
async def test_template_functions_of_a_version(api: Client, version: str, present: set[str],
                                                absent: set[str]) -> None:
    body = await _get(api, f"{P}/template_versions/{version}/functions")
    _conforms("TemplateFunctions", body)
    assert present <= set(_names(body)) and not absent & set(_names(body))
    assert all(f["description"] for f in body["template_functions"])


async def test_template_functions_with_conditions_and_unknown_versions(api: Client) -> None:
    path = f"{P}/template_versions/heat_template_version.2016-10-14/functions"
    plain = _names(await _get(api, path))
    with_conditions = _names(await _get(api, f"{path}?with_condition_func=true"))
    assert with_conditions == [*plain, "equals", "not", "and", "or"]
    missing = await _get(api, f"{P}/template_versions/heat_template_version.1999-01-01/functions", 404)
    assert missing["error"] == {"type": "NotFound", "traceback": None,
                                "message": "Template with version heat_template_version.1999-01-01 not found"}


# ---- /build_info and /services -----------------------------------------------------------------

async def test_build_info(api: Client) -> None:
    info = await _get(api, f"{P}/build_info")
    _conforms("BuildInfo", info)
    revision = importlib.metadata.version("ember")
    assert info == {"api": {"revision": revision}, "engine": {"revision": revision}}


async def test_services_show_every_live_process(api: Client) -> None:
    assert api.app is not None
    stale, retired = uuid.uuid4(), uuid.uuid4()
    async with api.app[RUNTIME].pool.acquire() as conn:
        for row_id in (stale, retired):
            await services.register(conn, service_id=row_id, service="worker", host="h", hostname="h",
                                    pid=1, topic="ember.worker", report_interval=10)
        await conn.execute("UPDATE services SET updated_at = now() - interval '25 seconds' WHERE id = $1",
                           stale)
        await services.retire(conn, retired)
    listed = await _get(api, f"{P}/services")
    _conforms("Services", listed)
    by_id = {s["id"]: s for s in listed["services"]}
    assert str(retired) not in by_id
    assert by_id[str(stale)]["status"] == "down"
    mine = [s for s in listed["services"] if s["binary"] == "ember-api"]
    assert len(mine) == 1 and mine[0]["status"] == "up"
    assert set(mine[0]) == {"id", "engine_id", "host", "hostname", "binary", "topic", "report_interval",
                            "created_at", "updated_at", "deleted_at", "status"}
    assert TIME.match(mine[0]["created_at"]) and TIME.match(mine[0]["updated_at"])
    assert mine[0]["deleted_at"] is None and isinstance(mine[0]["report_interval"], int)


USERS = """\
projects: [{name: alpha}]
users:
  - {name: alice, password: wonderland, roles: {alpha: [member]}}
  - {name: root, password: toor, roles: {alpha: [member, admin]}}
"""


async def test_services_are_for_admins(
        settings: Settings, tmp_path: Path,
        aiohttp_client: Callable[[web.Application], Awaitable[Client]]) -> None:
    (tmp_path / "users.yaml").write_text(USERS)
    keystone = dataclasses.replace(settings, api=dataclasses.replace(
        settings.api, auth="keystone", auth_config=tmp_path / "users.yaml"))
    api = await aiohttp_client(make_app(keystone))
    alpha = stable_id("project", "alpha")

    async def token(user: str, password: str) -> str:
        auth = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": user, "domain": {"name": "Default"}, "password": password}}},
            "scope": {"project": {"name": "alpha", "domain": {"name": "Default"}}}}}
        async with api.post("/identity/v3/auth/tokens", json=auth) as r:
            assert r.status == 201, await r.text()
            return r.headers["X-Subject-Token"]

    member = {"X-Auth-Token": await token("alice", "wonderland")}
    async with api.get(f"/v1/{alpha}/services", headers=member) as r:
        assert r.status == 403
        assert (await r.json())["error"] == {"type": "Forbidden", "traceback": None,
                                             "message": "You are not authorized to use service:index."}
    async with api.get(f"/v1/{alpha}/services", headers={"X-Auth-Token": await token("root", "toor")}) as r:
        assert r.status == 200 and (await r.json())["services"]


# ---- other methods -----------------------------------------------------------------------------

@pytest.mark.parametrize(("method", "path", "allowed"), [
    ("GET", "/validate", "POST"),
    ("DELETE", "/resource_types", "GET"),
    ("POST", "/resource_types/OS::Heat::None", "GET"),
    ("PUT", "/resource_types/OS::Heat::None/template", "GET"),
    ("PATCH", "/template_versions", "GET"),
    ("POST", "/template_versions/heat_template_version.2016-10-14/functions", "GET"),
    ("POST", "/build_info", "GET"),
    ("DELETE", "/services", "GET"),
])
async def test_other_methods_are_405_with_heats_fault(api: Client, method: str, path: str,
                                                      allowed: str) -> None:
    async with api.request(method, f"{P}{path}") as r:
        assert r.status == 405
        assert allowed in r.headers["Allow"]
        fault = await r.json()
    assert fault["error"]["type"] == "HTTPMethodNotAllowed"
    _conforms("Fault", fault)
