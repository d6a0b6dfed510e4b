"""In the worker, a budget breach fails the resource, and so the stack, with the reason.

Some values are only known there: a nested stack's template is read when the stack is
made, and an attribute's value when the resource that uses it is. Neither may crash
the worker, nor be retried as if it might pass next time.
"""

from __future__ import annotations

import time

from libs import operations
from libs.config import Settings
from libs.resources.registry import default_registry
from libs.template.request import StackRequest
from tests.integration.engine_support import engine, hot, resource_rows, settled

QUICK_SECONDS = 20.0


def _laughs(levels: int = 8) -> str:
    lines = ["      a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"      a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]" for n in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


BOMB = ("heat_template_version: 2018-08-31\nparameters:\n  p:\n    type: json\n    default:\n"
        + _laughs())

# Three lists of 200 known only once ``items`` is made: 8 million copies.
ITEMS = {"items": {"type": "OS::Heat::Value",
                   "properties": {"type": "comma_delimited_list", "value": [f"i{n}" for n in range(200)]}}}
REPEAT = {"repeat": {"template": "<%a%><%b%><%c%>",
                     "for_each": {f"<%{k}%>": {"get_attr": ["items", "value"]} for k in "abc"}}}
GROWS = {"grows": {"type": "OS::Heat::Value", "properties": {"value": REPEAT}}}


async def _failed_reason(settings: Settings, template: dict[str, object], resource: str) -> str:
    async with engine(settings) as api:
        started = time.monotonic()
        made = await operations.create_stack(api.pool, api.bus, project="demo", name="hostile",
                                             stack_request=StackRequest(template=template),
                                             registry=default_registry())
        done = await settled(api.pool, made.id, status="CREATE_FAILED", timeout=60)
        assert time.monotonic() - started < QUICK_SECONDS
        row = (await resource_rows(api.pool, made.id))[resource]
        assert row.status == "FAILED", row
        assert row.status_reason in done.status_reason, done.status_reason
        return row.status_reason


async def test_a_nested_template_over_the_alias_budget_fails_its_resource(settings: Settings) -> None:
    template = hot({"nest": {"type": "OS::Heat::Stack", "properties": {"template": BOMB}}})
    reason = await _failed_reason(settings, template, "nest")
    assert "expands YAML aliases to more than 100000 nodes" in reason


async def test_a_value_over_budget_at_run_time_fails_its_resource(settings: Settings) -> None:
    reason = await _failed_reason(settings, hot({**ITEMS, **GROWS}), "grows")
    assert "repeat: the result would be larger than the limit" in reason


async def test_a_get_file_missing_inside_a_nested_template_fails_its_resource(settings: Settings) -> None:
    child = ("heat_template_version: 2018-08-31\nresources:\n  v:\n    type: OS::Heat::Value\n"
             "    properties: {value: {get_file: nope.txt}}\n")
    template = hot({"nest": {"type": "OS::Heat::Stack", "properties": {"template": child}}})
    reason = await _failed_reason(settings, template, "nest")
    assert 'No content found in the "files" section for get_file path: nope.txt' in reason


async def test_an_output_over_budget_shows_its_error(settings: Settings) -> None:
    # As any output that fails to resolve: the stack is made, the output carries the reason.
    template = hot(ITEMS, outputs={"big": {"value": REPEAT}})
    async with engine(settings) as api:
        made = await operations.create_stack(api.pool, api.bus, project="demo", name="outputs",
                                             stack_request=StackRequest(template=template),
                                             registry=default_registry())
        done = await settled(api.pool, made.id, status="CREATE_COMPLETE", timeout=60)
        [output] = done.outputs
        assert output["output_value"] is None
        assert "repeat: the result would be larger than the limit" in output["output_error"]
