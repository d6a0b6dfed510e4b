"""A stack definition: template + parameters (+ conditions), validated in Heat's order.

This is everything about a stack that needs no cloud and no database: which
resources are enabled, what each requires, the dependency graph, the outputs,
and Heat's validation. The engine and the API wrap it with a resolver that
knows live resource data; validation and preview use it as it is.
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any, Protocol

from libs.graph.dag import Graph
from libs.template import attribute_store, errors, written
from libs.template.definition_map import DefinitionMap
from libs.template.definitions import DELETE, RETAIN, OutputDefinition, ResourceDefinition
from libs.template.functions import base
from libs.template.template import Template

_IN_PROGRESS = object()

# What a resource that needs no other requires: one set shared by 10^6 members.
_NOTHING: frozenset[str] = frozenset()


class ParameterValues(Protocol):
    def value(self, name: str) -> Any: ...

    def __contains__(self, name: object) -> bool: ...

    def names(self) -> Iterable[str]: ...


class ConditionResolver:
    """Resolves condition expressions: parameters and other conditions, nothing else."""

    def __init__(self, parameters: ParameterValues, conditions: Conditions) -> None:
        self._parameters = parameters
        self._conditions = conditions

    def parameter(self, name: str) -> Any:
        if name not in self._parameters:
            raise errors.UserParameterMissing(name)
        return self._parameters.value(name)

    def condition(self, name: str) -> bool:
        return self._conditions.is_enabled(name)

    def reference(self, resource: str) -> Any:
        raise ValueError("resources cannot be referenced in conditions")

    def attribute(self, resource: str, attribute: str, path: Any) -> Any:
        raise ValueError("resources cannot be referenced in conditions")

    def all_attributes(self, resource: str) -> dict[str, Any]:
        raise ValueError("resources cannot be referenced in conditions")

    def file(self, key: str) -> str | None:
        return None

    def facade(self, field: str) -> Any:
        raise ValueError("resource_facade cannot be used in conditions")

    def availability_zones(self) -> list[str]:
        return []


class Conditions:
    """The ``conditions`` section, each evaluated once, cycles refused (Heat's rules)."""

    def __init__(self, parsed: Mapping[str, Any] | Callable[[], Mapping[str, Any]],
                 parameters: ParameterValues) -> None:
        # Given as a function, the section is parsed when first needed, as Heat parses it
        # (so the template's structure is checked first).
        self._source = parsed
        self._parsed: dict[str, Any] | None = None
        self._resolved: dict[str, object] = {}
        self._resolver = ConditionResolver(parameters, self)

    @property
    def _defs(self) -> dict[str, Any]:
        if self._parsed is None:
            self._parsed = dict(self._source() if callable(self._source) else self._source)
        return self._parsed

    def validate(self) -> None:
        for name, definition in self._defs.items():
            _check_condition_type(name, definition)
            base.validate(definition)

    def is_enabled(self, name: Any) -> bool:
        if name is None:
            return True
        if isinstance(name, bool):
            return name
        if not isinstance(name, str) or name not in self._defs:
            raise ValueError(f'Invalid condition "{name}"')
        state = self._resolved.get(name)
        if state is _IN_PROGRESS:
            raise errors.StackValidationFailed(f'Circular definition for condition "{name}"',
                                               error="Condition validation error")
        if state is None:
            self._resolved[name] = _IN_PROGRESS
            value = base.resolve(self._defs[name], self._resolver)
            _check_condition_type(name, value)
            self._resolved[name] = bool(value)
        return bool(self._resolved[name])

    def evaluate(self, expression: Any) -> bool:
        """An inline condition (a resource's or output's ``condition:`` that is not a name)."""
        value = base.resolve(expression, self._resolver)
        return self.is_enabled(value)

    def names(self) -> list[str]:
        return list(self._defs)


def _check_condition_type(name: str, definition: Any) -> None:
    if not isinstance(definition, (bool, base.Function)):
        raise errors.StackValidationFailed(
            f'The definition of condition "{name}" is invalid: {definition}',
            error="Condition validation error")


class ResourceChecks(Protocol):
    """What validating a stack asks of the resource plugins, which this package does not know.

    Given to a :class:`StackDefinition`, its validation is Heat's whole: the
    attributes ``get_attr`` reads exist, each resource passes its plugin's checks
    (properties) right after its functions, and a cycle names each resource as
    Heat's class for it does. A type the checks do not know passes them all
    (the unknown type is reported on its own).
    """

    def has_attribute(self, resource_type: str, resource_name: str, attribute: Any) -> bool:
        """Whether ``get_attr`` may read the attribute of that resource."""

    def class_name(self, resource_type: str, resource_name: str) -> str:
        """Heat's plugin class for the resource (``NoneResource``)."""

    def check(self, stack: StackDefinition, name: str) -> None:
        """The resource's own validation (its properties); raises TemplateError."""

    def implicit_dependencies(self, stack: StackDefinition) -> Mapping[str, set[str]]:
        """What each resource must also come after because of its type (see :data:`ImplicitDependencies`)."""


ImplicitDependencies = Callable[["StackDefinition"], Mapping[str, set[str]]]
"""Dependencies a resource's type adds to those its template states (Heat's ``add_dependencies``).

Given the whole stack, once: name -> the names of other enabled resources it must come after
(a port after the subnets of its network...). Pure; the plugins know the rules, so whoever
builds a :class:`StackDefinition` with plugins at hand passes them in.
"""


class StackDefinition:
    def __init__(self, template: Template, parameters: ParameterValues,
                 facade: Mapping[str, Any] | None = None, checks: ResourceChecks | None = None,
                 implicit: ImplicitDependencies | None = None) -> None:
        self.template = template
        self.parameters = parameters
        # A provider template's parent resource, as resource_facade sees it (None at the top).
        self.facade = facade
        self.checks = checks
        self._implicit_rules = implicit or (checks.implicit_dependencies if checks is not None else None)
        self._implicit: Mapping[str, set[str]] | None = None
        # Conditions are parsed before they exist, so they see parameters only;
        # resources and outputs are parsed with the conditions at hand. Nothing is
        # parsed until asked for, as in Heat, whose validation checks structure first.
        self._params_only = _NoResources(parameters)
        self.conditions = Conditions(self._parse_conditions, parameters)
        self._resolver = ConditionResolver(parameters, self.conditions)
        self._resources = DefinitionMap(lambda: self.template.resources_section, self._enabled_definition)
        self._outputs: dict[str, OutputDefinition] | None = None

    def _parse_conditions(self) -> dict[str, Any]:
        t = self.template
        d = t.dialect
        raw_conditions = t.section(d.conditions) if t.has_conditions else {}
        if not isinstance(raw_conditions, Mapping):
            raise errors.StackValidationFailed(
                "Condition definitions must be a map. "
                f"Found a {type(raw_conditions).__name__} instead",
                error="Conditions validation error")
        return {n: t.parse_condition(c, f"{d.conditions}.{n}", self._params_only)
                for n, c in raw_conditions.items()}

    @functools.cached_property
    def _all_names(self) -> frozenset[str]:
        return frozenset(str(n) for n in self.template.resources_section)

    # ---- resources -----------------------------------------------------------
    def _has_resource(self, name: Any) -> bool:
        """Whether the stack has this resource enabled (Heat's ``stack[name]`` lookup)."""
        return name in self.resources

    def _has_attribute(self, name: str, attribute: Any) -> bool:
        assert self.checks is not None
        return self.checks.has_attribute(self.resources[name].type, name, attribute)

    def enabled_names(self) -> list[str]:
        """The enabled resources' names in template order, parsing only those with a condition."""
        t = self.template
        key = t.dialect.res_condition
        if not t.has_conditions:
            return [str(name) for name in t.resources_section]
        return [str(name) for name, snippet in t.resources_section.items()
                if not (isinstance(snippet, Mapping) and key in snippet) or str(name) in self.resources]

    def written_types(self) -> Iterable[tuple[str, Any]]:
        """Each resource's name and its ``type`` as written (enabled or not; nothing is parsed):
        the type is a literal string in any template that validates."""
        key = self.template.dialect.res_type
        for name, snippet in self.template.resources_section.items():
            yield str(name), snippet.get(key) if isinstance(snippet, Mapping) else None

    def all_resource_names(self) -> frozenset[str]:
        """Every resource the template names, enabled by its condition or not."""
        return self._all_names

    @property
    def resources(self) -> DefinitionMap:
        """The enabled resources, in template order; each parsed when first asked for."""
        return self._resources

    def _enabled_definition(self, name: str, snippet: Any) -> ResourceDefinition | None:
        """One resource parsed (its keys checked first), or None when its condition disables it."""
        d = self.template.dialect
        # Heat never checks CFN resource keys: unknown ones are ignored.
        if self.template.version.kind == "hot":
            valid = self.template.version.resource_keys
            invalid = [k for k in snippet if k not in valid]
            if invalid:
                raise errors.StackValidationFailed(
                    "Invalid keyword(s) inside a resource definition: " + ", ".join(invalid))
        defn = self._definition(name, snippet)
        if defn.condition is not None:
            try:
                enabled = self._enabled(defn.condition)
            except ValueError as exc:
                raise errors.StackValidationFailed(
                    str(exc), (d.resources, name, d.res_condition)) from None
            if not enabled:
                return None
        return defn

    def _enabled(self, condition: Any) -> bool:
        if isinstance(condition, (str, bool)):
            return self.conditions.is_enabled(condition)
        return self.conditions.evaluate(condition)

    def _definition(self, name: str, data: Mapping[str, Any]) -> ResourceDefinition:
        d = self.template.dialect
        t = self.template
        base_path = f"{d.resources}.{name}"

        has_attribute = self._has_attribute if self.checks is not None else None

        def field(key: str | None, types: tuple[type, ...], typename: str, parse: bool = True) -> Any:
            if key is None or key not in data:
                return None
            value = (t.parse(data[key], f"{base_path}.{key}", self._resolver, has_resource=self._has_resource,
                             has_attribute=has_attribute)
                     if parse else data[key])
            if not isinstance(value, types):
                raise errors.StackValidationFailed(f"Resource {name} {key} type must be {typename}")
            return value

        type_name = field(d.res_type, (str,), "string")
        if type_name is None:
            raise errors.StackValidationFailed(f'Resource {name} is missing "{d.res_type}"')
        properties = field(d.res_properties, (Mapping, base.Function), "object")
        metadata = field(d.res_metadata, (Mapping, base.Function), "object")
        depends = field(d.res_depends_on, (list, str), "list or string", parse=False)
        if isinstance(depends, str):
            depends = [depends]
        for dep in depends or ():
            if not isinstance(dep, str):
                raise errors.StackValidationFailed(
                    f"Resource {name} {d.res_depends_on} must be a list of strings")
        policy_snippet = field(d.res_deletion_policy, (str, base.Function), "string")
        policy = base.resolve(policy_snippet, self._params_only) if policy_snippet is not None else None
        if policy is not None:
            if isinstance(policy, (list, dict)):  # Heat looks it up in a dict: Python's TypeError
                raise errors.StackValidationFailed(f"unhashable type: '{type(policy).__name__}'")
            if policy not in t.version.deletion_policies:
                raise errors.StackValidationFailed(f'Invalid deletion policy "{policy}"')
            policy = t.version.deletion_policies[policy]
        update_policy = field(d.res_update_policy, (Mapping, base.Function), "object")
        description = field(d.res_description, (str,), "string", parse=False)
        condition = None
        if d.res_condition in data and t.has_conditions:
            condition = t.parse_condition(data[d.res_condition], f"{base_path}.{d.res_condition}",
                                          self._resolver)
        external_id = None
        if d.res_external_id is not None and d.res_external_id in data:
            external_id = t.parse(data[d.res_external_id], f"{base_path}.{d.res_external_id}",
                                  self._resolver, has_resource=self._has_resource)
            # Heat keeps an external resource whatever its deletion_policy says.
            policy = RETAIN
        return ResourceDefinition(
            name=name, type=type_name, properties=properties, metadata=metadata,
            depends_on=tuple(depends or ()), deletion_policy=policy or DELETE,
            update_policy=update_policy, description=description, condition=condition,
            external_id=external_id)

    # ---- dependencies ----------------------------------------------------------
    def required(self, name: str) -> AbstractSet[str]:
        """What an enabled resource must come after, checked against the template.

        As Heat's ``ResourceDefinition.dependencies``: the references of its functions
        first (a function may not name a disabled resource, since it would need its
        value), then ``depends_on``, which may name a resource whose condition is false
        (Heat drops it). Either way a name the template lacks is InvalidTemplateReference,
        naming where it was used. A resource with an ``external_id`` depends on nothing,
        and may not say it does.
        """
        defn = self.resources[name]
        if defn.external_id is not None:
            external_id = base.resolve(defn.external_id, self._resolver)
            if external_id:
                if defn.depends_on:
                    raise errors.InvalidExternalResourceDependency(defn.type, external_id)
                return set()
        found: set[str] = set()
        for ref in defn.references():
            if ref.resource not in self.resources:
                raise errors.InvalidTemplateReference(ref.resource, ref.path)
            found.add(ref.resource)
        for dep in defn.depends_on:
            if dep not in self._all_names:
                raise errors.InvalidTemplateReference(dep, name)
            if dep in self.resources:
                found.add(dep)
        needs = found | self.implicit_required(name)
        return needs if needs else _NOTHING

    def implicit_required(self, name: str) -> set[str]:
        """What the resource's type adds to its template's dependencies (computed once per stack)."""
        if self._implicit_rules is None:
            return set()
        if self._implicit is None:
            self._implicit = self._implicit_rules(self)
        return {n for n in self._implicit.get(name, ()) if n in self.resources and n != name}

    def graph(self) -> Graph[str]:
        """The dependency graph of the enabled resources; CircularDependencyException on a cycle."""
        requires = {name: self.required(name) for name in self.resources}
        _, stuck = _heat_order(requires)
        if stuck:
            raise self._cycle_error(stuck)
        return Graph(requires)

    def _cycle_error(self, stuck: Mapping[str, set[str]]) -> errors.CircularDependencyException:
        """Heat prints what its sort left: each resource with what it still requires.

        Heat shows a resource as ``<PluginClass> "name"``; without checks that know
        the plugins, as its name alone.
        """
        checks = self.checks

        def shown(name: str) -> str:
            if checks is None:
                return name
            return f'{checks.class_name(self.resources[name].type, name)} "{name}"'

        rendered = ", ".join(f"{shown(n)}: {{{', '.join(shown(r) for r in sorted(needs))}}}"
                             for n, needs in stuck.items())
        return errors.CircularDependencyException("{" + rendered + "}")

    # ---- outputs -------------------------------------------------------------
    @property
    def outputs(self) -> dict[str, OutputDefinition]:
        if self._outputs is None:
            self._outputs = dict(self._output_definitions())
        return self._outputs

    def _output_definitions(self) -> Iterable[tuple[str, OutputDefinition]]:
        d = self.template.dialect
        t = self.template
        for key, val in t.outputs_section.items():
            if not isinstance(val, Mapping):
                raise errors.StackValidationFailed(
                    f"Output definitions must be a map. Found a {type(val).__name__} instead",
                    (d.outputs, key), error="Output validation error")
            if d.out_value not in val:
                raise errors.StackValidationFailed(
                    f"Each output definition must contain a {d.out_value} key.",
                    (d.outputs, key), error="Output validation error")
            description = val.get(d.out_description)
            if t.has_conditions and d.out_condition in val:
                cond = t.parse_condition(val[d.out_condition], f"{d.outputs}.{key}.{d.out_condition}",
                                         self._resolver)
                try:
                    enabled = self._enabled(cond)
                except ValueError as exc:
                    raise errors.StackValidationFailed(str(exc), (d.outputs, key, d.out_condition)) from None
                if not enabled:
                    yield str(key), OutputDefinition(str(key), None, description, enabled=False)
                    continue
            # Parsed once the resources are: a ``Ref`` names an enabled one, or a parameter.
            value = t.parse(val[d.out_value], f"{d.outputs}.{key}.{d.out_value}", self._resolver,
                            resource_names=frozenset(self.resources), has_resource=self._has_resource,
                            has_attribute=self._has_attribute if self.checks is not None else None)
            yield str(key), OutputDefinition(str(key), value, description)

    @functools.cached_property
    def attribute_reads(self) -> dict[str, frozenset[tuple[Any, ...]]]:
        """What the resources and outputs read of each resource (see :func:`attribute_store.reads_in`)."""
        return attribute_store.reads_in(self._reading_snippets())

    @functools.cached_property
    def whole_reads(self) -> frozenset[str]:
        """The resources read alone, ``get_attr: [res]`` (see :func:`attribute_store.wholly_read`)."""
        return attribute_store.wholly_read(self._reading_snippets())

    def _reading_snippets(self) -> list[Any]:
        t = self.template
        if not written.mentions([t.resources_section, t.outputs_section], written.ATTRIBUTE_READING):
            return []  # nothing reads an attribute: no resource need be parsed to know it
        snippets = [s for defn in self.resources.values() for s in (defn.properties, defn.metadata)]
        return [*snippets, *(o.value for o in self.outputs.values() if o.enabled)]

    # ---- validation, in Heat's order -----------------------------------------
    def validate(self) -> None:
        """Heat's ``Stack.validate``; what needs resource plugins only with ``checks``.

        Structure, conditions, resources, duplicate names, dependencies (references,
        then cycles), the functions of each resource in dependency order, each followed
        by its ``checks`` (external resources skipped), then the outputs. Heat parses
        the outputs while it works out the first resource's data, so their parse errors
        come before a cycle is found, if any resource is free of it. Parameter values
        and groups are validated where the parameters are built.
        """
        self.template.validate_structure()
        self.conditions.validate()
        resources = self.resources
        duplicates = set(self.parameters.names()) & set(resources)
        if duplicates:
            raise errors.StackValidationFailed(f"Duplicate names {duplicates}")
        order, stuck = _heat_order({name: self.required(name) for name in resources})
        if order:
            self._check_attribute_keys()
        if stuck:
            raise self._cycle_error(stuck)
        d = self.template.dialect
        for name in order:
            defn = resources[name]
            if defn.external_id is not None and base.resolve(defn.external_id, self._resolver) is not None:
                continue
            base.validate(defn.properties, (d.resources, name, d.res_properties))
            base.validate(defn.metadata, (d.resources, name, d.res_metadata))
            base.validate(defn.update_policy, (d.resources, name, d.res_update_policy))
            if self.checks is not None:
                self.checks.check(self, name)
        for key, output in self.outputs.items():
            # get_attr checks its resource here (InvalidTemplateReference "(in unknown)");
            # get_resource does not: an output naming no resource fails when resolved.
            # Heat validates at "Value" and turns that into the format's own word, but a
            # list's items sit at "Value[0]", which it leaves as it is.
            section = "Value" if isinstance(output.value, list) else d.out_value
            base.validate(output.value, (d.outputs, key, section))

    def _check_attribute_keys(self) -> None:
        """What Heat does while working out the first free resource's data, before any cycle.

        It parses the outputs, and files every attribute that resources and outputs read
        by (resource, attribute key) in dicts and sets: a key that cannot be hashed (a
        list as the attribute or in its path) fails there with Python's TypeError.
        """
        def check(snippets: Iterable[Any]) -> None:
            for snippet in snippets:
                for key in base.all_dep_attrs(snippet):
                    try:
                        hash(key)
                    except TypeError as exc:
                        raise errors.UnhandledPythonError("TypeError", str(exc)) from None

        check(s for defn in self.resources.values() for s in (defn.properties, defn.metadata))
        check(output.value for output in self.outputs.values())


def _heat_order(requires: Mapping[str, AbstractSet[str]]) -> tuple[list[str], dict[str, set[str]]]:
    """Heat's topological sort: the order, and what is left (each with what it still needs).

    Heat's graph lists a resource's requirements before the resource itself, and each
    round takes the first node that needs nothing more; what a cycle blocks (the cycle
    and everything after it) is left.
    """
    if not any(requires.values()):  # each is free from the start: taken in the order given
        return list(requires), {}
    graph: dict[str, set[str]] = {}
    for name, deps in requires.items():
        for dep in sorted(deps):
            graph.setdefault(dep, set())
            graph.setdefault(name, set()).add(dep)
        graph.setdefault(name, set())
    # Kahn's algorithm with a heap keyed by position: "the first free node" each
    # round, as Heat's scan finds it, in O(E log V) instead of O(V^2).
    position = {name: i for i, name in enumerate(graph)}
    waiting = {name: len(needs) for name, needs in graph.items()}
    needed_by: dict[str, list[str]] = {name: [] for name in graph}
    for name, needs in graph.items():
        for dep in needs:
            needed_by[dep].append(name)
    ready = [(position[n], n) for n, count in waiting.items() if count == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        _, free = heapq.heappop(ready)
        order.append(free)
        for dependent in needed_by[free]:
            waiting[dependent] -= 1
            if waiting[dependent] == 0:
                heapq.heappush(ready, (position[dependent], dependent))
    done = set(order)
    left = {n: needs - done for n, needs in graph.items() if n not in done}
    return order, left




class _NoResources(ConditionResolver):
    """Resolves snippets that may use parameters only (a deletion policy)."""

    def __init__(self, parameters: ParameterValues) -> None:
        super().__init__(parameters, Conditions({}, parameters))
