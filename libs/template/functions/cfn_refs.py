"""CFN functions that reach outside the snippet: parameters, resources, Mappings, the parent.

``Ref`` is two functions in one: Heat decides while parsing whether it names a
resource (a dependency, resolved to the reference id) or a parameter. As in
Heat, a name the stack has a resource of is a resource reference; any other
name (a parameter, a pseudo parameter, or nothing at all) a parameter one.

Class names follow Heat's where Python puts them into messages
(``cannot unpack non-iterable Join object``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from libs.template import cfn_format
from libs.template.errors import InvalidTemplateReference
from libs.template.functions.base import (
    ALL_ATTRIBUTES,
    HEAT_CFN_MODULE,
    Function,
    ParseContext,
    Reference,
    Resolver,
    check_get_attr,
    contains_function,
    reference,
    resolve,
)

# HOT 2013-05-23 also has ``Ref``; there it sees HOT's pseudo parameters
# (OS::region is declared by Heat but never defined, so it is not one).
_HOT_PSEUDO_PARAMETERS = frozenset({"OS::stack_id", "OS::stack_name", "OS::project_id"})

def heat_type_name(value: Any) -> str:
    """The name Heat's class for ``value`` has, for messages that embed a class name."""
    return getattr(value, "heat_name", None) or type(value).__name__


def _pseudo_parameters(ctx: ParseContext) -> frozenset[str]:
    if ctx.version.startswith("heat_template_version"):
        return _HOT_PSEUDO_PARAMETERS
    return cfn_format.PSEUDO_PARAMETERS


def _static(value: Any, ctx: ParseContext) -> Any:
    """``value`` if known without resolving; a function's value only if parsing has a resolver."""
    if isinstance(value, Function):
        return resolve(value, ctx.resolver) if ctx.resolver is not None else None
    return value


class Ref(Function):
    """Refers to a parameter (its value) or a resource (its reference id), by name."""

    heat_module = HEAT_CFN_MODULE

    def __new__(cls, ctx: ParseContext, name: str, args: Any, path: str) -> Ref:
        kind = _ref_class(ctx, args) if cls is Ref else cls
        return super().__new__(kind)

    def result(self, resolver: Resolver) -> Any:  # pragma: no cover - always a subclass
        raise NotImplementedError


def _ref_class(ctx: ParseContext, args: Any) -> type[Ref]:
    # Heat looks the argument up in the stack's resources; a list, map or
    # function cannot be a key there.
    if isinstance(args, (list, dict, Function)):
        raise TypeError(f"unhashable type: '{heat_type_name(args)}'")
    if isinstance(args, str) and args in ctx.resource_names:
        return ResourceRef
    return ParamRef


class ParamRef(Ref):
    """The value of a template parameter or pseudo parameter."""

    def result(self, resolver: Resolver) -> Any:
        name = resolve(self.args, resolver)
        if name not in self.ctx.parameter_names | _pseudo_parameters(self.ctx):
            raise InvalidTemplateReference(str(name), "unknown")
        return resolver.parameter(name)


class ResourceRef(Ref):
    """The reference id (usually the physical id) of a resource of this template."""

    # Heat makes a resource ``Ref`` its HOT ``get_resource`` class.
    heat_module = "heat.engine.hot.functions"
    heat_name = "GetResource"

    def result(self, resolver: Resolver) -> Any:
        return resolver.reference(self.args)

    def dependencies(self, path: str | None = None) -> Iterator[Reference]:
        yield from super().dependencies(path)
        yield Reference(self.args, self.reference_path(path), self.path)


class GetAtt(Function):
    """The value of one attribute of a resource of this template."""

    heat_module = HEAT_CFN_MODULE

    def check_args(self) -> None:
        try:
            self._resource, self._attribute = self.args
        except ValueError:
            raise ValueError(f'Arguments to "{self.name}" must be of the form '
                             "[resource_name, attribute]") from None

    def validate(self) -> None:
        super().validate()
        check_get_attr(self, self._resource, self._attribute)

    def result(self, resolver: Resolver) -> Any:
        attribute = resolve(self._attribute, resolver)
        return resolver.attribute(resolve(self._resource, resolver), attribute, [])

    def dependencies(self, path: str | None = None) -> Iterator[Reference]:
        yield from super().dependencies(path)
        # A name that only resolving can tell is no dependency yet; any other (null too)
        # is looked up, as in Heat.
        if not isinstance(self._resource, Function) or self.ctx.resolver is not None:
            yield reference(self, _static(self._resource, self.ctx), path)

    def all_dep_attrs(self) -> Iterator[tuple[Any, Any]]:
        yield from super().all_dep_attrs()
        if self.ctx.resolver is None and contains_function([self._resource, self._attribute]):
            return
        try:  # Heat ignores any failure to work these out
            yield _static(self._resource, self.ctx), _static(self._attribute, self.ctx)
        except Exception:
            return

    def dep_attrs(self, resource: str) -> Iterator[str]:
        yield from super().dep_attrs(resource)
        if _static(self._resource, self.ctx) != resource:
            return
        if not isinstance(self._attribute, Function):
            if isinstance(self._attribute, str):
                yield self._attribute
        elif self.ctx.resolver is None:
            # Unknown until resolved: keep them all rather than miss the one used.
            yield ALL_ATTRIBUTES
        else:
            try:
                attribute = resolve(self._attribute, self.ctx.resolver)
            except Exception:  # Heat ignores it here; resolving reports it
                return
            if isinstance(attribute, str):
                yield attribute


class FindInMap(Function):
    """Looks up ``[map, key, value]`` in the template's Mappings section."""

    heat_module = HEAT_CFN_MODULE

    def check_args(self) -> None:
        try:
            self._map, self._key, self._value = self.args
        except ValueError as exc:
            # Heat turns this one into a KeyError, so the message shows quoted.
            raise KeyError(str(exc)) from None

    def result(self, resolver: Resolver) -> Any:
        mapping = self.ctx.mappings[resolve(self._map, resolver)]
        key = resolve(self._key, resolver)
        value = resolve(self._value, resolver)
        return mapping[key][value]


class GetAZs(Function):
    """The availability zones of the cloud (the region argument is ignored)."""

    heat_module = HEAT_CFN_MODULE

    def result(self, resolver: Resolver) -> Any:
        return resolver.availability_zones()


class ResourceFacade(Function):
    """Metadata, DeletionPolicy or UpdatePolicy of the parent resource of a provider template."""

    heat_module = HEAT_CFN_MODULE

    def check_args(self) -> None:
        # Compared, not hashed: Heat's check takes any argument, lists included.
        if self.args not in tuple(cfn_format.FACADE_FIELDS):
            raise ValueError(f'Incorrect arguments to "{self.name}" should be one of: '
                             + ", ".join(cfn_format.FACADE_FIELDS))

    def result(self, resolver: Resolver) -> Any:
        return resolver.facade(cfn_format.FACADE_FIELDS[resolve(self.args, resolver)])
