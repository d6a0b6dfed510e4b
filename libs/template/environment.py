"""A stack's environment (Heat's ``Environment``) and the server-side merge of ``environment_files``.

The API fills the request's environment with every section (see
``loader.with_missing_sections``); when ``environment_files`` are given, Heat
ignores the request's ``environment`` and rebuilds it from the files, on top of
the request's ``parameters`` (:func:`merge_environments`). The engine then
builds an :class:`Environment` from the result.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from libs.template import budgets, loader
from libs.template.errors import (
    ConflictingMergeStrategyForParam,
    InvalidEnvironment,
    InvalidMergeStrategyForParam,
    UnhandledPythonError,
)
from libs.template.loader import (
    CONVERGENCE,
    ENCRYPTED_PARAM_NAMES,
    ENV_SECTIONS,
    EVENT_SINKS,
    PARAMETER_DEFAULTS,
    PARAMETER_MERGE_STRATEGIES,
    PARAMETERS,
    RESOURCE_REGISTRY,
)
from libs.template.registry import ResolvedType, ResourceRegistry

MERGE_STRATEGIES = (OVERWRITE, MERGE, DEEP_MERGE) = ("overwrite", "merge", "deep_merge")

DEFAULT_EVENT_SINK_TYPES = frozenset({"zaqar-queue", "webhook"})
"""The sink types Heat registers out of the box, and Ember's ``webhook``."""


class ZaqarEventSink:
    """The signature of Heat's zaqar sink, so bad sink arguments fail with Heat's TypeError text."""

    def __init__(self, target: Any, ttl: Any = None) -> None:
        self.target = target
        self.ttl = ttl


class WebhookEventSink:
    """Ember's sink: the notifier POSTs signed notices to ``target`` (see services.notifier)."""

    def __init__(self, target: Any, secret: Any = "", kinds: Any = None, resource: Any = "*",
                 hooks: Any = None) -> None:
        if not isinstance(target, str) or not target.startswith(("http://", "https://")):
            raise ValueError(f"webhook event sink target must be an http(s) URL, not {target!r}")
        if kinds is not None and (not isinstance(kinds, list) or not set(kinds) <= {"event", "hook"}):
            raise ValueError("webhook event sink kinds must be a list of event, hook")
        self.target = target


_SINK_SIGNATURES: dict[str, type] = {"zaqar-queue": ZaqarEventSink, "webhook": WebhookEventSink}


@contextmanager
def _python_errors() -> Iterator[None]:
    """Where Heat lets Python's own exceptions out, report them as Heat's API would."""
    try:
        yield
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise UnhandledPythonError(type(exc).__name__, str(exc)) from exc


def _check_event_sinks(sinks: Any, sink_types: Collection[str] | None) -> list[Any]:
    """Heat builds each sink when the environment is built (not when the text is parsed).

    Unknown types, a missing ``type`` and bad arguments fail there, as KeyError or
    TypeError (HTTP 500). ``sink_types=None`` skips the check.
    """
    with _python_errors():
        listed = list(sinks)
        if sink_types is None:
            return listed
        for sink in listed:
            if not isinstance(sink, dict):
                raise AttributeError(f"'{type(sink).__name__}' object has no attribute 'copy'")
            arguments = dict(sink)
            sink_type = arguments.pop("type")
            if sink_type not in sink_types:
                raise KeyError(sink_type)
            signature = _SINK_SIGNATURES.get(sink_type)
            if signature is not None:
                signature(**arguments)
    return listed


