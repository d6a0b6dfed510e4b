"""How intrinsic functions are parsed, validated, walked for dependencies and resolved.

A template snippet is plain data until :func:`parse` turns every one-key map whose
key is a function of the template's version into a :class:`Function`. The parsed
tree then answers three questions without any I/O:

- :func:`validate`: are the arguments well formed (no resolution needed)?
- :func:`dependencies` / :func:`dep_attrs`: which resources (and attributes) does it use?
- :func:`resolve`: what is its value, given a :class:`Resolver` that knows
  parameters, resource references and attributes, files and conditions?

The same parsed tree serves validation, preview and the engine; only the
resolver differs. This mirrors Heat's ``function.py`` algorithm, but functions
hold no reference to a live stack: everything they need at resolve time comes
through the resolver.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from libs.template import budgets
from libs.template.errors import (
    InvalidTemplateAttribute,
    InvalidTemplateReference,
    PathItem,
    StackValidationFailed,
    UnhandledPythonError,
)

# Returned by a two-argument ``if`` (HOT 2021-04-16) whose condition is false: the
# enclosing map key or list item disappears instead of becoming null.
REMOVED: Any = Ellipsis

# ``dep_attrs`` yields this when a function needs every attribute of a resource
# (``get_attr: [res]`` with no attribute name).
ALL_ATTRIBUTES = "__all_attributes__"

# The module of Heat's CFN function classes (see Function.heat_module).
HEAT_CFN_MODULE = "heat.engine.cfn.functions"


class Resolver(Protocol):
    """What resolving a function may ask of the outside world."""

    def parameter(self, name: str) -> Any:
        """The typed value of a parameter or pseudo parameter; UserParameterMissing if unknown."""

    def reference(self, resource: str) -> Any:
        """``get_resource`` / ``Ref``: the resource's reference id (usually its physical id)."""

    def attribute(self, resource: str, attribute: str, path: Sequence[Any]) -> Any:
        """``get_attr``: one attribute, then indexed by ``path`` (Heat gives null on bad paths).

        An attribute the resource lacks is Heat's InvalidTemplateAttribute, naming it
        with its path, ``(name, *path)``, when there is one (Heat's resource proxy).
        """

    def all_attributes(self, resource: str) -> dict[str, Any]:
        """``get_attr: [res]``: every attribute of the resource but ``show`` (Heat's FnGetAtts)."""

    def file(self, key: str) -> str | None:
        """``get_file``: the content the client sent under ``key`` in ``files``, or None."""

    def facade(self, field: str) -> Any:
        """``resource_facade``: that field of the parent resource (provider templates only)."""

    def condition(self, name: str) -> bool:
        """Whether the named condition of the template holds.

        An unknown name raises ``ValueError('Invalid condition "<name>"')``, Heat's words.
        """

    def availability_zones(self) -> list[str]:
        """``Fn::GetAZs``."""


@dataclasses.dataclass(frozen=True)
class ParseContext:
    """What parsing needs: the version's function tables, and where we are."""

    functions: Mapping[str, type[Function]]
    condition_functions: Mapping[str, type[Function]]
    version: str  # e.g. "heat_template_version.2016-10-14", for messages
    in_condition: bool = False
    # Heat parses with the stack at hand: ``if`` picks its branch while parsing and
    # ``get_resource: {get_param: p}`` names its dependency. Given a resolver that
    # knows parameters and conditions, the functions do the same; without one, ``if``
    # keeps both branches and decides when resolved.
    resolver: Resolver | None = None
    # CFN only: ``Fn::FindInMap`` reads the template's ``Mappings`` (resolvers do
    # not know them), and ``Ref`` is a parameter reference exactly when it names a
    # parameter (pseudo parameters aside), else a resource reference.
    mappings: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    parameter_names: frozenset[str] = frozenset()
    # ``Ref`` names a resource exactly when the stack has one of that name (Heat's
    # ``name in stack``): every resource of the template while resources are parsed,
    # the enabled ones afterwards (outputs).
    resource_names: frozenset[str] = frozenset()
    # Heat's ``get_attr`` validation looks its resource up in the stack, failing with
    # InvalidTemplateReference; given the stack's lookup (enabled resources, asked only
    # when validating), validation does the same. Without it, that is left to resolving.
    has_resource: Callable[[str], bool] | None = dataclasses.field(default=None, compare=False)
    # Whether the named (enabled) resource may give the attribute, as the stack's resource
    # plugins know; without it, any attribute passes validation.
    has_attribute: Callable[[str, Any], bool] | None = dataclasses.field(default=None, compare=False)

    def table(self) -> Mapping[str, type[Function]]:
        return self.condition_functions if self.in_condition else self.functions

    def for_conditions(self) -> ParseContext:
        return dataclasses.replace(self, in_condition=True)


