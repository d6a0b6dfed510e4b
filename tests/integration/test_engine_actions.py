"""Check, suspend, resume and deletion policies as traversals over the current resources."""

from __future__ import annotations

from libs import operations
from libs.config import Settings
from libs.engine.status import Action
from libs.template.request import StackRequest
from tests.integration.engine_support import engine, event_lines, hot, resource_rows, settled, stack_row


async def test_suspend_resume_and_check(settings: Settings) -> None:
    async with engine(settings) as api:
        template = hot({"a": {"type": "OS::Heat::TestResource"},
                        "b": {"type": "OS::Heat::TestResource", "depends_on": ["a"]}})
        created = await operations.create_stack(api.pool, api.bus, project="demo", name="life",
                                                stack_request=StackRequest(template=template))
        await settled(api.pool, created.id, status="CREATE_COMPLETE")
        for action in (Action.SUSPEND, Action.RESUME, Action.CHECK):
            await operations.stack_action(api.pool, api.bus, await stack_row(api.pool, created.id), action)
            done = await settled(api.pool, created.id, status=f"{action}_COMPLETE")
            assert done.status_reason == f"Stack {action} completed successfully"
            rows = await resource_rows(api.pool, created.id)
            assert {r.action for r in rows.values()} == {action}
        lines = await event_lines(api.pool, created.id)
        suspends = [n for n, s, _ in lines if s == "SUSPEND_COMPLETE" and n != "life"]
        resumes = [n for n, s, _ in lines if s == "RESUME_COMPLETE" and n != "life"]
        assert suspends == ["b", "a"]  # dependents first
        assert resumes == ["a", "b"]   # what others need first


async def test_retained_resources_are_left_alone_on_delete(settings: Settings) -> None:
    async with engine(settings) as api:
        template = hot({"kept": {"type": "OS::Heat::TestResource", "deletion_policy": "Retain"},
                        "gone": {"type": "OS::Heat::TestResource"}})
        created = await operations.create_stack(api.pool, api.bus, project="demo", name="retain",
                                                stack_request=StackRequest(template=template))
        await settled(api.pool, created.id, status="CREATE_COMPLETE")
        await operations.delete_stack(api.pool, api.bus, await stack_row(api.pool, created.id))
        await settled(api.pool, created.id, status="DELETE_COMPLETE")
        deletes = [n for n, s, _ in await event_lines(api.pool, created.id) if s == "DELETE_COMPLETE"]
        assert deletes == ["gone", "retain"]  # no delete of "kept", then the stack itself