@dataclasses.dataclass(frozen=True)
class Environment:
    """A stack's environment; methods return new environments.

    ``parameter_merge_strategies`` is kept for reference only: Heat applies it
    while merging ``environment_files`` and never stores it.
    """

    parameters: dict[str, Any] = dataclasses.field(default_factory=dict)
    parameter_defaults: dict[str, Any] = dataclasses.field(default_factory=dict)
    registry: ResourceRegistry = dataclasses.field(default_factory=ResourceRegistry)
    encrypted_param_names: list[Any] = dataclasses.field(default_factory=list)
    event_sinks: list[Any] = dataclasses.field(default_factory=list)
    parameter_merge_strategies: dict[str, Any] = dataclasses.field(default_factory=dict)
    # Ember's own section: what drift does (libs/template/convergence.py); passed down to nested stacks.
    convergence: dict[str, Any] = dataclasses.field(default_factory=dict)
    event_sink_types: frozenset[str] | None = dataclasses.field(
        default=DEFAULT_EVENT_SINK_TYPES, compare=False, repr=False)

    @classmethod
    def from_dict(cls, env: Mapping[str, Any] | None = None, *, builtin_types: Collection[str] = (),
                  event_sink_types: Collection[str] | None = DEFAULT_EVENT_SINK_TYPES) -> Environment:
        """Heat's ``Environment(env)``: sections are read, not validated (the API did that).

        Without a ``parameters`` key the whole map is old-style flat parameters,
        minus the other sections except ``parameter_merge_strategies``, which
        Heat forgot and so takes for a parameter.
        """
        env = copy.deepcopy(dict(env or {}))
        sink_types = None if event_sink_types is None else frozenset(event_sink_types)
        if PARAMETERS in env:
            parameters = env[PARAMETERS]
        else:
            parameters = {key: value for key, value in env.items()
                          if key not in (PARAMETER_DEFAULTS, ENCRYPTED_PARAM_NAMES, EVENT_SINKS,
                                         RESOURCE_REGISTRY, CONVERGENCE)}
        return cls(
            parameters=parameters,
            parameter_defaults=env.get(PARAMETER_DEFAULTS, {}),
            registry=ResourceRegistry.from_dict(env.get(RESOURCE_REGISTRY, {}), builtin_types),
            encrypted_param_names=env.get(ENCRYPTED_PARAM_NAMES, []),
            event_sinks=_check_event_sinks(env.get(EVENT_SINKS, []), sink_types),
            parameter_merge_strategies=env.get(PARAMETER_MERGE_STRATEGIES, {}),
            convergence=env.get(CONVERGENCE) or {},
            event_sink_types=sink_types,
        )

    def with_layer(self, snippet: Mapping[str, Any]) -> Environment:
        """Heat's ``env.load(snippet)``, as a PATCH update and nested stacks use it.

        The registry is loaded over this one (so ``null`` removes entries),
        ``parameters`` and ``parameter_defaults`` are updated key by key, event
        sinks are appended; ``encrypted_param_names`` is left as it was.
        """
        snippet = copy.deepcopy(dict(snippet))
        registry = self.registry.load(snippet.get(RESOURCE_REGISTRY, {}))
        with _python_errors():
            parameters = dict(self.parameters)
            parameters.update(snippet.get(PARAMETERS, {}))
            defaults = dict(self.parameter_defaults)
            defaults.update(snippet.get(PARAMETER_DEFAULTS, {}))
        sinks = [*self.event_sinks,
                 *_check_event_sinks(snippet.get(EVENT_SINKS, []), self.event_sink_types)]
        return dataclasses.replace(
            self, parameters=parameters, parameter_defaults=defaults, registry=registry,
            event_sinks=sinks, convergence=_merge_convergence(self.convergence, snippet.get(CONVERGENCE)))

    def user_dict(self) -> dict[str, Any]:
        """Heat's ``user_env_as_dict``: what is passed on to nested stacks."""
        shown = {
            RESOURCE_REGISTRY: self.registry.to_dict(),
            PARAMETERS: copy.deepcopy(self.parameters),
            PARAMETER_DEFAULTS: copy.deepcopy(self.parameter_defaults),
            EVENT_SINKS: copy.deepcopy(self.event_sinks),
        }
        if self.convergence:  # Ember's own section: only where it was given, so Heat's answers stay Heat's
            shown[CONVERGENCE] = copy.deepcopy(self.convergence)
        return shown

    def to_dict(self) -> dict[str, Any]:
        """Heat's ``env_as_dict``: what Heat stores and ``GET .../environment`` returns.

        (The API masks hidden parameters' values as ``******`` on the way out.)
        """
        return {**self.user_dict(), ENCRYPTED_PARAM_NAMES: copy.deepcopy(self.encrypted_param_names)}

    def child_environment(self, parent_resource_name: str, child_params: Mapping[str, Any] | None = None,
                          *, remove: ResolvedType | None = None) -> Environment:
        """The environment of the nested stack that resource ``parent_resource_name`` creates.

        Heat's ``get_child_environment``: the registry passes down trimmed by
        :meth:`ResourceRegistry.child_registry`; ``parameter_defaults`` and event
        sinks pass down; the parent's ``parameters`` and ``encrypted_param_names``
        do not. ``child_params`` (a template resource's properties) become the
        child's parameters, unless one of them is named like an environment
        section: then Heat loads them as a whole environment instead.
        ``remove`` is what the parent resource's own type resolved to.
        """
        flat = child_params is not None and not any(s in child_params for s in ENV_SECTIONS)
        inherited = self.user_dict()
        inherited[PARAMETERS] = dict(child_params) if flat and child_params is not None else {}
        child = Environment(event_sink_types=self.event_sink_types).with_layer(inherited)
        overlay = None
        if child_params is not None and not flat:
            child = child.with_layer(child_params)
            overlay = child_params.get(RESOURCE_REGISTRY)
        registry = self.registry.child_registry(parent_resource_name, remove=remove, overlay=overlay)
        child = dataclasses.replace(child, registry=registry)
        # The nested stack's engine loads the environment Heat stored for it.
        return Environment.from_dict(child.to_dict(), builtin_types=self.registry.builtin_types,
                                     event_sink_types=self.event_sink_types)


