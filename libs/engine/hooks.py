"""Where a node pauses: Heat's hooks and Ember's breakpoints, as decisions over data.

Heat's rules, which Ember keeps exactly:

- ``pre-create``/``post-create`` only in a stack CREATE, around the create of
  a resource never made (a resource added by an update does not pause);
- ``pre-update`` for every existing resource an update visits, before it is
  known whether anything changes (unchanged and replaced resources pause too);
  ``post-update`` only after an in-place update;
- ``pre-delete``/``post-delete`` only in a stack DELETE, around a delete that
  reaches the cloud.

The workflow pauses, not the resource: the node is not finished, so its
dependents wait while independent branches go on.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase
from typing import Literal

from libs.engine.keys import NodeKind
from libs.engine.status import Action
from libs.engine.step import Verb
from libs.template.registry import HOOK_TYPES

# Traversals that update existing resources, as Heat's Resource.update does.
_UPDATING = frozenset({Action.UPDATE, Action.ROLLBACK, Action.RESTORE})


class HookMode(enum.StrEnum):
    """What a traversal does about its hooks: pause at them, pause at every node that starts, or run free."""

    NORMAL = "normal"
    STEP = "step"
    RUN = "run"


OnTimeout = Literal["fail", "continue"]
ON_TIMEOUT: tuple[OnTimeout, ...] = ("fail", "continue")


_PRE_UPDATE = frozenset({Verb.UPDATE, Verb.REPLACE, Verb.NOOP, Verb.REFUSE})


def pre_hook(traversal_action: Action, kind: NodeKind, verb: Verb, row_action: str) -> str | None:
    """The hook a node reaches before its action starts, if any."""
    if kind == NodeKind.UPDATE:
        if traversal_action == Action.CREATE and verb == Verb.CREATE:
            return "pre-create"
        if traversal_action in _UPDATING and row_action != Action.INIT and verb in _PRE_UPDATE:
            return "pre-update"
        return None
    if traversal_action == Action.DELETE and verb == Verb.DELETE:
        return "pre-delete"
    return None


def post_hook(traversal_action: Action, completed_action: str) -> str | None:
    """The hook a node reaches once its action completed, if any."""
    if traversal_action == Action.CREATE and completed_action == Action.CREATE:
        return "post-create"
    if traversal_action in _UPDATING and completed_action == Action.UPDATE:
        return "post-update"
    if traversal_action == Action.DELETE and completed_action == Action.DELETE:
        return "post-delete"
    return None


def hook_action(hook: str) -> str:
    """The action a hook pauses: ``pre-create`` -> ``CREATE``, ``create:started`` -> ``CREATE``."""
    if ":" in hook:
        return hook.split(":", 1)[0].upper()
    return hook.split("-", 1)[1].upper()


def named_hook(action: str, step: str) -> str:
    """The hook at a step a plugin names inside an action (Ember's): ``create:started``."""
    return f"{action.lower()}:{step}"


# A step an action reaches more than once (a group's ``batch``, between each two batches) is
# reached as ``batch@1``, ``batch@2``...: each pauses on its own (a pause is kept per hook),
# and a breakpoint or a clear naming the step alone reaches every one of them.
_OCCURRENCE = "@"


def occurrence(step: str, n: int) -> str:
    """The ``n``-th time an action reaches ``step``."""
    return f"{step}{_OCCURRENCE}{n}"


def base(hook: str) -> str:
    """The hook without its occurrence: ``create:batch@2`` -> ``create:batch``."""
    return hook.split(_OCCURRENCE, 1)[0]


def paused_reason(hook: str) -> str:
    return f"{hook_action(hook)} paused until Hook {hook} is cleared"


def cleared_reason(hook: str) -> str:
    return f"Hook {hook} is cleared"


def timed_out_reason(hook: str) -> str:
    return f"Hook {hook} timed out"


_NAMED = re.compile(r"(create|update|delete|suspend|resume|check):[a-z0-9_-]+(@[0-9]+)?")


def valid_hook(hook: object) -> bool:
    """Heat's six hooks, or a named step inside an action (``create:started``)."""
    return isinstance(hook, str) and (hook in HOOK_TYPES or _NAMED.fullmatch(hook) is not None)


@dataclasses.dataclass(frozen=True)
class Breakpoint:
    """A breakpoint set through the api on one stack.

    ``resource`` is a name, an fnmatch pattern, or a nested path of them
    (``group/0``, ``nest/*``) from the stack it was set on; ``resource_type``
    limits it to one type; the hooks say which actions it pauses.
    """

    id: str
    resource: str
    hooks: tuple[str, ...]
    resource_type: str | None = None
    timeout_seconds: float | None = None
    on_timeout: OnTimeout = "fail"

    def matches(self, path: Sequence[str], resource_type: str, hook: str) -> bool:
        """Whether it pauses the resource at ``path`` (names from its stack down) at ``hook``."""
        return base(hook) in self.hooks and self.reaches(path, resource_type)

    def reaches(self, path: Sequence[str], resource_type: str) -> bool:
        """Whether it pauses the resource at ``path`` at one of its hooks."""
        if self.resource_type is not None and self.resource_type != resource_type:
            return False
        patterns = self.resource.split("/")
        return len(patterns) == len(path) and all(
            fnmatchcase(name, pattern) for name, pattern in zip(path, patterns, strict=True))


@dataclasses.dataclass(frozen=True)
class Placed:
    """A breakpoint with the path from its stack down to the stack a node is in."""

    breakpoint: Breakpoint
    prefix: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Pause:
    """Why a node pauses at a hook, and for how long at most."""

    source: Literal["environment", "breakpoint", "step"]
    timeout_seconds: float | None = None
    on_timeout: OnTimeout = "fail"


def may_pause(*, resource_name: str, resource_type: str, env_hooks: Iterable[str],
              breakpoints: Iterable[Placed], mode: HookMode) -> bool:
    """Whether a node might pause at any hook (else it needs no look at its hooks at all)."""
    if mode != HookMode.NORMAL:
        return mode == HookMode.STEP
    return bool(set(env_hooks)) or any(
        p.breakpoint.reaches((*p.prefix, resource_name), resource_type) for p in breakpoints)


def pause_for(hook: str, *, resource_name: str, resource_type: str, env_hooks: Iterable[str],
              breakpoints: Iterable[Placed], mode: HookMode) -> Pause | None:
    """Whether a node pauses at ``hook``: by its traversal's mode, a breakpoint, or the environment.

    A breakpoint wins over the environment, so its deadline applies; in a
    stepping traversal every pre-hook pauses (the node starts next).
    """
    if mode == HookMode.RUN:
        return None
    for placed in breakpoints:
        if placed.breakpoint.matches((*placed.prefix, resource_name), resource_type, hook):
            bp = placed.breakpoint
            return Pause("breakpoint", bp.timeout_seconds, bp.on_timeout)
    if base(hook) in set(env_hooks):
        return Pause("environment")
    if mode == HookMode.STEP and hook.startswith("pre-"):
        return Pause("step")
    return None