@dataclasses.dataclass(frozen=True)
class Reference:
    """A resource a snippet uses, and where.

    ``path`` is what Heat shows in InvalidTemplateReference's ``(in <path>)``
    (``server.Properties.networks``); ``function_path`` is the using function's
    own template path (``outputs.o.value.get_attr``).
    """

    resource: str
    path: str
    function_path: str = ""


class Function(abc.ABC):
    """One ``{name: args}`` whose ``args`` have already been parsed (functions within)."""

    def __init__(self, ctx: ParseContext, name: str, args: Any, path: str) -> None:
        self.ctx = ctx
        self.name = name
        self.args = args
        self.path = path
        self.check_args()

    @property
    def location(self) -> str:
        """The parse path of the spot this call occupies (its path without its own name)."""
        return self.path[: -len(self.name) - 1] if self.path != self.name else ""

    def check_args(self) -> None:  # noqa: B027 - an optional hook, empty by default
        """Argument checks that need nothing but the arguments; raise ValueError/TypeError.

        Called from the constructor, so a malformed call fails at parse time
        with the function's path, as Heat's does.
        """

    def validate(self) -> None:
        """Deeper validation of a parsed template; raise ValueError/TypeError/TemplateError.

        Nested calls are validated with paths relative to this one, as Heat does:
        an error deep inside shows as ``<path>.list_join: [1].get_attr: <message>``.
        """
        validate(self.args)

    @abc.abstractmethod
    def result(self, resolver: Resolver) -> Any:
        """The resolved value."""

    def dependencies(self, path: str | None = None) -> Iterator[Reference]:
        return dependencies(self.args, self.inner_path(path))

    def inner_path(self, path: str | None) -> str | None:
        """Heat's dependency path of this call's arguments, given the path of the call."""
        return None if path is None else f"{path}.{self.name}"

    def reference_path(self, path: str | None) -> str:
        """What a reference made here shows as ``(in <path>)``: ``path``, else the parse location."""
        return self.location if path is None else path

    def dep_attrs(self, resource: str) -> Iterator[str]:
        return dep_attrs(self.args, resource)

    def all_dep_attrs(self) -> Iterator[tuple[Any, Any]]:
        """Heat's ``all_dep_attrs``: every (resource, attribute key) read, however malformed."""
        return all_dep_attrs(self.args)

    # Where Heat defines this function's class, and the class's name there, when it differs.
    # Heat's messages embed a function's repr (``make_url``'s bad port, an invalid condition
    # definition): ``<heat.engine.hot.functions.GetParam {get_param: 'p'} -> 'value'>``.
    heat_module = "heat.engine.hot.functions"
    heat_name: str | None = None

    def __repr__(self) -> str:
        heat_class = f"{self.heat_module}.{self.heat_name or type(self).__name__}"
        return f"<{heat_class} {{{self.name}: {self.args!r}}} -> {self._repr_result()}>"

    def _repr_result(self) -> str:
        """Heat's: the value if it can be had, ``???`` when resolving fails with TypeError/ValueError.

        Any other failure escapes, as in Heat (where it then replaces the message being built).
        Without a resolver at hand the value cannot be had.
        """
        if self.ctx.resolver is None:
            return "???"
        try:
            return repr(self.result(self.ctx.resolver))
        except (TypeError, ValueError):
            return "???"


class Macro(Function):
    """A function that parses its own arguments (``if``, ``repeat``...): it gets them raw."""

    def __init__(self, ctx: ParseContext, name: str, args: Any, path: str,
                 parse_args: Callable[[Any, str, ParseContext], Any]) -> None:
        self._parse = parse_args
        super().__init__(ctx, name, args, path)

    def parse(self, snippet: Any, path: str, ctx: ParseContext | None = None) -> Any:
        return self._parse(snippet, path, ctx or self.ctx)


class Invalid(Function):
    """A function that may not appear here (e.g. ``get_attr`` inside a condition)."""

    def check_args(self) -> None:
        raise ValueError(f'The function "{self.name}" is invalid in this context')

    def result(self, resolver: Resolver) -> Any:  # pragma: no cover - never constructed
        raise AssertionError("Invalid functions are rejected at parse time")


