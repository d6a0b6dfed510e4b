"""A digest of everything the check of a stack request reads, so that one checked before is not again.

Checking a request (``operations.checked_create`` and ``checked_update``) is a pure
function of the request, the stack's name, id and project, the limits, the resource
types, the budgets and the code: given the same of each, it answers the same. A desired
state stored with the digest of what it was checked from lets a no-change update (the
same template, environment, files and parameters sent again) skip the check: for a
flat template of 10^5 resources the check takes seconds, the digest milliseconds.

What the check asks of a cloud (a flavor that must exist) can change while the request
does not: a request whose check asked the cloud is given no digest, and is checked again.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Collection, Mapping
from importlib import metadata
from typing import Any

import orjson

from libs.template import budgets
from libs.template.limits import Limits
from libs.template.request import StackRequest

# Raised when what the check reads, or how the digest is made, changes.
_DIGEST_FORMAT = 1


def _code_version() -> str:
    try:
        return metadata.version("ember")
    except metadata.PackageNotFoundError:
        return "unknown"


_CODE = _code_version()


@dataclasses.dataclass(frozen=True)
class CheckInputs:
    """What a check reads besides the request (``operations.Checking`` without the cloud's answers)."""

    project: str
    stack_name: str
    stack_id: str
    limits: Limits
    builtin_types: Collection[str] | None
    plugin_checks: bool
    facade: Mapping[str, Any] | None
    top: bool
    # Whether the check may ask a cloud (with none, cloud-checked constraints are not checked).
    cloud: bool


def digest(stack_request: StackRequest, inputs: CheckInputs) -> str | None:
    """The digest of a check's inputs; None for a request that cannot be written as JSON.

    The request must hold values parsed from JSON only (as an API body's maps): JSON writes
    a tuple as a list and NaN as null, which the check may not take alike, and the digest
    must tell apart every two requests that are not equal.
    """
    whole = [
        _DIGEST_FORMAT, _CODE, dataclasses.astuple(budgets.current()),
        inputs.project, inputs.stack_name, inputs.stack_id, dataclasses.astuple(inputs.limits),
        None if inputs.builtin_types is None else sorted(inputs.builtin_types), inputs.plugin_checks,
        inputs.facade, inputs.top, inputs.cloud,
        stack_request.template, stack_request.files, stack_request.environment,
        stack_request.environment_files, stack_request.parameters,
    ]
    try:
        text = orjson.dumps(whole)
    except TypeError:
        return None
    return hashlib.sha256(text).hexdigest()
