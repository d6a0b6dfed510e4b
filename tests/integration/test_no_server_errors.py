"""No template, parameter or environment gives a 5xx: hostile but small bodies get 4xx (or 2xx).

The bodies are generated, not written: every function of every template
version's table (``libs.template.versions``) is called with wrong arguments,
whole and in each position; every section, resource key and output gets values
of the wrong type; parameters get wrong schemas and wrong values; environments
and the body's own fields get wrong shapes. Each body goes to create, preview,
PUT (of one stack made first) and validate, and every answer must be a 2xx or
a 4xx in Heat's fault shape. Resource exhaustion (billion laughs) is not here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from libs.config import Settings
from libs.template import versions
from services.api.app import make_app

Client = TestClient[web.Request, web.Application]

# Values of every JSON kind, and two calls that fail when resolved.
HOSTILE: tuple[Any, ...] = (None, 0, -1, 2.5, True, "", "x", [], [None], [[]], {}, {"x": None},
                            {"get_param": "nope"}, {"get_attr": []}, {"Ref": 7})
# The shorter list put in each argument position of a function.
IN_POSITION: tuple[Any, ...] = (None, 1, [], {}, [[1]], {"get_param": "nope"})

# One version per function table shape: the first and last HOT, one with conditions
# but no 2-argument if, and each CFN flavour.
VERSIONS = ("heat_template_version.2013-05-23", "heat_template_version.2016-10-14",
            "heat_template_version.2021-04-16", "AWSTemplateFormatVersion.2010-09-09",
            "HeatTemplateFormatVersion.2012-12-12")


def _spec(name: str) -> versions.VersionSpec:
    return versions.by_name(name)


def _template(spec: versions.VersionSpec, *, prop: Any = "v", output: Any = "o", metadata: Any = None,
              condition: Any = None) -> dict[str, Any]:
    hot = spec.kind == "hot"
    keys = ("type", "properties", "metadata") if hot else ("Type", "Properties", "Metadata")
    parameter = {"type": "string", "default": "a,b"} if hot else {"Type": "String", "Default": "a,b"}
    resource: dict[str, Any] = {keys[0]: "OS::Heat::TestResource", keys[1]: {"value": prop}}
    if metadata is not None:
        resource[keys[2]] = metadata
    template: dict[str, Any] = {
        spec.key: spec.date,
        ("parameters" if hot else "Parameters"): {"p": parameter},
        ("resources" if hot else "Resources"): {"r": resource, "s": {keys[0]: "OS::Heat::None"}},
        ("outputs" if hot else "Outputs"): {"o": {("value" if hot else "Value"): output}},
    }
    if condition is not None and spec.condition_functions:
        template["conditions" if hot else "Conditions"] = {"c": condition}
    return template


def _calls(spec: versions.VersionSpec) -> Iterator[dict[str, Any]]:
    """Every function of the version called with wrong arguments, whole and position by position."""
    for name in spec.functions:
        for value in HOSTILE:
            yield {name: value}
        for size in (1, 2, 3):
            for position in range(size):
                for value in IN_POSITION:
                    args: list[Any] = ["x"] * size
                    args[position] = value
                    yield {name: args}
        yield {name: {"template": None, "params": [], "for_each": 1, "keys": [], "values": 1}}


def _function_bodies() -> Iterator[dict[str, Any]]:
    for version in VERSIONS:
        spec = _spec(version)
        for call in _calls(spec):
            yield {"template": _template(spec, prop=call)}
        # Fewer calls in the other places functions may sit.
        for call in HOSTILE + tuple({n: [None, 1]} for n in spec.functions):
            yield {"template": _template(spec, output=call)}
            yield {"template": _template(spec, metadata={"m": call})}
            yield {"template": _template(spec, condition=call)}


def _section_bodies() -> Iterator[dict[str, Any]]:
    for version in VERSIONS:
        spec = _spec(version)
        base = _template(spec)
        for section in spec.sections:
            for value in HOSTILE:
                yield {"template": {**base, section: value}}
        resources_key = "resources" if spec.kind == "hot" else "Resources"
        for key in spec.resource_keys:
            for value in HOSTILE:
                resource = {**base[resources_key]["r"], key: value}
                yield {"template": {**base, resources_key: {**base[resources_key], "r": resource}}}
        for value in HOSTILE:
            yield {"template": {**base, resources_key: {"r": value}}}
            yield {"template": {**base, resources_key: {value if isinstance(value, str) else "x": {}}}}


def _parameter_bodies() -> Iterator[dict[str, Any]]:
    spec = _spec("heat_template_version.2021-04-16")
    kinds: tuple[Any, ...] = ("string", "number", "json", "comma_delimited_list", "boolean", None, 1, [], {})
    for kind in kinds:
        for key in ("type", "default", "constraints", "label", "hidden", "immutable", "tags"):
            for value in HOSTILE:
                schema = {"type": kind, key: value}
                yield {"template": {**_template(spec), "parameters": {"q": schema}}}
        for value in HOSTILE:
            yield {"template": {**_template(spec), "parameters": {"q": {"type": kind}}},
                   "parameters": {"q": value}}
    constraints: tuple[dict[str, Any], ...] = (
        {"range": {"min": "a"}}, {"length": [1]}, {"allowed_values": 1}, {"allowed_pattern": "("},
        {"custom_constraint": []}, {"modulo": {"step": 0}})
    for constraint in constraints:
        template = {**_template(spec), "parameters": {"q": {"type": "number", "default": 1,
                                                           "constraints": [constraint]}}}
        yield {"template": template}
    for value in HOSTILE:
        yield {"template": {**_template(spec), "parameter_groups": [{"parameters": value}]}}


def _environment_bodies() -> Iterator[dict[str, Any]]:
    template = _template(_spec("heat_template_version.2016-10-14"))
    for value in (*HOSTILE, "[: not yaml", "just text"):
        yield {"template": template, "environment": value}
        for section in ("parameters", "parameter_defaults", "resource_registry", "event_sinks",
                        "parameter_merge_strategies", "encrypted_param_names", "bogus"):
            yield {"template": template, "environment": {section: value}}
        yield {"template": template, "environment": {"resource_registry": {"OS::Heat::None": value}}}
        yield {"template": template, "environment": {"resource_registry": {"resources": value}}}
        yield {"template": template, "environment": {"resource_registry": {"resources": {"r": value}}}}
        yield {"template": template, "environment": {"resource_registry": {"resources": {
            "r": {"hooks": value, "restricted_actions": value}}}}}
        yield {"template": template, "environment_files": value}
        yield {"template": template, "environment_files": ["e.yaml"], "files": {"e.yaml": value}}
        yield {"template": template, "files": value}
        yield {"template": template, "parameters": value}
        yield {"template": value}
    for loop in ({"A::B": "A::B"}, {"A::B": "A::C", "A::C": "A::B"}, {"OS::*": "OS::Heat::*"}):
        yield {"template": {**template, "resources": {"r": {"type": "A::B"}}},
               "environment": {"resource_registry": loop}}


def bodies() -> list[dict[str, Any]]:
    return [*_function_bodies(), *_section_bodies(), *_parameter_bodies(), *_environment_bodies()]


def _heat_fault(status: int, answer: Any) -> bool:
    if not isinstance(answer, dict) or not isinstance(answer.get("error"), dict):
        return False
    error = answer["error"]
    return (answer.get("code") == status and isinstance(answer.get("title"), str)
            and isinstance(answer.get("explanation"), str) and isinstance(error.get("type"), str)
            and isinstance(error.get("message"), str) and "traceback" in error)


@pytest.fixture
async def api(settings: Settings, aiohttp_client: Callable[[web.Application], Awaitable[Client]]
              ) -> AsyncIterator[Client]:
    # The api alone: a create is stored and asked for, and nothing carries it out.
    yield await aiohttp_client(make_app(settings))


@pytest.mark.slow_ci  # about 50 s of bodies; .ci/run runs it beside the fuzzers
async def test_hostile_bodies_get_4xx_never_5xx(api: Client) -> None:
    base = "/v1/demo"
    target = _template(_spec("heat_template_version.2016-10-14"))
    async with api.post(f"{base}/stacks", json={"stack_name": "target", "template": target}) as made:
        assert made.status == 201, await made.text()
        stack = f"{base}/stacks/target/{(await made.json())['stack']['id']}"
    table = bodies()
    assert len(table) > 2000  # the generators really produced the table
    problems: dict[str, list[str]] = {}  # kind of wrong answer -> the requests that got it
    for index, body in enumerate(table):
        sends = (("POST", f"{base}/stacks", {**body, "stack_name": f"s{index}"}),
                 ("POST", f"{base}/stacks/preview", {**body, "stack_name": "p"}),
                 ("PUT", stack, body), ("POST", f"{base}/validate", body))
        for method, path, sent in sends:
            async with api.request(method, path, json=sent) as response:
                status = response.status
                answer = await response.json() if status >= 400 else None
            if status >= 500 or (300 <= status < 400) or (status >= 400 and not _heat_fault(status, answer)):
                error = (answer or {}).get("error") or {}
                kind = f"{status} {error.get('type')}: {str(error.get('message'))[:80]}"
                problems.setdefault(kind, []).append(f"{method} {path} {sent!r}")
    assert not problems, f"{sum(map(len, problems.values()))} answers out of shape:\n" + "\n".join(
        f"{kind} ({len(sent)}x), e.g. {sent[0]}" for kind, sent in problems.items())