def reference(fn: Function, name: Any, path: str | None) -> Reference:
    """A dependency of ``fn`` on the resource ``name``, shown at ``path`` (see Function.reference_path).

    Heat looks whatever the name is up in the stack: a non-string is simply not found
    (shown as its ``str``), but a list or map cannot be looked up at all, and Heat's
    TypeError escapes its validation (HTTP 500).
    """
    if isinstance(name, (list, dict)):
        raise UnhandledPythonError("TypeError", f"unhashable type: '{type(name).__name__}'")
    return Reference(name if isinstance(name, str) else str(name), fn.reference_path(path), fn.path)


def check_get_attr(fn: Function, resource: Any, attribute: Any, *, all_attributes: bool = False) -> None:
    """Heat's ``get_attr`` validation.

    Only when the parse context knows the stack's resources (``has_resource``): the
    resource must be there (InvalidTemplateReference), then the attribute is resolved
    (its failures are the validation's) and looked up among the resource's attribute
    names, which fails for a list or a map (TypeError: unhashable type) and, where the
    context knows the plugins (``has_attribute``), for a name the resource does not
    give (InvalidTemplateAttribute). Functions are resolved with the parse-time
    resolver, as Heat resolves them with its stack.
    ``all_attributes``: a missing attribute means all of them, and is not looked up.
    """
    has_resource = fn.ctx.has_resource
    if has_resource is None:
        return

    unknown = object()

    def value(snippet: Any) -> Any:
        if not contains_function(snippet):
            return snippet
        return resolve(snippet, fn.ctx.resolver) if fn.ctx.resolver is not None else unknown

    name = value(resource)
    if name is unknown:
        return
    # An unhashable name fails the lookup as in Heat (TypeError: unhashable type).
    if not has_resource(name):
        raise InvalidTemplateReference(str(name), "unknown")
    if all_attributes and attribute is None:
        return
    attribute = value(attribute)
    if attribute is unknown:
        return
    hash(attribute)
    if fn.ctx.has_attribute is not None and not fn.ctx.has_attribute(name, attribute):
        # Heat names the resource as the template wrote it, the attribute as resolved.
        shown = resource if isinstance(resource, str) else name
        raise InvalidTemplateAttribute(str(shown), attribute)


def condition_holds(value: Any, resolver: Resolver) -> bool:
    """Whether a resolved condition argument holds: a boolean, a condition's name, or null.

    Heat takes null as true and any other value that is not a name as an invalid condition.
    """
    if isinstance(value, bool):
        return value
    if value is None:
        return True
    if not isinstance(value, str):
        raise ValueError(f'Invalid condition "{value}"')
    return resolver.condition(value)


def parse(snippet: Any, path: str, ctx: ParseContext) -> Any:
    """Turn function calls in ``snippet`` into :class:`Function` objects.

    A one-key map whose key is not a function of this version stays plain data:
    ``{str_split: ...}`` in a 2015-04-30 template is just a map (Heat does this).
    """
    if isinstance(snippet, Mapping):
        if len(snippet) == 1:
            name, args = next(iter(snippet.items()))
            cls = ctx.table().get(name) if isinstance(name, str) else None
            if cls is not None:
                fn_path = f"{path}.{name}" if path else name
                try:
                    if issubclass(cls, Macro):
                        return cls(ctx, name, args, fn_path, parse)
                    return cls(ctx, name, parse(args, fn_path, ctx), fn_path)
                except (ValueError, TypeError, KeyError) as exc:
                    raise StackValidationFailed(str(exc), (fn_path,)) from None
        return {k: parse(v, f"{path}.{k}" if path else str(k), ctx) for k, v in snippet.items()}
    if isinstance(snippet, list):
        return [parse(v, f"{path}[{i}]", ctx) for i, v in enumerate(snippet)]
    return snippet


def validate(snippet: Any, path: str | Sequence[PathItem] = ()) -> None:
    """Validate every function in ``snippet``, which sits at ``path``.

    Like Heat, any error a function's validation raises (a TemplateError too,
    and KeyError shown as its repr) becomes StackValidationFailed at
    ``path`` + the function's name, and the message of an error from a nested
    call keeps that call's relative path: ``p.list_join: [1].get_attr: ...``.
    """
    where: list[PathItem] = ([path] if path else []) if isinstance(path, str) else list(path)
    _validate(snippet, where)


