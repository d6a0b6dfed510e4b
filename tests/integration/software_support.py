"""Calling the software config and deployment routes of an api in the test process."""

from __future__ import annotations

from typing import Any

import jsonschema

from services.api import openapi
from tests.integration.api_support import Client

P = "/v1/demo"
MEMBER = {"X-Roles": "member,reader"}


def conforms(schema: str, body: Any) -> None:
    root = {"components": {"schemas": openapi.SCHEMAS}, "$ref": f"#/components/schemas/{schema}"}
    jsonschema.Draft202012Validator(root).validate(body)


async def call(api: Client, method: str, path: str, body: Any = None, status: int = 200, *,
               headers: dict[str, str] | None = None) -> Any:
    kwargs: dict[str, Any] = {} if body is None else {"json": body}
    async with api.request(method, path, headers=headers, **kwargs) as r:
        text = await r.text()
        assert r.status == status, f"{method} {path}: {r.status} {text}"
        return await r.json() if text else None


async def make_config(api: Client, body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    return (await call(api, "POST", f"{P}/software_configs", body, headers=headers))["software_config"]


async def deploy(api: Client, body: dict[str, Any], headers: dict[str, str] | None = None,
                 project: str = "demo") -> Any:
    made = await call(api, "POST", f"/v1/{project}/software_deployments", body, headers=headers)
    return made["software_deployment"]


def fault(body: Any) -> tuple[int, str, str]:
    return body["code"], body["error"]["type"], body["error"]["message"]


SCRIPT = '#!/bin/sh\necho "hello $foo"\nprintf "got $foo" > "$heat_outputs_path.result"\n'


def deployment_template(foo: str, *, transport: str = "CFN_SIGNAL", script: str = SCRIPT,
                        stdout: bool = True) -> dict[str, Any]:
    """A server booted for software config, a script config with input ``foo`` and output ``result``,
    and its deployment; the stack outputs the result (and the script's stdout)."""
    outputs: dict[str, Any] = {"result": {"value": {"get_attr": ["deployment", "result"]}}}
    if stdout:
        outputs["stdout"] = {"value": {"get_attr": ["deployment", "deploy_stdout"]}}
    return {
        "heat_template_version": "2016-10-14",
        "resources": {
            "server": {"type": "OS::Nova::Server", "properties": {
                "flavor": "m1.tiny", "image": "cirros", "networks": [{"network": "private"}],
                "user_data_format": "SOFTWARE_CONFIG"}},
            "config": {"type": "OS::Heat::SoftwareConfig", "properties": {
                "group": "script", "config": script, "inputs": [{"name": "foo"}],
                "outputs": [{"name": "result"}]}},
            "deployment": {"type": "OS::Heat::SoftwareDeployment", "properties": {
                "config": {"get_resource": "config"}, "server": {"get_resource": "server"},
                "input_values": {"foo": foo}, "signal_transport": transport}},
        },
        "outputs": outputs,
    }
