"""Which of a worker's evaluations go to its evaluation pool, and what runs there.

Resolving a resource's properties is cheap for nearly every template, and a
round trip to the pool would cost the 10^5-resource stacks more than the
evaluation itself; but a few functions can run for minutes on a few bytes
(yaql's ``matches`` with a catastrophic regular expression, ``repeat`` over
long lists). A resource or output whose definition calls one of them is
resolved in the pool (:mod:`libs.evaluation_pool`),
under its deadline; every other resource on the worker's loop, as before.
"""

from __future__ import annotations

import collections
import dataclasses
import pickle
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from libs.db import templates
from libs.engine import desired
from libs.evaluation_pool import EvaluationCrashed, EvaluationPool, EvaluationTimeout
from libs.template import written
from libs.template.resolution import StackResolver, StaticResourceData

if TYPE_CHECKING:
    from services.worker.desired_cache import DesiredCache

# The current rows a stack's outputs read: name -> (reference, attributes).
Current = Mapping[str, tuple[Any, Mapping[str, Any]]]
# How a worker resolves a stack's outputs (inline, or the heavy ones in its pool).
OutputsOf = Callable[[desired.Desired, Current], Awaitable[list[dict[str, Any]]]]

# Functions whose time does not follow the size of the template that calls them. (``str_replace``
# and the like can make huge values, but quickly: size budgets end those. Sending them here would
# cost a common template 0.3 ms a resource instead of 0.03.)
HEAVY_FUNCTIONS = frozenset({"yaql", "repeat"})


@dataclasses.dataclass(frozen=True)
class Source:
    """What a desired state is loaded from: it crosses to the pool, which loads it once per process.

    Pickled once, when the worker first loads it: each job then carries these
    bytes, and a pool process that has the state loaded does not even read them.
    """

    key: tuple[str, str]  # (stack id, template id): a template id never changes what it names
    packed: bytes

    @classmethod
    def of(cls, key: tuple[str, str], raw: templates.RawTemplate, *, stack_name: str, project_id: str
           ) -> Source:
        return cls(key, pickle.dumps((raw, stack_name, project_id), protocol=pickle.HIGHEST_PROTOCOL))

    def load(self) -> desired.Desired:
        raw, stack_name, project_id = pickle.loads(self.packed)
        return desired.load(raw.template, raw.files, raw.environment, stack_name=stack_name,
                            stack_id=self.key[0], project_id=project_id, facade=raw.facade)


def _calls_heavy(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            if any(k in HEAVY_FUNCTIONS for k in item):
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _heavy(want: desired.Desired, section_name: str | None) -> frozenset[str]:
    section = want.template.raw.get(section_name) if section_name else None
    if not isinstance(section, Mapping) or not written.mentions(section, HEAVY_FUNCTIONS):
        return frozenset()  # (a group's 10^5 members are looked through at once, in orjson)
    return frozenset(name for name, snippet in section.items() if _calls_heavy(snippet))


def heavy_resources(want: desired.Desired) -> frozenset[str]:
    """The resources whose definitions call a heavy function (resolved in the pool)."""
    return _heavy(want, want.template.dialect.resources)


def heavy_outputs(want: desired.Desired) -> frozenset[str]:
    """The outputs that call a heavy function (resolved in the pool)."""
    return _heavy(want, want.template.dialect.outputs)


# The desired states a pool process loaded last (each process keeps its own).
_LOADED: collections.OrderedDict[tuple[str, str], desired.Desired] = collections.OrderedDict()
_LOADED_KEPT = 8


def _loaded(source: Source) -> desired.Desired:
    found = _LOADED.get(source.key)
    if found is None:
        found = _LOADED[source.key] = source.load()
        while len(_LOADED) > _LOADED_KEPT:
            _LOADED.popitem(last=False)
    _LOADED.move_to_end(source.key)
    return found


def properties(source: Source, name: str, references: Mapping[str, Any],
               attributes: Mapping[str, Any]) -> dict[str, Any]:
    """The resource's resolved properties over the given rows' data (in the pool)."""
    data = StaticResourceData(dict(references), dict(attributes))
    return dict(StackResolver(_loaded(source).definition, data).properties(name))


def _data(current: Current) -> StaticResourceData:
    return StaticResourceData({n: ref for n, (ref, _) in current.items()},
                              {n: dict(attrs) for n, (_, attrs) in current.items()})


def output(source: Source, name: str, current: Current) -> dict[str, Any]:
    """One output in the API's shape over the current rows (in the pool)."""
    return StackResolver(_loaded(source).definition, _data(current)).output(name)


async def inline_outputs(want: desired.Desired, current: Current) -> list[dict[str, Any]]:
    return desired.outputs_over(want.definition, current)


def outputs_resolver(pool: EvaluationPool, cache: DesiredCache) -> OutputsOf:
    """Outputs resolved on the loop, but those that call a heavy function in ``pool``."""

    async def resolve(want: desired.Desired, current: Current) -> list[dict[str, Any]]:
        entry = cache.entry_for(want)
        if entry is None or entry.source is None or not entry.heavy_outputs:
            return desired.outputs_over(want.definition, current)
        resolver = StackResolver(want.definition, _data(current))
        shown = []
        for name in want.definition.outputs:
            if name not in entry.heavy_outputs:
                shown.append(resolver.output(name))
                continue
            try:
                shown.append(await pool.on_behalf_of(entry.project).run(output, entry.source, name, current))
            except (EvaluationTimeout, EvaluationCrashed) as exc:
                # As any output that fails: the others are still shown.
                described = want.definition.outputs[name].description
                shown.append({"output_key": name, "output_value": None, "output_error": str(exc),
                              "description": "No description given" if described is None else str(described)})
        return shown

    return resolve
