"""PATCH updates (existing), clear_parameters, and update preview buckets."""

from __future__ import annotations

from typing import Any

from libs import operations, update_preview
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
        changes = await update_preview.preview_update(api.pool, await stack_row(api.pool, created.id),
                                                      stack_request=StackRequest(template=new),
                                                      registry=default_registry())
        names = {key: [e.row.name if isinstance(e, update_preview.Existing) else e.resource.name
                       for e in entries] for key, entries in changes.items()}
        assert names == {"added": ["fresh"], "deleted": ["old"], "replaced": ["swap"], "updated": ["msg"],
                         "unchanged": ["stay"]}
        # Nothing was written: the stack is as it was.
        after = await stack_row(api.pool, created.id)
        assert after.stack_status == "CREATE_COMPLETE" and after.template_id == created.template_id


async def test_restricted_actions_refuse_the_update(settings: Settings) -> None:
    env = {"resource_registry": {"resources": {"stay": {"restricted_actions": "update"},
                                               "swap": {"restricted_actions": ["replace"]}}}}
    async with engine(settings) as api:
        created = await operations.create_stack(
            api.pool, api.bus, project="demo", name="restricted",
            stack_request=StackRequest(template=TEMPLATE, environment=env))
        await settled(api.pool, created.id, status="CREATE_COMPLETE")
        before = await resource_rows(api.pool, created.id)
        new = {**TEMPLATE, "resources": {**TEMPLATE["resources"],  # type: ignore[dict-item]
                                         "stay": {"type": "OS::Heat::TestResource",
                                                  "properties": {"value": "changed"}}}}
        await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, created.id),
                                      stack_request=StackRequest(template=new, environment=env))
        done = await settled(api.pool, created.id, status="UPDATE_FAILED")
        assert done.status_reason == ("Resource UPDATE failed: ResourceActionRestricted: "
                                      "resources.stay: update is restricted for resource.")
        # As Heat: the resource keeps its state; only an event says the update was refused.
        stay = (await resource_rows(api.pool, created.id))["stay"]
        assert (stay.action, stay.status, stay.status_reason, stay.properties) == (
            "CREATE", "COMPLETE", "state changed", before["stay"].properties)


async def test_resources_an_update_leaves_alone_need_no_node(settings: Settings) -> None:
    # "base" and "reader" (which reads base) are unchanged; "tail" changes; "reads_tail" reads it.
    template: dict[str, Any] = {"heat_template_version": "2016-10-14", "resources": {
        "base": {"type": "OS::Heat::TestResource", "properties": {"value": "b"}},
        "reader": {"type": "OS::Heat::TestResource",
                   "properties": {"value": {"get_attr": ["base", "output"]}}},
        "tail": {"type": "OS::Heat::TestResource", "properties": {"value": "t1"}},
        "reads_tail": {"type": "OS::Heat::TestResource",
                       "properties": {"value": {"get_attr": ["tail", "output"]}}}},
        "outputs": {"joined": {"value": {"list_join": ["+", [{"get_attr": ["reader", "output"]},
                                                              {"get_attr": ["reads_tail", "output"]}]]}}}}
    changed = {**template, "resources": {**template["resources"], "tail": {
        "type": "OS::Heat::TestResource", "properties": {"value": "t2"}}}}
    async with engine(settings) as api:
        created = await operations.create_stack(api.pool, api.bus, project="demo", name="alone",
                                                stack_request=StackRequest(template=template))
        await settled(api.pool, created.id, status="CREATE_COMPLETE")
        before = await resource_rows(api.pool, created.id)

        await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, created.id),
                                      stack_request=StackRequest(template=changed))
        after_stack = await settled(api.pool, created.id, status="UPDATE_COMPLETE")
        after = await resource_rows(api.pool, created.id)
        assert after_stack.outputs == [{"output_key": "joined", "output_value": "b+t2",
                                        "description": "No description given"}]
        assert {n: r.properties["value"] for n, r in after.items() if r.properties} == {
            "base": "b", "reader": "b", "tail": "t2", "reads_tail": "t2"}
        # Every row records the new template; only the changed one and its reader ran a node.
        assert {r.template_id for r in after.values()} == {after_stack.template_id}
        async with api.pool.acquire() as conn:
            nodes = {r["node"] for r in await conn.fetch(
                "SELECT node FROM traversal_nodes WHERE traversal_id = $1", after_stack.current_traversal)}
        assert nodes == {f"{before['tail'].id}:u", f"{before['tail'].id}:c",
                         f"{before['reads_tail'].id}:u", f"{before['reads_tail'].id}:c"}
        assert after["base"].action == after["reader"].action == "CREATE"
        assert after["tail"].action == after["reads_tail"].action == "UPDATE"

        # The same template again: nothing runs, the stack settles at once with the same outputs.
        await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, created.id),
                                      stack_request=StackRequest(template=changed))
        again = await settled(api.pool, created.id, status="UPDATE_COMPLETE")
        assert again.current_traversal != after_stack.current_traversal
        assert again.outputs == after_stack.outputs
        async with api.pool.acquire() as conn:
            assert await conn.fetchval("SELECT count(*) FROM traversal_nodes WHERE traversal_id = $1",
                                       again.current_traversal) == 0


