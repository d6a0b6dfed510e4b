"""What a failed openstacksdk call means: its exception classified into a :class:`CloudError`.

openstacksdk raises its own ``HttpException`` family for answers it got
(``status_code``, the cloud's message in ``details``), keystoneauth raises
``HttpError`` (``http_status``) for authentication and discovery, and
``ConnectionError``/timeouts when nothing answered. A quota refusal has no
status of its own: 413, 429, or a 403/409 whose text says so (Nova's
``Quota exceeded for cores``, Neutron's ``OverQuota`` type, Cinder's
``...exceeded for quota...``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import requests
from keystoneauth1 import exceptions as ksa_exceptions
from openstack import exceptions as sdk_exceptions

from libs.cloud.calls import CloudError, ErrorKind

_QUOTA_TEXT = re.compile(r"quota|over ?limit|limit ?exceeded", re.IGNORECASE)
_UNREACHABLE = (ksa_exceptions.ConnectionError, requests.ConnectionError, requests.Timeout,
                ConnectionError, TimeoutError)


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _status(exc: BaseException) -> int | None:
    if isinstance(exc, sdk_exceptions.HttpException):
        return exc.status_code
    if isinstance(exc, ksa_exceptions.HttpError):
        return exc.http_status or None
    if isinstance(exc, requests.HTTPError) and exc.response is not None:
        return exc.response.status_code
    return None


def _body_type(exc: BaseException) -> str | None:
    """The fault type a JSON body names (Neutron: ``{"NeutronError": {"type": "OverQuota"}}``)."""
    response = getattr(exc, "response", None)
    if not isinstance(response, requests.Response):
        return None
    try:
        body: Any = response.json()
    except ValueError:
        return None
    if isinstance(body, dict):
        for fault in body.values():
            if isinstance(fault, dict) and isinstance(fault.get("type"), str):
                return str(fault["type"])
    return None


def message_of(exc: BaseException) -> str:
    """The cloud's own words: the body's message when there was one, else the exception's text."""
    if isinstance(exc, sdk_exceptions.HttpException):
        return str(exc.details or exc.message)
    if isinstance(exc, ksa_exceptions.HttpError):
        return str(exc.details or exc.message)
    if isinstance(exc, sdk_exceptions.SDKException):
        return str(exc.message)
    return str(exc) or type(exc).__name__


def kind_of(status: int | None, message: str, body_type: str | None = None) -> ErrorKind:
    """The kind of a refusal with this status and text (None: nothing answered)."""
    if status is None:
        return ErrorKind.UNREACHABLE
    over_quota = body_type == "OverQuota" or bool(_QUOTA_TEXT.search(message))
    if status in (413, 429) or (status in (403, 409) and over_quota):
        return ErrorKind.QUOTA
    if status >= 500:
        return ErrorKind.SERVER
    if status in (401, 403):
        return ErrorKind.FORBIDDEN
    if status == 404:
        return ErrorKind.NOT_FOUND
    if status == 409:
        return ErrorKind.CONFLICT
    return ErrorKind.BAD_REQUEST


def classify(exc: BaseException) -> CloudError:
    """The :class:`CloudError` for an exception an openstacksdk call raised."""
    name = type(exc).__name__
    message = message_of(exc)
    status = _status(exc)
    if status is not None:
        request_id = getattr(exc, "request_id", None)
        body_type = _body_type(exc)
        return CloudError(kind_of(status, message, body_type), message, status, name,
                          str(request_id) if request_id else None, body_type)
    if isinstance(exc, sdk_exceptions.NotFoundException):  # a find_* that found nothing
        return CloudError(ErrorKind.NOT_FOUND, message, None, name)
    if any(isinstance(cause, _UNREACHABLE) for cause in _causes(exc)):
        return CloudError(ErrorKind.UNREACHABLE, message, None, name)
    # The sdk refused the call itself (an unknown service, a bad query, a duplicate name
    # on lookup) or the call was malformed: nothing to retry.
    return CloudError(ErrorKind.BAD_REQUEST, message, None, name)
