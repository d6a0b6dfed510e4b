"""Function-heavy templates resolve to the values Heat gives, failures as output_error.

Each case under fixtures/resolve: ``template``, optional ``params``, ``files``,
``references`` and ``attributes`` (the resource data a running stack would
have), and ``expect``: output name -> value, or ``{error: message}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from libs.template.loader import HeatYamlLoader, as_rpc_json
from libs.template.parameters import Parameters
from libs.template.request import parameter_schemas
from libs.template.resolution import StackResolver, StaticResourceData
from libs.template.stack import StackDefinition
from libs.template.template import Template

CASES = sorted((Path(__file__).parent / "fixtures" / "resolve").glob("*.yaml"))


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_outputs_resolve_as_heat(case: Path) -> None:
    data: dict[str, Any] = yaml.load(case.read_text(), Loader=HeatYamlLoader)
    # As a client sends it: JSON, so every map key is a string.
    template = Template(as_rpc_json(data["template"]), data.get("files"))
    parameters = Parameters(parameter_schemas(template), dialect=template.version.kind,
                            user_params=data.get("params", {}), stack_name="mystack",
                            stack_id="stack-uuid", project_id="demo")
    parameters.validate()
    stack = StackDefinition(template, parameters)
    stack.validate()
    resolver = StackResolver(stack, StaticResourceData(data.get("references"), data.get("attributes")))
    got = {o["output_key"]: o for o in resolver.outputs()}
    for name, expected in data["expect"].items():
        if isinstance(expected, dict) and set(expected) == {"error"}:
            assert got[name]["output_value"] is None
            assert got[name].get("output_error") == expected["error"]
        else:
            assert "output_error" not in got[name], got[name]
            assert got[name]["output_value"] == expected, name
