"""HOT functions that read outside the snippet: parameters, resources, files, the parent resource.

Also :class:`Removed`, which stands for a function a template version dropped.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, cast

from libs.template.errors import InvalidTemplateVersion
from libs.template.functions.base import (
    ALL_ATTRIBUTES,
    Function,
    Reference,
    Resolver,
    check_get_attr,
    contains_function,
    reference,
    resolve,
)

# A name or attribute that can only be known by resolving (no resolver at parse time).
UNKNOWN: Any = object()


def select_path(value: Any, path: Sequence[Any]) -> Any:
    """Index ``value`` by ``path`` as Heat selects inside an attribute; None on any bad step.

    Unlike ``get_param``, a string index into a list is a bad step here.
    """
    try:
        for key in path:
            if not isinstance(value, (Mapping, Sequence)) or not isinstance(key, (str, int)):
                raise TypeError(key)
            value = cast(Any, value)[key]
    except (KeyError, IndexError, TypeError):
        return None
    return value


def _known(fn: Function, snippet: Any) -> Any:
    """``snippet``'s value before resolution, when it has no function or the parse has a resolver."""
    if not contains_function(snippet):
        return snippet
    if fn.ctx.resolver is None:
        return UNKNOWN
    return resolve(snippet, fn.ctx.resolver)


def _reference(fn: Function, name: Any, path: str | None) -> Iterator[Reference]:
    if name is not UNKNOWN:
        yield reference(fn, name, path)


class GetParam(Function):
    """Return the value of a parameter, optionally indexed by a path into it."""

    def result(self, resolver: Resolver) -> Any:
        args = resolve(self.args, resolver)
        if not args:
            raise ValueError(f'Function "{self.name}" must have arguments')
        if isinstance(args, str):
            name, path = args, []
        elif isinstance(args, Sequence):
            name, path = args[0], list(args[1:])
        else:
            raise TypeError(f'Argument to "{self.name}" must be string or list')
        if not isinstance(name, str):
            raise TypeError(f'Parameter name in "{self.name}" must be string')

        value = resolver.parameter(name)
        # Heat answers "" to any bad path: a missing key, an index out of range,
        # a non-numeric index into a list, a path into a scalar.
        try:
            for key in path:
                value = _step(value, key)
        except (KeyError, IndexError, TypeError):
            return ""
        return value


def _step(collection: Any, key: Any) -> Any:
    if not isinstance(collection, (Mapping, Sequence)) or not isinstance(key, (str, int)):
        raise TypeError(key)
    if isinstance(collection, Sequence) and isinstance(key, str):
        try:
            key = int(key)
        except ValueError:
            raise TypeError(key) from None
    return collection[key]


class GetResource(Function):
    """Return the reference ID (usually the physical ID) of a resource."""

    def dependencies(self, path: str | None = None) -> Iterator[Reference]:
        yield from super().dependencies(path)
        yield from _reference(self, _known(self, self.args), path)

    def result(self, resolver: Resolver) -> Any:
        return resolver.reference(resolve(self.args, resolver))


class GetAttThenSelect(Function):
    """Return an attribute of a resource, then select an item of it by a path."""

    resource_arg: Any
    attribute_arg: Any
    path_args: list[Any]

    def check_args(self) -> None:
        self.resource_arg, self.attribute_arg, self.path_args = self._split_args()

    def _split_args(self) -> tuple[Any, Any, list[Any]]:
        if not isinstance(self.args, Sequence) or isinstance(self.args, str):
            raise TypeError(f'Argument to "{self.name}" must be a list')
        if len(self.args) < 2:
            raise ValueError(f'Arguments to "{self.name}" must be of the form '
                             '[resource_name, attribute, (path), ...]')
        return self.args[0], self.args[1], list(self.args[2:])

    def validate(self) -> None:
        super().validate()
        check_get_attr(self, self.resource_arg, self.attribute_arg,
                       all_attributes=isinstance(self, GetAttAllAttributes))

    def resource_name(self) -> Any:
        """The resource named, if known before resolution, else UNKNOWN."""
        return _known(self, self.resource_arg)

    def dependencies(self, path: str | None = None) -> Iterator[Reference]:
        yield from super().dependencies(path)
        yield from _reference(self, self.resource_name(), path)

    def dep_attrs(self, resource: str) -> Iterator[str]:
        yield from super().dep_attrs(resource)
        if self.resource_name() == resource:
            attribute = self.attribute_name()
            if isinstance(attribute, str):
                yield attribute

    def attribute_name(self) -> Any:
        """The attribute read, if known before resolution: a name, ALL_ATTRIBUTES, or UNKNOWN."""
        # Heat ignores any failure to work the attribute out here.
        try:
            return _known(self, self.attribute_arg)
        except Exception:
            return UNKNOWN

    def all_dep_attrs(self) -> Iterator[tuple[Any, Any]]:
        yield from super().all_dep_attrs()
        # Heat ignores any failure to work these out.
        try:
            name, key = _known(self, self.resource_arg), self.attribute_key()
        except Exception:
            return
        if name is not UNKNOWN and key is not UNKNOWN:
            yield name, key

    def attribute_key(self) -> Any:
        """Heat's key for what is read: the attribute name (its path is selected afterwards)."""
        return _known(self, self.attribute_arg)

    def result(self, resolver: Resolver) -> Any:
        attribute = resolve(self.attribute_arg, resolver)
        value = resolver.attribute(resolve(self.resource_arg, resolver), attribute, ())
        if value is None:
            return None
        return select_path(value, resolve(self.path_args, resolver))


