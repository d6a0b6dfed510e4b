"""Small request/response helpers in Heat's manner: JSON bodies, query flags, path ids."""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections.abc import Callable, Iterator
from typing import Any, ParamSpec, TypeVar

import orjson
from aiohttp import web

from libs.evaluation_pool import Evaluator
from libs.template import budgets, errors, loader
from libs.template.errors import EntityNotFound, MalformedRequest
from services.api.context import context
from services.api.keys import EVALUATION, SETTINGS

P = ParamSpec("P")
T = TypeVar("T")


@contextlib.contextmanager
def _request_errors() -> Iterator[None]:
    try:
        yield
    except (TypeError, ValueError) as exc:
        # The pure template core raises these for a value of the wrong kind, as Heat's
        # functions do; from a request's own template that is the template's fault: a 400.
        raise errors.StackValidationFailed(str(exc)) from exc
    except AttributeError as exc:
        # Where Heat calls a method on a value of the wrong kind (str_split of a boolean in
        # a deletion_policy, say), its fault middleware answers 400 naming AttributeError.
        raise errors.UnhandledPythonError("AttributeError", str(exc)) from exc


@dataclasses.dataclass(frozen=True)
class _RequestWork:
    inner: Evaluator

    async def run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        with _request_errors():
            return await self.inner.run(fn, *args, **kwargs)


def run_here(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``fn`` on the api's own loop, its failures answered as :func:`evaluation`'s are: for work
    too small to be worth sending a big request to a pool process and back."""
    with _request_errors():
        return fn(*args, **kwargs)


def evaluation(request: web.Request) -> Evaluator:
    """Where this request's templates are evaluated: the api's pool, as the caller's project's share."""
    return _RequestWork(request.app[EVALUATION].on_behalf_of(context(request).project))


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(body), content_type="application/json",
                        headers=headers)


async def json_body(request: web.Request) -> dict[str, Any]:
    """The request's JSON object; Heat's 400 for anything else (an empty body is ``{}``)."""
    body = await json_value(request)
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise MalformedRequest("The request body must be a JSON object.")
    return body


async def json_value(request: web.Request) -> Any:
    """Any JSON value (a signal's details may be anything); None for an empty body."""
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        # Heat's JSON deserializer refuses a large body with a 400, not aiohttp's 413.
        limit = request.app[SETTINGS].api.max_json_body_size
        size = f"{request.content_length} bytes" if request.content_length else "more than the limit"
        raise errors.RequestLimitExceeded(
            f"JSON body size ({size}) exceeds maximum allowed size ({limit} bytes).") from None
    if not raw.strip():
        return None
    # A body sent without a type (application/octet-stream to aiohttp) is read as JSON,
    # as curl's and heatclient's are; one declared as something else is not JSON.
    kind = request.content_type
    if kind not in JSON_TYPES and not kind.endswith("+json"):
        raise MalformedRequest(f"The request body is {kind}; send it as application/json.")
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise MalformedRequest(f"The server could not comply with the request since it is either "
                               f"malformed or otherwise incorrect: {exc}") from None
    # Each field by name, so the refusal says which one; the recursive code that reads
    # templates and parameters must never meet data deeper than the budget.
    for name, value in body.items() if isinstance(body, dict) else (("The request body", body),):
        budgets.check_depth(value, name)
    if b"\\u0000" in raw:
        loader.check_storable(body, ())
    return body


JSON_TYPES = ("application/json", "application/octet-stream")


_TRUE = {"true", "1", "yes", "y", "on", "t"}
_FALSE = {"false", "0", "no", "n", "off", "f", ""}


def parse_bool(name: str, value: Any) -> bool:
    """Heat's ``param_utils.extract_bool``: the strings oslo accepts, else 400 naming the parameter."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise MalformedRequest(f'Unrecognized value "{value}" for "{name}", acceptable values are: true, false.')


def query_bool(request: web.Request, name: str, default: bool = False) -> bool:
    if name not in request.query:
        return default
    return parse_bool(name, request.query[name])


def query_int(request: web.Request, name: str, default: int | None = None, *, minimum: int = 0,
              maximum: int = 2**31 - 1) -> int | None:
    """An integer parameter; past ``maximum`` (what PostgreSQL's ``integer`` holds) a 400, not a 500."""
    if name not in request.query:
        return default
    value = request.query[name]
    try:
        number = int(value)
    except ValueError:
        raise MalformedRequest(f"Only integer is acceptable by '{name}'.") from None
    if number < minimum:
        raise MalformedRequest(f"Value must be at least {minimum} for '{name}'.")
    if number > maximum:
        raise MalformedRequest(f"Value must be at most {maximum} for '{name}'.")
    return number


def query_texts(request: web.Request, name: str) -> list[str]:
    """Every value of the query parameter ``name``; one holding a NUL character, which no stored
    name can hold and PostgreSQL cannot compare, is a 400 naming the parameter."""
    values = request.query.getall(name, [])
    if any("\0" in value for value in values):
        raise MalformedRequest(f"The query parameter '{name}' may not contain a NUL character (\\u0000).")
    return values


def query_sort_desc(request: web.Request) -> bool:
    """Heat's ``sort_dir``: descending unless asked otherwise, 400 for anything but asc or desc."""
    direction = request.query.get("sort_dir", "desc")
    if direction not in ("asc", "desc"):
        raise MalformedRequest("Unknown sort direction, must be 'desc' or 'asc'")
    return direction == "desc"


def query_marker(request: web.Request, entity: str) -> uuid.UUID | None:
    """Heat's paging ``marker``: an id; one that is not a uuid names no ``entity``, so 404."""
    if "marker" not in request.query:
        return None
    return _uuid_or_404(request.query["marker"], entity)


def path_uuid(request: web.Request, key: str, entity: str) -> uuid.UUID:
    """The uuid in the URL's ``key`` part; a malformed one names no ``entity``, so 404 (as Heat)."""
    return _uuid_or_404(request.match_info[key], entity)


def _uuid_or_404(text: str, entity: str) -> uuid.UUID:
    try:
        return uuid.UUID(text)
    except ValueError:
        raise EntityNotFound(entity, text) from None
