"""Where nodes pause: Heat's hook rules and Ember's breakpoints, as pure decisions."""

from __future__ import annotations

import pytest

from libs.engine import hooks
from libs.engine.keys import NodeKind
from libs.engine.status import Action
from libs.engine.step import Verb


@pytest.mark.parametrize(("traversal", "kind", "verb", "row_action", "expected"), [
    ("CREATE", "u", "create", "INIT", "pre-create"),
    ("UPDATE", "u", "create", "INIT", None),  # a resource added by an update: no pre-create (Heat)
    ("UPDATE", "u", "update", "CREATE", "pre-update"),
    ("UPDATE", "u", "noop", "CREATE", "pre-update"),  # unchanged resources pause too
    ("UPDATE", "u", "replace", "UPDATE", "pre-update"),
    ("ROLLBACK", "u", "update", "UPDATE", "pre-update"),
    ("RESTORE", "u", "noop", "CREATE", "pre-update"),
    ("DELETE", "c", "delete", "CREATE", "pre-delete"),
    ("UPDATE", "c", "delete", "CREATE", None),  # cleanup of a replaced resource: no pre-delete
    ("DELETE", "c", "forget", "INIT", None),  # never made: nothing to delete
    ("CHECK", "u", "check", "CREATE", None),
])
def test_pre_hooks(traversal: str, kind: str, verb: str, row_action: str, expected: str | None) -> None:
    assert hooks.pre_hook(Action(traversal), NodeKind(kind), Verb(verb), row_action) == expected


@pytest.mark.parametrize(("traversal", "action", "expected"), [
    ("CREATE", "CREATE", "post-create"),
    ("UPDATE", "CREATE", None),  # a replacement's create
    ("UPDATE", "UPDATE", "post-update"),
    ("DELETE", "DELETE", "post-delete"),
    ("UPDATE", "DELETE", None),
])
def test_post_hooks(traversal: str, action: str, expected: str | None) -> None:
    assert hooks.post_hook(Action(traversal), action) == expected


def test_heat_reasons_byte_for_byte() -> None:
    assert hooks.paused_reason("pre-create") == "CREATE paused until Hook pre-create is cleared"
    assert hooks.paused_reason("post-delete") == "DELETE paused until Hook post-delete is cleared"
    assert hooks.cleared_reason("pre-update") == "Hook pre-update is cleared"


BP = hooks.Breakpoint


@pytest.mark.parametrize(("bp", "path", "type_name", "hook", "expected"), [
    (BP("1", "web", ("pre-create",)), ("web",), "T", "pre-create", True),
    (BP("1", "web", ("pre-create",)), ("web",), "T", "pre-update", False),
    (BP("1", "web_*", ("pre-create",)), ("web_3",), "T", "pre-create", True),
    (BP("1", "group/1", ("pre-create",)), ("group", "1"), "T", "pre-create", True),
    (BP("1", "group/1", ("pre-create",)), ("1",), "T", "pre-create", False),  # depth must match
    (BP("1", "*/*", ("pre-create",)), ("group", "7"), "T", "pre-create", True),
    (BP("1", "*", ("pre-create",), resource_type="A"), ("x",), "B", "pre-create", False),
])
def test_breakpoint_matching(bp: hooks.Breakpoint, path: tuple[str, ...], type_name: str, hook: str,
                             expected: bool) -> None:
    assert bp.matches(path, type_name, hook) is expected


def test_what_pauses_a_node() -> None:
    placed = [hooks.Placed(BP("1", "group/1", ("pre-update",), timeout_seconds=5, on_timeout="continue"),
                           ("group",))]
    by_breakpoint = hooks.pause_for("pre-update", resource_name="1", resource_type="T", env_hooks=(),
                                    breakpoints=placed, mode=hooks.HookMode.NORMAL)
    assert by_breakpoint == hooks.Pause("breakpoint", 5, "continue")
    assert hooks.pause_for("pre-update", resource_name="2", resource_type="T", env_hooks=(),
                           breakpoints=placed, mode=hooks.HookMode.NORMAL) is None
    assert hooks.pause_for("pre-create", resource_name="2", resource_type="T", env_hooks=("pre-create",),
                           breakpoints=(), mode=hooks.HookMode.NORMAL) == hooks.Pause("environment")
    assert hooks.pause_for("pre-create", resource_name="2", resource_type="T", env_hooks=("pre-create",),
                           breakpoints=placed, mode=hooks.HookMode.RUN) is None  # continued: nothing pauses
    assert hooks.pause_for("pre-create", resource_name="2", resource_type="T", env_hooks=(),
                           breakpoints=(), mode=hooks.HookMode.STEP) == hooks.Pause("step")
    assert hooks.pause_for("post-create", resource_name="2", resource_type="T", env_hooks=(),
                           breakpoints=(), mode=hooks.HookMode.STEP) is None


def test_which_nodes_need_a_look_at_their_hooks() -> None:
    placed = [hooks.Placed(BP("1", "group/1", ("pre-update",)), ("group",))]
    assert hooks.may_pause(resource_name="1", resource_type="T", env_hooks=(), breakpoints=placed,
                           mode=hooks.HookMode.NORMAL)
    assert not hooks.may_pause(resource_name="2", resource_type="T", env_hooks=(), breakpoints=placed,
                               mode=hooks.HookMode.NORMAL)
    assert hooks.may_pause(resource_name="2", resource_type="T", env_hooks=("post-create",), breakpoints=(),
                           mode=hooks.HookMode.NORMAL)
    assert hooks.may_pause(resource_name="2", resource_type="T", env_hooks=(), breakpoints=(),
                           mode=hooks.HookMode.STEP)
    assert not hooks.may_pause(resource_name="1", resource_type="T", env_hooks=("pre-create",),
                               breakpoints=placed, mode=hooks.HookMode.RUN)


def test_named_steps_are_hooks_of_their_action() -> None:
    assert hooks.named_hook("UPDATE", "started") == "update:started"
    assert hooks.hook_action("update:started") == "UPDATE"
    assert hooks.valid_hook("create:started") and not hooks.valid_hook("lunch:started")
    assert not hooks.valid_hook("pre-lunch") and hooks.valid_hook("post-delete")


def test_a_step_reached_again_pauses_each_time_and_is_named_by_its_step_alone() -> None:
    again = hooks.named_hook("CREATE", hooks.occurrence("batch", 2))
    assert again == "create:batch@2" and hooks.base(again) == "create:batch"
    assert hooks.hook_action(again) == "CREATE"
    assert hooks.valid_hook(again) and not hooks.valid_hook("create:batch@x")
    placed = [hooks.Placed(hooks.Breakpoint("b1", "group", ("create:batch",)), ())]
    assert hooks.pause_for(again, resource_name="group", resource_type="T", env_hooks=(),
                           breakpoints=placed, mode=hooks.HookMode.NORMAL) is not None
    assert hooks.pause_for("update:batch@1", resource_name="group", resource_type="T", env_hooks=(),
                           breakpoints=placed, mode=hooks.HookMode.NORMAL) is None