# ---- environment_files (heat/common/environment_util.py) ---------------------------

_PARAM_KINDS = {
    "string": "string", "String": "string",
    "number": "number", "Number": "number",
    "comma_delimited_list": "list", "CommaDelimitedList": "list",
    "json": "map", "Json": "map",
    "boolean": "boolean", "Boolean": "boolean",
}


def merge_environments(environment_files: Sequence[str] | None, files: Mapping[str, str],
                       base: Mapping[str, Any] | None = None,
                       param_types: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Merge ``environment_files`` (in order, read from ``files``) over ``base``, as Heat's engine does.

    ``base`` is the API's environment: every section present (missing ones are
    filled here), ``parameters`` holding the request's ``parameters``.
    ``param_types`` maps each parameter of the template *and of every template
    in files* to its HOT or CFN type (Heat's ``all_param_schemata``).

    Heat quirks kept:

    * Only ``parameters`` and ``parameter_defaults`` merge per parameter, and
      only parameters in ``param_types``. While the section so far is empty,
      a file's section is taken whole, unknown names included; afterwards
      unknown names are dropped. So a file's parameters override the request's
      ``parameters`` (strategy ``overwrite``).
    * A parameter's strategy comes from the file's ``parameter_merge_strategies``
      (by name, else its ``default``, else what an earlier file chose), is
      shared by both sections, and an unknown strategy name silently means the
      file's default. Naming a different strategy than an earlier file is
      ``ConflictingMergeStrategyForParam``.
    * ``merge`` concatenates strings, joins comma-delimited-list strings with
      ``,`` (extends lists), adds numbers (Heat rejects a number value, so only
      numbers written as strings get here, and those concatenate or fail with
      TypeError), updates json maps one level; ``deep_merge`` recurses into
      maps, extending lists and concatenating strings. Booleans cannot merge.
    * Other sections merge one level deep, and ``null`` values are skipped:
      a second file's ``resource_registry.resources`` replaces the first's, a
      later ``OS::X: null`` does not remove an earlier mapping, and two files
      with ``event_sinks`` fail (AttributeError).
    """
    merged = loader.with_missing_sections(copy.deepcopy(dict(base or {})))
    if not environment_files:
        return merged
    kinds = {name: _PARAM_KINDS.get(type_name, type_name)
             for name, type_name in (param_types or {}).items()}
    chosen: dict[str, Any] = {}
    for filename in environment_files:
        if filename not in files:
            raise UnhandledPythonError("KeyError", repr(filename))
        try:
            parsed = loader.parse_environment(files[filename])
        except InvalidEnvironment as exc:
            # Parsed in the engine, so the API reports the bare ValueError.
            raise UnhandledPythonError("ValueError", exc.message) from None
        strategies = parsed.pop(PARAMETER_MERGE_STRATEGIES, {})
        with _python_errors():
            for section, content in parsed.items():
                if not content:
                    continue
                if section in (PARAMETERS, PARAMETER_DEFAULTS):
                    merged[section] = _merge_parameters(
                        merged[section], content, kinds, strategies=strategies, chosen=chosen,
                        filename=filename)
                elif section == CONVERGENCE:
                    merged[section] = _merge_convergence(merged.get(section), content)
                else:
                    merged[section] = _merge_map(merged[section], content)
    return merged


def _merge_convergence(old: Any, new: Any) -> dict[str, Any]:
    """A later layer's ``convergence`` over an earlier one: its keys win, its resources are added."""
    merged = dict(copy.deepcopy(old) or {})
    if not new:
        return merged
    resources = {**(merged.get("resources") or {}), **(new.get("resources") or {})}
    merged.update({k: copy.deepcopy(v) for k, v in new.items() if k != "resources"})
    if resources:
        merged["resources"] = copy.deepcopy(resources)
    return merged


def _strategy_for(strategies: Any, name: str, chosen: Mapping[str, Any]) -> Any:
    file_default = strategies.get("default", OVERWRITE)
    strategy = strategies.get(name, chosen.get(name, file_default))
    return strategy if strategy in MERGE_STRATEGIES else file_default


def _merge_parameters(old: Any, new: Any, kinds: Mapping[str, str], *, strategies: Any,
                      chosen: dict[str, Any], filename: str) -> Any:
    wanted = [(name, value) for name, value in new.items() if name in kinds and value is not None]
    for name, _ in wanted:
        strategy = _strategy_for(strategies, name, chosen)
        if name not in chosen:
            chosen[name] = strategy
        elif strategy != chosen[name]:
            raise ConflictingMergeStrategyForParam(strategy, name, filename)
    if not old:
        return new
    for name, value in wanted:
        if chosen[name] in (MERGE, DEEP_MERGE):
            old[name] = _merge_parameter(old, name, value, kinds[name], chosen[name] == DEEP_MERGE)
        else:
            old[name] = value
    return old


def _coerce(value: Any, kind: str) -> Any:
    """Heat's ``parse_param``: json values round-trip through JSON, others must be sequences."""
    try:
        if kind == "map":
            text = value if isinstance(value, str) else json.dumps(value)
            if text:
                value = json.loads(text)
                # Heat's message below ends the sentence.
                budgets.check_depth(value, "The value", error=lambda m: ValueError(m.rstrip(".")))
        elif not isinstance(value, Sequence):
            raise ValueError()
    except (ValueError, TypeError) as err:
        # With no detail Heat's message reads "Invalid parameter in environment ."
        raise ValueError(f"Invalid parameter in environment {err}.") from None
    except RecursionError:
        raise ValueError(f"Invalid parameter in environment {budgets.depth_message('The value')}") from None
    return value


def _merge_parameter(old: dict[str, Any], name: str, value: Any, kind: str, deep: bool) -> Any:
    value = _coerce(value, kind)
    if kind == "map":
        return _merge_map(old.get(name, {}), value, deep)
    if kind == "list":
        return _merge_list(old.get(name), value)
    if kind == "string":
        return "".join([old.get(name, ""), value])
    if kind == "number":
        return old.get(name, 0) + value
    # Heat names 'merge' here even when the strategy was deep_merge.
    raise InvalidMergeStrategyForParam(MERGE, name)


def _merge_list(old: Any, new: Any) -> Any:
    if not old:
        return new
    if isinstance(new, list):
        old.extend(new)
        return old
    return ",".join([old, new])


def _merge_map(old: Any, new: Any, deep: bool = False) -> Any:
    if not old:
        return new
    for key, value in new.items():
        if value is None:
            continue
        if not deep:
            old[key] = value
        elif isinstance(value, Mapping):
            previous = old.get(key)
            old[key] = _merge_map(previous, value, deep) if previous else value
        elif isinstance(value, Sequence) and not isinstance(value, str):
            previous = old.get(key)
            old[key] = _merge_list(previous, value) if previous else value
        elif isinstance(value, str):
            old[key] = "".join([old.get(key, ""), value])
        else:
            old[key] = value
    return old