async def test_an_update_dates_only_the_resources_it_changes(settings: Settings) -> None:
    """Recorded from Heat 27.0.1: a resource an update leaves alone keeps its updated_time, through
    a no-change update and through one that changes another resource."""
    def template(value: str) -> dict[str, Any]:
        return {"heat_template_version": "2016-10-14", "resources": {
            "kept": {"type": "OS::Heat::TestResource", "properties": {"value": "k"}},
            # One that reads another: compared by resolving it, not by its text.
            "reader": {"type": "OS::Heat::TestResource",
                       "properties": {"value": {"get_attr": ["kept", "output"]}}},
            # One that reads the reference of one settled without being read whole (as written as
            # it was, and no attribute of it read): still resolved over that one's row.
            "plain": {"type": "OS::Heat::TestResource", "properties": {"value": "p"}},
            "referrer": {"type": "OS::Heat::TestResource",
                         "properties": {"value": {"get_resource": "plain"}}},
            "changed": {"type": "OS::Heat::TestResource", "properties": {"value": value}}}}

    async with engine(settings) as api:
        made = await operations.create_stack(api.pool, api.bus, project="demo", name="dated",
                                             stack_request=StackRequest(template=template("a")))
        await settled(api.pool, made.id, status="CREATE_COMPLETE")
        created = await resource_rows(api.pool, made.id)
        for value in ("a", "b"):
            await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, made.id),
                                          stack_request=StackRequest(template=template(value)))
            await settled(api.pool, made.id, status="UPDATE_COMPLETE")
        after = await resource_rows(api.pool, made.id)
        assert after["kept"].updated_at == created["kept"].updated_at
        assert after["reader"].updated_at == created["reader"].updated_at
        assert after["referrer"].updated_at == created["referrer"].updated_at
        assert after["plain"].updated_at == created["plain"].updated_at
        assert after["changed"].action == "UPDATE"
        assert (after["changed"].updated_at or after["changed"].created_at) > (
            created["changed"].updated_at or created["changed"].created_at)


async def test_the_same_request_again_writes_no_resource(settings: Settings) -> None:
    """A PUT of the request the stack was made from (a whole JSON body, as the api's) keeps its
    desired state: every resource is known converged with it, so none is compared or written,
    however many there are."""
    request = StackRequest(template={"heat_template_version": "2016-10-14", "resources": {
        f"r{i}": {"type": "OS::Heat::None", "properties": {"value": i}} for i in range(20)}})
    async with engine(settings) as api:
        made = await operations.create_stack(api.pool, api.bus, project="demo", name="again",
                                             stack_request=request, json_request=True)
        created = await settled(api.pool, made.id, status="CREATE_COMPLETE")
        before = await resource_rows(api.pool, made.id)
        await operations.update_stack(api.pool, api.bus, created, stack_request=request, json_request=True)
        updated = await settled(api.pool, made.id, status="UPDATE_COMPLETE")
        after = await resource_rows(api.pool, made.id)
        assert updated.template_id == created.template_id
        assert {n: r.version for n, r in after.items()} == {n: r.version for n, r in before.items()}
        # A request that differs is a new desired state, compared and recorded on every row.
        changed = StackRequest(template={**request.template, "description": "said otherwise"})
        await operations.update_stack(api.pool, api.bus, updated, stack_request=changed, json_request=True)
        last = await settled(api.pool, made.id, status="UPDATE_COMPLETE")
        assert last.template_id != created.template_id
        rows = await resource_rows(api.pool, made.id)
        assert {r.template_id for r in rows.values()} == {last.template_id}
