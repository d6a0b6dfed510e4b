"""Heat's exceptions a Neutron type raises or fails with, with Heat's words."""

from __future__ import annotations

from typing import Any

from libs.resources.steps import Failed
from libs.template.errors import StackValidationFailed


class PropertyConflict(StackValidationFailed):
    """Heat's ``ResourcePropertyConflict``."""

    error_type = "ResourcePropertyConflict"

    def __init__(self, *names: str) -> None:
        super().__init__(f"Cannot define the following properties at the same time: {', '.join(names)}.")


class PropertyUnspecified(StackValidationFailed):
    """Heat's ``PropertyUnspecifiedError``."""

    error_type = "PropertyUnspecifiedError"

    def __init__(self, *names: str) -> None:
        super().__init__(f"At least one of the following properties must be specified: {', '.join(names)}.")


def not_built(status: Any) -> Failed | None:
    """Heat's ``is_built`` failures: None for BUILD, ACTIVE and DOWN."""
    if status in ("BUILD", "ACTIVE", "DOWN"):
        return None
    if status in ("ERROR", "DEGRADED"):
        return Failed(f'Went to status {status} due to "Unknown"', "ResourceInError")
    return Failed(f'Resource is not built - Unknown status {status} due to "Unknown"',
                  "ResourceUnknownStatus")


class PropertyDependency(StackValidationFailed):
    """Heat's ``ResourcePropertyDependency``."""

    error_type = "ResourcePropertyDependency"

    def __init__(self, prop: str, needs: str) -> None:
        super().__init__(f"{prop} cannot be specified without {needs}.")
