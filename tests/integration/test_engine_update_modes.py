"""PATCH updates (existing), clear_parameters, and update preview buckets."""

from __future__ import annotations

from libs import operations
from libs.config import Settings
from libs.resources.registry import default_registry
from libs.template.request import StackRequest
from tests.integration.engine_support import engine, resource_rows, settled, stack_row

TEMPLATE = {
    "heat_template_version": "2016-10-14",
    "parameters": {"greeting": {"type": "string", "default": "hello"},
                   "name": {"type": "string", "default": "world"}},
    "resources": {
        "msg": {"type": "OS::Heat::TestResource",
                "properties": {"value": {"list_join": [" ", [{"get_param": "greeting"},
                                                             {"get_param": "name"}]]}}},
        "stay": {"type": "OS::Heat::TestResource", "properties": {"value": "same"}},
        "swap": {"type": "OS::Heat::TestResource", "properties": {"update_replace_value": "1"}},
        "old": {"type": "OS::Heat::None"},
    },
}



async def test_patch_keeps_and_merges_then_clears(settings: Settings) -> None:
    async with engine(settings) as api:
        created = await operations.create_stack(
            api.pool, api.bus, project="demo", name="patchy",
            stack_request=StackRequest(template=TEMPLATE, parameters={"name": "ember"}))
        await settled(api.pool, created.id, status="CREATE_COMPLETE")
        rows = await resource_rows(api.pool, created.id)
        assert rows["msg"].properties is not None and rows["msg"].properties["value"] == "hello ember"

        # PATCH with only a parameter: the stored template and "name" are kept.
        patch = StackRequest(template=None, parameters={"greeting": "hi"})
        await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, created.id),
                                      stack_request=patch, existing=True)
        await settled(api.pool, created.id, status="UPDATE_COMPLETE")
        rows = await resource_rows(api.pool, created.id)
        assert rows["msg"].properties is not None and rows["msg"].properties["value"] == "hi ember"

        # clear_parameters drops a kept value: back to the template default.
        await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, created.id),
                                      stack_request=StackRequest(template=None), existing=True,
                                      clear_parameters=["name"])
        await settled(api.pool, created.id, status="UPDATE_COMPLETE")
        rows = await resource_rows(api.pool, created.id)
        assert rows["msg"].properties is not None and rows["msg"].properties["value"] == "hi world"


async def test_update_preview_buckets(settings: Settings) -> None:
    async with engine(settings) as api:
        created = await operations.create_stack(api.pool, api.bus, project="demo", name="preview",
                                                stack_request=StackRequest(template=TEMPLATE))
        await settled(api.pool, created.id, status="CREATE_COMPLETE")
        new = {**TEMPLATE, "resources": {
            "msg": {"type": "OS::Heat::TestResource", "properties": {"value": "changed"}},
            "stay": {"type": "OS::Heat::TestResource", "properties": {"value": "same"}},
            "swap": {"type": "OS::Heat::TestResource", "properties": {"update_replace_value": "2"}},
            "fresh": {"type": "OS::Heat::None"},
        }}
        changes = await operations.preview_update(api.pool, await stack_row(api.pool, created.id),
                                                  stack_request=StackRequest(template=new),
                                                  registry=default_registry())
        assert (changes.added, changes.deleted, changes.replaced, changes.updated, changes.unchanged) == (
            ["fresh"], ["old"], ["swap"], ["msg"], ["stay"])
        # Nothing was written: the stack is as it was.
        after = await stack_row(api.pool, created.id)
        assert after.stack_status == "CREATE_COMPLETE" and after.template_id == created.template_id


async def test_restricted_actions_fail_the_resource(settings: Settings) -> None:
    env = {"resource_registry": {"resources": {"stay": {"restricted_actions": "update"},
                                               "swap": {"restricted_actions": ["replace"]}}}}
    async with engine(settings) as api:
        created = await operations.create_stack(
            api.pool, api.bus, project="demo", name="restricted",
            stack_request=StackRequest(template=TEMPLATE, environment=env))
        await settled(api.pool, created.id, status="CREATE_COMPLETE")
        new = {**TEMPLATE, "resources": {**TEMPLATE["resources"],  # type: ignore[dict-item]
                                         "stay": {"type": "OS::Heat::TestResource",
                                                  "properties": {"value": "changed"}}}}
        await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, created.id),
                                      stack_request=StackRequest(template=new, environment=env))
        done = await settled(api.pool, created.id, status="UPDATE_FAILED")
        assert done.status_reason == ("Resource UPDATE failed: ResourceActionRestricted: "
                                      "resources.stay: update is restricted for resource.")