def _validate(snippet: Any, path: list[PathItem]) -> None:
    if isinstance(snippet, Function):
        try:
            snippet.validate()
        except AssertionError:
            raise
        except Exception as exc:
            raise StackValidationFailed(str(exc), (*path, snippet.name)) from None
    elif isinstance(snippet, Mapping):
        for key, value in snippet.items():
            _validate(value, [*path, key])
    elif isinstance(snippet, list):
        # Heat folds the index into the last path item: ``networks[0]``.
        parent = str(path[-1]) if path else ""
        for index, value in enumerate(snippet):
            _validate(value, [*path[:-1], f"{parent}[{index}]"])


def resolve(snippet: Any, resolver: Resolver, *, nullable: bool = False) -> Any:
    """The value of ``snippet`` with every function replaced by its result.

    Inside maps and lists a :data:`REMOVED` result drops the key or item; at
    the top level it becomes None unless the caller is ``nullable``. The outermost
    call is one evaluation for the value budgets.
    """
    return budgets.metered(lambda: _resolve(snippet, resolver, nullable))


def _resolve(snippet: Any, resolver: Resolver, nullable: bool) -> Any:
    if isinstance(snippet, Function):
        # Every function's value, intermediate or final, is measured here (the one place
        # they all pass), against its own budget and the whole evaluation's.
        try:
            value = snippet.result(resolver)
        except RecursionError:
            # Functions that recurse per argument (str_replace per placeholder, as Heat's)
            # run out of stack on thousands of them: the user's input, so a 400.
            raise budgets.ValueTooLarge(f"{snippet.name}: too many values nested or "
                                        "placeholders to evaluate.") from None
        budgets.charge(value, snippet.name)
        if value is REMOVED and not nullable:
            return None
        return value
    if isinstance(snippet, Mapping):
        out = {}
        for key, value in snippet.items():
            resolved = _resolve(value, resolver, True)
            if resolved is not REMOVED:
                out[key] = resolved
        return out
    if isinstance(snippet, list):
        items = (_resolve(v, resolver, True) for v in snippet)
        return [item for item in items if item is not REMOVED]
    return snippet


def dependencies(snippet: Any, path: str | None = None) -> Iterator[Reference]:
    """Every resource the functions in ``snippet`` use, and where.

    With ``path`` (Heat passes ``<resource>.Properties`` or ``<resource>.Metadata``),
    each :class:`Reference` carries the path Heat shows in InvalidTemplateReference:
    ``w.Properties.value``, ``w.Properties.v.list_join[1][0]``. Without it, the
    reference carries the parse location of the function that makes it.
    """
    if isinstance(snippet, Function):
        yield from snippet.dependencies(path)
    elif isinstance(snippet, Mapping):
        for key, value in snippet.items():
            yield from dependencies(value, None if path is None else f"{path}.{key}")
    elif isinstance(snippet, list):
        for index, value in enumerate(snippet):
            yield from dependencies(value, None if path is None else f"{path}[{index}]")


def dep_attrs(snippet: Any, resource: str) -> Iterator[str]:
    """The attributes of ``resource`` that ``snippet`` reads (:data:`ALL_ATTRIBUTES` for all)."""
    if isinstance(snippet, Function):
        yield from snippet.dep_attrs(resource)
    elif isinstance(snippet, Mapping):
        for value in snippet.values():
            yield from dep_attrs(value, resource)
    elif isinstance(snippet, list):
        for value in snippet:
            yield from dep_attrs(value, resource)


def all_dep_attrs(snippet: Any) -> Iterator[tuple[Any, Any]]:
    """Every (resource name, attribute key) that the functions in ``snippet`` read.

    As Heat's: the key is the attribute name, or ``(name, *path)`` for ``get_attr``
    with a path from 2014-10-16 on, or :data:`ALL_ATTRIBUTES`; names that fail to
    resolve are left out. Heat keeps these in dicts and sets while validating a stack,
    so one that cannot be hashed fails there.
    """
    if isinstance(snippet, Function):
        yield from snippet.all_dep_attrs()
    elif isinstance(snippet, Mapping):
        for value in snippet.values():
            yield from all_dep_attrs(value)
    elif isinstance(snippet, list):
        for value in snippet:
            yield from all_dep_attrs(value)


def contains_function(snippet: Any, kinds: tuple[type[Function], ...] = (Function,)) -> bool:
    """Whether ``snippet`` holds any function (of the given classes) anywhere."""
    if isinstance(snippet, kinds):
        return True
    if isinstance(snippet, Function):
        return contains_function(snippet.args, kinds)
    if isinstance(snippet, Mapping):
        return any(contains_function(v, kinds) for v in snippet.values())
    if isinstance(snippet, list):
        return any(contains_function(v, kinds) for v in snippet)
    return False
