"""Errors of the template language, named and worded as Heat names and words them.

``error_type`` is Heat's exception class name: the API puts it in the fault
body's ``error.type``, and clients and operators match on it. Messages keep
Heat's wording (its typos included) because tools and people grep for them.
"""

from __future__ import annotations

from collections.abc import Sequence

PathItem = str | int


def format_path(path: Sequence[PathItem]) -> str:
    """Heat's path rendering: ``resources.server.properties.networks[0].port``."""
    out = ""
    for item in path:
        if isinstance(item, int) or (isinstance(item, str) and item.isdigit()):
            out += f"[{item}]"
        elif out:
            out += f".{item}"
        else:
            out = str(item)
    return out


class TemplateError(Exception):
    """Base of every error Ember names as Heat names it (the template language's and the API's).

    It carries no HTTP status: the API maps the type to one in one table
    (``services.api.faults``), and the engine puts ``error_type`` in reasons.
    """

    error_type = "StackValidationFailed"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class StackValidationFailed(TemplateError):
    """Heat's ``StackValidationFailed``: ``[<error>: ]<path>: <message>``."""

    error_type = "StackValidationFailed"

    def __init__(self, message: str, path: Sequence[PathItem] = (), error: str = "") -> None:
        self.path = tuple(path)
        self.error = error
        self.detail = message
        rendered = format_path(self.path)
        text = (f"{error}: " if error else "") + (f"{rendered}: " if rendered else "") + message
        super().__init__(text)

    def prefixed(self, *outer: PathItem) -> StackValidationFailed:
        """The same error with ``outer`` path items put in front of its path."""
        return StackValidationFailed(self.detail, (*outer, *self.path), self.error)


class InvalidTemplateVersion(TemplateError):
    error_type = "InvalidTemplateVersion"

    def __init__(self, explanation: str) -> None:
        super().__init__(f"The template version is invalid: {explanation}")


class InvalidTemplateSection(TemplateError):
    error_type = "InvalidTemplateSection"

    def __init__(self, section: str) -> None:
        super().__init__(f"The template section is invalid: {section}")


class InvalidSchemaError(TemplateError):
    error_type = "InvalidSchemaError"


class UnknownUserParameter(TemplateError):
    error_type = "UnknownUserParameter"

    def __init__(self, key: str) -> None:
        super().__init__(f"The Parameter ({key}) was not defined in template.")
        self.key = key


class UserParameterMissing(TemplateError):
    error_type = "UserParameterMissing"

    def __init__(self, key: str) -> None:
        super().__init__(f"The Parameter ({key}) was not provided.")
        self.key = key


class ImmutableParameterModified(TemplateError):
    error_type = "ImmutableParameterModified"

    def __init__(self, *keys: str) -> None:
        super().__init__("The following parameters are immutable and may not be updated: "
                         + ", ".join(keys))
        self.keys = keys


class InvalidTemplateReference(TemplateError):
    error_type = "InvalidTemplateReference"

    def __init__(self, resource: str, key: str) -> None:
        super().__init__(f'The specified reference "{resource}" (in {key}) is incorrect.')


class InvalidTemplateAttribute(TemplateError):
    error_type = "InvalidTemplateAttribute"

    def __init__(self, resource: str, key: object) -> None:
        super().__init__(f"The Referenced Attribute ({resource} {key}) is incorrect.")


class InvalidExternalResourceDependency(TemplateError):
    """An external resource (``external_id``) that says it depends on others.

    Heat's API has no mapping for this exception, so it answers 500; a template
    is the client's error, so Ember answers 400 (no template may give a 5xx).
    """

    error_type = "InvalidExternalResourceDependency"

    def __init__(self, resource_type: str, external_id: object) -> None:
        super().__init__(f"Invalid dependency with external {resource_type} resource: {external_id}")


class CircularDependencyException(TemplateError):
    error_type = "CircularDependencyException"

    def __init__(self, cycle: str) -> None:
        super().__init__(f"Circular Dependency Found: {cycle}")


class InvalidBreakPointHook(TemplateError):
    error_type = "InvalidBreakPointHook"


class InvalidRestrictedAction(TemplateError):
    error_type = "InvalidRestrictedAction"


class InvalidEnvironment(TemplateError):
    """Heat raises a plain ValueError here, which the API shows as HTTPBadRequest."""

    error_type = "HTTPBadRequest"


class InvalidMergeStrategyForParam(TemplateError):
    error_type = "InvalidMergeStrategyForParam"

    def __init__(self, strategy: str, param: str) -> None:
        super().__init__(f"Invalid merge strategy '{strategy}' for parameter '{param}'.")


class ConflictingMergeStrategyForParam(TemplateError):
    error_type = "ConflictingMergeStrategyForParam"

    def __init__(self, strategy: str, param: str, env_file: str) -> None:
        super().__init__(f"Conflicting merge strategy '{strategy}' for parameter '{param}' "
                         f"in file '{env_file}'.")


class NotFound(TemplateError):
    """Heat's generic ``NotFound``, e.g. an unknown template version in the API."""

    error_type = "NotFound"


class EntityNotFound(TemplateError):
    """Heat's ``EntityNotFound``: ``The Stack (name) could not be found.``"""

    error_type = "EntityNotFound"

    def __init__(self, entity: str, name: str) -> None:
        super().__init__(f"The {entity} ({name}) could not be found.")


class NotSupported(TemplateError):
    error_type = "NotSupported"

    def __init__(self, feature: str) -> None:
        super().__init__(f"{feature} is not supported.")


class Invalid(TemplateError):
    """Heat's ``Invalid``: data the engine refuses, shown as a 400."""

    error_type = "Invalid"

    def __init__(self, reason: str) -> None:
        super().__init__(f"Data supplied was not valid: {reason}")


class RequestLimitExceeded(TemplateError):
    error_type = "RequestLimitExceeded"

    def __init__(self, message: str) -> None:
        super().__init__(f"Request limit exceeded: {message}")


# What Heat answers (a bare webob HTTPBadRequest) where its API meets a failure it has no words for.
MALFORMED = ("The server could not comply with the request since it is either malformed or otherwise "
             "incorrect.")


class MalformedRequest(TemplateError):
    """Heat's bare 400: a body whose parts have the wrong kind, a preview whose metadata fails."""

    error_type = "HTTPBadRequest"

    def __init__(self, message: str = MALFORMED) -> None:
        super().__init__(message)


class TemplateParseError(TemplateError):
    """The text is neither valid YAML nor JSON (Heat: a ValueError shown as HTTPBadRequest)."""

    error_type = "HTTPBadRequest"


class FunctionError(TemplateError):
    """A function failed while resolving (a ValueError/TypeError in Heat).

    Raised inside resolution; callers attach the path (outputs turn it into
    ``output_error``, properties into ``StackValidationFailed``).
    """

    error_type = "StackValidationFailed"


class UnhandledPythonError(TemplateError):
    """A plain Python exception that Heat's engine lets escape (no HeatException around it).

    Heat's fault middleware names it by its class (``error.type`` is
    ``ValueError``, ``TypeError``...) with Python's text, and answers 400 for
    ValueError and AttributeError, 500 for anything else. Ember keeps the type
    and text but always answers 400: what a template, parameter or environment
    says is the client's error, never the server's. Seen with malformed
    parameter schemas (``range: {min: abc}``), groups and environments.
    """

    def __init__(self, python_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = python_type
