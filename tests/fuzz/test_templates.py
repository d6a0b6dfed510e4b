"""Hypothesis-generated templates through validate, preview and create, then every stack deleted.

The templates are built from the template versions' own function tables
(``libs.template.versions``): parameters of every type with odd defaults, resources of the
built-in types whose properties are random values and nested function calls (references to the
template's own parameters, resources and attributes among them), conditions, dependencies and
outputs. Every request must answer below 500 within 2 s; every stack that was created must end
(COMPLETE or FAILED, never stuck IN_PROGRESS) and then delete, leaving nothing behind.
EMBER_FUZZ_TEMPLATES sets the number of templates.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from libs.template import versions
from tests.fuzz.conftest import PROJECT, Caller, budget
from tests.support import wait_until

pytestmark = pytest.mark.slow_ci

HOT = [spec for spec in versions.all_versions() if spec.kind == "hot"]
PARAMS = ("p", "q")
RESOURCES = ("r0", "r1", "r2")
# Properties that make a resource wait are left out: a stack that waits an hour is not a bug.
TYPES: dict[str, tuple[str, ...]] = {
    "OS::Heat::TestResource": ("value", "fail", "update_replace", "update_replace_value"),
    "OS::Heat::None": ("anything",),
    "OS::Heat::RandomString": ("length", "character_classes", "salt"),
    "OS::Heat::Value": ("value", "type"),
    "OS::Nope::Missing": ("x",),
}
PARAM_TYPES = ("string", "number", "json", "comma_delimited_list", "boolean", "nonsense")

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12),
                    st.sampled_from((*PARAMS, *RESOURCES, "output", "value", "a,b")))


def values(spec: versions.VersionSpec) -> st.SearchStrategy[Any]:
    refs = st.one_of(st.builds(lambda p: {"get_param": p}, st.sampled_from((*PARAMS, "zz"))),
                     st.builds(lambda r: {"get_resource": r}, st.sampled_from(RESOURCES)),
                     st.builds(lambda r, a: {"get_attr": [r, a]}, st.sampled_from(RESOURCES),
                               st.sampled_from(("output", "value", "nope"))))
    names = sorted(spec.functions)

    def extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        args = st.one_of(children, st.lists(children, max_size=3))
        return st.one_of(st.lists(children, max_size=3),
                         st.dictionaries(st.text(max_size=6), children, max_size=3),
                         st.builds(lambda name, arg: {name: arg}, st.sampled_from(names), args))
    return st.recursive(st.one_of(scalars, refs), extend, max_leaves=12)


@st.composite
def templates(draw: st.DrawFn) -> dict[str, Any]:
    spec = draw(st.sampled_from(HOT))
    value = values(spec)
    template: dict[str, Any] = {"heat_template_version": spec.date}
    params = {}
    for name in draw(st.lists(st.sampled_from(PARAMS), unique=True, max_size=2)):
        param: dict[str, Any] = {"type": draw(st.sampled_from(PARAM_TYPES))}
        if draw(st.booleans()):
            param["default"] = draw(scalars | st.lists(scalars, max_size=3))
        params[name] = param
    template["parameters"] = params
    resources = {}
    for name in draw(st.lists(st.sampled_from(RESOURCES), unique=True, min_size=1, max_size=3)):
        kind = draw(st.sampled_from(sorted(TYPES)))
        props = draw(st.dictionaries(st.sampled_from(TYPES[kind]), value, max_size=3))
        resource: dict[str, Any] = {"type": kind, "properties": props}
        if draw(st.booleans()):
            resource["depends_on"] = draw(st.lists(st.sampled_from(RESOURCES), max_size=2))
        resources[name] = resource
    template["resources"] = resources
    if "conditions" in spec.sections and draw(st.booleans()):
        template["conditions"] = {"c": draw(value)}
        resources[next(iter(resources))]["condition"] = draw(st.sampled_from(("c", True, "missing")))
    template["outputs"] = {f"o{i}": {"value": draw(value)} for i in range(draw(st.integers(0, 2)))}
    return template


NAMES = (f"gen-{n}" for n in itertools.count())


@pytest.fixture(scope="module")
def created(fuzz_api: Caller) -> Any:
    """Stacks the fuzzer created; at the end each must have settled, and each must delete."""
    made: list[tuple[str, str]] = []
    yield made
    stacks = f"/v1/{PROJECT}/stacks"
    print(f"\nfuzz: {len(made)} generated stacks created")

    def settled() -> bool:
        listing = fuzz_api.request("GET", stacks).json()["stacks"]
        return all(not s["stack_status"].endswith("IN_PROGRESS") for s in listing)
    wait_until(settled, timeout=180, interval=0.5, what="every generated stack to end")
    for name, stack_id in made:
        assert fuzz_api.request("DELETE", f"{stacks}/{name}/{stack_id}").status_code in (204, 404)
    wait_until(lambda: not [s for s in fuzz_api.request("GET", stacks).json()["stacks"]
                            if s["stack_name"].startswith("gen-")] or None,
               timeout=180, interval=0.5, what="every generated stack to be deleted")


@given(template=templates(), parameters=st.dictionaries(st.sampled_from(PARAMS), scalars, max_size=2))
@settings(max_examples=budget("EMBER_FUZZ_TEMPLATES", 300), deadline=None,
          suppress_health_check=list(HealthCheck))
def test_generated_templates_answer_4xx_or_run_to_an_end(
        fuzz_api: Caller, created: list[tuple[str, str]], template: dict[str, Any],
        parameters: dict[str, Any]) -> None:
    base = f"/v1/{PROJECT}"
    fuzz_api.request("POST", f"{base}/validate", json={"template": template})
    name = next(NAMES)
    body = {"stack_name": name, "template": template, "parameters": parameters}
    fuzz_api.request("POST", f"{base}/stacks/preview", json=body)
    answer = fuzz_api.request("POST", f"{base}/stacks", json=body)
    if answer.status_code == 201:
        created.append((name, answer.json()["stack"]["id"]))
