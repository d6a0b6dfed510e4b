"""Error classification, table-tested on the exceptions openstacksdk and keystoneauth really raise."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests
from keystoneauth1 import exceptions as ksa_exceptions
from openstack import exceptions as sdk_exceptions

from libs.cloud.calls import CloudError, ErrorKind, worth_retrying
from libs.cloud.errors import classify


def _response(status: int, body: Any = None, reason: str = "", content_type: str = "application/json"
              ) -> requests.Response:
    response = requests.Response()
    response.status_code = status
    response.reason = reason
    response.url = "http://cloud.example:8774/v2.1/servers"
    if body is not None:
        response._content = (json.dumps(body) if content_type == "application/json" else body).encode()
        response.headers["content-type"] = content_type
    else:
        response._content = b""
    return response


def _sdk_error(status: int, body: Any = None, reason: str = "", content_type: str = "application/json"
               ) -> BaseException:
    """What an openstacksdk proxy raises for this HTTP answer (its own raise_from_response)."""
    try:
        sdk_exceptions.raise_from_response(_response(status, body, reason, content_type))
    except sdk_exceptions.SDKException as exc:
        return exc
    raise AssertionError("no exception raised")


def _with_cause(exc: BaseException, cause: BaseException) -> BaseException:
    exc.__cause__ = cause
    return exc


NOVA_404 = {"itemNotFound": {"code": 404, "message": "Flavor m1.huge could not be found."}}
IN_USE = {"NeutronError": {"type": "NetworkInUse", "message": "Unable to complete operation on network n1.",
                           "detail": ""}}
NOVA_QUOTA_TEXT = "Quota exceeded for cores: Requested 4, but already used 20 of 20 cores"
CINDER_LIMIT_TEXT = ("VolumeLimitExceeded: Maximum number of volumes allowed (10) exceeded for quota "
                     "'volumes'.")
REFUSED = "Unable to establish connection to http://x: refused"
NEUTRON_QUOTA = {"NeutronError": {"type": "OverQuota", "message": "Quota exceeded for resources: ['port'].",
                                  "detail": ""}}
NOVA_QUOTA = {"forbidden": {"code": 403, "message": NOVA_QUOTA_TEXT}}
CINDER_LIMIT = {"overLimit": {"code": 413, "message": CINDER_LIMIT_TEXT}}

CASES: list[tuple[str, BaseException, CloudError]] = [
    ("nova 404", _sdk_error(404, NOVA_404),
     CloudError(ErrorKind.NOT_FOUND, "Flavor m1.huge could not be found.", 404, "NotFoundException")),
    ("neutron 409 in use", _sdk_error(409, IN_USE),
     CloudError(ErrorKind.CONFLICT, "Unable to complete operation on network n1.", 409, "ConflictException",
                fault_type="NetworkInUse")),
    ("neutron over quota", _sdk_error(409, NEUTRON_QUOTA),
     CloudError(ErrorKind.QUOTA, "Quota exceeded for resources: ['port'].", 409, "ConflictException",
                fault_type="OverQuota")),
    ("neutron OverQuota type alone", _sdk_error(409, {"NeutronError": {"type": "OverQuota", "message": "No.",
                                                                       "detail": ""}}),
     CloudError(ErrorKind.QUOTA, "No.", 409, "ConflictException", fault_type="OverQuota")),
    ("nova quota 403", _sdk_error(403, NOVA_QUOTA),
     CloudError(ErrorKind.QUOTA, NOVA_QUOTA_TEXT, 403, "ForbiddenException")),
    ("cinder 413", _sdk_error(413, CINDER_LIMIT),
     CloudError(ErrorKind.QUOTA, CINDER_LIMIT_TEXT, 413, "HttpException")),
    ("rate limited", _sdk_error(429, reason="Too Many Requests"),
     CloudError(ErrorKind.QUOTA, "Too Many Requests", 429, "HttpException")),
    ("policy 403", _sdk_error(403, {"forbidden": {"code": 403, "message": "Policy doesn't allow "
                                                  "os_compute_api:servers:create to be performed."}}),
     CloudError(ErrorKind.FORBIDDEN, "Policy doesn't allow os_compute_api:servers:create to be performed.",
                403, "ForbiddenException")),
    ("401", _sdk_error(401, reason="Unauthorized"),
     CloudError(ErrorKind.FORBIDDEN, "Unauthorized", 401, "HttpException")),
    ("bad request", _sdk_error(400, {"badRequest": {"code": 400, "message": "Invalid imageRef provided."}}),
     CloudError(ErrorKind.BAD_REQUEST, "Invalid imageRef provided.", 400, "BadRequestException")),
    ("412", _sdk_error(412, reason="Precondition Failed"),
     CloudError(ErrorKind.BAD_REQUEST, "Precondition Failed", 412, "PreconditionFailedException")),
    ("500 json", _sdk_error(500, {"computeFault": {"code": 500, "message": "Unexpected API Error."}}),
     CloudError(ErrorKind.SERVER, "Unexpected API Error.", 500, "HttpException")),
    ("503 html", _sdk_error(503, "<html><body><h1>503 Service Unavailable</h1></body></html>",
                            content_type="text/html"),
     CloudError(ErrorKind.SERVER, "503 Service Unavailable", 503, "HttpException")),
    ("sdk lookup miss", sdk_exceptions.NotFoundException("No Flavor found for m1.huge"),
     CloudError(ErrorKind.NOT_FOUND, "No Flavor found for m1.huge", None, "NotFoundException")),
    ("keystone 401", ksa_exceptions.Unauthorized("The request you have made requires authentication."),
     CloudError(ErrorKind.FORBIDDEN, "The request you have made requires authentication. (HTTP 401)", 401,
                "Unauthorized")),
    ("keystone 503", ksa_exceptions.ServiceUnavailable(),
     CloudError(ErrorKind.SERVER, "Service Unavailable (HTTP 503)", 503, "ServiceUnavailable")),
    ("connection refused", ksa_exceptions.ConnectFailure(REFUSED),
     CloudError(ErrorKind.UNREACHABLE, REFUSED, None, "ConnectFailure")),
    ("connect timeout", ksa_exceptions.ConnectTimeout("Request to http://x timed out"),
     CloudError(ErrorKind.UNREACHABLE, "Request to http://x timed out", None, "ConnectTimeout")),
    ("discovery over a dead endpoint",
     _with_cause(ksa_exceptions.DiscoveryFailure("Could not find versioned identity endpoints"),
                 ksa_exceptions.ConnectFailure("refused")),
     CloudError(ErrorKind.UNREACHABLE, "Could not find versioned identity endpoints", None,
                "DiscoveryFailure")),
    ("sdk refused the query", sdk_exceptions.InvalidResourceQuery("Invalid query params: colour"),
     CloudError(ErrorKind.BAD_REQUEST, "Invalid query params: colour", None, "InvalidResourceQuery")),
    ("a malformed call", TypeError("create_server() got an unexpected keyword argument 'colour'"),
     CloudError(ErrorKind.BAD_REQUEST, "create_server() got an unexpected keyword argument 'colour'", None,
                "TypeError")),
]


@pytest.mark.parametrize(("exc", "expected"), [(c[1], c[2]) for c in CASES], ids=[c[0] for c in CASES])
def test_classify(exc: BaseException, expected: CloudError) -> None:
    assert classify(exc) == expected


def test_retried_kinds() -> None:
    assert {k for k in ErrorKind if k.retried} == {ErrorKind.QUOTA, ErrorKind.SERVER, ErrorKind.UNREACHABLE}


def _error(kind: ErrorKind, status: int | None, exception: str = "HttpException") -> CloudError:
    return CloudError(kind, "m", status, exception)


RETRIES: list[tuple[str, CloudError, bool]] = [
    ("get_server", _error(ErrorKind.SERVER, 500), True),
    ("servers", _error(ErrorKind.UNREACHABLE, None, "ReadTimeout"), True),
    ("delete_port", _error(ErrorKind.SERVER, 502), True),
    ("get_server", _error(ErrorKind.NOT_FOUND, 404), False),
    ("create_server", _error(ErrorKind.BAD_REQUEST, 400), False),
    ("create_server", _error(ErrorKind.QUOTA, 403), True),
    ("create_server", _error(ErrorKind.SERVER, 503), True),
    ("create_server", _error(ErrorKind.SERVER, 500), False),  # it may have been made
    ("create_volume", _error(ErrorKind.UNREACHABLE, None, "ConnectFailure"), True),  # never sent
    ("create_volume", _error(ErrorKind.UNREACHABLE, None, "ReadTimeout"), False),  # sent, no answer
    ("add_interface_to_router", _error(ErrorKind.SERVER, 500), False),
    ("resize_server", _error(ErrorKind.SERVER, 504), False),
]


@pytest.mark.parametrize(("method", "error", "expected"), RETRIES,
                         ids=[f"{m}-{e.kind.value}-{e.status}" for m, e, _ in RETRIES])
def test_worth_retrying(method: str, error: CloudError, expected: bool) -> None:
    assert worth_retrying(method, error) is expected


def test_classify_keeps_the_clouds_request_id() -> None:
    # Heat's cinderclient and novaclient print it in their errors (measured: clouds/create_failed).
    response = _response(413, CINDER_LIMIT)
    response.headers["x-openstack-request-id"] = "req-0b1c"
    try:
        sdk_exceptions.raise_from_response(response)
    except sdk_exceptions.SDKException as exc:
        assert classify(exc) == CloudError(ErrorKind.QUOTA, CINDER_LIMIT_TEXT, 413, "HttpException",
                                           "req-0b1c")
    else:
        raise AssertionError("no exception raised")