class GetAtt(GetAttThenSelect):
    """Return an attribute of a resource, or an item of it selected by a path."""

    def attribute_key(self) -> Any:
        """The attribute name, or ``(name, *path)`` with a path: the resource gives the item."""
        path, attribute = _known(self, self.path_args), _known(self, self.attribute_arg)
        if path is UNKNOWN or attribute is UNKNOWN:
            return UNKNOWN
        return (attribute, *path) if path else attribute

    def result(self, resolver: Resolver) -> Any:
        path = resolve(self.path_args, resolver)
        attribute = resolve(self.attribute_arg, resolver)
        return resolver.attribute(resolve(self.resource_arg, resolver), attribute, path)


class GetAttAllAttributes(GetAtt):
    """Return an attribute of a resource (or an item of it), or all its attributes as a map."""

    def _split_args(self) -> tuple[Any, Any, list[Any]]:
        if not self.args:
            raise ValueError(f'Arguments to "{self.name}" can be of the next forms: '
                             '[resource_name] or [resource_name, attribute, (path), ...]')
        # A one-character string passes as a one-item list, as it does in Heat.
        if not isinstance(self.args, Sequence):
            raise TypeError(f'Argument to "{self.name}" must be a list')
        if len(self.args) > 1:
            return super()._split_args()
        return self.args[0], None, []

    def attribute_name(self) -> Any:
        if self.attribute_arg is None:
            return ALL_ATTRIBUTES
        return super().attribute_name()

    def attribute_key(self) -> Any:
        if self.attribute_arg is None:
            return ALL_ATTRIBUTES
        return super().attribute_key()

    def result(self, resolver: Resolver) -> Any:
        # An explicit null attribute name also means "all of them".
        if self.attribute_arg is None:
            return resolver.all_attributes(resolve(self.resource_arg, resolver))
        return super().result(resolver)


class GetFile(Function):
    """Return the content of a file sent with the template, by its key in ``files``."""

    def result(self, resolver: Resolver) -> Any:
        key = resolve(self.args, resolver)
        if not isinstance(key, str):
            raise TypeError(f'Argument to "{self.name}" must be a string')
        content = resolver.file(key)
        if content is None:
            raise ValueError(f'No content found in the "files" section for {self.name} path: {key}')
        return content


class ResourceFacade(Function):
    """Return the metadata, deletion policy or update policy of the parent (facade) resource."""

    FIELDS = ("metadata", "deletion_policy", "update_policy")

    def check_args(self) -> None:
        field = self.args
        if isinstance(field, Function):
            # Heat compares the call's value, which needs the stack at hand.
            if self.ctx.resolver is None:
                return
            try:
                field = resolve(field, self.ctx.resolver)
            except (TypeError, ValueError):
                field = UNKNOWN
        if field not in self.FIELDS:
            raise ValueError(f'Incorrect arguments to "{self.name}" should be one of: '
                             + ", ".join(self.FIELDS))

    def result(self, resolver: Resolver) -> Any:
        field = resolve(self.args, resolver)
        if field not in self.FIELDS:
            return None
        return resolver.facade(field)


class Removed(Function):
    """A function this template version no longer has: using it fails validation."""

    def validate(self) -> None:
        raise InvalidTemplateVersion(
            f"The function {self.name} is not supported in this version of HOT.")

    def result(self, resolver: Resolver) -> Any:
        # Heat gives the call back unevaluated; validation has refused it already.
        return {self.name: resolve(self.args, resolver)}
