"""HOT ``parameter_groups``: checked after the parameters, only when the section is non-empty.

Errors are ``StackValidationFailed`` reading ``Parameter Groups error:
parameter_groups.<label>: <message>`` (an unlabelled group gives
``parameter_groups.:``). In ``POST /validate`` the caller turns them into
Heat's HTTPBadRequest like any other validation failure.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from libs.template.errors import StackValidationFailed, UnhandledPythonError
from libs.template.parameters import Parameters, ParamSchema

SECTION = "parameter_groups"
_ERROR = "Parameter Groups error"


def group_parameter_names(schemas: Mapping[str, ParamSchema]) -> list[str]:
    """The names a group may list: Heat builds them without a stack, so besides the
    template's parameters ``OS::stack_id`` and ``OS::project_id`` are valid, but
    ``OS::stack_name`` is not."""
    return Parameters(schemas, dialect="hot").names()


def _label(group: Mapping[Any, Any]) -> Any:
    label = group.get("label", "")
    if not isinstance(label, (str, int)):
        # Heat's path rendering calls label.isdigit(), which only strings have.
        raise UnhandledPythonError(
            "AttributeError", f"'{type(label).__name__}' object has no attribute 'isdigit'")
    return label


def validate_parameter_groups(groups: Any, parameter_names: Collection[Any]) -> None:
    """Raise StackValidationFailed for the first problem Heat would report."""
    if not groups:
        return
    if not isinstance(groups, list):
        raise StackValidationFailed(f"The {SECTION} should be a list.", [SECTION], _ERROR)
    grouped: list[Any] = []
    for group in groups:
        if not isinstance(group, Mapping):
            raise UnhandledPythonError(
                "AttributeError", f"'{type(group).__name__}' object has no attribute 'get'")
        members = group.get("parameters")
        if members is None:
            raise StackValidationFailed("The parameters must be provided for each parameter group.",
                                        [SECTION, _label(group)], _ERROR)
        if not isinstance(members, list):
            raise StackValidationFailed("The parameters of parameter group should be a list.",
                                        [SECTION, _label(group)], _ERROR)
        for name in members:
            if name in grouped:
                raise StackValidationFailed(
                    f"The {name} parameter must be assigned to one parameter group only.",
                    [SECTION, _label(group)], _ERROR)
            grouped.append(name)
            if name not in parameter_names:
                raise StackValidationFailed(
                    f"The grouped parameter {name} does not reference a valid parameter.",
                    [SECTION, _label(group)], _ERROR)
