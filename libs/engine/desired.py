"""A stored desired state (template, files, merged environment) as a stack definition.

Pure and cacheable by (stack, template id): the planner and every worker step
need it, and it never changes for a given id.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from libs.resources.implicit import implicit_dependencies
from libs.template.environment import Environment
from libs.template.parameters import Parameters
from libs.template.request import parameter_schemas
from libs.template.resolution import StackResolver, StaticResourceData
from libs.template.stack import StackDefinition
from libs.template.template import Template

_NOTHING: frozenset[str] = frozenset()


@dataclasses.dataclass(frozen=True)
class Desired:
    template: Template
    environment: Environment
    parameters: Parameters
    definition: StackDefinition

    def requires(self, kept: AbstractSet[str] = _NOTHING) -> dict[str, AbstractSet[str]]:
        """Each enabled resource with the names it must come after; those in ``kept`` (known to
        need nothing and to be left alone) are not parsed."""
        definition = self.definition
        return {name: _NOTHING if name in kept else definition.required(name)
                for name in definition.enabled_names()}


def output_resources(definition: StackDefinition) -> frozenset[str]:
    """The resources the template's outputs read: the rows resolving them needs (a group's nested
    stack of 10^5 members has no output and reads none)."""
    return frozenset(ref.resource for output in definition.outputs.values() if output.enabled
                     for ref in output.references())


def outputs_over(definition: StackDefinition, current: Mapping[str, tuple[Any, Mapping[str, Any]]]
                 ) -> list[dict[str, Any]]:
    """The template's outputs over ``name -> (reference, attributes)`` of the current rows."""
    data = StaticResourceData({n: ref for n, (ref, _) in current.items()},
                              {n: dict(attrs) for n, (_, attrs) in current.items()})
    return StackResolver(definition, data).outputs()


def load(template: Mapping[str, Any], files: Mapping[str, str], environment: Mapping[str, Any], *,
         stack_name: str, stack_id: str, project_id: str, facade: Mapping[str, Any] | None = None) -> Desired:
    tmpl = Template(template, files)
    env = Environment.from_dict(environment)
    params = Parameters(parameter_schemas(tmpl), dialect=tmpl.version.kind, user_params=env.parameters,
                        param_defaults=env.parameter_defaults, stack_name=stack_name,
                        stack_id=stack_id, project_id=project_id)
    definition = StackDefinition(tmpl, params, facade, implicit=implicit_dependencies)
    return Desired(tmpl, env, params, definition)


EMPTY_TEMPLATE: dict[str, Any] = {"heat_template_version": "2015-04-30"}
