"""openstacksdk results as JSON: what a :class:`~libs.cloud.calls.Answer` carries.

A resource becomes its ``to_dict()`` with openstacksdk's attribute names
(``is_admin_state_up``, ``flavor``...), body fields only, without the computed
``location``; a listing (a generator that pages on demand) becomes the list of
every page's resources; None stays None.
"""

from __future__ import annotations

import datetime
import enum
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from openstack import resource


def to_json(value: Any) -> Any:
    """A JSON value (dicts, lists, strings, numbers, booleans, None) for an sdk result."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, resource.Resource):
        return to_json(value.to_dict(body=True, headers=False, computed=False))
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, enum.Enum):
        return to_json(value.value)
    if isinstance(value, (datetime.datetime, datetime.date, uuid.UUID)):
        return value.isoformat() if not isinstance(value, uuid.UUID) else str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, Iterable):  # lists, tuples, sets, and the sdk's paging generators
        return [to_json(item) for item in value]
    return str(value)
